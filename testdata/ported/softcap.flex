# Gemma-2 style tanh soft-capping, written as reassignments.
def generate_tanh_softcap(soft_cap: float):
    def tanh_softcap(score, b, h, q_idx, kv_idx):
        score = score / soft_cap
        score = torch.tanh(score)
        return score * soft_cap
    return tanh_softcap

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

attention softcap {
    mask = causal
    score = generate_tanh_softcap(20.0)
}
