# torchtune's packed-sequence mask (pytorch/torchtune,
# torchtune/modules/attention_utils.py): the mask_mod that
# packed_block_causal_mask defines, pasted as written, at top level; the
# lines around it that build document_ids and the BlockMask are left out.
# document_ids is torch.long there.
buffer document_ids: i64[B, KV]

def mask_mod(b, h, q_idx, kv_idx):
    """
    Defines the logic of a block causal mask by combining both a standard causal mask
    and a block diagonal document mask.

    See :func:`~torchtune.modules.attention_utils.create_block_causal_mask`
    for an illustration.
    """
    causal_mask = q_idx >= kv_idx
    document_mask = document_ids[b, q_idx] == document_ids[b, kv_idx]
    return causal_mask & document_mask

attention packed {
    mask = mask_mod
}
