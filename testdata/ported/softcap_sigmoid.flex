# tanh(x) = 2 * sigmoid(2x) - 1, as some kernels write the soft cap.
def softcap_via_sigmoid(score, b, h, q_idx, kv_idx):
    cap = 3.0
    x = 2.0 * score / cap
    return cap * (2.0 * torch.sigmoid(x) - 1.0)

attention softcap_sigmoid {
    score = softcap_via_sigmoid
}
