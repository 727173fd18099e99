# flex_baseline.py "causal+alibi": slopes[h] = exp2(-8 (h + 1) / H).

buffer slopes: f32[H]  # ALiBi slope of each query head

mask causal(b, h, q, kv) = q >= kv
score alibi(score, b, h, q, kv) = score + slopes[h] * (kv - q)

attention causal_alibi {
    mask = causal
    score = alibi
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
