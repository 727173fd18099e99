# Block-index masks: the sparsity plan bounds kv through floor quotients
# (normal's extra variables), e.g. kv in [64 * (q // 64), 64 * (q // 64) + 63].

param CHUNK = 64
param WIDTH = 32
param R = 2

mask chunked(b, h, q, kv) = q // CHUNK == kv // CHUNK and kv <= q
mask nat(b, h, q, kv) = abs(q // WIDTH - kv // WIDTH) <= R and abs(q % WIDTH - kv % WIDTH) <= R
mask capped(b, h, q, kv) = min(q, 40) >= kv and max(kv, 8) <= q + 3

attention chunked_causal {
    mask = chunked
    head_dim = 64
}

attention neighbourhood {
    mask = nat
    head_dim = 64
}

attention capped {
    mask = capped
    head_dim = 64
}
