# FlexAttention mods pasted as Python: the LSP hovers and classifies them.
def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def generate_sliding_window(window_size: int):
    """Causal sliding window of window_size tokens."""
    def sliding_window(b, h, q_idx, kv_idx):
        causal_mask = q_idx >= kv_idx
        window_mask = (q_idx - kv_idx).abs() <= window_size
        return causal_mask & window_mask
    return sliding_window

def soft_cap(score, b, h, q_idx, kv_idx):
    score = score / 30.0
    score = torch.tanh(score)
    return score * 30.0

def bucket(score, b, h, q_idx, kv_idx):
    d = (kv_idx - q_idx).clamp(min=-8, max=8).to(torch.int64)
    return score + torch.div(d, 2, rounding_mode="floor").float()

attention swa {
    mask = generate_sliding_window(256)
    score = soft_cap
}

attention plain {
    mask = causal
    score = bucket
}
