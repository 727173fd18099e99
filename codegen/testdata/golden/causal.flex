# Causal attention, top-left aligned.
mask causal_mask(b, h, q_idx, kv_idx) = q_idx >= kv_idx

attention causal {
    mask = causal_mask
    head_dim = 128
}
