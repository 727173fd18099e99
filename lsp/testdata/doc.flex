# Document-causal attention over packed sequences, with a softcapped
# score and a sink — comments in UTF-8: naïve, 東京, 🚀.
param CAP = 30.0

buffer doc: i32[KV] segments   # document id of each token 📄
buffer sinks: f32[H]

mask same_doc(b, h, q, kv) = doc[q] == doc[kv]
mask dilated(b, h, q, kv) {
    let d = abs(q - kv)
    d <= 2048 and d % 2 == 0
}
score cap(score, b, h, q, kv) = CAP * torch.tanh(score / CAP)

attention doc_layer {
    mask = and_masks(causal, same_doc)
    sink = sinks
    layout = bshd
}

attention capped {
    mask = dilated
    score = cap
}

attention swa {
    causal = true
    window = (1023, 0)
}
