# gpu/dense_bench.py (issue 15): flex_baseline.py's "causal" at head dim 256.

mask causal_d256(b, h, q, kv) = q >= kv

attention causal_d256 {
    mask = causal_d256
    layout = bhsd
    dtype = bf16
    head_dim = 256
}
