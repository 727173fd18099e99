# The buffer reads of issue 33, one block each.
buffer rel: f32[8]
buffer sandwich: f32[16384]
buffer t5: f32[H, 32]
buffer prefix_len: i32[4]
buffer t5_small: f32[H, 16]
buffer idx: i32[KV]
buffer tab: f32[16]
buffer flags: bool[KV]
buffer pick: f32[2]

mask causal(b, h, q, kv) = q >= kv
score rel_bias(score, b, h, q, kv) = score + rel[q - kv + 3]
score sandwich_bias(score, b, h, q, kv) = score + sandwich[q - kv + 8191]
mask prefix(b, h, q, kv) = (kv < prefix_len[b]) | (q >= kv)
score from_index(score, b, h, q, kv) = score + tab[idx[kv]]
score from_bool(score, b, h, q, kv) = score + pick[int(flags[kv])]

def t5_bias(score, b, h, q_idx, kv_idx):
    relative_position = kv_idx - q_idx
    relative_buckets = (relative_position > 0).to(torch.long) * 16
    relative_position = torch.abs(relative_position)
    is_small = relative_position < 8
    relative_position_if_large = 8 + (torch.log(relative_position.float() / 8) / math.log(128 / 8) * (16 - 8)).to(torch.long)
    relative_position_if_large = relative_position_if_large.clamp(max=16 - 1)
    relative_buckets = relative_buckets + torch.where(is_small, relative_position, relative_position_if_large)
    return score + t5[h, relative_buckets]

def t5_small_bias(score, b, h, q_idx, kv_idx):
    relative_position = kv_idx - q_idx
    relative_buckets = (relative_position > 0).to(torch.long) * 16
    relative_position = torch.abs(relative_position)
    is_small = relative_position < 8
    relative_position_if_large = 8 + (torch.log(relative_position.float() / 8) / math.log(128 / 8) * (16 - 8)).to(torch.long)
    relative_position_if_large = relative_position_if_large.clamp(max=16 - 1)
    relative_buckets = relative_buckets + torch.where(is_small, relative_position, relative_position_if_large)
    return score + t5_small[h, relative_buckets]

attention rel_layer {
    mask = causal
    score = rel_bias
}
attention sandwich_layer {
    score = sandwich_bias
}
attention t5_layer {
    score = t5_bias
}
attention t5_small_layer {
    score = t5_small_bias
}
attention prefix_layer {
    mask = prefix
}
attention index_layer {
    mask = causal
    score = from_index
}
attention bool_layer {
    score = from_bool
}
