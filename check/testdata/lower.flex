# Lowering cases: each attention's mask and score are printed to lower.golden.
param WINDOW = 1024
param HALF = WINDOW // 2
param CAP = 30.0
param NEG = -7 // 2
param ON = True
buffer doc: i32[KV] segments
buffer slopes: f32[H]
buffer bias: f32[H, 2 * KV - 1]
buffer prefix_len: i64[B]

# Renamed parameters, inlined into callers with other names.
mask causal(batch, head, q_idx, kv_idx) = q_idx >= kv_idx
mask local(b, h, q, kv) = causal(b, h, q, kv) & (q - kv <= WINDOW)
mask shifted(b, h, i, j) = causal(h, b, j + 1, i)
mask same_doc(b, h, q, kv) = doc[q] == doc[kv]
mask chain(b, h, q, kv) = 0 <= q - kv <= HALF
mask chain3(b, h, q, kv) = 0 <= q < kv + 4 <= 100
mask dilated(b, h, q, kv) {
    let d = abs(q - kv)
    let w = d % 2
    d <= 2048 and w == 0
}
mask window_of(W)(b, h, q, kv) = q - kv < W and q >= kv
mask per_batch_prefix(b, h, q, kv) = kv < prefix_len[b] or q >= kv
mask folded(b, h, q, kv) = q >= kv if ON else True
mask torchy(b, h, q, kv) = torch.where(q >= kv, True, False) & (max(q, NEG) > -1)
score softcap_user(score, b, h, q, kv) = CAP * torch.tanh(score / CAP)
score rel(s, b, h, q, kv) = s + bias[h, q - kv + KV - 1]
score int_score(score, b, h, q, kv) = q - kv
score pow_score(score, b, h, q, kv) = score + (kv - q) * 2 ** (-8 * (h + 1) / H)
score const_pow(score, b, h, q, kv) = score * 2 ** -3

attention renamed {
    mask = local
    score = softcap_user
}
attention swapped {
    mask = shifted
}
attention combined {
    mask = and_masks(causal, same_doc, or_masks(chain, dilated))
}
attention factory {
    mask = and_masks(window_of(WINDOW), sliding_window(HALF), band(3, -1 + 5))
    score = softcap(CAP / 2)
}
attention stdlib_buffers {
    mask = document_causal(doc)
    score = alibi(slopes)
}
attention chains {
    mask = or_masks(chain3, per_batch_prefix)
    score = rel
}
attention folding {
    mask = folded
    score = int_score
}
attention builtins {
    mask = torchy
    score = pow_score
}
attention constants {
    mask = prefix_lm(HALF * 2)
    score = const_pow
}
attention score_as_mask {
    mask = full
    score = causal_score
}
