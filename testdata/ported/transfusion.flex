# lucidrains/transfusion-pytorch's attention mask, pasted: causal, or-ed with
# bidirectional attention inside each modality span of the sequence, the spans
# a per-sequence table of (type, offset, length) rows (padded with zeros).
# Declared i32: an i64 offset + length could overflow (E311). Its imports as
# pasted.
import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from jaxtyping import Int

buffer modalities: i32[B, 8, 3]

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def modality(offset, length):
    def mask_fn(b, h, q_idx, kv_idx):
        return (q_idx >= offset) & (kv_idx < (offset + length))

    return mask_fn

def transfusion_attn_mask(modalities: Int['b m 3']):
    modalities = modalities.long()

    def mask_mod(b, h, q_idx, kv_idx):
        mask = causal(b, h, q_idx, kv_idx)

        modality_batch = modalities[b]

        for _, offset, length in modality_batch:
            mask = mask | modality(offset, length)(b, h, q_idx, kv_idx)

        return mask

    return mask_mod

attention transfusion_layer {
    mask = transfusion_attn_mask(modalities)
}
