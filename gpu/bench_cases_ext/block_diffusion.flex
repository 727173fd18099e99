# Block diffusion (BD3-LM) training: the sequence is a noised copy x_t
# (positions < N) followed by the clean x_0 (positions >= N), in blocks of
# BLOCK tokens. x_t tokens see their own noised block and the clean blocks
# strictly before it; x_0 tokens see clean blocks up to their own.

param N = 4096
param BLOCK = 64

mask noisy_diag(b, h, q, kv) = q < N and kv < N and q // BLOCK == kv // BLOCK
mask noisy_ctx(b, h, q, kv) = q < N and kv >= N and (kv - N) // BLOCK < q // BLOCK
mask clean(b, h, q, kv) = q >= N and kv >= N and (kv - N) // BLOCK <= (q - N) // BLOCK

attention block_diffusion {
    mask = or_masks(noisy_diag, noisy_ctx, clean)
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
