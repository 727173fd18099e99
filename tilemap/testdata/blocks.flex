# Strided blocks: a query block of 192 sees every key block of the same
# residue mod 3. Floor division and modulo bound no kv range; the equal
# remainders are (q // 192 - kv // 192) % 3 == 0, which the kernel's tile
# filter tests on every tile.
mask strided(b, h, q, kv) = (q // 192) % 3 == (kv // 192) % 3

attention strided_layer {
    mask = strided
}

# 2-D neighbourhood over a 160-wide image: a pixel sees the pixels within 1
# row and 40 columns of it. The row bound is a block index (kv // 160 within
# q // 160 +- 1), which normal's floor quotients turn into a kv range; the
# column bound is a remainder, evaluated per element.
mask nat(b, h, q, kv) = abs(q // 160 - kv // 160) <= 1 and abs(q % 160 - kv % 160) <= 40

attention neighbourhood_layer {
    mask = nat
}

# Products of block indices: a non-linear relation that bounds no kv range,
# so the kernel classifies tiles with the pre-pass.
mask products(b, h, q, kv) = (q // 100) * (kv // 100) % 3 == 0

attention products_layer {
    mask = products
}
