# flex_baseline.py "prefix2048": prefix LM with PREFIX = 2048.

mask prefix_lm(b, h, q, kv) = kv < 2048 or q >= kv

attention prefix2048 {
    mask = prefix_lm
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
