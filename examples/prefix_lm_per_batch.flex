# Prefix LM with a different prefix length for every sequence of the batch.

buffer prefix_len: i32[B]  # prefix length of each sequence, read at run time

mask prefix_lm(b, h, q, kv) = kv < prefix_len[b] or q >= kv

attention prefix_layer {
    mask = prefix_lm
    layout = bshd
    dtype = bf16
    head_dim = 128
}
