# A checkerboard of 16-token blocks with torch.logical_xor, causal.
def checkerboard(b, h, q_idx, kv_idx):
    q_even = (q_idx // 16) % 2 == 0
    kv_even = (kv_idx // 16) % 2 == 0
    same = torch.logical_not(torch.logical_xor(q_even, kv_even))
    return same & (q_idx >= kv_idx)

attention checker {
    mask = checkerboard
}
