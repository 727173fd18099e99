# Masks the analysis cannot bound: a block-sparse pattern read from a buffer,
# and a head-dependent choice between it and causal.
buffer allowed: bool[Q, KV]

mask lookup(b, h, q, kv) = allowed[q, kv]
mask mixed(b, h, q, kv) = q >= kv if h % 2 == 0 else allowed[q // 64, kv // 64]

attention block_lookup {
    mask = lookup
}

attention per_head {
    mask = mixed
}
