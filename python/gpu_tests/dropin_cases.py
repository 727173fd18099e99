"""The cases of check_dropin.py: mask_mods and score_mods in the shapes of
PyTorch's test/inductor/test_flex_attention.py (its builtin score mods,
captured buffers, GQA, block masks) and attention-gym, written as users
write them, for maskc.torch.flex_attention to read from this file.

A case is CASES[name](T, B, H, S) -> Case: T makes the captured tensors
(T.ints(shape, hi), T.floats(shape, scale, grad), T.docs(S), T.doc_offsets(S)
-> (offsets [7], document ids [S]), T.padding(B, S) -> bool [B, S]); check_dropin.py
passes real CUDA tensors, python/tests/test_flex.py stand-ins (to check on
the host that maskc reads and compiles every case)."""
import torch


class Case:
    """One call: mods, the grouped heads, whether the LSE is checked, the
    captured float tensors whose gradients are checked."""

    def __init__(self, mask_mod=None, score_mod=None, hkv=None, lse=False, leaves=(), scale=None,
                 torch_block_mask=False, head_dim=None):
        self.mask_mod, self.score_mod, self.hkv, self.lse = mask_mod, score_mod, hkv, lse
        self.leaves, self.scale = list(leaves), scale
        self.torch_block_mask = torch_block_mask  # maskc is handed torch's own BlockMask
        self.head_dim = head_dim  # None: the run's; 16 is zero-padded to a kernel's 64 by maskc


# ---- score mods in the shapes of test_flex_attention.py's builtin ones

def _causal(score, b, h, token_q, token_kv):
    return torch.where(token_q >= token_kv, score, float("-inf"))


def _rel_bias(score, b, h, m, n):
    return score + (m - n)


def _rel_causal(score, b, h, m, n):
    return torch.where(m >= n, score + (m - n), float("-inf"))


def _generate_alibi_bias(num_heads):
    def _alibi_bias(score, b, h, m, n):
        return score + (m - n) * (h + 1) / num_heads
    return _alibi_bias


def _times_two(score, b, h, m, n):
    return score * 2


def _squared(score, b, h, m, n):
    return score * score


def _head_offset_factory(head_offset):
    def score_mod(score, b, h, m, n):
        return score * head_offset[h]
    return score_mod


def _bias_table(bias):
    # a learned [Q, KV] bias (test_load_from_bias_seq_only), with its gradient
    def bias_mod(score, b, h, q_idx, kv_idx):
        return score + bias[q_idx, kv_idx]
    return bias_mod


def _captured_all_dims(head_scale, batch_scale, q_scale, kv_scale):
    def all_bias(score, b, h, q_idx, kv_idx):
        score = score + head_scale[h]
        score = score + batch_scale[b]
        score = score + q_scale[q_idx]
        score = score + kv_scale[kv_idx]
        return score
    return all_bias


# ---- attention-gym masks

