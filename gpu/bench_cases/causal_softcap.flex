# flex_baseline.py "causal+softcap": 30 * tanh(score / 30).

mask causal(b, h, q, kv) = q >= kv
score softcap(score, b, h, q, kv) = 30.0 * tanh(score / 30.0)

attention causal_softcap {
    mask = causal
    score = softcap
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
