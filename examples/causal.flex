# Causal (autoregressive) attention: query q sees keys 0..q.
# Indices are top-left aligned, as in FlexAttention.

mask causal(b, h, q_idx, kv_idx) = q_idx >= kv_idx

attention decoder {
    mask = causal
    layout = bshd
    dtype = bf16
    head_dim = 128
}
