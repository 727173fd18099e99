# Tuples of compile-time values: a tuple argument and default, indexing,
# unpacking, a helper returning two values (issue 28).
def split_window(window, ratio=(1, 3)):
    left = window * ratio[0] // (ratio[0] + ratio[1])
    return left, window - left

def generate_band(window: int, ratio: tuple[int, int] = (1, 3)):
    left, right = split_window(window, ratio)
    def band(b, h, q_idx, kv_idx):
        d = q_idx - kv_idx
        lo, hi = -right, left
        return (d >= lo) & (d <= hi)
    return band

attention band_default {
    mask = generate_band(64)
}
attention band_even {
    mask = generate_band(40, ratio=(1, 1))
}
