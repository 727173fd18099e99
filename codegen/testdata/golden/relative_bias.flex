# Learned relative-position bias table, one row per head.
buffer bias: bf16[H, 2 * KV - 1]

score rel_bias(score, b, h, q, kv) = score + bias[h, q - kv + KV - 1]

attention relative_bias {
    score = rel_bias
}
