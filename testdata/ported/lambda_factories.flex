# Factories that return a lambda, the shape trainers' mask helpers take
# (`def sliding_window_mask(window_size: int) -> Callable[...]: return lambda
# b, h, q_idx, kv_idx: ...`): a window with a typed Callable return
# annotation, documents read through a tensor the factory closes over and
# indexed twice (`ids[b][q_idx]`), a wrapper that shifts another mod's query
# positions by a shard offset (context parallelism), a value computed before
# the return, a lambda bound to a name that the factory returns, a lambda
# inside the or_masks the factory returns, one whose parameters are taken
# only by name (a bare `*` first), one that combines its lambda with
# and_masks before returning, and a score. The imports are as pasted.
from typing import Callable

import torch
from torch import Tensor

buffer doc_ids: i32[B, KV]

def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def sliding_window_mask(window_size: int) -> Callable[[int, int, Tensor, Tensor], Tensor]:
    return lambda b, h, q_idx, kv_idx: kv_idx >= q_idx - window_size

def document_mask(documents: Tensor) -> Callable:
    return lambda b, h, q_idx, kv_idx: documents[b][q_idx] == documents[b][kv_idx]

def shard_shifted(mask_mod, rank: int, shard_len: int):
    offset = rank * shard_len
    return lambda b, h, q_idx, kv_idx: mask_mod(
        b, h, q_idx + offset, kv_idx
    )

def prefix_mask(prefix_len: int):
    mask_fn = lambda b, h, q_idx, kv_idx: kv_idx < prefix_len
    return mask_fn

def prefix_lm_mask(prefix_len: int):
    return or_masks(causal_mask, lambda b, h, q_idx, kv_idx: kv_idx < prefix_len)

def chunked_mask(*, chunk: int, causal: bool = True):
    return lambda b, h, q_idx, kv_idx: (q_idx // chunk == kv_idx // chunk) & ((kv_idx <= q_idx) | (not causal))

def banded_causal(width: int):
    half = width // 2
    near = lambda b, h, q_idx, kv_idx: (q_idx - kv_idx).abs() <= half
    both = and_masks(near, causal_mask)
    return both

def tanh_softcap(cap: float):
    return lambda score, b, h, q_idx, kv_idx: cap * torch.tanh(score / cap)

attention local_layer {
    mask = and_masks(causal_mask, sliding_window_mask(96))
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention packed_layer {
    mask = and_masks(causal_mask, document_mask(doc_ids))
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention shard_layer {
    mask = shard_shifted(causal_mask, 1, 160)
    score = tanh_softcap(20.0)
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention prefix_layer {
    mask = or_masks(causal_mask, prefix_mask(64))
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention prefix_lm_layer {
    mask = prefix_lm_mask(48)
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention chunk_layer {
    mask = chunked_mask(chunk=64)
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention band_layer {
    mask = banded_causal(96)
    layout = bshd
    dtype = bf16
    head_dim = 128
}
