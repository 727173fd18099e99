# moba.flex written with its natural 3-D buffer: each 128-query block
# attends its own block causally plus 4 earlier key blocks chosen per head
# by sel[h, query block, j] (-1 selects nothing). The same contents as
# moba.flex's flattened [H, 1024] (buffers.py), so the same tile map.

buffer sel: i32[H, 256, 4]  # 4 block numbers per query block, Q <= 32768

mask moba_3d(b, h, q, kv) = kv <= q and (q // 128 == kv // 128 or sel[h, q // 128, 0] == kv // 128 or sel[h, q // 128, 1] == kv // 128 or sel[h, q // 128, 2] == kv // 128 or sel[h, q // 128, 3] == kv // 128)

attention moba_3d {
    mask = moba_3d
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
