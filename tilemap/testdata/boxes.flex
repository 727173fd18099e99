# Masks for the box decisions (box_test.go): each must give the counts of
# the pair-by-pair evaluation, errors included.

buffer sel: i32[H, 64]
buffer w: f32[KV]
buffer g: i32[KV]

# A read that leaves sel for q >= 64 comes first: the pairs report it even
# where kv <= q alone would decide the box.
mask reads_out(b, h, q, kv) = sel[h, q] == 0 or kv <= q
# where evaluates both branches: the one not chosen still reads out of sel
# (at q >= 64, where the condition alone would decide the box).
mask where_out(b, h, q, kv) = where(q >= 64, kv >= 0, sel[h, q] == 0)
# Floats are left to the pairs.
mask floats(b, h, q, kv) = w[kv] > 0.5 and kv <= q
# A selection, a modulo and a conditional, decided box by box.
mask mixed(b, h, q, kv) = (kv % 64 < 32 if q // 128 == 0 else sel[h, kv // 64] == q // 64) or abs(q - kv) < 3
# Reads indexed by q or kv itself, scanned over the box.
mask globals(b, h, q, kv) = g[kv] == 1 or g[q] == 1 or abs(q - kv) < 40

attention reads_out {
    mask = reads_out
}

attention where_out {
    mask = where_out
}

attention floats {
    mask = floats
}

attention mixed {
    mask = mixed
}

attention globals {
    mask = globals
}
