# Dilated sliding window: every dilation-th key inside the window.
def generate_dilated_sliding_window(window_size: int, dilation: int):
    def dilated_sliding_window(b, h, q_idx, kv_idx):
        diff = torch.abs(q_idx - kv_idx)
        in_window = diff <= window_size
        is_dilated = (diff % dilation) == 0
        return in_window & is_dilated
    return dilated_sliding_window

attention dilated {
    mask = generate_dilated_sliding_window(128, 4)
}
