"""Mods as attention-gym, PyTorch's FlexAttention tests and blog write them,
read by maskc.torch.flex_attention in test_flex.py (pasted shapes; the
factories take their tensors from the tests)."""
import math

import torch
import torch as T  # an alias maskc must recognise


def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def generate_sliding_window(window_size):
    def sliding_window(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= window_size

    sliding_window.__name__ = f"sliding_window_{window_size}"
    return sliding_window


def generate_doc_mask_mod(mask_mod, document_id):
    # attention-gym's document mask: a mask_mod applied inside each document,
    # offsets from a captured tensor
    def doc_mask_wrapper(b, h, q_idx, kv_idx):
        same_doc = document_id[q_idx] == document_id[kv_idx]
        inner_mask = mask_mod(b, h, q_idx, kv_idx)
        return same_doc & inner_mask

    return doc_mask_wrapper


def generate_prefix_lm_mask(prefix_length):
    def prefix_mask(b, h, q_idx, kv_idx):
        return kv_idx < prefix_length

    return prefix_mask


def generate_alibi_bias(slopes):
    def alibi_mod(score, b, h, q_idx, kv_idx):
        bias = slopes[h] * (kv_idx - q_idx)
        return score + bias

    return alibi_mod


def generate_tanh_softcap(soft_cap, approx=False):
    def tanh_softcap(score, b, h, q_idx, kv_idx):
        return soft_cap * T.tanh(score / soft_cap)

    return tanh_softcap


def relative_positional(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx)


def checkerboard(score, b, h, q_idx, kv_idx):
    score = torch.where(torch.abs(kv_idx - q_idx) % 2 == 1, score * 0.5, score)
    score = torch.where(torch.abs(kv_idx - q_idx) % 2 == 0, score * 2.0, score)
    return score


def log_distance(score, b, h, q_idx, kv_idx):
    return score - math.log(2.0) * torch.log(1 + (q_idx - kv_idx).abs().float())


LAMBDA_CAUSAL = lambda b, h, q, kv: q >= kv  # noqa: E731

TWO_LAMBDAS = (lambda b, h, q, kv: q >= kv, lambda b, h, q, kv: q <= kv)  # noqa: E731


def uses_unknown(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx + not_defined_anywhere  # noqa: F821


class Holder:
    def method_mask(self, b, h, q_idx, kv_idx):
        return q_idx >= kv_idx


def captures_object(config):
    def mask(b, h, q_idx, kv_idx):
        return q_idx - kv_idx < config

    return mask


def generate_cast(dtype, scale):
    def cast_score(score, b, h, q_idx, kv_idx):
        return score + (q_idx - kv_idx).to(dtype) * scale
    return cast_score


def generate_scaled(h):
    # the factory's argument is named like a later mod's parameter `h`
    def scaled(score, b, hh, q_idx, kv_idx):
        return score * h
    return scaled


def generate_head_mask(n):
    def head_mask(b, h, q_idx, kv_idx):
        return h < n
    return head_mask


def python_and(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx and kv_idx >= 0


def generate_window_default(window):
    def windowed(b, h, q_idx, kv_idx, w=window, causal=True):
        # the defaults are captured when the factory runs
        return (q_idx - kv_idx <= w) & ((q_idx >= kv_idx) | (not causal))
    return windowed


LAMBDA_DEFAULT = [lambda b, h, q, kv, n=n: q - kv < n for n in (3, 7)]  # noqa: E731


REGISTRY = []


def register(fn):
    REGISTRY.append(fn)
    return fn


@register
def registered_causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def call_with_lambda(make):
    # a lambda spanning lines inside a call, as create_block_mask(lambda ...) is often written
    return make(
        lambda b, h, q, kv: (q >= kv)
        & (q - kv < 8),
        "other argument",
    )


def generate_doc_mask_with_offsets(mask_mod, offsets, document_id):
    # attention-gym's shape: the inner mask sees positions within the document
    def doc_mask_mod(b, h, q_idx, kv_idx):
        same_doc = document_id[q_idx] == document_id[kv_idx]
        q_logical = q_idx - offsets[document_id[q_idx]]
        kv_logical = kv_idx - offsets[document_id[kv_idx]]
        inner_mask = mask_mod(b, h, q_logical, kv_logical)
        return same_doc & inner_mask
    return doc_mask_mod


def generate_dilated_sliding_window(window_size, dilation):
    def dilated_sliding_window(b, h, q_idx, kv_idx):
        diff = torch.abs(q_idx - kv_idx)
        in_window = diff <= window_size
        is_dilated = (diff % dilation) == 0
        return in_window & is_dilated
    dilated_sliding_window.__name__ = f"dilated_sliding_window_{window_size}_dilation_{dilation}"
    return dilated_sliding_window


def generate_moba_mask(selected, block=128):
    # MoBA-style block selection with its natural 3-D tensor (issue 27):
    # selected[h, query block, j] names a key block each query block attends
    def moba_mask(b, h, q_idx, kv_idx):
        causal = q_idx >= kv_idx
        own = q_idx // block == kv_idx // block
        picked = (selected[h, q_idx // block, 0] == kv_idx // block) | (selected[h, q_idx // block, 1] == kv_idx // block)
        return causal & (own | picked)

    return moba_mask


# functools.partial of a def with parameters of its own (torchtune's
# kv_offset_mask_flex; a keyword-only context length; a rank first; ids).
def kv_offset_mask_flex(b, h, q_idx, kv_idx, offset):
    return (q_idx + offset) >= kv_idx


def context_mask_mod(b, h, q_idx, kv_idx, *, context_len):
    return (q_idx + context_len) >= kv_idx


def rank_mask(rank, b, h, q_idx, kv_idx):
    return q_idx + rank * 128 >= kv_idx


def ids_mask(ids, b, h, q_idx, kv_idx):
    return (ids[q_idx] == ids[kv_idx]) & (q_idx >= kv_idx)
