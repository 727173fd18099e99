# Longformer-style union: a sliding window of 256 either side, the first
# 64 tokens global both ways (they see and are seen by every token).

mask window_global(b, h, q, kv) = abs(q - kv) <= 256 or q < 64 or kv < 64

attention window_global {
    mask = window_global
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
