# Factories that return a combination of their inner function (and set its
# __name__), keyword and default arguments, and a factory taking a mod, in
# the forms attention-gym and the FlexAttention docs use (issue 28).
def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def generate_sliding_window(window_size: int):
    def sliding_window(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= window_size

    sliding_window_mask = and_masks(sliding_window, causal_mask)
    sliding_window_mask.__name__ = f"sliding_window_{window_size}"
    return sliding_window_mask

def generate_prefix_lm_mask(prefix_length: int, causal: bool = True):
    def prefix_mask(b, h, q_idx, kv_idx):
        return kv_idx < prefix_length
    return or_masks(prefix_mask, causal_mask)

def generate_offset(mask_mod, offset: int):
    def offset_mask(b, h, q_idx, kv_idx):
        return mask_mod(b, h, q_idx + offset, kv_idx)
    return offset_mask

attention swa_factory {
    mask = generate_sliding_window(window_size=96)
}
attention prefix_lm_factory {
    mask = generate_prefix_lm_mask(prefix_length=40)
}
attention offset_window {
    mask = generate_offset(generate_sliding_window(24), offset=8)
}
