# Mods bound to names as lambdas, as notebooks and PyTorch's FlexAttention
# tests write them (`causal_mask = lambda b, h, q, kv: q >= kv`): each is the
# def it is, a mask of four parameters, a score of five, or a helper.
causal_mask = lambda b, h, q_idx, kv_idx: q_idx >= kv_idx
local = lambda b, h, q_idx, kv_idx: (q_idx - kv_idx).abs() <= 64
tanh_softcap = lambda score, b, h, q_idx, kv_idx: 20.0 * torch.tanh(score / 20.0)
rel = lambda score, b, h, q_idx, kv_idx: score + (q_idx - kv_idx) * 0.01
in_band = lambda d, width=32: d < width

def banded(b, h, q_idx, kv_idx):
    return in_band(q_idx - kv_idx) & (q_idx >= kv_idx)

attention causal_layer {
    mask = causal_mask
    score = tanh_softcap
}

attention local_layer {
    mask = and_masks(causal_mask, local)
    score = rel
}

attention banded_layer {
    mask = banded
}

# Lambdas written in place, as notebooks pass them to flex_attention.
attention inline_layer {
    mask = or_masks(causal_mask, lambda b, h, q_idx, kv_idx: kv_idx < 16)
    score = lambda score, b, h, q_idx, kv_idx: score - (q_idx - kv_idx).abs() * 0.02
}
