# Comparison methods: .ge(), .lt() and .ne().
def causal_no_diagonal(b, h, q_idx, kv_idx):
    past = q_idx.ge(kv_idx)
    near = (q_idx - kv_idx).lt(100)
    return past & near & (q_idx.ne(kv_idx) | kv_idx.eq(0))

attention comparisons {
    mask = causal_no_diagonal
}
