# ALiBi with the slopes in a captured tensor.
buffer alibi_slopes: f32[H]

def alibi(score, b, h, q_idx, kv_idx):
    bias = alibi_slopes[h] * (kv_idx - q_idx)
    return score + bias

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

attention alibi_buffer {
    mask = causal
    score = alibi
}
