# Python int() and float() of factory constants.
def generate_half_window(window_size: int):
    def half_window(b, h, q_idx, kv_idx):
        half = int(window_size / 2)
        limit = float(half) + 0.5
        return (q_idx >= kv_idx) & (q_idx - kv_idx < limit)
    return half_window

attention half_window {
    mask = generate_half_window(75)
}
