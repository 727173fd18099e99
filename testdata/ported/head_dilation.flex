# Dilation that grows with the head index, causal.
def head_dilated(b, h, q_idx, kv_idx):
    dilation = h + 1
    diff = q_idx - kv_idx
    return (diff >= 0) & (torch.remainder(diff, dilation) == 0)

attention head_dilated {
    mask = head_dilated
}
