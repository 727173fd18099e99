# attention-gym: prefix LM, full attention over the prefix, causal after it.
def generate_prefix_lm_mask(prefix_length: int):
    def prefix_lm_causal(b, h, q_idx, kv_idx):
        causal_mask = q_idx >= kv_idx
        prefix_mask = kv_idx <= prefix_length
        return causal_mask | prefix_mask
    return prefix_lm_causal

attention prefix_lm {
    mask = generate_prefix_lm_mask(100)
}
