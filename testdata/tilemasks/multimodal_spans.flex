# Packed multimodal documents with the image spans numbered as runs: span
# numbers every run of text or image tokens (non-decreasing, so declared
# segments), is_img marks image tokens. Causal inside each document,
# bidirectional inside each image span.

buffer doc: i32[KV] segments
buffer span: i32[KV] segments
buffer is_img: bool[KV]

mask mm(b, h, q, kv) = doc[q] == doc[kv] and (q >= kv or (is_img[q] and span[q] == span[kv]))

attention multimodal_spans {
    mask = mm
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
