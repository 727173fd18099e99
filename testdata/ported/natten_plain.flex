# Neighborhood attention without clamping: a square window on a 16-wide grid.
def generate_neighborhood(width: int, radius: int):
    def neighborhood(b, h, q_idx, kv_idx):
        q_row = torch.div(q_idx, width, rounding_mode="floor")
        q_col = torch.remainder(q_idx, width)
        kv_row = torch.div(kv_idx, width, rounding_mode="floor")
        kv_col = torch.remainder(kv_idx, width)
        near_row = (q_row - kv_row).abs() <= radius
        near_col = (q_col - kv_col).abs() <= radius
        return torch.logical_and(near_row, near_col)
    return neighborhood

attention neighborhood {
    mask = generate_neighborhood(16, 2)
}
