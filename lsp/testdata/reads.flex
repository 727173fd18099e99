# Buffer reads and the sizes at which they stay inside (issue 33).
buffer rel: f32[8]
buffer bias: f32[H, Q + KV - 1]

mask causal(b, h, q, kv) = q >= kv
score rel_bias(score, b, h, q, kv) = score + rel[q - kv + 3]
score learned(score, b, h, q, kv) = score + bias[h, q - kv + KV - 1]

attention small {
    mask = causal
    score = rel_bias
}

attention learned_layer {
    mask = causal
    score = learned
}
