# Prefix LM: a bidirectional prefix of 300 tokens, causal after it.
mask prefix(b, h, q, kv) = kv < 300 or q >= kv

attention prefix_layer {
    mask = prefix
}
