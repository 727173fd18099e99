"""Correctness of maskc's generated attention backward on an NVIDIA GPU.

Usage: python3 gpu/bwd_check.py --generated DIR [--cases a,b] [--out FILE.jsonl] [--no-flex]

DIR is `go run ./cmd/genkernels -o DIR ...` output (manifest.json,
NAME.bwd.cu). For every kernel and shape: compile the backward source with
NVRTC, draw fresh random inputs (q, k, v, dO, dLSE, float buffers, sink),
run the kernel's own forward for O and LSE, poison dQ, dK, dV and the buffer
and sink gradients with NaN, run the backward, check every element was
written, and compare dQ, dK, dV, every differentiable float buffer's
gradient and dsink with float64 torch autograd of the same attention
(harness.reference_grads, the manifest's torch mask and score; buffer and sink
gradients, and dQ, dK, dV where there is a sink, against the reference
whose delta reads the kernel's O, their plain error kept as plain_*) and, without dLSE
and sink, with torch FlexAttention's backward (eager, create_block_mask) on
the same inputs. Lengths 1, 127, 128, 1000, 8192, Sq != Skv both ways, GQA 16
query / 2 kv heads, with and without dLSE (8192 with). Deterministic mode
runs three times: the outputs must be bitwise equal, and are checked against
the reference too. Passes when every relative error (Frobenius norm) is
below 1e-2; exits 1 otherwise.
"""
import argparse
import os
import concurrent.futures
import json
import math
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)
import corpus_buffers  # noqa: E402  (realistic buffers of testdata/tilemasks)

TOL = 1e-2
# (B, H, HKV, Sq, Skv, dlse variants)
SHAPES = [
    (1, 16, 2, 1, 1, (False, True)),
    (2, 16, 2, 127, 127, (False, True)),
    (1, 16, 2, 128, 128, (False, True)),
    (2, 16, 2, 1000, 1000, (False, True)),
    (1, 16, 2, 127, 1000, (False, True)),
    (1, 16, 2, 1000, 127, (False,)),
    (1, 16, 2, 8192, 8192, (True,)),
]


def bshd(B, heads, S, D, gen, dtype=torch.bfloat16):
    return torch.randn(B, S, heads, D, generator=gen, device="cuda").to(dtype).permute(0, 2, 1, 3)


def empty_bshd(B, heads, S, D, dtype=torch.bfloat16):
    return torch.empty(B, S, heads, D, device="cuda", dtype=dtype).permute(0, 2, 1, 3)


def ref_mods(case, B, H, HKV, Sq, Skv, bufs):
    """The manifest's mask and score as plain torch lambdas (traceable by
    FlexAttention); the score takes a dict {slot: tensor} of float64 or
    float32 leaves that replace the differentiable buffers. The manifest's
    expressions take a truncated float (T5's int(log(...)) bucket) in
    float32, as the kernels do (codegen.TorchExpr), the rest in float64."""
    e = case.entry
    specs = sorted(e.get("buffers") or [], key=lambda b: b["slot"])
    base = {"B": B, "H": H, "HKV": HKV, "Q": Sq, "KV": Skv, "torch": torch}
    names = [b["name"] for b in specs]
    mask = score = None
    if e.get("mask_torch"):
        mfn = harness.TorchExpr(e["mask_torch"], ["b", "h", "q", "kv"] + names, base)
        mask = lambda b, h, q, kv: mfn(b, h, q, kv, *bufs)
    if e.get("score_torch"):
        sfn = harness.TorchExpr(e["score_torch"], ["score", "b", "h", "q", "kv"] + names, base)

        def score(s, b, h, q, kv, leaves):
            return sfn(s, b, h, q, kv, *[leaves.get(i, t) for i, t in enumerate(bufs)])
    return mask, score


