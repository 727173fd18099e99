# Causal attention with ALiBi slopes computed from the head index.
mask causal_mask(b, h, q, kv) = q >= kv
score alibi_bias(score, b, h, q, kv) = score + (kv - q) * 2 ** (-8 * (h + 1) / H)

attention alibi {
    mask = causal_mask
    score = alibi_bias
}
