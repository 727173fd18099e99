"""Forward throughput of maskc's generated kernels against torch FlexAttention,
side by side in one GPU run, on the cases and shapes of
shared/bench/flex_baseline.py (bf16, B=2, H=16, S=8192, D=128).

Usage: python3 gpu/bench.py --generated DIR [--map KERNEL=CASE,...] [--cases a,b] [--variants v1,v2]
                           [--out FILE.jsonl]

The kernels of DIR (genkernels or maskc compile output, with manifest.json)
named in --map (e.g. decoder=causal,packed_layer=document; by default the
kernels named like a case's kernel, as gpu/bench_cases/*.flex are) run under
every --variants setting ("base" is the source as is, reported as
variant "gen"); the case's buffers are converted to the manifest's element
types. A variant sets tuning switches by -D (harness.switch_options, which
refuses a name the source does not have as a switch); launch geometry comes
from the manifest, so only switches that keep it are variants (the ones that
changed the block shape, mt1, bn64 and wg128, were measured and rejected:
docs/kernel-decisions.md); "sync" builds the manifest's
mma.sync platform instead of the sm_90a one.

TFLOP/s count only unmasked (q, kv) pairs, 4*D flops per pair (density from
the mask at b=0, h=0, as flex_baseline.py). The maskc time includes the tile
pre-pass where the kernel has one. Also reports the relative difference
between the maskc and FlexAttention outputs on the same inputs.
"""
import argparse
import sys
import os
import math
import re

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import buffers  # noqa: E402  (gpu/buffers.py)
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)
from runlog import JsonLog  # noqa: E402  (gpu/runlog.py)

B, H, S, D = 2, 16, 8192, 128

# Kernel tuning variants: switches set by -D (harness.switch_options), and
# the manifest platform to build (None: as maskc's runtime picks).
VARIANTS = {
    "base": ({}, None),
    # mma.sync instead of the sm_90a warpgroup MMA that the H200 gets by default
    "sync": ({}, "nvidia"),
}


