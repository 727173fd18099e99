# Tanh soft-capping of the logits (Gemma 2 style) under a causal mask.

param CAP = 30.0

mask causal(b, h, q, kv) = q >= kv
score softcap(score, b, h, q, kv) = CAP * tanh(score / CAP)

attention capped_layer {
    mask = causal
    score = softcap
    layout = bshd
    dtype = bf16
    head_dim = 128
}