def flex_grads(case, q, k, v, do, scale, mask, score_expr_mod, B, H, HKV, Sq, Skv, leaves):
    """FlexAttention (eager) backward on the same inputs: dq, dk, dv and the
    leaves' gradients."""
    from torch.nn.attention import flex_attention as fa
    qc, kc, vc = [t.detach().contiguous().requires_grad_(True) for t in (q, k, v)]
    bm = fa.create_block_mask(mask, B, H, Sq, Skv, device="cuda") if mask is not None else None
    sm = None
    if score_expr_mod is not None:
        sm = lambda s, b, h, qi, kvi: score_expr_mod(s, b, h, qi, kvi, leaves)
    out = fa.flex_attention(qc, kc, vc, score_mod=sm, block_mask=bm, scale=scale, enable_gqa=HKV != H)
    out.backward(do.contiguous())
    return qc.grad, kc.grad, vc.grad, {s: t.grad for s, t in leaves.items()}


def bits(t):
    return t.contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32)


def check_one(kern, case, shape, use_dlse, gen, flex):
    B, H, HKV, Sq, Skv, _ = shape
    D = kern.head_dim
    scale = case.entry.get("scale") or 1.0 / math.sqrt(D)
    q, k, v = bshd(B, H, Sq, D, gen), bshd(B, HKV, Skv, D, gen), bshd(B, HKV, Skv, D, gen)
    do = bshd(B, H, Sq, D, gen)
    o = empty_bshd(B, H, Sq, D).fill_(float("nan"))
    lse = torch.full((B, H, Sq), float("nan"), device="cuda")
    seed = int(torch.randint(1 << 30, (1,), generator=gen, device="cuda"))
    bufs, _, _ = case.build(B, H, HKV, Sq, Skv, "cuda", torch.Generator().manual_seed(seed))
    grad_slots = [b["slot"] for b in case.entry.get("buffers") or [] if b.get("grad")]
    sink = torch.randn(H, generator=gen, device="cuda") * 2 if case.sink else None
    dlse = torch.randn(B, H, Sq, generator=gen, device="cuda") if use_dlse else None
    fwd = kern.prepare(q, k, v, o, lse, scale, bufs, sink)
    fwd()
    r = dict(fwd_unwritten=int(torch.isnan(o).sum().item() + torch.isnan(lse).sum().item()))

    def run(deterministic):
        dq, dk, dv = empty_bshd(B, H, Sq, D), empty_bshd(B, HKV, Skv, D), empty_bshd(B, HKV, Skv, D)
        bw = kern.prepare_bwd(q, k, v, o, lse, do, dq, dk, dv, scale, bufs, grad_slots, sink, dlse, fwd.flags,
                              deterministic)
        for t in [dq, dk, dv] + list(bw.dbufs.values()) + ([bw.dsink] if bw.dsink is not None else []):
            t.fill_(float("nan"))
        bw()
        torch.cuda.synchronize()
        return dq, dk, dv, {s: t.clone() for s, t in bw.dbufs.items()}, (bw.dsink.clone() if bw.dsink is not None
                                                                          else None)

    got = run(False)
    dets = [run(True) for _ in range(3)]
    mask, score = ref_mods(case, B, H, HKV, Sq, Skv, bufs)
    ref = harness.reference_grads(q, k, v, scale, mask, score, do, dlse, bufs, grad_slots, sink)
    # Buffer and sink gradients are sums whose terms may cancel (an ALiBi
    # slope's sum of dS * (kv - q) is ~0 row by row), so that the bf16
    # rounding of O, which every backward reads in delta (FlexAttention's
    # too), moves them by more than 1e-2 of their size. They are compared
    # with the float64 reference whose delta reads the kernel's O
    # (reference_grads' o_delta): the kernel's own error; the plain error
    # is kept as plain_*.
    ref_o = harness.reference_grads(q, k, v, scale, mask, score, do, dlse, bufs, grad_slots, sink, o_delta=o) \
        if grad_slots or sink is not None else ref

    # With a sink the same cancellation reaches dQ and dK: a row with one
    # key keeps P = exp(s - LSE) < 1 of it, and dP - delta = dO.V (1 - P)
    # shrinks with 1 - P while delta's bf16 O keeps its absolute error
    # (device runs 21x: 1.02e-2 .. 1.11e-2 at Sq = Skv = 1, the deterministic
    # kernel alike). There dQ, dK, dV are compared with ref_o as well, their
    # plain error kept as plain_*.
    ref_qkv = ref_o if sink is not None else ref

    def errs(g, prefix):
        dq, dk, dv, db, ds = g
        out = {prefix + "dq": harness.rel_err(dq, ref_qkv[0]), prefix + "dk": harness.rel_err(dk, ref_qkv[1]),
               prefix + "dv": harness.rel_err(dv, ref_qkv[2])}
        if ref_qkv is not ref:
            out.update({"plain_" + prefix + n: harness.rel_err(t, ref[i]) for i, (n, t) in enumerate(
                (("dq", dq), ("dk", dk), ("dv", dv)))})
        for s in grad_slots:
            out[prefix + "dbuf%d" % s] = harness.rel_err(db[s], ref_o[3][s])
            out["plain_" + prefix + "dbuf%d" % s] = harness.rel_err(db[s], ref[3][s])
        if ds is not None:
            out[prefix + "dsink"] = harness.rel_err(ds, ref_o[4])
            out["plain_" + prefix + "dsink"] = harness.rel_err(ds, ref[4])
        return out
    unwritten = sum(int(torch.isnan(t).sum().item()) for t in list(got[:3]) + list(got[3].values()) +
                    ([got[4]] if got[4] is not None else []))
    r.update(errs(got, ""))
    r.update(errs(dets[0], "det_"))
    same = True
    for d in dets[1:]:
        same = same and all(torch.equal(bits(a), bits(b)) for a, b in zip(d[:3], dets[0][:3]))
        same = same and all(torch.equal(bits(d[3][s]), bits(dets[0][3][s])) for s in grad_slots)
        if d[4] is not None:
            same = same and torch.equal(bits(d[4]), bits(dets[0][4]))
    r.update(unwritten=unwritten, det_bitwise=same)
    ok = unwritten == 0 and r["fwd_unwritten"] == 0 and same and all(
        v < TOL for key, v in r.items() if key.startswith(("d", "det_d")) and isinstance(v, float))
    if flex and sink is None and dlse is None:
        leaves = {s: bufs[s].detach().float().requires_grad_(True) for s in grad_slots}
        try:
            fg = flex_grads(case, q, k, v, do, scale, mask, score, B, H, HKV, Sq, Skv, leaves)
            r.update(flex_dq=harness.rel_err(got[0], fg[0]), flex_dk=harness.rel_err(got[1], fg[1]),
                     flex_dv=harness.rel_err(got[2], fg[2]), flex_ref_dq=harness.rel_err(fg[0], ref[0]),
                     flex_ref_dk=harness.rel_err(fg[1], ref[1]))
            for s in grad_slots:
                if fg[3][s] is not None:
                    r["flex_dbuf%d" % s] = harness.rel_err(got[3][s], fg[3][s])
                    r["flex_ref_dbuf%d" % s] = harness.rel_err(fg[3][s], ref[3][s])
            # A gradient that is exactly zero (one key: P = 1, dS = 0, so dQ
            # = dK = 0) is rounding noise on both sides, and the relative
            # error of one noise against the other means nothing: such a
            # gradient (float64 norm under 1e-6 of dV's) is held to the
            # float64 reference only (above), and marked flex_zero_*.
            floor = 1e-6 * ref[2].norm().item()
            gated = []
            for x, t in (("flex_dq", ref[0]), ("flex_dk", ref[1]), ("flex_dv", ref[2])):
                if t.norm().item() <= floor:
                    r["flex_zero_" + x[len("flex_"):]] = True
                else:
                    gated.append(x)
            ok = ok and all(r[x] < TOL for x in gated)
        except Exception as e:
            r["flex_error"] = repr(e)[:300]
    r["ok"] = ok
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True)
    ap.add_argument("--cases")
    ap.add_argument("--out", default="bwd_check.jsonl")
    ap.add_argument("--no-flex", action="store_true")
    ap.add_argument("--max-len", type=int, default=1 << 30, help="skip shapes longer than this")
    ap.add_argument("--shapes", help="comma-separated indices into SHAPES (default all)")
    a = ap.parse_args()
    man = json.load(open(a.generated + "/manifest.json"))
    abi = harness.ABI(man["abi"])
    names = a.cases.split(",") if a.cases else None
    jobs = []
    for e in man["kernels"]:
        if names and e["name"] not in names:
            continue
        jobs.append((corpus_buffers.wrap(harness.GeneratedCase(e)), harness.read(a.generated + "/" + e["bwd_source"])))
    harness.libs()
    torch.empty(1, device="cuda")
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        futs = [ex.submit(harness.compile_source, src, c.name + "_bwd", None, abi) for c, src in jobs]
    kernels = []
    for (c, src), f in zip(jobs, futs):
        try:
            kernels.append(harness.BwdKernel(src, c.entry, abi, c.name, compiled=f.result()))
        except Exception as e:
            kernels.append(e)
    print("compiled %d backward sources in %.1fs" % (len(jobs), time.time() - t0), flush=True)
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
    log = open(a.out, "w")
    fails = total = 0
    for (case, _), kern in zip(jobs, kernels):
        if isinstance(kern, Exception):
            print("COMPILE FAIL %s: %s" % (case.name, str(kern)[-3000:]), flush=True)
            fails += 1
            continue
        ordered = "" if kern.bwd_ordered_regs < 0 else " ordered regs=%d local=%d (det dQ in order)" % (
            kern.bwd_ordered_regs, kern.bwd_ordered_local_bytes)
        print("kernel %-28s bwd regs=%d local=%d dq regs=%d wgmma_fwd=%s%s" % (
            case.name, kern.bwd_regs, kern.bwd_local_bytes, kern.bwd_dq_regs, kern.platform == "nvidia-sm90a", ordered),
            flush=True)
        for si, shape in enumerate(SHAPES):
            if a.shapes and str(si) not in a.shapes.split(","):
                continue
            if max(shape[3], shape[4]) > a.max_len:
                continue
            if not case.covers(shape[3], shape[4]):
                continue  # a buffer sized by KV alone may be indexed by q (as check.py)
            for use_dlse in shape[5]:
                total += 1
                try:
                    r = check_one(kern, case, shape, use_dlse, gen, not a.no_flex and shape[3] <= 1000)
                except Exception as e:
                    r = dict(ok=False, error=repr(e)[:400])
                r.update(case=case.name, shape=list(shape[:5]), dlse=use_dlse)
                log.write(json.dumps(r) + "\n")
                log.flush()
                fails += not r["ok"]
                worst = max([v for key, v in r.items() if key.startswith(("d", "det_d")) and isinstance(v, float)] or
                            [math.nan])
                plain = max([v for key, v in r.items() if key.startswith("plain_") and isinstance(v, float)] or
                            [math.nan])
                fl = max([v for key, v in r.items() if key.startswith("flex_d") and isinstance(v, float)] or [math.nan])
                bad = [key for key, v in r.items() if key.startswith(("d", "det_d", "flex_d")) and isinstance(v, float)
                       and v >= TOL and not r.get("flex_zero_" + key[len("flex_"):])]
                print("  %-22s dlse=%d worst_vs_ref=%.2e worst_vs_flex=%.2e plain=%.2e det_bitwise=%s unwritten=%s "
                      "%s%s%s" % (
                    ",".join(map(str, shape[:5])), use_dlse, worst, fl, plain, r.get("det_bitwise"), r.get("unwritten"),
                    ("over 1e-2: " + ",".join(bad) + " ") if bad else "",
                    "ok" if r["ok"] else "FAIL", (" " + r.get("error", r.get("flex_error", ""))) if not r["ok"] or
                    "flex_error" in r else ""), flush=True)
            torch.cuda.empty_cache()
    print("\nbwd_check: %d passed, %d failed" % (total - fails, fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
