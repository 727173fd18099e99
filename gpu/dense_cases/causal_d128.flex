# gpu/dense_bench.py (issue 15): flex_baseline.py's "causal" at head dim 128.

mask causal_d128(b, h, q, kv) = q >= kv

attention causal_d128 {
    mask = causal_d128
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
