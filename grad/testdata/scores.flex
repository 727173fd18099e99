# One score per derivative rule; grad_test.go prints each score's
# derivatives into scores.golden.

param CAP = 30.0
buffer bias: f32[H, Q + KV - 1]
buffer slopes: f32[H]
buffer scale: f32[H]
buffer lo: f32[H]
buffer hi: f32[H]
buffer doc: i32[KV]

score identity(score, b, h, q, kv) = score
score constant(score, b, h, q, kv) = 1.5
score add_sub(score, b, h, q, kv) = score + slopes[h] - bias[h, q - kv + KV - 1]
score neg_pos(score, b, h, q, kv) = -score + +slopes[h]
score mul(score, b, h, q, kv) = score * scale[h] * (kv - q)
score div(score, b, h, q, kv) = score / scale[h]
score mod(score, b, h, q, kv) = score % scale[h]
score pow_const(score, b, h, q, kv) = score ** 2 + score ** 0.5 + score ** 0
score pow_var(score, b, h, q, kv) = score ** scale[h]
score pow_base(score, b, h, q, kv) = 2.0 ** score + 0.0 ** score
score tanh_cap(score, b, h, q, kv) = CAP * tanh(score / CAP)
score exp_log(score, b, h, q, kv) = exp(score) + log(score) + exp2(score) + log2(score)
score sqrt_sigmoid(score, b, h, q, kv) = sqrt(score) + sigmoid(score)
score trig(score, b, h, q, kv) = torch.sin(score) * slopes[h] + torch.cos(score * slopes[h]) + torch.tan(score / 4.0) + torch.erf(score - slopes[h])
score abs_score(score, b, h, q, kv) = abs(score)
score min_max(score, b, h, q, kv) = min(score, slopes[h]) + max(score, 0.0)
score clamp_all(score, b, h, q, kv) = clamp(score, lo[h], hi[h])
score clamp_const(score, b, h, q, kv) = clamp(score, -5.0, 5.0)
score where_branch(score, b, h, q, kv) = where(q >= kv, score * scale[h], -inf)
score cond_branch(score, b, h, q, kv) = score if score > 0 else slopes[h] * score
score shared(score, b, h, q, kv) {
    let t = tanh(score)
    t * t + slopes[h] * slopes[h]
}
score int_doc(score, b, h, q, kv) = score + doc[kv] * slopes[h]
score floored(score, b, h, q, kv) = floor(score) + score
score no_score(score, b, h, q, kv) = slopes[h] * (kv - q)
