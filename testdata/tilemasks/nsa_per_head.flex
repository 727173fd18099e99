# NSA's selected branch per head: each 64-query block attends its own
# block causally plus 8 earlier 64-key blocks chosen per head by sel
# (flattened [H, blocks * 8]; -1 selects nothing). Two query blocks share a
# 128-row tile, so the kernel reads both blocks' selections.

buffer sel: i32[H, 4096]  # 8 block numbers per query block, Q <= 32768

mask nsa(b, h, q, kv) = kv <= q and (q // 64 == kv // 64 or sel[h, (q // 64) * 8 + 0] == kv // 64 or sel[h, (q // 64) * 8 + 1] == kv // 64 or sel[h, (q // 64) * 8 + 2] == kv // 64 or sel[h, (q // 64) * 8 + 3] == kv // 64 or sel[h, (q // 64) * 8 + 4] == kv // 64 or sel[h, (q // 64) * 8 + 5] == kv // 64 or sel[h, (q // 64) * 8 + 6] == kv // 64 or sel[h, (q // 64) * 8 + 7] == kv // 64)

attention nsa_per_head {
    mask = nsa
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
