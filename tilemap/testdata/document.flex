# Packed documents of unequal lengths, causal within each (the shape of
# examples/document_causal.flex).
buffer doc: i32[KV] segments

mask document(b, h, q, kv) = q >= kv and doc[q] == doc[kv]

attention packed {
    mask = document
}
