"""maskc.cp's ring over simulated ranks against the unsplit call, on a GPU.

For every block of cp.flex (causal, document-causal, a sliding window, and
ALiBi: a score reading the global per-head table slopes[h]), N = 2 and 4
simulated ranks, and the contiguous and zigzag layouts: fresh random q, k, v
(and slopes, and documents), the ring's O and LSE (gathered back into the
global order) and the gradients of one loss of both (so dLSE is exercised)
with respect to q, k, v and slopes, compared with the unsplit generated
kernel's. Also the head frame: the ALiBi block run as two head shards
(h_offset 0 and H/2 into the global slope table) against the unsplit rows,
with a control: the second shard without its frame must differ. Inputs are
fresh random values each run (the seed is printed). Prints one line per
case and writes $OUT/cp.json; exits 1 if any case is outside tolerance.

    python3 python/gpu_tests/check_cp.py [--seq 2048] [--out DIR]
"""
import argparse
import json
import os
import sys
import time

import torch

import maskc.cp as cp
import maskc.torch as mt

HERE = os.path.dirname(os.path.abspath(__file__))
TOL = {"out": 1e-2, "lse": 2e-3, "grad": 2e-2}  # rel. Frobenius error (lse: max abs)


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def docs(S, g):
    cuts = sorted(torch.randint(1, S, (6,), generator=g).tolist())
    d = torch.zeros(S, dtype=torch.int32)
    for c in cuts:
        d[c:] += 1
    return d.cuda()


def run_case(attn, block, B, S, H, HKV, D, world, layout, g):
    q = torch.randn(B, S, H, D, generator=g).to("cuda", torch.bfloat16).requires_grad_()
    k = torch.randn(B, S, HKV, D, generator=g).to("cuda", torch.bfloat16).requires_grad_()
    v = torch.randn(B, S, HKV, D, generator=g).to("cuda", torch.bfloat16).requires_grad_()
    buffers, leaves = {}, [q, k, v]
    if block == "doc_layer":
        buffers["doc"] = docs(S, g)
    if block == "alibi_layer":
        slopes = (torch.rand(H, generator=g) * 0.05).cuda().requires_grad_()
        buffers["slopes"] = slopes
        leaves.append(slopes)
    go = torch.randn(B, S, H, D, generator=g).cuda()
    gl = torch.randn(B, H, S, generator=g).cuda()

    def loss(o, l):
        return (o.float() * go).sum() + (l * gl).sum()

    o_ref, l_ref = attn(q, k, v, buffers=buffers, return_lse=True, backend="generated")
    g_ref = torch.autograd.grad(loss(o_ref, l_ref), leaves)
    qs, ks, vs = (cp.split_sequence(t, world, layout, "bshd") for t in (q, k, v))
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    outs, lses = cp.ring_attention_simulated(attn, qs, ks, vs, layout, buffers, "bshd")
    o = cp.gather_sequence(outs, layout, "bshd")
    l = cp.gather_sequence(lses, layout, dim=2)
    grads = torch.autograd.grad(loss(o, l), leaves)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    res = {"block": block, "world": world, "layout": layout, "out": rel(o, o_ref),
           "lse": float((l - l_ref).abs().max()), "ring_ms_fwd_bwd": ms,
           "nan": bool(torch.isnan(o).any() or torch.isnan(l).any())}
    for name, a, b in zip(("dq", "dk", "dv", "dslopes"), grads, g_ref):
        res[name] = rel(a, b)
    return res


