# Gemma 4's sliding-attention layers as transformers builds them for a
# training step with images (models/gemma4, masking_utils): a causal
# sliding window of 1024 keys, or-ed with bidirectional attention inside each
# vision group. image_group_ids[b, t] is the group of token t (-1 for text).
buffer image_group_ids: i32[B, KV]

def sliding_window_overlay(sliding_window: int):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx > q_idx - sliding_window
    return inner_mask

def causal_mask_function(batch_idx, head_idx, q_idx, kv_idx):
    return kv_idx <= q_idx

def token_type_ids_mask_function(image_group_ids):
    def inner_mask(batch_idx: int, head_idx: int, q_idx: int, kv_idx: int) -> bool:
        seq_length = image_group_ids.shape[-1]

        # clamp indices because with static cache they can go beyond `image_group_ids.shape[-1]`
        q_idx_clamped = q_idx.clamp(max=seq_length - 1)
        kv_idx_clamped = kv_idx.clamp(max=seq_length - 1)

        # Unmask if the q and kv come from same group which is not -1 (i.e. non-text)
        q_group = image_group_ids[batch_idx, q_idx_clamped]
        kv_group = image_group_ids[batch_idx, kv_idx_clamped]
        q_group = torch.where(q_idx < seq_length, q_group, -1)
        kv_group = torch.where(kv_idx < seq_length, kv_group, -1)
        return (q_group == kv_group) & (q_group >= 0)

    return inner_mask

attention sliding_layer {
    mask = or_masks(and_masks(causal_mask_function, sliding_window_overlay(1024)), token_type_ids_mask_function(image_group_ids))
    layout = bshd
    dtype = bf16
    head_dim = 128
}
