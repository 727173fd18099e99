# Backward check case for the pre-pass sparsity: a block-sparse pattern read
# from a buffer of 64 x 64 blocks (no closed-form kv range), causal on even
# heads, with a per-head ALiBi slope learned in the score.
buffer allowed: bool[Q, KV]
buffer slopes: f32[H]

mask mixed(b, h, q, kv) = q >= kv if h % 2 == 0 else allowed[q // 64, kv // 64]
score alibi(score, b, h, q, kv) = score + slopes[h] * (kv - q)

attention block_table {
    mask = mixed
    score = alibi
    layout = bshd
    dtype = bf16
    head_dim = 128
}
