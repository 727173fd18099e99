# The same mask through tensor methods: logical_and, logical_or, logical_not.
def band_or_sink(b, h, q_idx, kv_idx):
    future = kv_idx > q_idx
    near = (q_idx - kv_idx).abs() <= 24
    sink = kv_idx < 4
    return future.logical_not().logical_and(near.logical_or(sink))

attention band_sink {
    mask = band_or_sink
}
