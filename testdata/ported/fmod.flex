# torch.fmod (C's remainder, the sign of the dividend) in a mask and a
# score: an even-distance dilation through .fmod() of a signed difference,
# and a bias by kv_idx - q_idx fmod 5, negative below the diagonal where
# Python's % would be positive.
def even_offsets(b, h, q_idx, kv_idx):
    near = (q_idx - kv_idx).abs() <= 96
    return near & ((kv_idx - q_idx).fmod(2) == 0)

def phase_bias(score, b, h, q_idx, kv_idx):
    return score + 0.5 * torch.fmod(kv_idx - q_idx, 5).float()

attention dilated_even {
    mask = even_offsets
    score = phase_bias
}
