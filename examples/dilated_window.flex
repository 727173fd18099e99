# Dilated sliding window under a causal mask: keys at most 2048 positions
# away, and only every second one.

mask causal(b, h, q, kv) = q >= kv

mask dilated(b, h, q, kv) {
    let d = abs(q - kv)
    d <= 2048 and d % 2 == 0
}

attention dilated_layer {
    mask = and_masks(causal, dilated)
    layout = bshd
    dtype = bf16
    head_dim = 128
}
