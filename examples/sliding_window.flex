# Causal sliding-window attention, written the two ways models do.

param WINDOW = 1024  # keys behind the query; WINDOW + 1 keys including itself

# Window as a bound: q sees kv in [q - WINDOW, q].
mask sliding(b, h, q, kv) = q >= kv and q - kv <= WINDOW

# Window as a count: exactly 1024 keys including the diagonal,
# the same as window_size=(1023, 0).
mask last_1024(b, h, q, kv) = q >= kv and q - kv < 1024

# A factory, like attention-gym's generate_sliding_window(w): the window is
# given where the mask is used.
mask sliding_window(W)(b, h, q, kv) = q >= kv and q - kv <= W

attention local_layer {
    mask = sliding
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention local_1024_layer {
    mask = last_1024
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention local_512_layer {
    mask = sliding_window(512)
    layout = bshd
    dtype = bf16
    head_dim = 128
}
