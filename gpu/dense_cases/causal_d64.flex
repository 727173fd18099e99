# gpu/dense_bench.py (issue 15): flex_baseline.py's "causal" at head dim 64.

mask causal_d64(b, h, q, kv) = q >= kv

attention causal_d64 {
    mask = causal_d64
    layout = bhsd
    dtype = bf16
    head_dim = 64
}
