# Packed documents: causal attention inside each document.
buffer doc: i32[KV] segments

mask same_doc(b, h, q, kv) = doc[q] == doc[kv]
mask causal_mask(b, h, q, kv) = q >= kv

attention document_causal {
    mask = and_masks(causal_mask, same_doc)
}
