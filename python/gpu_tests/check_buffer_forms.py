"""Buffers of rank 0 and floor-divided extents on an NVIDIA GPU, with the
wheel installed and no Go:

    PYTHONPATH=/tmp/site python3 python/gpu_tests/check_buffer_forms.py [--out DIR]

(gpu/verify.sh run forms). Fresh random inputs (the seed is printed),
outputs' memory poisoned with NaN before each call, forward (O, LSE) and
backward (dQ, dK, dV) against a float64 reference written here in torch,
a final PASS or FAIL line, exit 1 on FAIL:

  scalar    `buffer offset: i32[]`, a captured 0-d tensor, read as `offset`
            in `kv <= q + offset`, at offsets 0, 37 and -5 (rows with no key
            left give O = 0 and LSE = -inf, as FlexAttention's);
  blocks    `buffer keep: bool[B, H, (Q + 63) // 64, (KV + 63) // 64]`, a
            per-(b, h) block table with a ceiling extent, read as
            `keep[b, h, q // 64, kv // 64] or q == kv` at S = 1000 (not a
            multiple of 64: the last block is partial);
  floor     the same table declared `[B, H, Q // 64, KV // 64]` at S = 1000:
            the read of the partial last block falls outside, so the call is
            refused before any kernel runs (E410), and at S = 1024 it runs
            and matches the reference.
"""
import torch

from maskc.diagnostics import MaskcError

import flexcheck
from flexcheck import poison, rel_err

TOL = 1e-2

FLEX = """buffer offset: i32[]
buffer keep: bool[B, H, (Q + 63) // 64, (KV + 63) // 64]
buffer keep_floor: bool[B, H, Q // 64, KV // 64]

mask shifted(b, h, q, kv) = kv <= q + offset
mask blocks(b, h, q, kv) = keep[b, h, q // 64, kv // 64] or q == kv
mask blocks_floor(b, h, q, kv) = keep_floor[b, h, q // 64, kv // 64] or q == kv

attention scalar_layer {
    mask = shifted
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention blocks_layer {
    mask = blocks
    layout = bshd
    dtype = bf16
    head_dim = 128
}

attention floor_layer {
    mask = blocks_floor
    layout = bshd
    dtype = bf16
    head_dim = 128
}
"""


def reference(q, k, v, keep):
    """float64 attention of bshd q, k, v under the bool mask keep [B, H, S,
    S]: (out, lse, dq, dk, dv) with the gradients of sum(out * g) for the
    fixed cotangent g returned too; rows with no key give 0 and -inf."""
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    D = q.shape[-1]
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) / D ** 0.5
    s = s.masked_fill(~keep, float("-inf"))
    # A row with no key: its lse from zeros (finite, no gradient reaches s),
    # its p all exp(-inf) = 0, its LSE reported -inf.
    any_key = keep.any(dim=-1)
    lse = torch.logsumexp(torch.where(any_key[..., None], s, torch.zeros_like(s)), dim=-1)
    p = torch.exp(s - lse[..., None])
    out = torch.einsum("bhqk,bkhd->bqhd", p, vd)
    return qd, kd, vd, out, torch.where(any_key, lse.detach(), torch.full_like(lse, float("-inf")))




def lse_err(lse, ref):
    """The LSE's relative error over finite entries, inf where -inf and a
    finite value disagree."""
    lse, ref = lse.double(), ref.double()
    fin = torch.isfinite(ref)
    if not torch.equal(fin, torch.isfinite(lse)):
        return float("inf")
    return rel_err(lse[fin], ref[fin]) if fin.any() else 0.0




def run_case(attn, buffers, keep, B, S, H, gen, log, name):
    D = 128
    q, k, v = [torch.randn(B, S, H, D, generator=gen, device="cuda").to(torch.bfloat16).requires_grad_()
               for _ in range(3)]
    g = torch.randn(B, S, H, D, generator=gen, device="cuda").to(torch.bfloat16)
    poison(q.numel() * 2)
    poison(B * H * S * 4)
    out, lse = attn(q, k, v, buffers=buffers, return_lse=True, backend="generated")
    for t in (q, k, v):
        poison(t.numel() * 2)
    out.backward(g)
    torch.cuda.synchronize()
    qd, kd, vd, ref, ref_lse = reference(q, k, v, keep)
    ref.backward(g.double())
    errs = [rel_err(out, ref), lse_err(lse, ref_lse), rel_err(q.grad, qd.grad), rel_err(k.grad, kd.grad),
            rel_err(v.grad, vd.grad)]
    good = all(e < TOL for e in errs)
    log("%s: B=%d H=%d S=%d: O %.2e, LSE %.2e, dQ %.2e, dK %.2e, dV %.2e: %s" %
        ((name, B, H, S) + tuple(errs) + ("ok" if good else "WRONG",)))
    return good


def check_scalar(prog, gen, log):
    attn = prog.attention("scalar_layer")
    B, S, H = 2, 1000, 2
    ok = True
    r = torch.arange(S, device="cuda")
    for off in (0, 37, -5):
        offset = torch.tensor(off, dtype=torch.int32, device="cuda")  # 0-d
        keep = (r[None, :] <= r[:, None] + off).expand(B, H, S, S)
        ok = run_case(attn, {"offset": offset}, keep, B, S, H, gen, log, "scalar offset=%d" % off) and ok
    return ok


def block_table(B, H, nq, nk, gen):
    return torch.rand(B, H, nq, nk, generator=gen, device="cuda") < 0.3


def expand(table, S):
    r = torch.arange(S, device="cuda")
    t = table[:, :, r // 64][:, :, :, r // 64]
    return t | (r[:, None] == r[None, :])


def check_blocks(prog, gen, log):
    attn = prog.attention("blocks_layer")
    B, S, H = 2, 1000, 2
    n = (S + 63) // 64
    table = block_table(B, H, n, n, gen)
    return run_case(attn, {"keep": table}, expand(table, S), B, S, H, gen, log, "blocks (Q + 63) // 64")


def check_floor(prog, gen, log):
    attn = prog.attention("floor_layer")
    B, H, S = 2, 2, 1000
    q = torch.randn(B, S, H, 128, generator=gen, device="cuda").to(torch.bfloat16)
    table = block_table(B, H, S // 64, S // 64, gen)
    err = None
    try:
        attn(q, q, q, buffers={"keep_floor": table}, backend="generated")
        torch.cuda.synchronize()
    except MaskcError as e:
        err = str(e)
    refused = err is not None and "keep_floor" in err and "outside" in err
    log("floor at S = %d: %s: %r" % (S, "refused" if refused else "NOT REFUSED", err))
    S = 1024
    table = block_table(B, H, S // 64, S // 64, gen)
    fits = run_case(attn, {"keep_floor": table}, expand(table, S), B, S, H, gen, log, "floor Q // 64")
    return refused and fits



if __name__ == "__main__":
    flexcheck.main("forms.flex", FLEX, (("scalar", check_scalar), ("blocks", check_blocks), ("floor", check_floor)), "buffer_forms.txt")
