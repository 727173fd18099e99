# T5 unidirectional (decoder) buckets: only the past, causal mask.
buffer decoder_bias: f32[H, 32]

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def t5_decoder_bias(score, b, h, q_idx, kv_idx):
    num_buckets = 32
    max_distance = 128
    relative_position = -torch.clamp(kv_idx - q_idx, max=0)
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)).long()
    large = large.clamp(max=num_buckets - 1)
    bucket = torch.where(is_small, relative_position, large)
    return score + decoder_bias[h, bucket]

attention t5_decoder {
    mask = causal
    score = t5_decoder_bias
}
