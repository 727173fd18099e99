# Sliding window with learned per-head sinks for the Hugging Face training
# check (train_hf.py), gpt-oss style.

param WINDOW = 256  # keys per query, itself included

buffer sinks: f32[H]  # one sink logit per query head

mask sliding(b, h, q, kv) = q >= kv and q - kv < WINDOW

attention swa_layer {
    mask = sliding
    sink = sinks
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
