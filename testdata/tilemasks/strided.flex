# Sparse Transformer's strided pattern spelled with %: causal, keys in the
# query's 256-window or on the query's stride (every 256th key back).

param S = 256

mask strided(b, h, q, kv) = kv <= q and (q - kv < S or (q - kv) % S == 0)

attention strided {
    mask = strided
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
