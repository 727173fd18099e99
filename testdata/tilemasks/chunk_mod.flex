# Chunked causal attention spelled with floor division and modulo.

param C = 512

mask chunk_mod(b, h, q, kv) = q // C == kv // C and q % C >= kv % C

attention chunk_mod {
    mask = chunk_mod
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
