# A causal mask written as a score, with float("-inf").
def causal_score(score, b, h, q_idx, kv_idx):
    return torch.where(q_idx >= kv_idx, score, float("-inf"))

attention causal_as_score {
    score = causal_score
}
