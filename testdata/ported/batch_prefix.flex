# A prefix length that depends on the batch index.
def batch_prefix(b, h, q_idx, kv_idx):
    prefix = 50 + 100 * b
    return (kv_idx < prefix) | (q_idx >= kv_idx)

attention batch_prefix {
    mask = batch_prefix
}
