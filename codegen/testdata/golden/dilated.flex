# Dilated causal window: every second key within 2048.
mask dilated(b, h, q, kv) {
    let d = q - kv
    d >= 0 and d < 2048 and d % 2 == 0
}

attention dilated_window {
    mask = dilated
}
