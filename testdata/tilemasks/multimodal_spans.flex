# Packed multimodal documents with each image span one position: span
# numbers the tokens in order, every text token its own number and every
# image span one number for all its tokens (non-decreasing, so declared
# segments). Causal inside each document, bidirectional inside each image
# span (for a text token span[q] == span[kv] is q == kv).

buffer doc: i32[KV] segments
buffer span: i32[KV] segments

mask mm(b, h, q, kv) = doc[q] == doc[kv] and (q >= kv or span[q] == span[kv])

attention multimodal_spans {
    mask = mm
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
