# Gemma-2 local layer: sliding window mask and tanh soft cap together.
def generate_sliding_window(window_size: int):
    def sliding_window(b, h, q_idx, kv_idx):
        causal_mask = q_idx >= kv_idx
        window_mask = q_idx - kv_idx <= window_size
        return causal_mask & window_mask
    return sliding_window

def generate_tanh_softcap(soft_cap: float):
    def tanh_softcap(score, b, h, q_idx, kv_idx):
        score = score / soft_cap
        score = torch.tanh(score)
        return score * soft_cap
    return tanh_softcap

attention gemma2_local {
    mask = generate_sliding_window(96)
    score = generate_tanh_softcap(50.0)
}
