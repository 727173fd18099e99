# functools.partial binding a mod's own parameters, in the shapes FlexAttention
# code writes it: an offset bound by name after the four index parameters
# (torchtune's kv_offset_mask_flex(b, h, q_idx, kv_idx, offset) with
# partial(..., offset=...)), a rank bound first by position
# (functools.partial(causal_mask, rank), a PyTorch issue's repro), a length
# and a captured tensor bound before them (partial(causal_mask_mode,
# max_seq_length, block_lengths)), a parameter taken only by name (def
# causal_mask_mod(b, h, q_idx, kv_idx, *, context_len), bound with
# partial(causal_mask_mod, context_len=ctx_len) in several public tests), a
# score's slope bound by name, and the same def used as a mod of its own
# where it takes exactly the mod's parameters. The imports are as pasted.
import functools
from functools import partial

import torch

buffer block_lengths: i32[B, 4]

def kv_offset_mask_flex(b, h, q_idx, kv_idx, offset):
    return (q_idx + offset) >= kv_idx

def causal_mask(rank, b, h, q_idx, kv_idx):
    return q_idx + rank * 128 >= kv_idx

def causal_mask_mode(max_seq_length, block_lengths, b, _, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (kv_idx < block_lengths[b, 0] % max_seq_length + 64)

def causal_mask_mod(b, h, q_idx, kv_idx, *, context_len):
    return (q_idx + context_len) >= kv_idx

def plain_causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def linear_bias(score, b, h, q_idx, kv_idx, slope):
    return score + slope * (kv_idx - q_idx)

attention offset_layer {
    mask = partial(kv_offset_mask_flex, offset=16)
}

attention rank_layer {
    mask = functools.partial(causal_mask, 1)
}

attention lengths_layer {
    mask = partial(causal_mask_mode, 256, block_lengths)
}

attention context_layer {
    mask = partial(causal_mask_mod, context_len=32)
}

attention biased_layer {
    mask = or_masks(plain_causal, partial(plain_causal))
    score = partial(linear_bias, slope=0.25)
}
