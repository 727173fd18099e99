# Packed documents with a causal sliding window inside each document.

param W = 512

buffer doc: i32[KV] segments  # document id of each token, non-decreasing

mask doc_swa(b, h, q, kv) = doc[q] == doc[kv] and kv <= q and q - kv < W

attention document_sliding {
    mask = doc_swa
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
