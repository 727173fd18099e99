"""A stand-in for the parts of Hugging Face transformers maskc.transformers
reads: AttentionInterface / AttentionMaskInterface (register into a global
mapping) and transformers.masking_utils' mask functions, written here from
their documented semantics with the same names, so that maskc.transformers
recognises them as it does the real ones. They take Python ints and Grid
"tensors", so a test evaluates a composed mask pair by pair."""
import sys
import types

MASKING_UTILS = '''
def and_masks(*mask_functions):
    def and_mask(batch_idx, head_idx, q_idx, kv_idx):
        return all(m(batch_idx, head_idx, q_idx, kv_idx) for m in mask_functions)
    return and_mask


def or_masks(*mask_functions):
    def or_mask(batch_idx, head_idx, q_idx, kv_idx):
        return any(m(batch_idx, head_idx, q_idx, kv_idx) for m in mask_functions)
    return or_mask


def causal_mask_function(batch_idx, head_idx, q_idx, kv_idx):
    return kv_idx <= q_idx


def bidirectional_mask_function(batch_idx, head_idx, q_idx, kv_idx):
    return q_idx >= 0


def sliding_window_overlay(sliding_window):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx > q_idx - sliding_window
    return inner_mask


def sliding_window_bidirectional_overlay(sliding_window):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return abs(q_idx - kv_idx) <= sliding_window
    return inner_mask


def chunked_overlay(chunk_size, left_padding):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return (kv_idx - left_padding[batch_idx]) // chunk_size == (q_idx - left_padding[batch_idx]) // chunk_size
    return inner_mask


def blockwise_overlay(block_sequence_ids):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        q_group = block_sequence_ids[batch_idx, q_idx]
        return q_group == block_sequence_ids[batch_idx, kv_idx] and q_group >= 0
    return inner_mask


def sliding_window_causal_mask_function(sliding_window):
    return and_masks(sliding_window_overlay(sliding_window), causal_mask_function)


def sliding_window_bidirectional_mask_function(sliding_window):
    return and_masks(sliding_window_bidirectional_overlay(sliding_window), bidirectional_mask_function)


def chunked_causal_mask_function(chunk_size, left_padding):
    return and_masks(chunked_overlay(chunk_size, left_padding), causal_mask_function)


def padding_mask_function(padding_mask):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return bool(padding_mask[batch_idx, kv_idx])
    return inner_mask


def packed_sequence_mask_function(packed_sequence_mask):
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return packed_sequence_mask[batch_idx, q_idx] == packed_sequence_mask[batch_idx, kv_idx]
    return inner_mask


class AttentionMaskInterface:
    _global_mapping = {}

    @classmethod
    def register(cls, key, value):
        cls._global_mapping[key] = value
'''


class Grid:
    """A 1-D or 2-D integer 'tensor': rows of ints, t[b, i], t[b], shape, all()."""

    def __init__(self, rows):
        self.rows = rows
        self.shape = (len(rows),) if not isinstance(rows[0], list) else (len(rows), len(rows[0]))

    def __getitem__(self, idx):
        if isinstance(idx, tuple):
            return self.rows[idx[0]][idx[1]]
        return self.rows[idx]

    def all(self):
        flat = [x for r in self.rows for x in (r if isinstance(r, list) else [r])]
        return all(flat)

    def values(self):
        """Row-major ints, for maskc eval --buffer."""
        return [int(x) for r in self.rows for x in (r if isinstance(r, list) else [r])]


class AttentionInterface:
    _global_mapping = {}

    @classmethod
    def register(cls, key, value):
        cls._global_mapping[key] = value


def install(monkeypatch):
    """Puts transformers and transformers.masking_utils into sys.modules;
    returns (transformers, masking_utils)."""
    mu = types.ModuleType("transformers.masking_utils")
    exec(compile(MASKING_UTILS, "<fake transformers.masking_utils>", "exec"), mu.__dict__)
    tf = types.ModuleType("transformers")
    tf.masking_utils = mu
    tf.AttentionInterface = AttentionInterface
    tf.AttentionMaskInterface = mu.AttentionMaskInterface
    AttentionInterface._global_mapping = {}
    mu.AttentionMaskInterface._global_mapping = {}
    monkeypatch.setitem(sys.modules, "transformers", tf)
    monkeypatch.setitem(sys.modules, "transformers.masking_utils", mu)
    return tf, mu
