# Check case at head dim 256: Gemma 2's attention (tanh soft-capping of the
# logits at 50, causal), forward and backward, with the tiles of head dim
# 256 (hipsrc.BwdTileFor: 32 x 32 on every platform, V in registers on AMD).

param CAP = 50.0

mask causal(b, h, q, kv) = q >= kv
score softcap(score, b, h, q, kv) = CAP * tanh(score / CAP)

attention softcap_d256 {
    mask = causal
    score = softcap
    layout = bshd
    dtype = bf16
    head_dim = 256
}
