# A syntax error in `half` must not bury the real error in `other`,
# nor make `half`'s users report it unknown, nor make W look unused.
param W = 8
mask half(b, h, q, kv) = q - kv <= W +
mask other(b, h, q, kv) = q >= kv // 0
attention a {
    mask = half
}
attention b {
    mask = other
}
