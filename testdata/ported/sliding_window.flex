# attention-gym: causal sliding window, a factory over the window size.
def generate_sliding_window(window_size: int):
    """Each query sees itself and the window_size keys before it."""
    def sliding_window(b, h, q_idx, kv_idx):
        causal_mask = q_idx >= kv_idx
        window_mask = q_idx - kv_idx <= window_size
        return causal_mask & window_mask
    return sliding_window

attention swa {
    mask = generate_sliding_window(64)
}
