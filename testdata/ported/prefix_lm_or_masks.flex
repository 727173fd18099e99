# Prefix LM composed with or_masks, as the FlexAttention blog writes it.
def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def generate_prefix_mask(prefix_length: int):
    def prefix_mask(b, h, q_idx, kv_idx):
        return kv_idx < prefix_length
    return prefix_mask

attention prefix_or {
    mask = or_masks(causal_mask, generate_prefix_mask(77))
}
