"""Correctness of maskc's generated attention kernels on an NVIDIA GPU.

Usage: python3 gpu/check.py --generated DIR [--cases a,b] [--out FILE.jsonl] [-D MASKC_NAME=VALUE]...

For every case and configuration: compile with NVRTC, draw fresh random
inputs, poison O and LSE with NaN, launch, check every element was written,
and compare O and LSE with a float64 reference (torch on the GPU, mask and
score written in torch) on all query rows (a random sample of 256 rows, with
the first and last, when Sq > 1024). Lengths 1, 127, 128, 1000 and 8192,
Sq != Skv both ways, GQA 16 query / 2 kv heads (and 6 / 3, whose 6 (b, h)
pairs leave a ragged group in the forward's q-tile order), bshd and bhsd
layouts.
Passes when every relative error is below 1e-2; exits 1 otherwise.

DIR is genkernels' (or maskc compile's) output: manifest.json, whose ABI,
launch geometry and torch expressions this script uses, and the sources.
Every kernel is also compared with
torch FlexAttention (eager flex_attention with a create_block_mask of the
manifest's mask_torch and its score_torch; enable_gqa for HKV < H) on the
same inputs: O and LSE (return_aux=AuxRequest(lse=True)), whose natural-log
convention the float64 reference LSE confirms (flex_lse_vs_ref). Kernels
with a sink have no FlexAttention counterpart and are compared with the
reference only.
"""
import argparse
import os
import concurrent.futures
import json
import math
import re
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)
import corpus_buffers  # noqa: E402  (realistic buffers of testdata/tilemasks)

TOL = 1e-2
# (B, H, HKV, Sq, Skv, layout)
SHAPES = [
    (1, 16, 2, 1, 1, "bhsd"),
    (2, 16, 2, 127, 127, "bshd"),
    (1, 16, 2, 128, 128, "bhsd"),
    (2, 16, 2, 1000, 1000, "bshd"),
    (1, 16, 2, 127, 1000, "bhsd"),
    (1, 16, 2, 1000, 127, "bshd"),
    (2, 16, 2, 8192, 8192, "bhsd"),
    (1, 6, 3, 1000, 1000, "bshd"),  # 6 (b, h) pairs: a ragged last group of the q-tile order (hipsrc/tile_walk.h)
]
def make_qkvo(B, H, HKV, Sq, Skv, D, dtype, layout, gen):
    def t(heads, s):
        if layout == "bshd":
            x = torch.randn(B, s, heads, D, generator=gen, device="cuda", dtype=torch.float32).to(dtype)
            return x.permute(0, 2, 1, 3)
        return torch.randn(B, heads, s, D, generator=gen, device="cuda", dtype=torch.float32).to(dtype)
    q, k, v = t(H, Sq), t(HKV, Skv), t(HKV, Skv)
    o = (torch.empty(B, Sq, H, D, device="cuda", dtype=dtype).permute(0, 2, 1, 3) if layout == "bshd"
         else torch.empty(B, H, Sq, D, device="cuda", dtype=dtype))
    return q, k, v, o


def flex_outputs(q, k, v, scale, mask, score, B, H, HKV, Sq, Skv):
    """torch FlexAttention (eager) on the kernel's inputs: (O [B,H,Sq,D], LSE [B,H,Sq])."""
    from torch.nn.attention import flex_attention as fa
    bm = fa.create_block_mask(mask, B, H, Sq, Skv, device="cuda") if mask is not None else None
    args = dict(score_mod=score, block_mask=bm, scale=scale, enable_gqa=HKV != H)
    qc, kc, vc = q.contiguous(), k.contiguous(), v.contiguous()
    if hasattr(fa, "AuxRequest"):
        out, aux = fa.flex_attention(qc, kc, vc, return_aux=fa.AuxRequest(lse=True), **args)
        return out, aux.lse
    return fa.flex_attention(qc, kc, vc, return_lse=True, **args)


