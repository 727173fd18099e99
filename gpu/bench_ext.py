"""Extended forward benchmark (issue 11): maskc's generated kernels against
torch.compile(flex_attention) with create_block_mask, side by side in one GPU
run, on the eight flex_baseline cases (gpu/bench_cases), the attention-gym
style masks of gpu/bench_cases_ext and every example that generates a kernel
(bf16, B=2, H=16, S=8192, D=128).

Usage: python3 gpu/bench_ext.py --generated DIR --buffers BUF.json --tiles TILES.jsonl
                               [--cases a,b] [--variants base,sched4[@CASE+CASE]] [--variant-cases a,b]
                               [--alt NAME=DIR[@CASE+CASE],...] [--out FILE.jsonl]

DIR is genkernels' output over those .flex files; BUF.json the buffer
contents (gpu/bench_ext_buffers.py, the same values the host counted tiles
with); TILES.jsonl cmd/tilecount's exact counts per kernel. A case is
a manifest kernel, named FLEX:ATTENTION. The reference mask and score are
the manifest's torch expressions; FlexAttention gets the same functions.
TFLOP/s count kept pairs only (4*D flops each, the exact kept-pair count of
the whole launch from TILES.jsonl). The maskc time includes the tile
pre-pass where the kernel has one; such a kernel is also timed given its
tile map made once (its first run's flags, outside the timing as the
BlockMask is: maskc_map_ms, ratio_map, and the pre-pass's share
prepass_ms). --alt NAME=DIR times the same case's
kernel from another genkernels output DIR (e.g. main's, where the branch
changes which forward a kernel gets) as variant NAME, against the same Flex
figures. Per case: TFLOP/s of both, ratio =
flex ms / maskc ms, tiles visited / tiles holding a kept pair, and the
relative difference of the outputs (NaN-poisoned before the timed launch).
Flex and every variant are timed in --rounds rounds, each in a rotated
order, the least median kept.
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import sys
import time

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)
from cases import case_id  # noqa: E402
from runlog import JsonLog  # noqa: E402  (gpu/runlog.py)

B, H, S, D = 2, 16, 8192, 128

VARIANTS = {
    "base": {},
    # q tiles rank-major over groups of heads (hipsrc/tile_walk.h MASKC_SCHED_GROUP, default 4)
    "sched1": {"MASKC_SCHED_GROUP": 1},
    "sched16": {"MASKC_SCHED_GROUP": 16},
    # the mask evaluated after the tile's MMA, per element (before run 17)
    "bits0": {"MASKC_MASK_BITS": 0},
    # q tiles in the plain order, not longest-first by measured row lengths (hipsrc/attn_fwd.h MASKC_SCHED_LPT)
    "lpt0": {"MASKC_SCHED_LPT": 0},
    "sched8": {"MASKC_SCHED_GROUP": 8},
    "sched32": {"MASKC_SCHED_GROUP": 32},
    # keep bits before the MMA on every masked kernel (their default: reads per key, dilated masks)
    "bits1": {"MASKC_MASK_BITS": 1},
    # partial tiles of masks whose rows are exact intervals evaluate the mask, not the intervals (attn_fwd.h)
    "rowbits0": {"MASKC_ROW_BITS": 0},
    # mask column parts loaded by every lane for its column slots, not read once and shuffled
    "shfl0": {"MASKC_COL_SHFL": 0},
    # the key loop's copies, Q descriptors and row fallback built as before MASKC_LOOP_LEAN (attn_fwd.h; its
    # default is 1 on documents, 0 elsewhere): lean0 turns it off everywhere, lean1 on everywhere
    "lean0": {"MASKC_LOOP_LEAN": 0},
    "lean1": {"MASKC_LOOP_LEAN": 1},
    # the warp-specialized forward's sequential consumer step instead of the intra-warpgroup overlap that
    # codegen writes into every warp-specialized forward (attn_fwd_sm90.h MASKC_WS_OVERLAP)
    "seq": {"MASKC_WS_OVERLAP": 0},
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True)
    ap.add_argument("--buffers", required=True)
    ap.add_argument("--tiles", required=True)
    ap.add_argument("--cases")
    ap.add_argument("--variants", default="base")
    ap.add_argument("--variant-cases", help="cases (FLEX:ATTENTION, comma-separated) that run the variants other "
                                            "than base (default all)")
    ap.add_argument("--alt", default="", help="NAME=DIR[,NAME=DIR]: the same cases from another generated DIR, "
                                               "timed as variant NAME")
    ap.add_argument("--out", default="bench_ext.jsonl")
    ap.add_argument("--rounds", type=int, default=3,
                    help="timing rounds per case: FlexAttention and every variant timed once a round, each round in "
                         "a rotated order, the least median kept (a fixed order biased bwd_bench.py's comparisons "
                         "by up to 10%% on the H100, run 30)")
    a = ap.parse_args()
    emit = JsonLog(a.out)

    dev = "cuda"
    emit(kind="env", torch=torch.__version__, gpu=torch.cuda.get_device_name(), triton=__import__("triton").__version__)
    abi, gcases = harness.generated_cases(a.generated)
    bufvals = json.load(open(a.buffers))
    tiles = {}
    for line in open(a.tiles):
        t = json.loads(line)
        tiles[os.path.basename(t["flex"]).rsplit(".", 1)[0] + ":" + t["name"]] = t
    want = a.cases.split(",") if a.cases else None
    cases = [(c, src) for c, src in gcases if not c.entry.get("has_sink") and (not want or case_id(c.entry) in want)]
    # A variant may name its own cases: NAME@CASE+CASE (else --variant-cases, else all).
    variants, var_cases = [], {}
    for tok in a.variants.split(","):
        name, _, only = tok.partition("@")
        variants.append(name)
        if only:
            var_cases[name] = only.split("+")

    alts = {}  # variant name -> {case id: (case, source, abi)}
    for tok in filter(None, a.alt.split(",")):
        name, _, adir = tok.partition("=")
        adir, _, only = adir.partition("@")  # NAME=DIR@CASE+CASE: only those cases
        if only:
            var_cases[name] = only.split("+")
        aabi, acases = harness.generated_cases(adir)
        alts[name] = {case_id(c.entry): (c, src, aabi) for c, src in acases}
        variants.append(name)

    harness.libs()
    torch.empty(1, device=dev)
    jobs = []
    vcases = a.variant_cases.split(",") if a.variant_cases else None
    for c, src in cases:
        for var in variants:
            if var != "base" and var in var_cases and case_id(c.entry) not in var_cases[var]:
                continue
            if var != "base" and var not in var_cases and vcases and case_id(c.entry) not in vcases:
                continue
            if var in alts:
                if case_id(c.entry) in alts[var]:
                    ac, asrc, aabi = alts[var][case_id(c.entry)]
                    jobs.append((case_id(c.entry), var, ac, asrc, aabi))
                continue
            jobs.append((case_id(c.entry), var, c, src, abi))
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        futs = [ex.submit(harness.compile_source, s, re.sub(r"\W", "_", "%s_%s" % (cid, var)), None, jabi,
                          None if var in alts else VARIANTS[var])
                for cid, var, c, s, jabi in jobs]
    kernels = {}
    for (cid, var, c, s, jabi), f in zip(jobs, futs):
        try:
            kernels[(cid, var)] = k = harness.Kernel(s, c.entry, jabi, re.sub(r"\W", "_", cid + "_" + var), compiled=f.result())
            emit(kind="kernel", case=cid, variant=var, regs=k.regs, local_bytes=k.local_bytes)
        except Exception as e:
            emit(kind="kernel", case=cid, variant=var, error=repr(e)[:2000])
    print("compiled %d kernels in %.1fs" % (len(jobs), time.time() - t0), flush=True)

    torch.manual_seed(0)
    q = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    k = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    v = torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16)
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device=dev, dtype=torch.float32)
    harness.raise_recompile_limits(1024)  # every case compiles flex_attention afresh
    results = []
    for c, _ in cases:
        e, cid = c.entry, case_id(c.entry)
        bufs, mask, score = harness.given_case(e, bufvals.get(cid, {}), dev, B, H, S)
        t = tiles.get(cid, {})
        kept = t.get("kept_pairs") or B * H * S * S * harness.density(mask, S, S, H, dev)
        flops = 4.0 * D * kept
        row = dict(kind="bench", case=cid, sparsity=e.get("sparsity"), density=round(kept / (B * H * S * S), 4),
                   tiles_visited=t.get("tiles_visited"), tiles_kept=t.get("tiles_with_kept_pairs"))
        if t:
            row["visited_over_kept"] = round(t["tiles_visited"] / max(1, t["tiles_with_kept_pairs"]), 3)
        scale = e.get("scale") or 1.0 / math.sqrt(D)
        try:
            torch._dynamo.reset()
            fa = torch.compile(flex_attention)
            # A kernel without a mask meets FlexAttention with flex_baseline.py's all-true block mask.
            fmask = mask if mask is not None else (lambda b, h, q, kv: (q >= 0) & (kv >= 0))
            t0 = time.time()  # the BlockMask is built outside the timing; its build time is reported beside
            bm = create_block_mask(fmask, B if e.get("mask_uses_b") else None, H if e.get("mask_uses_h") else None,
                                   S, S, device=dev)
            torch.cuda.synchronize()
            row["block_mask_ms"] = round((time.time() - t0) * 1e3, 2)
            fwd = lambda: fa(q, k, v, score_mod=score, block_mask=bm, scale=scale)
            ref = harness.time_flex(row, fwd, flops)
        except Exception as ex:
            row["flex_error"] = repr(ex)[:400]
            ref = None
        # Every variant checked first (poisoned output, one run, compared with
        # Flex's), then Flex and all of them timed in rotated rounds.
        runs = []
        for var in variants:
            kern = kernels.get((cid, var))
            if kern is None:
                continue
            o.fill_(float("nan"))
            run = kern.prepare(q, k, v, o, lse, scale, bufs)
            run()
            torch.cuda.synchronize()
            r = dict(row, variant=var, nan_outputs=int(torch.isnan(o).any(-1).sum().item()))
            if ref is not None:
                r["o_vs_flex"] = harness.rel_err(o, ref)
            runs.append((r, run))
        # A pre-pass kernel also runs as a call given its tile map (the flags of its
        # first run, made once like FlexAttention's BlockMask, outside the timing).
        mapped = [(("map", j), (lambda run=run: run(prepass=False))) for j, (_, run) in enumerate(runs)
                  if run.flags is not None]
        timed = ([("flex", fwd)] if ref is not None else []) + [(j, run) for j, (_, run) in enumerate(runs)] + mapped
        best = harness.time_rounds(timed, a.rounds)
        if ref is not None:
            row["flex_ms"] = min(row["flex_ms"], best["flex"])
            row["flex_tflops"] = round(flops / row["flex_ms"] / 1e9, 1)
        for j, (r, run) in enumerate(runs):
            ms = best[j]
            r.update(maskc_ms=ms, maskc_tflops=round(flops / ms / 1e9, 1), rounds=max(1, a.rounds))
            if ("map", j) in best:  # the pre-pass's share: the flags are reusable like a BlockMask
                r["maskc_map_ms"] = best[("map", j)]
                r["prepass_ms"] = round(ms - r["maskc_map_ms"], 4)
            if ref is not None:
                r.update(flex_ms=row["flex_ms"], flex_tflops=row["flex_tflops"], ratio=round(row["flex_ms"] / ms, 3))
                if "maskc_map_ms" in r:
                    r["ratio_map"] = round(row["flex_ms"] / r["maskc_map_ms"], 3)
            emit(**r)
            results.append(r)
        if not any(r["case"] == cid for r in results):
            emit(**row)
        del ref
        torch.cuda.empty_cache()

    nan = float("nan")
    print("\n%-42s %-7s %-9s %-7s %-8s %-7s %-8s %-7s %-6s %-8s %s" % (
        "case", "var", "sparsity", "density", "vis/kept", "flex TF", "maskc TF", "ratio", "flexms", "O~flex", "nan"))
    for r in results:
        print("%-42s %-7s %-9s %-7.4f %-8s %-7.1f %-8.1f %-7.3f %-6.3f %-8.1e %d" % (
            r["case"][:42], r["variant"], r.get("sparsity"), r["density"], r.get("visited_over_kept"),
            r.get("flex_tflops", nan), r["maskc_tflops"], r.get("ratio", nan), r.get("flex_ms", nan),
            r.get("o_vs_flex", nan), r["nan_outputs"]))
    for r in results:
        if "maskc_map_ms" in r:
            print("%s %s: with a tile map made once (the pre-pass outside the timing, as FlexAttention's BlockMask, "
                  "built in %s ms): %.3f ms, ratio %s; the pre-pass %.3f ms" % (
                      r["case"], r["variant"], r.get("block_mask_ms"), r["maskc_map_ms"], r.get("ratio_map"),
                      r["prepass_ms"]))


if __name__ == "__main__":
    main()
