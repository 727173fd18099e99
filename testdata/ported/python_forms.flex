# Python that real mods carry and maskc reads as Python does (issue 28):
# defaults and keywords, annotations of any form, string statements,
# .to(x.dtype) conversions, `x if flag else y` on a factory argument,
# `del b, h` saying a mask does not read its batch and head.
buffer bias: f32[16]
buffer block_ids: i32[KV]

def generate_bias_mod(scale: float = 0.5, bucket: tuple[int, int] | None = None, symmetric: bool = False):
    """Relative bias from a table, symmetric or not."""
    def bias_mod(score, b, h, q_idx, kv_idx):
        rel = (q_idx - kv_idx).abs() if symmetric else (q_idx - kv_idx).clamp(min=0)
        "the bucket index"
        idx = rel.clamp(max=15).long()
        return score + scale * bias[idx].to(score.dtype) + (kv_idx % 3).to(score.dtype)
    bias_mod.__name__ = "bias_mod"
    return bias_mod

attention bias_default {
    score = generate_bias_mod()
}
attention bias_symmetric {
    score = generate_bias_mod(symmetric=True, scale=0.25)
}

def block_mask_mod(b, h, q_idx, kv_idx):
    del b, h
    q_block = block_ids[q_idx]
    return (q_block >= 0) & (block_ids[kv_idx] <= q_block)

attention blocks {
    mask = block_mask_mod
}
