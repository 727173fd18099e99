# A log-distance penalty: int distance cast to float, then log.
def log_distance(score, b, h, q_idx, kv_idx):
    dist = (q_idx - kv_idx).abs().float()
    return score - 0.5 * torch.log(dist + 1.0)

attention log_distance {
    score = log_distance
}
