# torchtune's Llama 4 chunked attention (pytorch/torchtune,
# torchtune/models/llama4/_chunked_attention.py): the factory as written,
# its mask= branches included, but for two edits: its TODO and
# `if not _SUPPORTS_FLEX_ATTENTION: raise ...` guard are left out, and it
# returns the inner mod where torchtune returns create_block_mask(...) of
# it. causal_mask_flex is torchtune's, without its docstring
# (torchtune/modules/attention_utils.py).
def causal_mask_flex(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def get_chunked_attention_mask(
    mask: Optional[_MaskType],
    chunk_size: int,
    bsz: int,
    seq_len: int,
) -> _MaskType:
    """ """
    if mask is None:
        mask_mod = causal_mask_flex
        q_seq_len, kv_seq_len = seq_len, seq_len
    elif isinstance(mask, BlockMask):
        mask_mod = mask.mask_mod
        q_seq_len, kv_seq_len = mask.seq_lengths
    else:
        raise ValueError("Unsupported mask type")

    def chunked_attention_mask_mod(
        b: torch.Tensor, h: torch.Tensor, q_idx: torch.Tensor, kv_idx: torch.Tensor
    ):
        # Get the chunk index of the query and key
        q_chunk = q_idx // chunk_size
        kv_chunk = kv_idx // chunk_size
        # Only allow attention within the same batch
        same_chunk = q_chunk == kv_chunk
        # Apply the original mask mod
        inner_mask = mask_mod(b, h, q_idx % chunk_size, kv_idx % chunk_size)
        return same_chunk & inner_mask

    return chunked_attention_mask_mod

attention llama4_chunked {
    mask = get_chunked_attention_mask(None, 8192, 2, 16384)
}

attention llama4_chunked_small {
    mask = get_chunked_attention_mask(None, 64, 2, 320)
}
