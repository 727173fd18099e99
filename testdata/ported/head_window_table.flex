# Per-head window sizes in a captured tensor.
buffer head_windows: i32[H]

def head_window_mask(b, h, q_idx, kv_idx):
    window = head_windows[h]
    return (kv_idx <= q_idx) & (q_idx - kv_idx <= window)

attention window_table {
    mask = head_window_mask
}
