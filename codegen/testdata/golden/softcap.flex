# Causal attention with tanh soft-capping (gemma style).
param CAP = 30.0
buffer sinks: f32[H]

mask causal_mask(b, h, q, kv) = q >= kv
score capped(score, b, h, q, kv) = CAP * tanh(score / CAP)

attention softcap {
    mask = causal_mask
    score = capped
    sink = sinks
}
