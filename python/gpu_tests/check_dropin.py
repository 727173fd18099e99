"""maskc.torch.flex_attention against torch's own flex_attention, on a GPU.

    PYTHONPATH=/tmp/site python3 python/gpu_tests/check_dropin.py [--out DIR] [--seq 320]

The cases (dropin_cases.py: test_flex_attention.py's builtin score mods,
captured buffers in every dimension, block masks built from attention-gym's
mask_mods and and_masks/or_masks, GQA, learned captured tensors, rows that
keep nothing) run three ways on fresh random inputs (the seed is printed):
maskc's drop-in (the mods read from source, compiled, run by the generated
kernel), torch's flex_attention (eager, the same mods and torch's own
create_block_mask), and a float64 dense reference evaluated here by calling
the mods on broadcast index tensors. maskc's output and LSE must be within
TOL of the reference, and not much further from it than torch's own result
is; the gradients of q, k, v and of the captured tensors that require grad
(of a loss on the output and, where returned, the LSE) likewise. maskc's
outputs land in memory poisoned with NaN beforehand (the caching
allocator's blocks are filled and released before each call). COMPILED
cases also run inside torch.compile (against eager maskc: the forward
bitwise, gradients within 1e-3, as dQ accumulates with atomics), and one case against torch's compiled (fused)
flex_attention. Prints a PASS/FAIL table, writes DIR/dropin.json, exits 1
on any failure.
"""
import argparse
import json
import math
import os
import sys
import time
import traceback

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dropin_cases  # noqa: E402

TOL = {"out": 1e-2, "lse": 2e-3, "grad": 2e-2}  # rel. Frobenius error (lse: max abs) against float64
DEVICE = "cuda"  # the host smoke test of this script's plumbing sets "cpu"
INDEX_DTYPE = torch.int32  # of captured index tensors; the host smoke test (torch 1.13 indexes with int64 only) sets int64
VS_TORCH = 4.0  # maskc's error may be at most this times torch's own (plus the tolerance's tenth)


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def poison():
    """Fills and releases a large block so that the next allocations
    (maskc's outputs) start as NaN."""
    x = torch.full((48 << 20,) if DEVICE == "cuda" else (1,), float("nan"), device=DEVICE, dtype=torch.float32)
    del x


