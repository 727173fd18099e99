"""Forward + backward throughput of maskc's generated kernels against
torch.compile(flex_attention) forward + backward, in one GPU run, on the
eight cases of shared/bench/flex_baseline.py (bf16, B=2, H=16, S=8192, D=128).

Usage: python3 gpu/bwd_bench.py --generated DIR [--cases a,b] [--out FILE.jsonl] [--ext-buffers BUF.json] [--head-dim D]
                                [--variant NAME=DIR|NAME:MASKC_X=V[,MASKC_Y=W] [--variant-cases a,b]] ...

DIR is genkernels output of gpu/bench_cases/*.flex (kernels named like the
cases' headers, as bench.py); with --ext-buffers, DIR may be gpu/bench_ext.sh's
gen directory, and its other kernels run too (bench_ext.py's cases: the
manifest's torch mask and score over BUF.json's buffers; CORPUS=1 puts
testdata/tilemasks among them). --head-dim times the same cases at another head
dim (DIR from genkernels -head-dim D; a kernel built for another is refused). The BlockMask is built outside the timing;
its build time is reported beside (block_mask_ms). TFLOP/s count only unmasked (q, kv) pairs: 4*D
flops per pair forward, the backward counted as 2.5x that (fwd+bwd 3.5x, as
flex_baseline.py). maskc's time is its forward (with the tile pre-pass where
the kernel has one) plus its backward (default mode: dQ atomics; and
deterministic mode alongside); FlexAttention's is out = fa(q, k, v) then
out.backward(dO) with the same BlockMask. Both compute dQ, dK and dV only:
FlexAttention's captured tensors do not require grad, and maskc.attention
differentiates a buffer only when it requires grad. Where maskc's kernel can
differentiate a float buffer (causal+alibi's slopes, relative_bias's table),
the mode atomic+dbuf also computes those gradients; it has a ratio only with
--flex-bufgrad, which times FlexAttention a second time with those buffers
requiring grad (ratio_bufgrad; device run 19x: 1877 ms for causal+alibi,
torch 2.11's unfused path, against 5.3 ms without). Also prints how far maskc's dQ,
dK, dV are from FlexAttention's on the same inputs. Each --variant is
another genkernels output of the same cases (NAME=DIR: another tree's
kernels) or the same kernels with tuning switches set by -D
(NAME:MASKC_X=V,...: harness.switch_options), timed in the same run against
the same FlexAttention figures, on --variant-cases only when given; a NAME=DIR
with a manifest.json of its own is launched as that manifest says. Timings:
FlexAttention and every (variant, mode) in --rounds rounds, each round in a
rotated order, the least median kept (the order of a fixed sequence biased
it by up to 10% on the H100).
"""
import argparse
import sys
import os
import concurrent.futures
import json
import math
import time

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)
from cases import case_id  # noqa: E402
from runlog import JsonLog  # noqa: E402  (gpu/runlog.py)
import bench  # noqa: E402
from bench import B, H, S, flex_cases


