# Helper functions called from mods, with defaults and keyword arguments,
# inlined where called (issue 28).
buffer table: f32[16]

def relative_position(q_idx, kv_idx):
    return q_idx - kv_idx

def bucket(rel, num_buckets: int = 16):
    return rel.abs().clamp(max=num_buckets - 1).long()

def local(q_idx, kv_idx, window=32):
    rel = relative_position(q_idx, kv_idx)
    return (rel >= 0) & (rel <= window)

def bucketed_bias(score, b, h, q_idx, kv_idx):
    return score + table[bucket(relative_position(q_idx, kv_idx))]

def short_bias(score, b, h, q_idx, kv_idx):
    return score + table[bucket(relative_position(kv_idx=kv_idx, q_idx=q_idx), num_buckets=8)]

def local_mask(b, h, q_idx, kv_idx):
    return local(q_idx, kv_idx, window=48)

attention helper_bias {
    mask = local_mask
    score = bucketed_bias
}
attention helper_short {
    score = short_bias
}
