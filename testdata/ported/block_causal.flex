# Block-causal attention: whole blocks see each other, with torch.div.
def generate_block_causal(block_size: int):
    def block_causal(b, h, q_idx, kv_idx):
        q_block = torch.div(q_idx, block_size, rounding_mode="floor")
        kv_block = torch.div(kv_idx, block_size, rounding_mode="floor")
        return q_block >= kv_block
    return block_causal

attention block_causal {
    mask = generate_block_causal(32)
}
