# attention-gym's Longformer global + sliding window mask
# (meta-pytorch/attention-gym, attn_gym/masks/global_sliding_window.py),
# pasted as written; is_global marks the global tokens.
buffer is_global: bool[KV]

def generate_global_sliding_window(window_size: int, is_global: Tensor) -> _mask_mod_signature:
    """Generates a Longformer-style global + sliding window attention mask.

    Args:
        window_size: The symmetric sliding window radius; position i attends to
            positions j with abs(i - j) <= window_size.
        is_global: Boolean tensor of shape [SEQ_LEN] marking global tokens
            (e.g. CLS or task tokens). Global tokens attend to all positions and
            all positions attend to them.

    Note:
        Following the Longformer paper, attention is bidirectional: local
        attention is a window centered on each position, and global attention is
        symmetric. Compose with a causal mask via `and_masks` for decoder use.
    """

    def sliding_window(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx).abs() <= window_size

    def global_attention(b, h, q_idx, kv_idx):
        return is_global[q_idx] | is_global[kv_idx]

    global_sliding_window_mask = or_masks(sliding_window, global_attention)
    global_sliding_window_mask.__name__ = f"global_sliding_window_{window_size}"
    return global_sliding_window_mask

attention longformer {
    mask = generate_global_sliding_window(32, is_global)
}
