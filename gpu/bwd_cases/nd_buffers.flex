# Backward check case for N-D buffers (issue 27): a 4-D block table, per
# batch and head parity, of 64 x 64 blocks in the mask (pre-pass sparsity)
# and a 3-D bias learned in the score, each read with one index per
# dimension (row-major, every index checked against its own extent).

buffer keep: bool[B, 2, 128, 128]  # Q, KV <= 8192
buffer w: f32[H, 4, 8]

mask blocks(b, h, q, kv) = keep[b, h % 2, q // 64, kv // 64] or q == kv
score periodic_bias(score, b, h, q, kv) = score + w[h, q % 4, kv % 8]

attention nd_buffers {
    mask = blocks
    score = periodic_bias
    layout = bshd
    dtype = bf16
    head_dim = 128
}
