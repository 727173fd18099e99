# Full (bidirectional) attention: every query sees every key, no mask mod.

attention encoder {
    layout = bshd
    dtype = bf16
    head_dim = 128
}
