# sliding window with a soft cap
param WINDOW = 1024
param CAP = 30.0

mask window(b, h, q, kv) = (q - kv) <= WINDOW and kv <= q
score softcap(score, b, h, q, kv) = CAP * tanh(score / CAP)
