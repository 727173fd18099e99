# a .flex file the fake kernel's #line directives point into
buffer doc: i32[KV] segments
buffer bias: f32[H, 64]

mask same_doc(b, h, q, kv) = doc[q] == doc[kv]
score biased(score, b, h, q, kv) = score + bias[h, kv % 64]
