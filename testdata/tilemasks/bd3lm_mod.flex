# Block diffusion (BD3-LM) with the halves told apart by floor division:
# x_t (q // N == 0) sees its own noised block and the clean blocks before
# it; x_0 sees the clean blocks up to its own. Blocks of 128.

param N = 4096
param BLOCK = 128

mask bd3lm(b, h, q, kv) = (q // N == 0 and kv // N == 0 and q // BLOCK == kv // BLOCK) or (q // N == 0 and kv // N == 1 and (kv % N) // BLOCK < q // BLOCK) or (q // N == 1 and kv // N == 1 and (kv % N) // BLOCK <= (q % N) // BLOCK)

attention bd3lm_mod {
    mask = bd3lm
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
