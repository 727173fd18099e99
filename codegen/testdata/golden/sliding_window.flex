# Causal sliding window of WINDOW + 1 keys.
param WINDOW = 1024

mask local(b, h, q, kv) = q >= kv and q - kv <= WINDOW

attention sliding {
    mask = local
    dtype = fp16
    head_dim = 64
}
