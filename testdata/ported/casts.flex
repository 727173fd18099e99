# Casts both ways: .to(torch.float32), truncation by .long() and .int().
def quantized_distance(score, b, h, q_idx, kv_idx):
    dist = (kv_idx - q_idx).to(torch.float32)
    coarse = (dist * 0.25).long()
    fine = (dist / 7.0).int()
    return score + 0.1 * coarse.float() - 0.05 * fine.to(torch.float32)

attention casts {
    score = quantized_distance
}
