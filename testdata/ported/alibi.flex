# attention-gym: ALiBi, slopes computed from the head index.
def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def generate_alibi_bias(H: int):
    def alibi_mod(score, b, h, q_idx, kv_idx):
        scale = torch.exp2(-((h + 1) * 8.0 / H))
        bias = (kv_idx - q_idx) * scale
        return score + bias
    return alibi_mod

attention alibi {
    mask = causal_mask
    score = generate_alibi_bias(4)
}
