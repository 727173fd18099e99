# Per-block tables declared with floor-divided extents (issue 27 item 2).
# keep_floor has one entry per whole 64-row block: a call whose Q or KV is
# not a multiple of 64 reads past it in the last, partial block and is
# refused before launch. keep_ceil spells the ceiling, one entry per block
# including the partial one, and fits at every size; so does sel.
buffer keep_floor: bool[B, H, Q // 64, KV // 64]
buffer keep_ceil: bool[B, H, (Q + 63) // 64, (KV + 63) // 64]
buffer sel: i32[H, (Q + 127) // 128, 4]
param BLOCK = 64

mask floor_blocks(b, h, q_idx, kv_idx) = keep_floor[b, h, q_idx // BLOCK, kv_idx // BLOCK]
mask ceil_blocks(b, h, q_idx, kv_idx) = keep_ceil[b, h, q_idx // BLOCK, kv_idx // BLOCK]

def selected(b, h, q_idx, kv_idx):
    block = kv_idx // 128
    row = sel[h, q_idx // 128]
    return (row[0] == block) | (row[1] == block) | (q_idx // 128 == block)

attention floor_layer {
    mask = floor_blocks
}
attention ceil_layer {
    mask = and_masks(ceil_blocks, causal)
}
attention sel_layer {
    mask = selected
}
