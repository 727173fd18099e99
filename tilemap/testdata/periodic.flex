# Remainder conditions on q and kv, which the kernel's tile filter tests per
# tile (codegen/period.go): a strided pattern with an offset residue, a
# remainder range over a sum with a coefficient, one over kv - q that wraps
# below zero, and one of block indices (floor quotients).
mask strided(b, h, q, kv) = kv <= q and (q - kv < 100 or (q - kv) % 300 == 7)

attention strided_layer {
    mask = strided
}

mask skew(b, h, q, kv) = (2 * q + kv) % 500 < 3 or kv == q

attention skew_layer {
    mask = skew
}

mask wrap(b, h, q, kv) = (kv - q + 13) % 400 >= 390

attention wrap_layer {
    mask = wrap
}

mask checker(b, h, q, kv) = kv <= q and (q // 256 - kv // 256) % 2 == 0

attention checker_layer {
    mask = checker
}
