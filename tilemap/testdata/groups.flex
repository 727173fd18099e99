# Pre-pass masks whose terms relate q and kv through buffer values: Gemma 4's
# sliding layer with images (a causal window or-ed with both positions in the
# same image group, -1 for text) and packed multimodal documents (causal
# inside each document, bidirectional inside each image span).
buffer g: i32[KV]
buffer doc: i32[KV] segments

mask gemma(b, h, q, kv) = (kv <= q and kv > q - 300) or (g[q] >= 0 and g[q] == g[kv])
mask multimodal(b, h, q, kv) = doc[q] == doc[kv] and (q >= kv or (g[q] >= 0 and g[q] == g[kv]))

attention gemma_layer {
    mask = gemma
}

attention multimodal_layer {
    mask = multimodal
}