class Tensors:
    """dropin_cases' factory: fresh random CUDA tensors, recorded so that
    the float64 reference can be built over the same values."""

    def __init__(self, g, replay=None, device=None):
        self.g, self.made, self.replay, self.device = g, [], replay, device or DEVICE

    def _next(self, make):
        if self.replay is not None:
            t = self.replay.made[len(self.made)]
            # float64 copies; index tensors as int64 (the same values; older torch indexes with int64 only)
            if t.is_floating_point():
                t = t.detach().double().requires_grad_(t.requires_grad)
            elif t.dtype != torch.bool:
                t = t.long()
        else:
            t = make()
        self.made.append(t)
        return t

    def ints(self, shape, hi):
        return self._next(lambda: torch.randint(0, hi, shape, generator=self.g).to(self.device, INDEX_DTYPE))

    def floats(self, shape, scale, grad):
        return self._next(lambda: (torch.randn(shape, generator=self.g) * scale).to(self.device).requires_grad_(grad))

    def docs(self, S):
        def make():
            cuts = sorted(torch.randint(1, S, (5,), generator=self.g).tolist())
            d = torch.zeros(S, dtype=INDEX_DTYPE)
            for c in cuts:
                d[c:] += 1
            return d.to(self.device)
        return self._next(make)

    def padding(self, B, S):
        """bool [B, S]: every key kept but the last S // 10 of batch 1 (right padding)."""
        def make():
            p = torch.ones(B, S, dtype=torch.bool)
            p[min(1, B - 1), S - S // 10:] = False
            return p.to(self.device)
        return self._next(make)

    def doc_offsets(self, S):
        """(offsets [7]: where document i starts, document ids [S])."""
        d = self.docs(S)
        starts = lambda: torch.searchsorted(d.to(torch.int64), torch.arange(7, device=d.device)).to(INDEX_DTYPE)
        return self._next(starts), d


def reference(case, q, k, v, scale):
    """(out, lse) in float64: the mods called on broadcast index tensors."""
    B, H, L, D = q.shape
    hkv, S = k.shape[1], k.shape[2]
    kk = k.repeat_interleave(H // hkv, dim=1)
    vv = v.repeat_interleave(H // hkv, dim=1)
    s = q @ kk.transpose(-1, -2) * (scale if scale is not None else 1 / math.sqrt(D))
    dev = q.device
    b = torch.arange(B, device=dev).view(B, 1, 1, 1)
    h = torch.arange(H, device=dev).view(1, H, 1, 1)
    qi = torch.arange(L, device=dev).view(1, 1, L, 1)
    ki = torch.arange(S, device=dev).view(1, 1, 1, S)
    if case.score_mod is not None:
        s = case.score_mod(s, b, h, qi, ki).expand(B, H, L, S)
    if case.mask_mod is not None:
        keep = torch.as_tensor(case.mask_mod(b, h, qi, ki), device=dev).expand(B, H, L, S)
        s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse.unsqueeze(-1))
    p = torch.where(torch.isfinite(lse).unsqueeze(-1), p, torch.zeros_like(p))
    return p @ vv, lse


def run_case(name, B, H, S, D, g):
    """One case: {check: (value, ok)} and its notes."""
    T = Tensors(g)
    case = dropin_cases.CASES[name](T, B, H, S)
    hkv, D = case.hkv or H, case.head_dim or D
    q = torch.randn(B, H, S, D, generator=g).to(DEVICE, torch.bfloat16).requires_grad_()
    k = torch.randn(B, hkv, S, D, generator=g).to(DEVICE, torch.bfloat16).requires_grad_()
    v = torch.randn(B, hkv, S, D, generator=g).to(DEVICE, torch.bfloat16).requires_grad_()
    go = torch.randn(B, H, S, D, generator=g).to(DEVICE)
    gl = torch.randn(B, H, S, generator=g).to(DEVICE)
    leaves = [q, k, v] + case.leaves
    gqa = case.hkv is not None
    res, notes = {}, []

    def loss(o, l):
        x = (o.float() * go).sum()
        if l is not None:
            x = x + (torch.where(torch.isfinite(l), l, torch.zeros_like(l)) * gl).sum()
        return x

    # maskc
    make_bm = tfa.create_block_mask if case.torch_block_mask else mt.create_block_mask
    bm = make_bm(case.mask_mod, B, H, S, S, device=DEVICE) if case.mask_mod is not None else None
    poison()
    got = mt.flex_attention(q, k, v, score_mod=case.score_mod, block_mask=bm, scale=case.scale, enable_gqa=gqa,
                            return_lse=case.lse)
    out, lse = got if case.lse else (got, None)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    if not bool(torch.isfinite(out).all()):
        notes.append("maskc's output has non-finite values")
    grads = torch.autograd.grad(loss(out, lse), leaves)

    # the float64 reference over the same values
    R = Tensors(None, replay=T)
    rcase = dropin_cases.CASES[name](R, B, H, S)
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    rout, rlse = reference(rcase, q64, k64, v64, case.scale)
    rgrads = torch.autograd.grad(loss(rout, rlse if case.lse else None), [q64, k64, v64] + rcase.leaves)

    # torch's own flex_attention (eager), same mods
    tbm = tfa.create_block_mask(case.mask_mod, B, H, S, S, device=DEVICE) if case.mask_mod is not None else None
    tout = tlse = tgrads = None
    try:  # torch's result is the yardstick; a case torch's eager path cannot run is checked against float64 only
        tgot = tfa.flex_attention(q, k, v, score_mod=case.score_mod, block_mask=tbm, scale=case.scale,
                                  enable_gqa=gqa, return_lse=case.lse)
        tout, tlse = tgot if case.lse else (tgot, None)
        tgrads = torch.autograd.grad(loss(tout, tlse), leaves)
    except Exception as e:
        notes.append("torch's flex_attention: %s" % (str(e).splitlines() or [type(e).__name__])[0][:160])

    def check(key, mine, theirs, ref, tol):
        e = rel(mine, ref)
        te = rel(theirs, ref) if theirs is not None else float("nan")
        ok = e < tol and (theirs is None or e <= VS_TORCH * te + tol / 10)
        res[key] = (e, te, ok)

    check("out", out, tout, rout, TOL["out"])
    empty = ~torch.isfinite(rlse)
    if bool(empty.any()):
        zero = bool((out.float()[empty] == 0).all())
        res["empty rows 0"] = (float(empty.sum()), float("nan"), zero)
    if case.lse:
        fin = torch.isfinite(rlse)
        same_inf = bool(torch.equal(torch.isfinite(lse), fin))  # -inf exactly where the row keeps nothing
        if tlse is not None and not bool(torch.equal(torch.isfinite(tlse), fin)):
            notes.append("torch's LSE is not -inf exactly on the empty rows")
        e = float((lse.double() - rlse)[fin].abs().max()) if bool(fin.any()) else 0.0
        te = float((tlse.double() - rlse)[fin].abs().max()) if bool(fin.any()) and tlse is not None else float("nan")
        res["lse"] = (e, te, same_inf and e < TOL["lse"] and (tlse is None or e <= VS_TORCH * te + TOL["lse"] / 10))
    names = ["dq", "dk", "dv"] + ["d%s" % i for i in range(len(case.leaves))]
    for i, n in enumerate(names):
        check(n, grads[i], tgrads[i] if tgrads is not None else None, rgrads[i], TOL["grad"])

    if name in dropin_cases.COMPILED:
        def f(q, k, v):
            return mt.flex_attention(q, k, v, score_mod=case.score_mod, block_mask=bm, scale=case.scale,
                                     enable_gqa=gqa, return_lse=case.lse)
        cf = torch.compile(f)
        cgot = cf(q, k, v)
        cout, clse = cgot if case.lse else (cgot, None)
        cgrads = torch.autograd.grad(loss(cout, clse), leaves)
        # the same kernels: forward bitwise; gradients to within dQ's atomic accumulation order
        same = torch.equal(cout, out) and (clse is None or torch.equal(clse, lse))
        res["torch.compile fwd bitwise"] = (0.0 if same else 1.0, float("nan"), same)
        ge = max(rel(a, b) for a, b in zip(cgrads, grads))
        res["torch.compile grads"] = (ge, float("nan"), ge < 1e-3)
    return res, notes


def compiled_torch_case(B, H, S, D, g):
    """document_causal against torch's compiled (fused) flex_attention:
    maskc's error from float64 against the fused kernel's."""
    T = Tensors(g)
    case = dropin_cases.CASES["document_causal"](T, B, H, S)
    q, k, v = (torch.randn(B, H, S, D, generator=g).to(DEVICE, torch.bfloat16) for _ in range(3))
    bm = mt.create_block_mask(case.mask_mod, B, H, S, S)
    out = mt.flex_attention(q, k, v, block_mask=bm)
    tbm = tfa.create_block_mask(case.mask_mod, B, H, S, S, device=DEVICE)
    tout = torch.compile(tfa.flex_attention)(q, k, v, block_mask=tbm)
    rout, _ = reference(case, q.double(), k.double(), v.double(), None)
    e, te = rel(out, rout), rel(tout, rout)
    return {"out vs fused torch": (e, te, e < TOL["out"] and e <= VS_TORCH * te + TOL["out"] / 10)}, []


def prebuild(names, B, H, S, D):
    """Reads and compiles every case's mods (maskc once per case), then
    builds their kernels, forward and backward, in parallel threads (NVRTC),
    so the cases' first calls find them cached."""
    from concurrent.futures import ThreadPoolExecutor
    from maskc import flex
    gens = []
    for n in names:
        try:  # a case maskc refuses fails in its own row, with the error
            case = dropin_cases.CASES[n](Tensors(torch.Generator().manual_seed(0)), B, H, S)
            r = flex.resolve(case.mask_mod, case.score_mod, {"B": B, "H": H, "Q": S, "KV": S}, "bf16",
                             *flex.kernel_head_dim(case.head_dim or D, case.scale))
        except Exception as e:
            print("prebuild %s: %s" % (n, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        if r.attn.decision.has_generated:
            gens.append(r.attn.generated())
    idx = torch.cuda.current_device()
    jobs = [g.compile_for for g in gens] + [g.compile_bwd_for for g in gens if g.spec.bwd_source]
    with ThreadPoolExecutor(max(1, min(16, len(jobs)))) as ex:
        for f in [ex.submit(j, idx) for j in jobs]:
            try:
                f.result()
            except Exception as e:  # its case fails in its own row, where the build is retried
                print("prebuild: %s" % (str(e).splitlines()[0] if str(e) else type(e).__name__))
    return len(gens)


def main():
    global mt, tfa
    import maskc.torch as mt
    from torch.nn.attention import flex_attention as tfa
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--seq", type=int, default=320, help="sequence length (not a multiple of the tiles)")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    args = ap.parse_args()
    seed = int.from_bytes(os.urandom(4), "little")
    print("seed %d, torch %s, %s" % (seed, torch.__version__, torch.cuda.get_device_name()))
    g = torch.Generator().manual_seed(seed)
    B, H, S, D = 2, 8, args.seq, 64
    names = [n for n in args.cases.split(",") if n] or list(dropin_cases.CASES)
    rows, failed = [], 0
    t0 = time.time()
    print("prebuilt %d generated kernels in %.0f s" % (prebuild(names, B, H, S, D), time.time() - t0), flush=True)
    jobs = [(n, lambda n=n: run_case(n, B, H, S, D, g)) for n in names]
    if not args.cases:
        jobs.append(("compiled torch flex", lambda: compiled_torch_case(B, H, S, D, g)))
    for name, job in jobs:
        t = time.time()
        try:
            res, notes = job()
            ok = all(r[2] for r in res.values())
        except Exception:
            res, notes, ok = {}, [traceback.format_exc().strip().splitlines()[-1][:300]], False
            traceback.print_exc()
        failed += not ok
        rows.append({"case": name, "ok": ok, "seconds": round(time.time() - t, 1), "notes": notes,
                     "checks": {k: {"maskc": v[0], "torch": v[1], "ok": v[2]} for k, v in res.items()}})
        print("%-22s %s %5.1fs  %s%s" % (name, "PASS" if ok else "FAIL", time.time() - t, "  ".join(
            "%s %.2e/%.2e%s" % (k, v[0], v[1], "" if v[2] else "!") for k, v in res.items()),
            ("  [" + "; ".join(notes) + "]") if notes else ""), flush=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "dropin.json"), "w") as f:
        json.dump({"seed": seed, "shape": [B, H, S, D], "tol": TOL, "rows": rows}, f, indent=1)
    print("\n%-22s %s" % ("case", "result (error from float64: maskc/torch; ! = outside tolerance)"))
    for r in rows:
        print("%-22s %s" % (r["case"], "PASS" if r["ok"] else "FAIL"))
    print("check_dropin: %s (%d of %d cases passed, %.0f s)" % ("PASS" if not failed else "FAIL", len(rows) - failed,
                                                                len(rows), time.time() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
