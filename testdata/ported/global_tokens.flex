# Longformer-style: a local window plus every 32nd key as a global token.
def generate_longformer(window_size: int, stride: int):
    def longformer(b, h, q_idx, kv_idx):
        local = (q_idx - kv_idx).abs() <= window_size
        is_global = torch.remainder(kv_idx, stride) == 0
        return local | is_global
    return longformer

attention longformer {
    mask = generate_longformer(16, 32)
}
