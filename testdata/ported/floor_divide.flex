# Grouped queries: torch.floor_divide maps four queries to one key group.
def grouped(b, h, q_idx, kv_idx):
    group = torch.floor_divide(q_idx, 4)
    return kv_idx // 4 <= group

attention grouped {
    mask = grouped
}
