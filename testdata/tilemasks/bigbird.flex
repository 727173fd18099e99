# BigBird: 64-token blocks, a window of one block either side, the first
# block global (both ways), and 3 random key blocks per query block and head
# (rnd, flattened [H, Q/64 * 3]).

buffer rnd: i32[H, 1536]  # 3 block numbers per query block, Q <= 32768

mask bigbird(b, h, q, kv) = abs(q // 64 - kv // 64) <= 1 or q < 64 or kv < 64 or rnd[h, (q // 64) * 3 + 0] == kv // 64 or rnd[h, (q // 64) * 3 + 1] == kv // 64 or rnd[h, (q // 64) * 3 + 2] == kv // 64

attention bigbird {
    mask = bigbird
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
