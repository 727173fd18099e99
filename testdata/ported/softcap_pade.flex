# Soft-capping with a Pade approximation of tanh, written as plain math.
def generate_tanh_softcap_approx(soft_cap: float):
    def tanh_softcap_approx(score, b, h, q_idx, kv_idx):
        x = score / soft_cap
        x = x.clamp(-3.0, 3.0)
        x2 = x * x
        t = x * (27.0 + x2) / (27.0 + 9.0 * x2)
        return soft_cap * t
    return tanh_softcap_approx

attention softcap_pade {
    score = generate_tanh_softcap_approx(2.0)
}
