# attention-gym: causal mask.
def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

attention causal {
    mask = causal_mask
}
