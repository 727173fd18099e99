# `if`/`elif`/`else`, `assert`, `pass` and `is None` over factory
# arguments, decided at compile time as Python decides them (issue 28).
def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def generate_window(window=None, causal: bool = True):
    def window_mask(b, h, q_idx, kv_idx):
        if window is None:
            return causal_mask(b, h, q_idx, kv_idx)
        assert window > 0, "window must be positive"
        m = q_idx - kv_idx <= window
        if causal:
            m = m & (q_idx >= kv_idx)
        elif window > 100:
            m = m & (kv_idx - q_idx <= window)
        else:
            pass
        return m
    return window_mask

def generate_softcap(cap=None):
    def softcap(score, b, h, q_idx, kv_idx):
        if cap is not None and cap > 0: return cap * torch.tanh(score / cap)
        return score
    return softcap

def generate_centered(window=None):
    if window is None:
        window = 32
    assert window % 2 == 0, "an even window"
    half = window // 2
    def centered(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx).abs() <= half
    return centered

attention no_window {
    mask = generate_window()
}
attention causal_window {
    mask = generate_window(48)
}
attention wide_band {
    mask = generate_window(window=120, causal=False)
}
attention narrow_band {
    mask = generate_window(20, causal=False)
}
attention capped {
    mask = generate_window(64)
    score = generate_softcap(20.0)
}
attention uncapped {
    score = generate_softcap()
}
attention centered_default {
    mask = generate_centered()
}
attention centered_12 {
    mask = generate_centered(window=12)
}
