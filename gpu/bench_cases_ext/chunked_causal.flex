# Chunked attention (attention-gym "chunked causal", Llama 4 style): causal
# within chunks of CHUNK tokens, nothing across chunks.

param CHUNK = 1024

mask chunked(b, h, q, kv) = q // CHUNK == kv // CHUNK and kv <= q

attention chunked_causal {
    mask = chunked
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
