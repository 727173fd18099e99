# Half the heads causal, half bidirectional.
def mixed_heads(b, h, q_idx, kv_idx):
    is_causal_head = h < 2
    return (q_idx >= kv_idx) | ~is_causal_head

attention mixed {
    mask = mixed_heads
}
