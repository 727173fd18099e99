# ALiBi: a linear penalty on distance with one slope per query head,
# under a causal mask (where it equals the kernels' -slope * |q - kv|).

buffer slopes: f32[H]  # per-head slopes, e.g. 2 ** (-8 * (h + 1) / H)

mask causal(b, h, q, kv) = q >= kv
score alibi(score, b, h, q, kv) = score + slopes[h] * (kv - q)

attention alibi_layer {
    mask = causal
    score = alibi
    layout = bshd
    dtype = bf16
    head_dim = 128
}
