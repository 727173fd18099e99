# T5's bucketed relative position bias (Hugging Face's
# _relative_position_bucket, bidirectional), pasted from Python as is: the
# bucket is computed with log and truncated to a table index by
# .to(torch.long), then the per-head bias is read from a learned table.

buffer relative_attention_bias: f32[H, 32]  # [heads, num_buckets]

def generate_t5_bias(num_buckets: int, max_distance: int):
    """T5 relative attention bias as a FlexAttention score_mod."""
    def t5_bias(score, b, h, q_idx, kv_idx):
        relative_position = kv_idx - q_idx
        num_buckets_half = num_buckets // 2
        relative_buckets = (relative_position > 0).to(torch.long) * num_buckets_half
        relative_position = torch.abs(relative_position)
        max_exact = num_buckets_half // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets_half - max_exact)).to(torch.long)
        relative_position_if_large = relative_position_if_large.clamp(max=num_buckets_half - 1)
        relative_buckets = relative_buckets + torch.where(is_small, relative_position, relative_position_if_large)
        return score + relative_attention_bias[h, relative_buckets]
    return t5_bias

attention t5_encoder {
    score = generate_t5_bias(32, 128)
    layout = bshd
    dtype = bf16
    head_dim = 128
}
