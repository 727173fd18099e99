param W = 1024  # 中文
mask causal(b, h, q, kv) = q >= kv
mask half(b, h, q, kv) = q - kv <=
attention a {
    mask = causal
}
