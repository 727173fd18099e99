# Sparse Transformer strided pattern: causal, and the same stride phase.
def strided(b, h, q_idx, kv_idx):
    stride = 8
    causal_mask = q_idx >= kv_idx
    same_phase = (q_idx - kv_idx) % stride == 0
    recent = q_idx - kv_idx < stride
    return causal_mask & (same_phase | recent)

attention strided {
    mask = strided
}
