# The masks and scores python/gpu_tests/check_cp.py runs through maskc.cp's
# ring over simulated ranks, and train_megatron.py trains with.

buffer doc: i32[KV] segments  # document id of each token (global)
buffer slopes: f32[H]         # one slope per query head (global)

mask causal(b, h, q, kv) = q >= kv
mask same_doc(b, h, q, kv) = doc[q] == doc[kv]
mask window(b, h, q, kv) = 0 <= q - kv <= 300
score alibi(s, b, h, q, kv) = s + slopes[h] * (kv - q)

attention causal_layer {
    mask = causal
    layout = bshd
    dtype = bf16
    head_dim = 128
}
attention doc_layer {
    mask = and_masks(causal, same_doc)
    layout = bshd
    dtype = bf16
    head_dim = 128
}
attention window_layer {
    mask = window
    layout = bshd
    dtype = bf16
    head_dim = 128
}
attention alibi_layer {
    mask = causal
    score = alibi
    layout = bshd
    dtype = bf16
    head_dim = 128
}
