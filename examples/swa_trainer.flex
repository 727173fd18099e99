# Trainer-style settings: a causal sliding window given as flags rather than
# a mask mod. window = (left, right) counts keys beyond the diagonal:
# (1023, 0) is the mask q >= kv and q - kv < 1024.

attention swa_layer {
    causal = true
    window = (1023, 0)
    layout = bshd
    dtype = bf16
    head_dim = 128
}