def manifest_cases(man, bufvals, taken, dev, names):
    """bench_ext.py's cases of the manifest's kernels not in taken (kernel
    names): (FLEX:ATTENTION, kernel name, mask, score, buffers), the mask
    and score the manifest's torch expressions over the buffer contents
    bufvals gives (keyed FLEX:ATTENTION); only names when given."""
    out = []
    for e in man["kernels"]:
        cid = case_id(e)
        if e["name"] in taken or (names and cid not in names.split(",")):
            continue
        bufs, mask, score = harness.given_case(e, bufvals.get(cid, {}), dev, B, H, S)
        if mask is None:
            mask = lambda b, h, q, kv: (q >= 0) & (kv >= 0)  # noqa: E731 (Flex's all-true block mask)
        out.append((cid, e["name"], mask, score, bufs))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True)
    ap.add_argument("--cases")
    ap.add_argument("--out", default="bwd_bench.jsonl")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=DIR: more kernels of the same cases; NAME:MASKC_X=V,...: these with switches set by -D")
    ap.add_argument("--variant-cases", help="the cases the variants run (default all)")
    ap.add_argument("--split", action="store_true",
                    help="also time each launch of the atomic backward alone (split_ms: {entry: ms})")
    ap.add_argument("--ext-buffers", metavar="BUF.json",
                    help="also run every other kernel of --generated (a gpu/bench_ext.sh gen directory, e.g. with "
                         "CORPUS=1), named FLEX:ATTENTION, its mask and score the manifest's torch expressions over "
                         "these buffers (gpu/bench_ext_buffers.py)")
    ap.add_argument("--flex-bufgrad", action="store_true",
                    help="also time FlexAttention with maskc's differentiated float buffers requiring grad")
    ap.add_argument("--head-dim", type=int, default=bench.D,
                    help="the head dim of q, k, v (default flex_baseline.py's %d); DIR's kernels built for it "
                         "(genkernels -head-dim)" % bench.D)
    ap.add_argument("--rounds", type=int, default=3,
                    help="timing rounds per case: FlexAttention and every (variant, mode) timed once a round, each "
                         "round in another order (rotated), the least median of each kept: the H100 ran the same "
                         "kernel up to 10%% faster when timed first in a case than when timed after five others "
                         "(run 30b), so a comparison in one fixed order measures the order")
    a = ap.parse_args()
    emit = JsonLog(a.out)
    D = a.head_dim

    dev = "cuda"
    emit(kind="env", torch=torch.__version__, gpu=torch.cuda.get_device_name(), triton=__import__("triton").__version__,
         head_dim=D)
    cases = flex_cases(dev)
    if a.cases:  # in the order given
        order = a.cases.split(",")
        cases = sorted((c for c in cases if c[0] in order), key=lambda c: order.index(c[0]))
    man = json.load(open(a.generated + "/manifest.json"))
    abi = harness.ABI(man["abi"])
    by_name = {e["name"]: e for e in man["kernels"]}
    other = sorted(n for n, e in by_name.items() if e["head_dim"] != D)
    if other:
        sys.exit("bwd_bench: %s not built for head dim %d (--head-dim; genkernels -head-dim)" % (", ".join(other), D))
    if a.ext_buffers:
        cases += manifest_cases(man, json.load(open(a.ext_buffers)), {c[1] for c in cases}, dev, a.cases)
    jobs = [(c[0], by_name[c[1]]) for c in cases if c[1] in by_name]
    vcases = a.variant_cases.split(",") if a.variant_cases else None
    variants, defines = [("main", a.generated, None)], {}
    for v in a.variant:
        name, colon, switches = v.partition(":")
        if colon and "=" in name:  # NAME=DIR whose DIR holds a colon
            name, colon = v, ""
        if colon:
            variants.append((name, a.generated, vcases))
            defines[name] = harness.parse_defines(switches.split(","))
        else:
            variants.append((v.split("=", 1)[0], v.split("=", 1)[1], vcases))
    names = [vn for vn, _, _ in variants]
    if len(set(names)) != len(names):
        # The kernels are keyed by variant name: a second "main" (or any
        # repeated name) would silently replace the first one's (run 39g).
        sys.exit("bwd_bench: variant names must differ from each other and from the base build's \"main\": %s"
                 % ", ".join(names[1:]))
    # A variant directory with a manifest of its own launches its kernels as
    # that manifest says (its backward's tiles and blocks may differ).
    vspec = {}
    for vn, vd, _ in variants:
        if vd != a.generated and os.path.isfile(vd + "/manifest.json"):
            vm = json.load(open(vd + "/manifest.json"))
            vspec[vn] = (harness.ABI(vm["abi"]), {e["name"]: e for e in vm["kernels"]})

    def spec_of(vn, e):
        if vn not in vspec:
            return abi, e
        return vspec[vn][0], vspec[vn][1].get(e["name"], e)
    harness.libs()
    torch.empty(1, device=dev)
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        futs = {(vn, n): ex.submit(harness.compile_source, harness.read(vd + "/" + e["bwd_source"]), n + "_bwd", None,
                                   spec_of(vn, e)[0], defines.get(vn))
                for vn, vd, vc in variants for n, e in jobs if vc is None or n in vc}
    kernels = {}
    for vn, vd, vc in variants:
        for (n, e) in jobs:
            if (vn, n) not in futs:
                continue
            try:
                cub = futs[(vn, n)].result()
                vabi, ve = spec_of(vn, e)
                kernels[(vn, n)] = kk = harness.BwdKernel(harness.read(vd + "/" + e["bwd_source"]), ve, vabi, n,
                                                          compiled=cub)
                ptxas = [ln.strip() for ln in cub[1].splitlines() if "maskc_attn_bwd" in ln or "spill" in ln]
                emit(kind="kernel", variant=vn, case=n, fwd_regs=kk.regs, bwd_regs=kk.bwd_regs,
                     bwd_local_bytes=kk.bwd_local_bytes, dq_regs=kk.bwd_dq_regs,
                     ordered_regs=kk.bwd_ordered_regs, ordered_local_bytes=kk.bwd_ordered_local_bytes,
                     wgmma_fwd=kk.platform == "nvidia-sm90a", ptxas=ptxas[:16])
            except Exception as ex_:
                emit(kind="kernel", variant=vn, case=n, error=repr(ex_)[-3000:])

    torch.manual_seed(0)
    q = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    k = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    v = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    do = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device=dev, dtype=torch.float32)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    scale = 1.0 / math.sqrt(D)
    harness.raise_recompile_limits(64)  # one compilation per case (its own mods), more with --flex-bufgrad
    fa = torch.compile(flex_attention)
    qf, kf, vf = [t.clone().requires_grad_(True) for t in (q, k, v)]
    results = []
    for name, header, mm, sm, bufs in cases:
        dens = harness.density(mm, S, S, 1, dev)
        flops = 3.5 * 4.0 * B * H * S * S * dens * D
        row = dict(kind="bench", case=name, density=round(dens, 4))
        fg = None
        try:
            t0 = time.time()  # the BlockMask is built outside the timing; its build time is reported beside
            e_ = by_name.get(header) or {}  # a mask reading b or h gets a BlockMask per batch or head
            bm = create_block_mask(mm, B if e_.get("mask_uses_b") else None, H if e_.get("mask_uses_h") else None, S, S,
                                   device=dev)
            torch.cuda.synchronize()
            row["block_mask_ms"] = round((time.time() - t0) * 1e3, 2)

            def fb():
                qf.grad = kf.grad = vf.grad = None
                out = fa(qf, kf, vf, score_mod=sm, block_mask=bm)
                out.backward(do)
            t0 = time.time()
            fb()
            torch.cuda.synchronize()
            row["flex_compile_s"] = round(time.time() - t0, 1)
            fg = (qf.grad.clone(), kf.grad.clone(), vf.grad.clone())
            row["flex_ms"] = harness.time_ms(fb, iters=10)
        except Exception as e:
            row["flex_error"] = repr(e)[:400]
        # maskc computes the gradient of every float buffer its manifest marks
        # "grad" (causal+alibi's slopes); FlexAttention computes one only for
        # a captured tensor that requires grad. The same set of gradients on
        # both sides: FlexAttention timed again with those buffers requiring
        # grad (the case's buffer tensors are the ones its score_mod captures:
        # .float() of a float32 tensor is the tensor itself).
        spec = by_name.get(header) or {}
        gbufs = [bufs[i] for i, b in enumerate(sorted(spec.get("buffers") or [], key=lambda b: b["slot"]))
                 if b.get("grad") and bufs[i].is_floating_point()]
        if a.flex_bufgrad and gbufs and "flex_ms" in row:
            try:
                for t in gbufs:
                    t.requires_grad_(True)

                def fbg():
                    qf.grad = kf.grad = vf.grad = None
                    for t in gbufs:
                        t.grad = None
                    out = fa(qf, kf, vf, score_mod=sm, block_mask=bm)
                    out.backward(do)
                fbg()
                torch.cuda.synchronize()
                row["flex_bufgrad_ms"] = harness.time_ms(fbg, iters=10)
                row["flex_bufgrad_tflops"] = round(flops / row["flex_bufgrad_ms"] / 1e9, 1)
            except Exception as ex_:
                row["flex_bufgrad_error"] = repr(ex_)[:400]
            finally:
                for t in gbufs:
                    t.requires_grad_(False)
                    t.grad = None
        # Every (variant, mode): its launches prepared and its gradients checked
        # first (poisoned, one step, compared with Flex's), then all timed in
        # rounds with Flex.
        runs = []  # (result row, step, bwd)
        fwds = []  # each run's forward
        for vn, _, _ in variants:
            kern = kernels.get((vn, name))
            if kern is None:
                if vn == "main":
                    emit(**row)
                continue
            e = by_name[header]
            args = [t.to(harness.TORCH_DTYPES[b["dtype"]]).contiguous()
                    for t, b in zip(bufs, sorted(e.get("buffers") or [], key=lambda b: b["slot"]))]
            grad_slots = [b["slot"] for b in e.get("buffers") or [] if b.get("grad")]
            fwd = kern.prepare(q, k, v, o, lse, scale, args)
            # atomic, deterministic as the manifest says, and where that adds dQ in order
            # (bwd_launch dq_ordered) also through the dQ kernel (det-dqk). These
            # compute the gradients FlexAttention computes: dQ, dK, dV, not a
            # buffer's (its captured tensors do not require grad, and
            # maskc.attention computes a buffer's gradient only for a tensor
            # that requires grad). Where the kernel can differentiate a float
            # buffer, atomic+dbuf also computes those gradients; its ratio is
            # against FlexAttention computing them too (--flex-bufgrad), or
            # none.
            modes = [("atomic", False, True, ()), ("det", True, True, ())]
            if kern.bwd_launch.dq_ordered:
                modes.append(("det-dqk", True, False, ()))
            if grad_slots:
                modes.append(("atomic+dbuf", False, True, grad_slots))
            for mode, det, ordered, slots in modes:
                bwd = kern.prepare_bwd(q, k, v, o, lse, do, dq, dk, dv, scale, args, slots, None, None,
                                       fwd.flags, det, ordered=ordered)

                def step(fwd=fwd, bwd=bwd):  # bound now: the steps are timed after the loop
                    fwd()
                    bwd()
                for t in (dq, dk, dv):
                    t.fill_(float("nan"))
                step()
                torch.cuda.synchronize()
                r = dict(row, variant=mode if vn == "main" else vn + "/" + mode, buffer_grads=len(slots),
                         nan_outputs=int(sum(torch.isnan(t).sum().item() for t in (dq, dk, dv))))
                if fg is not None:
                    r.update(dq_vs_flex=harness.rel_err(dq, fg[0]), dk_vs_flex=harness.rel_err(dk, fg[1]),
                             dv_vs_flex=harness.rel_err(dv, fg[2]))
                runs.append((r, step, bwd))
                fwds.append(fwd)
        # The timing rounds (harness.time_rounds), Flex first in round 0.
        # A pre-pass kernel also runs as a call given a tile map (Attention.tile_map,
        # made once like FlexAttention's BlockMask, outside the timing): the forward
        # without its pre-pass, then the backward.
        mapped = [(("map", j), (lambda f=kern_fwd, b=bw: (f(prepass=False), b())))
                  for j, ((_, _, bw), kern_fwd) in enumerate(zip(runs, fwds)) if kern_fwd.flags is not None]
        timed = ([("flex", fb)] if "flex_ms" in row else []) + [(j, st) for j, (_, st, _) in enumerate(runs)] + \
            [(("bwd", j), bw) for j, (_, _, bw) in enumerate(runs)] + mapped
        best = harness.time_rounds(timed, a.rounds, iters=10)
        if "flex_ms" in row:
            row["flex_ms"] = min(row["flex_ms"], best["flex"])
            row["flex_tflops"] = round(flops / row["flex_ms"] / 1e9, 1)
        for j, (r, step, bwd) in enumerate(runs):
            ms = best[j]
            r.update(maskc_ms=ms, maskc_bwd_ms=best[("bwd", j)], maskc_tflops=round(flops / ms / 1e9, 1),
                     rounds=max(1, a.rounds))
            if ("map", j) in best:
                r["maskc_map_ms"] = best[("map", j)]
            if "flex_ms" in row:
                r.update(flex_ms=row["flex_ms"], flex_tflops=row["flex_tflops"])
                if not r["buffer_grads"]:  # the same gradients on both sides
                    r["ratio"] = round(row["flex_ms"] / ms, 3)
                    if "maskc_map_ms" in r:
                        r["ratio_map"] = round(row["flex_ms"] / r["maskc_map_ms"], 3)
            if "flex_bufgrad_ms" in row and r["buffer_grads"]:
                r["ratio_bufgrad"] = round(row["flex_bufgrad_ms"] / ms, 3)
            if a.split and r["variant"].endswith("atomic"):  # after the checks: a launch alone leaves the scratch inconsistent
                split = {}
                for pn, pf in bwd.parts:
                    split[pn] = round(split.get(pn, 0.0) + harness.time_ms(pf, iters=10), 4)
                r["split_ms"] = split
                print("%s %s split %s" % (name, r["variant"], split), flush=True)
            emit(**r)
            results.append(r)
        torch.cuda.empty_cache()

    nan = float("nan")
    print("\n%-15s %-12s %-7s %-8s %-7s %-8s %-8s %-8s %-7s %-9s %-9s %-9s" % (
        "case", "mode", "density", "flex ms", "flex TF", "maskc ms", "bwd ms", "maskc TF", "ratio", "dQ~flex",
        "dK~flex", "dV~flex"))
    for r in results:
        print("%-15s %-12s %-7.4f %-8.3f %-7.1f %-8.3f %-8.3f %-8.1f %-7.3f %-9.2e %-9.2e %-9.2e" % (
            r["case"], r["variant"], r["density"], r.get("flex_ms", nan), r.get("flex_tflops", nan), r["maskc_ms"],
            r["maskc_bwd_ms"], r["maskc_tflops"], r.get("ratio", nan), r.get("dq_vs_flex", nan),
            r.get("dk_vs_flex", nan), r.get("dv_vs_flex", nan)))
    for r in results:
        if "ratio_map" in r:
            print("%s %s: with a tile map made once (the pre-pass outside the timing, as FlexAttention's BlockMask): "
                  "%.3f ms, ratio %.3f" % (r["case"], r["variant"], r["maskc_map_ms"], r["ratio_map"]))
    for r in results:
        if "ratio_bufgrad" in r:
            print("%s %s: FlexAttention also computing the float buffers' gradients (as maskc does): %.3f ms, "
                  "ratio %.3f" % (r["case"], r["variant"], r["flex_bufgrad_ms"], r["ratio_bufgrad"]))
        elif "flex_bufgrad_error" in r:
            print("%s %s: FlexAttention with buffer gradients failed: %s" % (r["case"], r["variant"],
                                                                            r["flex_bufgrad_error"]))


if __name__ == "__main__":
    main()
