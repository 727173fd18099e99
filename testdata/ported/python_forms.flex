# Python that real mods carry and maskc reads as Python does (issue 28):
# defaults and keywords, annotations of any form, string statements,
# .to(x.dtype) conversions, `x if flag else y` on a factory argument.
buffer bias: f32[16]

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
