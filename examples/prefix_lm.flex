# Prefix LM: the first PREFIX tokens attend bidirectionally,
# the rest causally.

param PREFIX = 2048

mask prefix_lm(b, h, q, kv) = kv < PREFIX or q >= kv

attention prefix_layer {
    mask = prefix_lm
    layout = bshd
    dtype = bf16
    head_dim = 128
}
