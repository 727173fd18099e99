# A sliding window written as a score, with -math.inf.
def generate_window_score(window_size: int):
    def window_score(score, b, h, q_idx, kv_idx):
        inside = (q_idx >= kv_idx) & (q_idx - kv_idx <= window_size)
        return torch.where(inside, score, -math.inf)
    return window_score

attention window_as_score {
    score = generate_window_score(50)
}
