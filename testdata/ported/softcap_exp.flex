# tanh through exp, clamped first so that exp cannot overflow.
def softcap_via_exp(score, b, h, q_idx, kv_idx):
    cap = 4.0
    x = (score / cap).clamp(min=-15.0, max=15.0)
    e = torch.exp(2.0 * x)
    return cap * (e - 1.0) / (e + 1.0)

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

attention softcap_exp {
    mask = causal
    score = softcap_via_exp
}
