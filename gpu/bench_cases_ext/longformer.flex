# Longformer: a symmetric sliding window plus global tokens, marked in a
# buffer, that see and are seen by every token.

param W = 256

buffer is_global: bool[KV]  # true at the global tokens

mask longformer(b, h, q, kv) = abs(q - kv) <= W or is_global[q] or is_global[kv]

attention longformer {
    mask = longformer
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
