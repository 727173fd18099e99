# Loops over range() of compile-time values, unrolled (issue 28).
def generate_multi_window(windows: int = 3, base: int = 8):
    def multi_window(b, h, q_idx, kv_idx):
        keep = q_idx < 0
        for i in range(windows):
            lo = i * 2 * base
            keep = keep | ((q_idx - kv_idx >= lo) & (q_idx - kv_idx < lo + base))
        return keep
    return multi_window

def generate_poly_score(terms: int):
    def poly(score, b, h, q_idx, kv_idx):
        acc = score * 0
        for k in range(terms, 0, -1):
            acc += torch.tanh(score) ** k / k
        return acc
    return poly

attention multi_window {
    mask = generate_multi_window(base=16)
    score = generate_poly_score(4)
}
