# gpt-oss style attention: learned per-head sinks in every layer, and layers
# alternating between a 128-token sliding window and full causal attention.

param WINDOW = 128  # keys per query in the windowed layers, itself included

buffer sinks: f32[H]  # one sink logit per query head

mask causal(b, h, q, kv) = q >= kv
mask sliding(b, h, q, kv) = q >= kv and q - kv < WINDOW

attention layer_0 {
    mask = sliding
    sink = sinks
    layout = bshd
    dtype = bf16
    head_dim = 64
}

attention layer_1 {
    mask = causal
    sink = sinks
    layout = bshd
    dtype = bf16
    head_dim = 64
}

attention layer_2 {
    mask = sliding
    sink = sinks
    layout = bshd
    dtype = bf16
    head_dim = 64
}

attention layer_3 {
    mask = causal
    sink = sinks
    layout = bshd
    dtype = bf16
    head_dim = 64
}
