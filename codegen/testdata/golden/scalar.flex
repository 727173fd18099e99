# 0-d buffers: captured scalar tensors (offset = torch.tensor(5) in the
# Python mod), read as the bare name, .item() or [()]; and a per-block
# table with a floor-divided extent.
buffer offset: i32[]
buffer temperature: f32[]
buffer enabled: bool[]
buffer keep: bool[H, (Q + 63) // 64, (KV + 63) // 64]

def shifted_causal(b, h, q_idx, kv_idx):
    return (kv_idx <= q_idx + offset) & enabled[()]

def scaled(score, b, h, q_idx, kv_idx):
    return score / temperature.item()

mask kept_blocks(b, h, q, kv) = keep[h, q // 64, kv // 64] & (kv <= q + offset)

attention shifted {
    mask = shifted_causal
    score = scaled
}
attention blocks {
    mask = kept_blocks
}
