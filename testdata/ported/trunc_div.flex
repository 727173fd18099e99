# A bias by distance bands, rounding toward zero as rounding_mode="trunc" does.
def band_bias(score, b, h, q_idx, kv_idx):
    band = torch.div(kv_idx - q_idx, 8, rounding_mode="trunc")
    return score + 0.25 * band.float()

attention bands {
    score = band_bias
}
