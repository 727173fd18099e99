# 2-D neighbourhood attention on a canvas stored in Morton (Z) order, as
# attention-gym's morton NATTEN does: a token's index interleaves the bits of
# its column and row, so a helper gathers every other bit with shifts and
# masks.
def gather_bits(v):
    v = v & 0x55555555
    v = (v | (v >> 1)) & 0x33333333
    v = (v | (v >> 2)) & 0x0F0F0F0F
    v = (v | (v >> 4)) & 0x00FF00FF
    v = (v | (v >> 8)) & 0x0000FFFF
    return v

def from_morton(z):
    return gather_bits(z), gather_bits(z >> 1)

def morton_natten(canvas_w, canvas_h, kernel_w, kernel_h):
    def mask_mod(b, h, q_idx, kv_idx):
        q_col, q_row = from_morton(q_idx)
        kv_col, kv_row = from_morton(kv_idx)
        centre_col = q_col.clamp(kernel_w // 2, (canvas_w - 1) - kernel_w // 2)
        centre_row = q_row.clamp(kernel_h // 2, (canvas_h - 1) - kernel_h // 2)
        near_col = (centre_col - kv_col).abs() <= kernel_w // 2
        near_row = (centre_row - kv_row).abs() <= kernel_h // 2
        return near_col & near_row
    return mask_mod

# A mask and a score of bit arithmetic: a hashed bucket per pair (xor of
# the block numbers), a parity with `^` of two bools, and a score that
# halves per 64-key block with `>>` and `~`.
def bucketed(b, h, q_idx, kv_idx):
    same_bucket = ((q_idx >> 5) ^ (kv_idx >> 5)) & 3 == 0
    parity = (q_idx >= kv_idx) ^ ((q_idx - kv_idx) % 2 == 1)
    wide = q_idx << 2
    wide |= 1
    return same_bucket | parity | (wide >> 3 == kv_idx)

def block_decay(score, b, h, q_idx, kv_idx):
    blocks = (q_idx - kv_idx).abs() >> 6
    return score - blocks + (~h & 1)

attention morton {
    mask = morton_natten(16, 16, 5, 3)
}

attention bits {
    mask = bucketed
    score = block_decay
}
