# Backward check case: a relative-position bias table read through a
# `where` (only inside a window of 256; outside it the read is not taken and
# its gradient is zero), softcapped, under a causal mask.

buffer rel: f32[H, 2 * KV]

mask causal(b, h, q, kv) = q >= kv
score windowed_bias(score, b, h, q, kv) = 20.0 * tanh((score + (rel[h, q - kv] if q - kv < 256 else 0.0)) / 20.0)

attention bias_window {
    mask = causal
    score = windowed_bias
    layout = bshd
    dtype = bf16
    head_dim = 128
}
