# attention-gym: relative positional bias, the distance added to the score.
def relative_positional(score, b, h, q_idx, kv_idx):
    return score + (q_idx - kv_idx)

attention relative {
    score = relative_positional
}
