# flex_baseline.py "causal".

mask causal(b, h, q, kv) = q >= kv

attention causal {
    mask = causal
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
