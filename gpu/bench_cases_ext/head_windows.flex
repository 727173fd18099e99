# A different causal window per head: head h sees the last 256 * (h + 1)
# keys (multi-scale local attention).

mask head_window(b, h, q, kv) = kv <= q and q - kv < 256 * (h + 1)

attention head_windows {
    mask = head_window
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
