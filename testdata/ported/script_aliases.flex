# A benchmark script's shape: module constants, defs taking extra
# parameters, and the mods it hands to create_block_mask bound to names
# at the top level (a partial, a combination of it), then used by name.
from functools import partial

from torch.nn.attention.flex_attention import and_masks

RADIUS = 48
STRIDE = 3

def within_radius(b, h, q_idx, kv_idx, radius):
    return (q_idx - kv_idx).abs() <= radius

def on_stride(b, h, q_idx, kv_idx, stride):
    return torch.fmod(q_idx - kv_idx, stride) == 0

def distance_penalty(score, b, h, q_idx, kv_idx, weight):
    return score - weight * (q_idx - kv_idx).abs().float()

local_mod = partial(within_radius, radius=RADIUS)
strided_mod = and_masks(local_mod, partial(on_stride, stride=STRIDE))
penalty_mod = partial(distance_penalty, weight=0.125)

attention local_strided {
    mask = strided_mod
    score = penalty_mod
}
