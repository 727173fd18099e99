# Bidirectional local attention with a tensor method: |q - kv| <= W.
def generate_local(window_size: int):
    def local_mask(b, h, q_idx, kv_idx):
        distance = (q_idx - kv_idx).abs()
        return distance <= window_size
    return local_mask

attention local {
    mask = generate_local(48)
}
