# MoBA with 16 selected 128-key blocks per 128-query block, one selection
# shared by every head (flattened [blocks * 16]; -1 selects nothing).

buffer sel: i32[4096]  # 16 block numbers per query block, Q <= 32768

mask moba16(b, h, q, kv) = kv <= q and (q // 128 == kv // 128 or sel[(q // 128) * 16 + 0] == kv // 128 or sel[(q // 128) * 16 + 1] == kv // 128 or sel[(q // 128) * 16 + 2] == kv // 128 or sel[(q // 128) * 16 + 3] == kv // 128 or sel[(q // 128) * 16 + 4] == kv // 128 or sel[(q // 128) * 16 + 5] == kv // 128 or sel[(q // 128) * 16 + 6] == kv // 128 or sel[(q // 128) * 16 + 7] == kv // 128 or sel[(q // 128) * 16 + 8] == kv // 128 or sel[(q // 128) * 16 + 9] == kv // 128 or sel[(q // 128) * 16 + 10] == kv // 128 or sel[(q // 128) * 16 + 11] == kv // 128 or sel[(q // 128) * 16 + 12] == kv // 128 or sel[(q // 128) * 16 + 13] == kv // 128 or sel[(q // 128) * 16 + 14] == kv // 128 or sel[(q // 128) * 16 + 15] == kv // 128)

attention moba_k16_shared {
    mask = moba16
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
