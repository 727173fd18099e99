# Sliding window written with torch.logical_and.
def generate_window(window_size: int):
    def window(b, h, q_idx, kv_idx):
        return torch.logical_and(q_idx >= kv_idx, q_idx - kv_idx <= window_size)
    return window

attention logical_window {
    mask = generate_window(40)
}
