# Packed sequences: several documents share one row of tokens, and a token
# attends causally within its own document only.

buffer doc: i32[KV] segments  # document id of each token, non-decreasing

mask causal(b, h, q, kv) = q >= kv
mask same_doc(b, h, q, kv) = doc[q] == doc[kv]

attention packed_layer {
    mask = and_masks(causal, same_doc)
    layout = bshd
    dtype = bf16
    head_dim = 128
}
