# torch.minimum / torch.maximum between index tensors.
def min_max_bias(score, b, h, q_idx, kv_idx):
    nearer = torch.minimum(q_idx, kv_idx)
    farther = torch.maximum(q_idx, kv_idx)
    return score - 0.01 * (farther - nearer)

attention min_max {
    score = min_max_bias
}
