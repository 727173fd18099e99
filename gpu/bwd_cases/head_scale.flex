# Backward check case: a learned per-head temperature on the logits (a float
# buffer the score multiplies by), under a causal mask, so that the score's
# derivative d score / d s = scale[h] is not 1.

buffer temp: f32[H]  # per-head multiplier of the scaled logit

mask causal(b, h, q, kv) = q >= kv
score head_temp(score, b, h, q, kv) = score * temp[h]

attention head_scaled {
    mask = causal
    score = head_temp
    layout = bshd
    dtype = bf16
    head_dim = 128
}
