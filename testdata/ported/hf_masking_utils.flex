# transformers' masking_utils mask primitives (models/..., masking_utils.py), pasted as
# they are, and_masks and or_masks with their guards included; left_padding is
# declared i32 (an i64 offset could overflow q - left_padding, E311).
buffer padding_mask: bool[B, KV]
buffer packed_sequence_mask: i64[B, KV]
buffer left_padding: i32[B]

def and_masks(*mask_functions: Callable) -> Callable:
    """Returns a mask function that is the intersection of provided mask functions"""
    if not all(callable(arg) for arg in mask_functions):
        raise RuntimeError(f"All inputs should be callable mask_functions: {mask_functions}")

    def and_mask(batch_idx, head_idx, q_idx, kv_idx):
        result = q_idx.new_ones((), dtype=torch.bool)
        for mask in mask_functions:
            result = result & mask(batch_idx, head_idx, q_idx, kv_idx).to(result.device)
        return result

    return and_mask

def or_masks(*mask_functions: Callable) -> Callable:
    """Returns a mask function that is the union of provided mask functions"""
    if not all(callable(arg) for arg in mask_functions):
        raise RuntimeError(f"All inputs should be callable mask_functions: {mask_functions}")

    def or_mask(batch_idx, head_idx, q_idx, kv_idx):
        result = q_idx.new_zeros((), dtype=torch.bool)
        for mask in mask_functions:
            result = result | mask(batch_idx, head_idx, q_idx, kv_idx).to(result.device)
        return result

    return or_mask

def causal_mask_function(batch_idx: int, head_idx: int, q_idx: int, kv_idx: int) -> bool:
    """
    This creates a basic lower-diagonal causal mask.
    """
    return kv_idx <= q_idx

def sliding_window_overlay(sliding_window: int) -> Callable:
    def inner_mask(batch_idx: int, head_idx: int, q_idx: int, kv_idx: int) -> bool:
        return kv_idx > q_idx - sliding_window

    return inner_mask

def chunked_overlay(chunk_size: int, left_padding: torch.Tensor) -> Callable:
    def inner_mask(batch_idx: int, head_idx: int, q_idx: int, kv_idx: int) -> bool:
        return (kv_idx - left_padding[batch_idx]) // chunk_size == (q_idx - left_padding[batch_idx]) // chunk_size

    return inner_mask

def sliding_window_causal_mask_function(sliding_window: int) -> Callable:
    return and_masks(sliding_window_overlay(sliding_window), causal_mask_function)

def chunked_causal_mask_function(chunk_size: int, left_padding: torch.Tensor) -> Callable:
    return and_masks(chunked_overlay(chunk_size, left_padding), causal_mask_function)

def padding_mask_function(padding_mask: torch.Tensor) -> Callable:
    def inner_mask(batch_idx: int, head_idx: int, q_idx: int, kv_idx: int) -> bool:
        return padding_mask[batch_idx, kv_idx]

    return inner_mask

def packed_sequence_mask_function(packed_sequence_mask: torch.Tensor) -> Callable:
    def inner_mask(batch_idx: int, head_idx: int, q_idx: int, kv_idx: int) -> bool:
        return packed_sequence_mask[batch_idx, q_idx] == packed_sequence_mask[batch_idx, kv_idx]

    return inner_mask

def add_offsets_to_mask_function(mask_function: Callable, q_offset: int, kv_offset: int) -> Callable:
    def inner_mask(batch_idx: int, head_idx: int, q_idx: int, kv_idx: int) -> bool:
        return mask_function(batch_idx, head_idx, q_idx + q_offset, kv_idx + kv_offset)

    return inner_mask

attention swa_packed {
    mask = and_masks(sliding_window_causal_mask_function(4096), packed_sequence_mask_function(packed_sequence_mask), padding_mask_function(padding_mask))
}
attention llama4_chunked {
    mask = and_masks(chunked_causal_mask_function(8192, left_padding), padding_mask_function(padding_mask))
}
attention offset_causal {
    mask = add_offsets_to_mask_function(causal_mask_function, 128, 0)
}

attention causal_or_padded {
    mask = or_masks(causal_mask_function, padding_mask_function(padding_mask))
}
