# Masks and scores that read several buffer values per (query, key) pair,
# built for every CDNA target by TestHipccMFMA (issue 26): each once
# spilled scalar registers or used scratch memory there.

param W = 256

buffer sel: i32[H, 256]    # MoBA: 4 key-block numbers per 128-query block, per head
buffer doc: i32[KV] segments
buffer img: i32[KV]        # image span of each token, -1 for text
buffer is_global: bool[KV] # Longformer's global tokens
buffer bias: f32[H, 2 * KV - 1]
buffer scale: f32[H]

mask moba(b, h, q, kv) = kv <= q and (q // 128 == kv // 128 or sel[h, (q // 128) * 4 + 0] == kv // 128 or sel[h, (q // 128) * 4 + 1] == kv // 128 or sel[h, (q // 128) * 4 + 2] == kv // 128 or sel[h, (q // 128) * 4 + 3] == kv // 128)

mask multimodal(b, h, q, kv) = doc[q] == doc[kv] and (q >= kv or (img[q] >= 0 and img[q] == img[kv]))

mask longformer(b, h, q, kv) = abs(q - kv) <= W or is_global[q] or is_global[kv]

score scaled_bias(score, b, h, q, kv) = score + bias[h, q - kv + KV - 1] * scale[h]

attention block_select {
    mask = moba
}

attention two_ids {
    mask = multimodal
}

attention global_flags {
    mask = longformer
}

attention scaled_bias {
    score = scaled_bias
}
