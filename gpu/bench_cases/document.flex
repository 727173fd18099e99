# flex_baseline.py "document": causal within a document. doc is the
# document id of each token (torch.Generator seed 1, lengths drawn from
# [256, 2048), as gpu/maskc_gpu.py doc_ids builds it).

buffer doc: i32[KV] segments  # document id of each token, non-decreasing

mask document(b, h, q, kv) = doc[q] == doc[kv] and q >= kv

attention document {
    mask = document
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
