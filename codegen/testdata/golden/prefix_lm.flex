# Prefix LM: the first PREFIX keys are visible to every query.
param PREFIX = 2048
buffer prefix_len: i32[B]

mask prefix(b, h, q, kv) = kv < PREFIX or q >= kv
mask batch_prefix(b, h, q, kv) = kv < prefix_len[b] or q >= kv

attention prefix_lm {
    mask = prefix
}

attention per_batch_prefix {
    mask = batch_prefix
    layout = bhsd
}
