# gpu/dense_bench.py (issue 15): flex_baseline.py's "full" at head dim 256.

mask full_d256(b, h, q, kv) = q >= 0 and kv >= 0

attention full_d256 {
    mask = full_d256
    layout = bhsd
    dtype = bf16
    head_dim = 256
}
