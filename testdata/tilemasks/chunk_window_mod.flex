# Chunked local attention spelled with // and %: causal inside 1024-token
# chunks, at most 255 positions back.

param C = 1024
param W = 256

mask chunk_window(b, h, q, kv) = q // C == kv // C and 0 <= q % C - kv % C < W

attention chunk_window_mod {
    mask = chunk_window
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
