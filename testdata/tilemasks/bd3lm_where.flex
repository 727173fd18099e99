# Block diffusion as BD3-LM's reference code writes it: x_t is the first N
# tokens, x_0 the next N; block numbers from where(), 64-token blocks.
# x_t sees its own block and the clean blocks before it, x_0 its own
# block and the clean ones before (block-causal).

param N = 4096
param BLOCK = 64

def bd3lm(b, h, q_idx, kv_idx):
    x0_flag_q = q_idx >= N
    x0_flag_kv = kv_idx >= N
    block_q = torch.where(x0_flag_q, (q_idx - N) // BLOCK, q_idx // BLOCK)
    block_kv = torch.where(x0_flag_kv, (kv_idx - N) // BLOCK, kv_idx // BLOCK)
    block_diagonal = (block_q == block_kv) & (x0_flag_q == x0_flag_kv)
    offset_block_causal = (block_q > block_kv) & x0_flag_kv & ~x0_flag_q
    block_causal = (block_q >= block_kv) & x0_flag_kv & x0_flag_q
    return block_diagonal | offset_block_causal | block_causal

attention bd3lm_where {
    mask = bd3lm
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
