# attention-gym's FlexAttention notebook (meta-pytorch/attention-gym,
# examples/flex_attention/flex_attn.ipynb), three cells pasted as written,
# module constants included: the causal sliding window, the prefix LM and
# Stand-Alone Self-Attention on a 128 x 128 image. Left out: the test_mask
# calls, and the SASA cell's `H = 128` (the image height, which sasa_mask
# does not read; maskc refuses the name H, its size symbol, E053).
SLIDING_WINDOW = 1024

def sliding_window_causal_mask(b, h, q_idx, kv_idx):
    causal_mask = q_idx >= kv_idx
    windowed_mask = (q_idx - kv_idx <= SLIDING_WINDOW)  # We dont need to check the right side of the sliding window since we are applying the causal mask

    return causal_mask & windowed_mask

PREFIX_LENGTH = 2048

def prefix_lm_causal_mask(b, h, q_idx, kv_idx):
    prefix_mask = kv_idx <= PREFIX_LENGTH
    causal_mask = q_idx >= kv_idx
    return prefix_mask | causal_mask

W = 128
WINDOW = 8

def get_x_y(idx):
    return idx // W, idx % W

def sasa_mask(b, h, q_idx, kv_idx):
    q_x, q_y = get_x_y(q_idx)
    kv_x, kv_y = get_x_y(kv_idx)
    horizontal_mask = (q_x - kv_x).abs() <= WINDOW
    vertical_mask = (q_y - kv_y).abs() <= WINDOW
    return horizontal_mask & vertical_mask

attention sliding_window {
    mask = sliding_window_causal_mask
}

attention prefix_lm {
    mask = prefix_lm_causal_mask
}

attention sasa {
    mask = sasa_mask
}
