# flex_baseline.py "full": (q >= 0) & (kv >= 0), no score mod.

mask full(b, h, q, kv) = q >= 0 and kv >= 0

attention full {
    mask = full
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
