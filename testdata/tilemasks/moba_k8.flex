# MoBA with 8 selected blocks per 128-query block and head: each query
# block attends its own block causally plus the 8 earlier key blocks sel
# names (flattened [H, blocks * 8]; -1 selects nothing). Realistic
# contents: buffers.py.

buffer sel: i32[H, 2048]  # 8 block numbers per query block, Q <= 32768

mask moba8(b, h, q, kv) = kv <= q and (q // 128 == kv // 128 or sel[h, (q // 128) * 8 + 0] == kv // 128 or sel[h, (q // 128) * 8 + 1] == kv // 128 or sel[h, (q // 128) * 8 + 2] == kv // 128 or sel[h, (q // 128) * 8 + 3] == kv // 128 or sel[h, (q // 128) * 8 + 4] == kv // 128 or sel[h, (q // 128) * 8 + 5] == kv // 128 or sel[h, (q // 128) * 8 + 6] == kv // 128 or sel[h, (q // 128) * 8 + 7] == kv // 128)

attention moba_k8 {
    mask = moba8
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
