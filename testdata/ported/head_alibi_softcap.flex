# ALiBi slopes from the head index, then a soft cap.
def alibi_softcap(score, b, h, q_idx, kv_idx):
    slope = torch.exp2(-(h + 1).float())
    score = score + slope * (kv_idx - q_idx)
    score = 10.0 * torch.tanh(score / 10.0)
    return score

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

attention alibi_softcap {
    mask = causal
    score = alibi_softcap
}