def check_one(kern, case, shape, D, dtype, gen, flex=False):
    B, H, HKV, Sq, Skv, layout = shape
    tdt = torch.float16 if dtype == "fp16" else torch.bfloat16
    q, k, v, o = make_qkvo(B, H, HKV, Sq, Skv, D, tdt, layout, gen)
    lse = torch.empty(B, H, Sq, device="cuda", dtype=torch.float32)
    o.fill_(float("nan"))
    lse.fill_(float("nan"))
    seed = int(torch.randint(1 << 30, (1,), generator=gen, device="cuda"))
    bufs, mask, score = case.build(B, H, HKV, Sq, Skv, "cuda", torch.Generator().manual_seed(seed))
    sink = torch.randn(H, generator=gen, device="cuda") * 2 if case.sink else None
    scale = getattr(case, "entry", {}).get("scale") or 1.0 / math.sqrt(D)
    run = kern.prepare(q, k, v, o, lse, scale, bufs, sink)
    run()
    torch.cuda.synchronize()
    unwritten = int(torch.isnan(o).any(-1).sum().item() + torch.isnan(lse).sum().item())
    if Sq > 1024:
        rows = torch.cat([torch.tensor([0, Sq - 1]), torch.randperm(Sq - 2)[:254] + 1]).sort().values.cuda()
    else:
        rows = torch.arange(Sq, device="cuda")
    ro, rl = harness.reference(q, k, v, scale, mask, score, rows, sink)
    eo = harness.rel_err(o[:, :, rows], ro)
    el = harness.lse_err(lse[:, :, rows], rl)
    masked_rows = int(torch.isinf(rl).sum().item())
    ok = unwritten == 0 and eo < TOL and el < TOL
    r = dict(ok=ok, o_err=eo, lse_err=el, unwritten=unwritten, masked_rows=masked_rows,
             flags=(run.flags.float().mean().item() if run.flags is not None else None))
    if flex and sink is None:
        try:
            fo, fl = flex_outputs(q, k, v, scale, mask, score, B, H, HKV, Sq, Skv)
        except Exception as e:  # reported as a failure of the comparison, not of the kernel
            r.update(ok=False, flex_error=repr(e)[:300])
            torch.cuda.empty_cache()
            return r
        fo, fl = fo[:, :, rows], fl[:, :, rows]
        r.update(flex_o_err=harness.rel_err(o[:, :, rows], fo), flex_lse_err=harness.lse_err(lse[:, :, rows], fl),
                 flex_o_vs_ref=harness.rel_err(fo, ro), flex_lse_vs_ref=harness.lse_err(fl, rl))
        r["ok"] = ok and r["flex_o_err"] < TOL and r["flex_lse_err"] < TOL
        del fo, fl
        torch.cuda.empty_cache()
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True, help="genkernels output directory (manifest.json + NAME.cu)")
    ap.add_argument("--cases", help="comma-separated kernel names (default all)")
    ap.add_argument("--out", default="check.jsonl")
    ap.add_argument("--verbose", action="store_true", help="print every row of the table")
    ap.add_argument("--no-flex", action="store_true", help="skip the FlexAttention comparison")
    ap.add_argument("--platform", help="manifest platform to build (default: as maskc's runtime picks for this GPU)")
    ap.add_argument("-D", "--define", action="append", default=[], metavar="MASKC_NAME=VALUE",
                    help="set a tuning switch of every source by -D (one that keeps the launch geometry)")
    a = ap.parse_args()
    names = a.cases.split(",") if a.cases else None
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
    log = open(a.out, "w")

    jobs = []  # (case, D, dtype, source, shapes)
    defines = harness.parse_defines(a.define)
    abi, cases = harness.generated_cases(a.generated)
    for case, src in cases:  # the manifest's torch expressions are the reference
        case = corpus_buffers.wrap(case)
        if names and case.name not in names:
            continue
        # A buffer sized by KV alone may be indexed by q: such a file takes no Sq > Skv.
        shapes = [s for s in SHAPES if case.covers(s[3], s[4])]
        jobs.append((case, case.entry["head_dim"], case.entry["dtype"], src, shapes))
    harness.libs()
    torch.empty(1, device="cuda")
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        futs = [ex.submit(harness.compile_source, src, "%s_%s_d%d" % (c.name, dt, d), a.platform, abi, defines)
                for c, d, dt, src, _ in jobs]
    kernels = []
    for (c, d, dt, src, _), f in zip(jobs, futs):
        try:  # modules load on this thread, in torch's context
            kernels.append(harness.Kernel(src, c.entry, abi, "%s_%s_d%d" % (c.name, dt, d), compiled=f.result(),
                                     platform=a.platform))
        except Exception as e:  # keep going: report the failure per case
            kernels.append(e)
    print("compiled %d kernels in %.1fs" % (len(jobs), time.time() - t0), flush=True)

    rows, fails = [], 0
    for (case, d, dt, _, shapes), kern in zip(jobs, kernels):
        if isinstance(kern, Exception):
            print("COMPILE FAIL %s %s d%d: %s" % (case.name, dt, d, kern), flush=True)
            fails += 1
            continue
        regs = re.findall(r"Used (\d+) registers", kern.log)
        spill = re.findall(r"(\d+) bytes spill stores", kern.log)
        print("kernel %-18s %-4s d%-3d mt%d regs=%d local_bytes=%d spill_stores=%s" % (case.name, dt, d,
                                                                                        kern.mtiles or 0, kern.regs,
                                                                                   kern.local_bytes, spill), flush=True)
        for shape in shapes:
            try:
                r = check_one(kern, case, shape, d, dt, gen, flex=not a.no_flex)
            except Exception as e:
                r = dict(ok=False, error=repr(e)[:400])
            r.update(case=case.name + ("/" + kern.platform if kern.platform != harness.device_platform() else ""), dtype=dt, D=d,
                     shape=list(shape))
            log.write(json.dumps(r) + "\n")
            log.flush()  # a run cut short still leaves every finished row
            rows.append(r)
            fails += not r["ok"]
    table = open(a.out.rsplit(".", 1)[0] + "_table.txt", "w")

    def out(line, always=False):
        table.write(line + "\n")
        if always or a.verbose:
            print(line)
    out("%-18s %-4s %-4s %-26s %-10s %-10s %-6s %-8s %s" % ("case", "dt", "D", "B,H,HKV,Sq,Skv,layout", "O relerr",
                                                            "LSE relerr", "unwr", "-infrows", "result"))
    for r in rows:
        if "error" in r:
            out("%-18s %-4s %-4d %-26s ERROR %s" % (r["case"], r["dtype"], r["D"], r["shape"], r["error"]), True)
            continue
        if "flex_error" in r:
            out("%-18s %-4s %-4d %-26s FLEX ERROR %s" % (r["case"], r["dtype"], r["D"], r["shape"], r["flex_error"]), True)
        out("%-18s %-4s %-4d %-26s %-10.2e %-10.2e %-6d %-8d %s" % (
            r["case"], r["dtype"], r["D"], ",".join(map(str, r["shape"])), r["o_err"], r["lse_err"], r["unwritten"],
            r["masked_rows"], "ok" if r["ok"] else "FAIL"), not r["ok"])
    # One line per kernel: shapes passed, worst errors.
    print("\n%-24s %-4s %-4s %-7s %-10s %-10s %-10s %-10s %-10s %s" % (
        "case", "dt", "D", "passed", "O vs ref", "LSE vs ref", "O vs flex", "LSE vsflex", "flexLSEref", "-inf rows"))
    groups = {}
    for r in rows:
        groups.setdefault((r["case"], r["dtype"], r["D"]), []).append(r)
    for (c, dt, d), rs in groups.items():
        good = [r for r in rs if "error" not in r]
        worst = lambda key: max([r[key] for r in good if key in r] or [math.nan])
        print("%-24s %-4s %-4d %-7s %-10.2e %-10.2e %-10.2e %-10.2e %-10.2e %d" % (
            c, dt, d, "%d/%d" % (sum(r["ok"] for r in rs), len(rs)), worst("o_err"), worst("lse_err"),
            worst("flex_o_err"), worst("flex_lse_err"), worst("flex_lse_vs_ref"),
            sum(r["masked_rows"] for r in good)))
    print("\ncheck: %d passed, %d failed" % (len(rows) - sum(not r["ok"] for r in rows), fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
