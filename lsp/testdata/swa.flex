# Sliding-window causal attention — café, 中文, 😀 in a comment.
param WINDOW = 1024
param UNUSED = 3

mask causal(b, h, q_idx, kv_idx) = q_idx >= kv_idx
mask local(b, h, q, kv) = causal(b, h, q, kv) & (q - kv < WINDOW)

attention swa_layer {  # 1024 keys including the diagonal
    mask = local
}
