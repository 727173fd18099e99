# Causal sliding window of 256 keys behind the query.
mask sliding(b, h, q, kv) = q >= kv and q - kv <= 256

attention local {
    mask = sliding
}
