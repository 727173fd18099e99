# Packed multimodal documents: causal inside each document, bidirectional
# inside each image span (img >= 0 numbers the span, -1 for text).

buffer doc: i32[KV] segments
buffer img: i32[KV]

mask mm(b, h, q, kv) = doc[q] == doc[kv] and (q >= kv or (img[q] >= 0 and img[q] == img[kv]))

attention multimodal {
    mask = mm
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