def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def generate_sliding_window(window_size):
    def sliding_window(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= window_size
    sliding_window.__name__ = f"sliding_window_{window_size}"
    return sliding_window


def generate_prefix_lm_mask(prefix_length):
    def prefix_mask(b, h, q_idx, kv_idx):
        return kv_idx < prefix_length
    return prefix_mask


def generate_doc_mask_mod(mask_mod, document_id):
    def doc_mask_wrapper(b, h, q_idx, kv_idx):
        same_doc = document_id[q_idx] == document_id[kv_idx]
        inner_mask = mask_mod(b, h, q_idx, kv_idx)
        return same_doc & inner_mask
    return doc_mask_wrapper


def generate_doc_mask_with_offsets(mask_mod, offsets, document_id):
    # attention-gym's document mask: the inner mask sees positions within each document
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
    return dilated_sliding_window


def generate_alibi_slopes(alibi_slopes):
    def alibi_score_mod(score, b, h, q_idx, kv_idx):
        bias = alibi_slopes[h] * (kv_idx - q_idx)
        return score + bias
    return alibi_score_mod


def generate_tanh_softcap(soft_cap):
    def tanh_softcap(score, b, h, q_idx, kv_idx):
        return soft_cap * torch.tanh(score / soft_cap)
    return tanh_softcap


def half_rows(rows):
    # rows at and past `rows` keep nothing: FlexAttention outputs 0 there and an LSE of -inf
    def first_rows_causal(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx < rows)
    return first_rows_causal


def _and_masks(*mods):
    from maskc.flex import and_masks  # what maskc.torch exports
    return and_masks(*mods)


def _torch_and_masks(*mods):
    from torch.nn.attention.flex_attention import and_masks
    return and_masks(*mods)


def _transformers_mask(T, B, H, S):
    # Hugging Face's own mask functions, read from the installed transformers' source
    from transformers import masking_utils as tm
    return tm.and_masks(tm.sliding_window_causal_mask_function(S // 4), tm.padding_mask_function(T.padding(B, S)))


def _or_masks(*mods):
    from maskc.flex import or_masks
    return or_masks(*mods)


CASES = {
    "identity": lambda T, B, H, S: Case(),
    "causal_score": lambda T, B, H, S: Case(score_mod=_causal, lse=True),
    "rel_bias": lambda T, B, H, S: Case(score_mod=_rel_bias),
    "rel_causal": lambda T, B, H, S: Case(score_mod=_rel_causal),
    "alibi_bias": lambda T, B, H, S: Case(score_mod=_generate_alibi_bias(H)),
    "times_two": lambda T, B, H, S: Case(score_mod=_times_two, scale=0.0625),
    "squared": lambda T, B, H, S: Case(score_mod=_squared),
    "head_offset": lambda T, B, H, S: Case(score_mod=_head_offset_factory(T.floats((H,), 1.0, False))),
    "captured_all_dims": lambda T, B, H, S: Case(
        score_mod=_captured_all_dims(T.floats((H,), 1.0, False), T.floats((B,), 1.0, False),
                                     T.floats((S,), 1.0, False), T.floats((S,), 1.0, False)), lse=True),
    "block_causal": lambda T, B, H, S: Case(mask_mod=causal_mask, lse=True),
    "sliding_window": lambda T, B, H, S: Case(mask_mod=_and_masks(causal_mask, generate_sliding_window(S // 4))),
    "document_causal": lambda T, B, H, S: Case(mask_mod=generate_doc_mask_mod(causal_mask, T.docs(S)), lse=True),
    "prefix_lm": lambda T, B, H, S: Case(mask_mod=_or_masks(generate_prefix_lm_mask(S // 8), causal_mask)),
    "gqa_alibi_grad": lambda T, B, H, S: _with_leaf(T.floats((H,), 0.1, True), lambda s: Case(
        mask_mod=causal_mask, score_mod=generate_alibi_slopes(s), hkv=max(1, H // 4), lse=True, leaves=[s])),
    "bias_table_grad": lambda T, B, H, S: _with_leaf(T.floats((S, S), 1.0, True), lambda t: Case(
        score_mod=_bias_table(t), leaves=[t])),
    "softcap_gqa": lambda T, B, H, S: Case(mask_mod=causal_mask, score_mod=generate_tanh_softcap(20.0),
                                           hkv=max(1, H // 2)),
    "empty_rows": lambda T, B, H, S: Case(mask_mod=half_rows(S // 2), lse=True),
    "document_offsets_window": lambda T, B, H, S: Case(
        mask_mod=generate_doc_mask_with_offsets(generate_sliding_window(S // 8), *T.doc_offsets(S)), lse=True),
    "dilated_window": lambda T, B, H, S: Case(mask_mod=generate_dilated_sliding_window(S // 4, 3)),
    "head_dim_16": lambda T, B, H, S: Case(mask_mod=causal_mask, score_mod=_rel_bias, lse=True, head_dim=16),
    "torch_and_masks_block_mask": lambda T, B, H, S: Case(
        mask_mod=_torch_and_masks(causal_mask, generate_sliding_window(S // 3)), torch_block_mask=True),
    "transformers_masks": lambda T, B, H, S: Case(mask_mod=_transformers_mask(T, B, H, S), lse=True),
}

#: The cases that need torch's own FlexAttention module or transformers (not run on the host).
TORCH_ONLY = ("torch_and_masks_block_mask", "transformers_masks")


def _with_leaf(t, make):
    return make(t)


#: The cases also run through torch.compile (maskc's call inside a compiled function).
COMPILED = ("document_causal", "gqa_alibi_grad")
