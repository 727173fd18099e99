# Speculative decoding with a tree of drafts flattened into blocks: a shared
# prompt of PREFIX tokens (causal), then draft blocks of DRAFT tokens that
# each see the whole prompt and, causally, their own block only.

param PREFIX = 4096
param DRAFT = 256

mask prompt(b, h, q, kv) = q < PREFIX and kv <= q
mask sees_prompt(b, h, q, kv) = q >= PREFIX and kv < PREFIX
mask own_draft(b, h, q, kv) = q >= PREFIX and kv >= PREFIX and (q - PREFIX) // DRAFT == (kv - PREFIX) // DRAFT and kv <= q

attention spec_decode {
    mask = or_masks(prompt, sees_prompt, own_draft)
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
