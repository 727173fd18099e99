# Learned relative position bias: a table per head over clipped distances.
buffer rel_bias: f32[H, 65]

def generate_rel_bias(max_distance: int):
    def rel_bias_mod(score, b, h, q_idx, kv_idx):
        rel = (kv_idx - q_idx).clamp(-max_distance, max_distance)
        return score + rel_bias[h, rel + max_distance]
    return rel_bias_mod

attention rel_table {
    score = generate_rel_bias(32)
}
