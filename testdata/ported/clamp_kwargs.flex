# clamp with keyword bounds, as a method and as torch.clamp.
def clipped_distance(score, b, h, q_idx, kv_idx):
    past = (q_idx - kv_idx).clamp(min=0)
    future = torch.clamp(kv_idx - q_idx, min=0, max=16)
    near = past.clamp(max=64)
    return score - 0.05 * near + 0.02 * future

attention clipped {
    score = clipped_distance
}
