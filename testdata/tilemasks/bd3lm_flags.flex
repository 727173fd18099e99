# Block diffusion with the x_0 flags compared with 1, as BD3-LM's training
# code spells them (`x0_flag_q == 1`): a bool's value 0 or 1 compared with
# an int is the bool or its negation, so the flags bound q and kv as in
# bd3lm_where.flex. x_t is the first N tokens, x_0 the next N; 64-token
# blocks.

param N = 4096
param BLOCK = 64

def bd3lm_flags(b, h, q_idx, kv_idx):
    x0_flag_q = q_idx >= N
    x0_flag_kv = kv_idx >= N
    block_q = torch.where(x0_flag_q == 1, (q_idx - N) // BLOCK, q_idx // BLOCK)
    block_kv = torch.where(x0_flag_kv == 1, (kv_idx - N) // BLOCK, kv_idx // BLOCK)
    block_diagonal = (block_q == block_kv) & (x0_flag_q == x0_flag_kv)
    offset_block_causal = (block_q > block_kv) & (x0_flag_kv == 1) & (x0_flag_q == 0)
    block_causal = (block_q >= block_kv) & (x0_flag_kv == 1) & (x0_flag_q == 1)
    return block_diagonal | offset_block_causal | block_causal

attention bd3lm_flags {
    mask = bd3lm_flags
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
