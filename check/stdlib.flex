# The maskc standard library: mods every .flex file can use without
# declaring them. A declaration of the same name in a file shadows them.

# Causal mask (top-left aligned): query q sees keys kv <= q.
mask causal(b, h, q, kv) = q >= kv

# Full attention: every (q, kv) pair is kept.
mask full(b, h, q, kv) = True

# FlexAttention's noop_mask (torch.nn.attention.flex_attention): keeps every pair, as full does.
mask noop_mask(b, h, q, kv) = True

# Causal sliding window of W + 1 keys including the diagonal: q - W <= kv <= q.
mask sliding_window(W)(b, h, q, kv) = q >= kv and q - kv <= W

# Band: L keys to the left and R keys to the right of the diagonal (both inclusive).
mask band(L, R)(b, h, q, kv) = kv - q <= R and q - kv <= L

# Prefix LM: the first P keys are visible to every query, the rest causally.
mask prefix_lm(P)(b, h, q, kv) = kv < P or q >= kv

# Document mask: q and kv attend only within the same document; doc holds one document id per position.
mask document(doc)(b, h, q, kv) = doc[q] == doc[kv]

# Causal document mask (packed sequences): same document and kv <= q.
mask document_causal(doc)(b, h, q, kv) = doc[q] == doc[kv] and q >= kv

# ALiBi: adds slopes[h] * (kv - q) to the score (slopes is a buffer f32[H]).
score alibi(slopes)(score, b, h, q, kv) = score + slopes[h] * (kv - q)

# Tanh soft-capping of the logits: C * tanh(score / C).
score softcap(C)(score, b, h, q, kv) = C * tanh(score / C)

# Causal mask written as a score: -inf above the diagonal.
score causal_score(score, b, h, q, kv) = where(q >= kv, score, -inf)
