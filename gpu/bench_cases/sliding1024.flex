# flex_baseline.py "sliding1024": causal window of W = 1024 keys.

mask sliding(b, h, q, kv) = q >= kv and q - kv < 1024

attention sliding1024 {
    mask = sliding
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