def head_shards(attn, B, S, H, HKV, D, g):
    """The ALiBi block on two head shards with h_offset into the global
    slope table, against the unsplit call's rows of those heads."""
    q = torch.randn(B, S, H, D, generator=g).to("cuda", torch.bfloat16)
    k = torch.randn(B, S, HKV, D, generator=g).to("cuda", torch.bfloat16)
    v = torch.randn(B, S, HKV, D, generator=g).to("cuda", torch.bfloat16)
    slopes = (torch.rand(H, generator=g) * 0.05 + 0.01).cuda()
    o_ref, l_ref = attn(q, k, v, buffers={"slopes": slopes}, return_lse=True, backend="generated")
    hq, hk = H // 2, HKV // 2
    worst = {"block": "alibi_layer", "head_shards": 2, "out": 0.0, "lse": 0.0}
    for s in range(2):
        fr = cp.Frame(h_offset=s * hq, h_total=H)
        o, l = attn(q[:, :, s * hq:(s + 1) * hq].contiguous(), k[:, :, s * hk:(s + 1) * hk].contiguous(),
                    v[:, :, s * hk:(s + 1) * hk].contiguous(), buffers={"slopes": slopes}, return_lse=True,
                    frame=fr)
        worst["out"] = max(worst["out"], rel(o, o_ref[:, :, s * hq:(s + 1) * hq]))
        worst["lse"] = max(worst["lse"], float((l - l_ref[:, s * hq:(s + 1) * hq]).abs().max()))
    # control: without its frame the second shard reads slopes[0:H/2], which must show
    o_bad = attn(q[:, :, hq:].contiguous(), k[:, :, hk:].contiguous(), v[:, :, hk:].contiguous(),
                 buffers={"slopes": slopes}, backend="generated", frame=cp.Frame(h_total=H))
    worst["control_without_offset"] = rel(o_bad, o_ref[:, :, hq:])
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    seed = int.from_bytes(os.urandom(4), "little")
    g = torch.Generator().manual_seed(seed)
    prog = mt.load(os.path.join(HERE, "cp.flex"))
    t0 = time.perf_counter()
    prog.prepare()  # every block's kernels, forward and backward, compiled in parallel
    print("prepare: %.1f s" % (time.perf_counter() - t0))
    B, S, H, HKV, D = 2, args.seq, 4, 2, 128
    results, bad = [], 0
    print("seed %d, B=%d S=%d H=%d HKV=%d D=%d on %s" % (seed, B, S, H, HKV, D, torch.cuda.get_device_name()))
    for block in ("causal_layer", "doc_layer", "window_layer", "alibi_layer"):
        attn = prog.attention(block)
        for world in (2, 4):
            for layout in ("contiguous", "zigzag"):
                r = run_case(attn, block, B, S, H, HKV, D, world, layout, g)
                errs = [r["out"], r["dq"], r["dk"], r["dv"]] + ([r["dslopes"]] if "dslopes" in r else [])
                ok = not r["nan"] and r["out"] < TOL["out"] and r["lse"] < TOL["lse"] and \
                    max(errs[1:]) < TOL["grad"]
                bad += not ok
                r["ok"] = ok
                results.append(r)
                print("%-4s %-13s N=%d %-10s O %.2e LSE %.2e dQ %.2e dK %.2e dV %.2e%s  (%.1f ms fwd+bwd)" % (
                    "ok" if ok else "FAIL", block, world, layout, r["out"], r["lse"], r["dq"], r["dk"], r["dv"],
                    " dslopes %.2e" % r["dslopes"] if "dslopes" in r else "", r["ring_ms_fwd_bwd"]))
    r = head_shards(prog.attention("alibi_layer"), B, S, 8, 4, D, g)
    r["ok"] = r["out"] < TOL["out"] and r["lse"] < TOL["lse"] and r["control_without_offset"] > 10 * TOL["out"]
    bad += not r["ok"]
    results.append(r)
    print("%-4s alibi_layer head shards (h_offset into slopes[H]): O %.2e LSE %.2e; without h_offset O %.2e" %
          ("ok" if r["ok"] else "FAIL", r["out"], r["lse"], r["control_without_offset"]))
    with open(os.path.join(args.out, "cp.json"), "w") as f:
        json.dump({"seed": seed, "tol": TOL, "results": results}, f, indent=1)
    print("%d of %d cases within tolerance" % (len(results) - bad, len(results)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
