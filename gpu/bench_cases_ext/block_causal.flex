# Block-causal attention: every token sees all of its own block of BLOCK
# tokens and every earlier block (semi-autoregressive decoding).

param BLOCK = 256

mask block_causal(b, h, q, kv) = kv // BLOCK <= q // BLOCK

attention block_causal {
    mask = block_causal
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