def flex_cases(dev):
    """The flex_baseline.py mods and buffers, and the generated kernel named
    like each case (gpu/bench_cases/*.flex)."""
    g = torch.Generator().manual_seed(1)
    doc = buffers.doc_ids(S, g).to(dev)
    slopes = torch.exp2(-8.0 * (torch.arange(H, device=dev) + 1) / H)
    causal = lambda b, h, q, kv: q >= kv
    return [
        ("full", "full", lambda b, h, q, kv: (q >= 0) & (kv >= 0), None, []),
        ("causal", "causal", causal, None, []),
        ("sliding1024", "sliding1024", lambda b, h, q, kv: (q >= kv) & (q - kv < 1024), None, []),
        ("prefix2048", "prefix2048", lambda b, h, q, kv: (kv < 2048) | (q >= kv), None, []),
        ("document", "document", lambda b, h, q, kv: (doc[q] == doc[kv]) & (q >= kv), None, [doc]),
        ("dilated2048", "dilated2048", lambda b, h, q, kv: (q >= kv) & (q - kv < 2048) & ((q - kv) % 2 == 0), None,
         []),
        ("causal+softcap", "causal_softcap", causal, lambda s, b, h, q, kv: 30.0 * torch.tanh(s / 30.0), []),
        ("causal+alibi", "causal_alibi", causal, lambda s, b, h, q, kv: s + slopes[h] * (kv - q), [slopes.float()]),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True, help="genkernels output directory")
    ap.add_argument("--map", default="", help="KERNEL=CASE pairs naming which generated kernel runs which case "
                                              "(default: the kernels named like a case's kernel)")
    ap.add_argument("--cases")
    ap.add_argument("--variants", default="base")
    ap.add_argument("--out", default="bench.jsonl")
    a = ap.parse_args()
    emit = JsonLog(a.out)

    dev = "cuda"
    emit(kind="env", torch=torch.__version__, gpu=torch.cuda.get_device_name(), triton=__import__("triton").__version__)
    cases = flex_cases(dev)
    if a.cases:
        want = a.cases.split(",")
        cases = [c for c in cases if c[0] in want]
    variants = list(filter(None, a.variants.split(",")))  # --variants '' runs the generated kernels alone
    generated, buffer_types, entries = {}, {}, {}
    abi, gcases = harness.generated_cases(a.generated)
    by_kernel = {c.name: (c, src) for c, src in gcases}
    pairs = list(filter(None, a.map.split(","))) or [
        "%s=%s" % (c[1], c[0]) for c in flex_cases("cpu") if c[1] in by_kernel]
    for pair in pairs:
        kname, cname = pair.split("=")
        c, src = by_kernel[kname]
        generated[cname], entries[cname] = src, c.entry
        buffer_types[cname] = [harness.TORCH_DTYPES[b["dtype"]] for b in
                               sorted(c.entry.get("buffers") or [], key=lambda b: b["slot"])]

    # Compile every maskc kernel first (NVRTC, in parallel threads); variant
    # "gen" is the generated kernel as is.
    import concurrent.futures
    jobs = []
    for name, _, _, _, _ in cases:
        if name not in generated:
            continue
        for var in variants:
            defines, platform = VARIANTS[var]
            jobs.append((name, "gen" if var == "base" else "gen-" + var, generated[name], platform, defines))
    harness.libs()
    torch.empty(1, device=dev)
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        futs = {(n, v): (src, plat, ex.submit(harness.compile_source, src, "%s_%s" % (n, v), plat, abi, defs))
                for n, v, src, plat, defs in jobs}
    kernels = {}
    for key, (src, plat, f) in futs.items():
        try:  # modules load on this thread, in torch's context
            kernels[key] = k = harness.Kernel(src, entries[key[0]], abi, "%s_%s" % key, compiled=f.result(), platform=plat)
            emit(kind="kernel", case=key[0], variant=key[1], regs=k.regs, local_bytes=k.local_bytes,
                 ptxas=re.findall(r"ptxas info\s*: (Used .*|\d+ bytes stack.*)", k.log)[:4])
        except Exception as e:
            emit(kind="kernel", case=key[0], variant=key[1], error=repr(e)[:3000])

    torch.manual_seed(0)
    q = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    k = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    v = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device=dev, dtype=torch.float32)
    scale = 1.0 / math.sqrt(D)
    fa = torch.compile(flex_attention)
    results = []
    for name, _, mm, sm, bufs in cases:
        dens = harness.density(mm, S, S, 1, dev)
        flops = 4.0 * B * H * S * S * dens * D
        row = dict(kind="bench", case=name, density=round(dens, 4))
        try:
            bm = create_block_mask(mm, None, None, S, S, device=dev)
            fwd = lambda: fa(q, k, v, score_mod=sm, block_mask=bm)
            ref = harness.time_flex(row, fwd, flops)
        except Exception as e:
            row["flex_error"] = repr(e)[:400]
            ref = None
        run_vars = ["gen" if v == "base" else "gen-" + v for v in variants]
        for var in run_vars:
            kern = kernels.get((name, var))
            if kern is None:
                continue
            o.fill_(float("nan"))
            args = [t.to(dt).contiguous() for t, dt in zip(bufs, buffer_types[name])]
            run = kern.prepare(q, k, v, o, lse, scale, args)
            run()
            torch.cuda.synchronize()
            ms = harness.time_ms(run)
            r = dict(row, variant=var, maskc_ms=ms, maskc_tflops=round(flops / ms / 1e9, 1))
            if run.flags is not None:  # the flags are reusable like a BlockMask: forward alone too
                r["maskc_fwd_only_ms"] = harness.time_ms(lambda: run(prepass=False))
            if ref is not None:
                r["ratio"] = round(row["flex_ms"] / ms, 3)
                r["ratio_fwd_only"] = round(row["flex_ms"] / r.get("maskc_fwd_only_ms", ms), 3)
                r["o_vs_flex"] = harness.rel_err(o, ref)
            r["nan_outputs"] = int(torch.isnan(o).any(-1).sum().item())
            emit(**r)
            results.append(r)
        if not any(r["case"] == name for r in results):
            emit(**row)
        torch.cuda.empty_cache()

    print("\n%-15s %-6s %-7s %-8s %-7s %-8s %-8s %-7s %-7s %-9s" % (
        "case", "var", "density", "flex ms", "flex TF", "maskc ms", "maskc TF", "ratio", "fwdonly", "O~flex"))
    nan = float("nan")
    for r in results:
        print("%-15s %-6s %-7.4f %-8.3f %-7.1f %-8.3f %-8.1f %-7.3f %-7.3f %-9.2e" % (
            r["case"], r["variant"], r["density"], r.get("flex_ms", nan), r.get("flex_tflops", nan), r["maskc_ms"],
            r["maskc_tflops"], r.get("ratio", nan), r.get("ratio_fwd_only", nan), r.get("o_vs_flex", nan)))


if __name__ == "__main__":
    main()
