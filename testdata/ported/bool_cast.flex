# Bool casts: .bool() and .to(torch.bool) of int tensors.
def odd_pairs(b, h, q_idx, kv_idx):
    q_odd = (q_idx % 2).bool()
    kv_odd = (kv_idx % 2).to(torch.bool)
    return (q_odd == kv_odd) & (kv_idx <= q_idx)

attention odd_pairs {
    mask = odd_pairs
}
