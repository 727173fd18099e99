# attention-gym's Block Diffusion (BD3-LM) training mask
# (meta-pytorch/attention-gym, attn_gym/masks/block_diffusion.py), pasted as
# written: noised tokens x_t in [0, seq_len), clean tokens x_0 after them.
def generate_block_diffusion_mask(seq_len: int, block_size: int) -> _mask_mod_signature:
    """Generates the Block Diffusion training mask from BD3-LM section 3.1.

    Training runs attention over a length ``2 * seq_len`` sequence: the noised
    tokens ``x_t`` occupy positions ``[0, seq_len)`` and the clean tokens ``x_0``
    occupy positions ``[seq_len, 2 * seq_len)``. The mask is the union of three
    pieces:

    - Block Diagonal: noised tokens attend bidirectionally within their own block.
    - Offset Block Causal: noised tokens attend to clean tokens in strictly
      previous blocks.
    - Block Causal: clean tokens attend to clean tokens in their own and previous
      blocks.

    Clean tokens never attend to noised tokens.

    Args:
        seq_len: Length of the clean sequence ``x_0``. The returned mask_mod is
            defined over indices in ``[0, 2 * seq_len)``.
        block_size: Diffusion block size ``L'``; the sequence is partitioned into
            contiguous blocks of this many tokens.
    """

    def block_diffusion_mask(b, h, q_idx, kv_idx):
        q_noised = q_idx < seq_len
        kv_noised = kv_idx < seq_len
        q_block = (q_idx % seq_len) // block_size
        kv_block = (kv_idx % seq_len) // block_size

        block_diagonal = (q_block == kv_block) & (q_noised == kv_noised)
        offset_block_causal = (q_block > kv_block) & q_noised & ~kv_noised
        block_causal = (q_block >= kv_block) & ~q_noised & ~kv_noised
        return block_diagonal | offset_block_causal | block_causal

    block_diffusion_mask.__name__ = f"block_diffusion_{seq_len}_{block_size}"
    return block_diffusion_mask

attention bd3lm {
    mask = generate_block_diffusion_mask(4096, 16)
}

attention bd3lm_small {
    mask = generate_block_diffusion_mask(160, 16)
}
