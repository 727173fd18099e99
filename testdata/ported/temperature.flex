# Per-head temperature from a captured tensor.
buffer head_temperature: f32[H]

def temperature(score, b, h, q_idx, kv_idx):
    score = score / (1.0 + head_temperature[h].abs())
    return score

attention temperature {
    score = temperature
}
