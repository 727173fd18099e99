# Head-dependent sliding window: head h sees 16 * (h + 1) keys back.
def head_window(b, h, q_idx, kv_idx):
    window = 16 * (h + 1)
    causal_mask = q_idx >= kv_idx
    return causal_mask & (q_idx - kv_idx < window)

attention per_head_window {
    mask = head_window
}
