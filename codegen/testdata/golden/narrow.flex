# Narrow integer buffers (buftype's i8 and u8 rows) read by a mask and a
# score, with the registry's erf: generated, and compiled for CDNA without
# spills (sin, cos and tan, whose range reduction spills registers there at
# head dim 128, and a third buffer, which made the backward spill one to
# three SGPRs, are in trig.flex, compiled for NVIDIA and on the host).
buffer phase: i8[H]
buffer tag: u8[KV]

mask tagged(b, h, q, kv) = q >= kv and tag[kv] != 255

def narrow(score, b, h, q_idx, kv_idx):
    return score + torch.erf(score / 8.0) * phase[h]

attention narrow {
    mask = tagged
    score = narrow
}
