# Check case at head dim 256: packed documents, causal within each (a
# segments buffer searched by the kernel), in bhsd layout.

buffer doc: i32[KV] segments  # document id of each token, non-decreasing

mask causal(b, h, q, kv) = q >= kv
mask same_doc(b, h, q, kv) = doc[q] == doc[kv]

attention document_d256 {
    mask = and_masks(causal, same_doc)
    layout = bhsd
    dtype = bf16
    head_dim = 256
}
