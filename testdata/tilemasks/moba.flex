# MoBA-style block selection: each 128-query block attends its own block
# causally plus 4 earlier key blocks chosen per head by sel (flattened
# [H, Q/128 * 4]; -1 selects nothing). Realistic contents: buffers.py.

buffer sel: i32[H, 1024]  # 4 block numbers per query block, Q <= 32768

mask moba(b, h, q, kv) = kv <= q and (q // 128 == kv // 128 or sel[h, (q // 128) * 4 + 0] == kv // 128 or sel[h, (q // 128) * 4 + 1] == kv // 128 or sel[h, (q // 128) * 4 + 2] == kv // 128 or sel[h, (q // 128) * 4 + 3] == kv // 128)

attention moba {
    mask = moba
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
