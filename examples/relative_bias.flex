# Learned relative-position bias: one table row per head, indexed by the
# distance q - kv shifted to start at 0. The table has one entry per
# possible distance, -(KV - 1) .. Q - 1.

buffer bias: f32[H, Q + KV - 1]

mask causal(b, h, q, kv) = q >= kv
score rel_bias(score, b, h, q, kv) = score + bias[h, q - kv + KV - 1]

attention biased_layer {
    mask = causal
    score = rel_bias
    layout = bshd
    dtype = bf16
    head_dim = 128
}
