# torch's elementwise math in a score (a rotary-style phase per head) over
# the narrow integer buffers: the registry's sin, cos, tan and erf and the
# buftype table's i8, u8 and i16 rows, generated and compiled for NVIDIA
# (clang's CUDA front end), on the host and for CDNA, where none of its kernels
# spills a register beside the range reductions of sinf, cosf and tanf.
buffer phase: i8[H]
buffer tag: u8[KV]
buffer bucket: i16[KV]

mask causal_mask(b, h, q, kv) = q >= kv

def rotary(score, b, h, q_idx, kv_idx):
    angle = (q_idx - kv_idx) * 0.01 + phase[h]
    s = score * torch.cos(angle) + torch.sin(angle) + torch.tan(score / 64.0)
    return s + torch.erf(score) * (tag[kv_idx] - bucket[kv_idx])

attention rotary {
    mask = causal_mask
    score = rotary
}
