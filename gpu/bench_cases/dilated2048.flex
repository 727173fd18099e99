# flex_baseline.py "dilated2048".

mask dilated(b, h, q, kv) = q >= kv and q - kv < 2048 and (q - kv) % 2 == 0

attention dilated2048 {
    mask = dilated
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
