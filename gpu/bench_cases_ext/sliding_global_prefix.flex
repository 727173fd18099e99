# Sliding window with the first G tokens global (attention-gym's
# "global + sliding window" / StreamingLLM-style sink tokens, causal).

param G = 64
param W = 1024

mask swg(b, h, q, kv) = kv <= q and (q - kv < W or kv < G)

attention sliding_global_prefix {
    mask = swg
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
