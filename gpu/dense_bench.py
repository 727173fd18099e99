"""Dense forward (issue 15): maskc's generated full and causal kernels against
torch SDPA's cuDNN backend and torch.compile(flex_attention), side by side in
one GPU run, and the variants of the warp-specialized sm_90a forward
(hipsrc/attn_fwd_sm90.h).

Usage:
  python3 gpu/dense_bench.py --generated DIR --mode check [--variants ws] [--dims 64,128,256] [--cases a,b]
  python3 gpu/dense_bench.py --generated DIR --mode bench [--variants wg,ws] [--dims ...] [--seqs ...]

DIR is genkernels' output with at least full.cu and causal.cu
(gpu/bench_cases); a head dim other than the kernel's is made by changing the
source's MASKC_HEAD_DIM (the scale stays the manifest's or 1/sqrt(D)).

Variants: "wg" is the manifest's nvidia-sm90a kernel (attn_fwd.h, head dims
64 and 128); the "ws*" ones compile attn_fwd_sm90.h (MASKC_NV_WS) and launch
it with its own geometry (hipsrc.WSThreads threads, hipsrc.WSSharedMemBytes;
the pre-pass keeps the manifest's threads): "ws" the file's defaults, "ws-seq"
one consumer step after the other (producer warpgroup, mbarrier ring,
setmaxnreg), "ws-ov" with the softmax of one tile overlapped with the next
tile's MMAs, "ws-pp" with ping-pong between the two consumer warpgroups as
well, "ws-lag" with the producer's stages signalled one cp.async group late
(wait_group, fence, arrive) instead of by cp.async.mbarrier.arrive.noinc,
"ws3" three stages, "ws-n64" 64-key tiles, "ws-cpasync" the producer's
cp.async copies instead of the copy engine (MASKC_WS_TMA 0; run 17 measured
the copy engine's as "ws-tma", then the file's default). "wg" launches the
manifest's choice: the warp-specialized forward where codegen selected it
(#define MASKC_NV_WS 1 in the source), else attn_fwd.h's.

--mode check: every selected kernel and variant on gpu/check.py's shapes
(fresh random inputs, NaN-poisoned O and LSE, float64 reference), at each
head dim. --mode bench: the issue's table, full and causal at each head dim
and length S with B = max(1, 16384 / S) and H = 32, 16, 8 for D = 64, 128,
256; TFLOP/s count 4*D flops per kept (q, kv) pair; each maskc output is also
compared with cuDNN's.
"""
import argparse
import ctypes
import math
import os
import re
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
from maskc import harness as mg  # noqa: E402  (the package's launcher: python/maskc)
from maskc.runlog import JsonLog  # noqa: E402

PLATFORM = "nvidia-sm90a"
VARIANTS = {
    "wg": "",
    "ws-lag": "#define MASKC_NV_WS 1\n#define MASKC_WS_NOINC 0\n",
    "ws-seq": "#define MASKC_NV_WS 1\n#define MASKC_WS_OVERLAP 0\n#define MASKC_WS_PINGPONG 0\n",
    "ws-ov": "#define MASKC_NV_WS 1\n#define MASKC_WS_OVERLAP 1\n#define MASKC_WS_PINGPONG 0\n",
    "ws-pp": "#define MASKC_NV_WS 1\n#define MASKC_WS_OVERLAP 1\n#define MASKC_WS_PINGPONG 1\n",
    "ws": "#define MASKC_NV_WS 1\n",
    "ws3": "#define MASKC_NV_WS 1\n#define MASKC_WS_STAGES 3\n",
    "ws-n64": "#define MASKC_NV_WS 1\n#define MASKC_WS_BLOCK_N 64\n",
    "ws-cpasync": "#define MASKC_NV_WS 1\n#define MASKC_WS_TMA 0\n",
}
SMEM_MAX = 232448  # sm_90's opt-in dynamic shared memory per block
HEADS = {64: 32, 128: 16, 256: 8}
WS_THREADS = 384  # hipsrc.WSThreads


def ws_block_n(d):  # hipsrc.WSBlockN
    return 64 if d == 256 else 128


def ws_smem(d, stages=2, bn=None):  # hipsrc.WSSharedMemBytes
    return 2 * (128 * d + 2 * stages * (bn or ws_block_n(d)) * d) + 8 * (4 * stages + 1)


def block_n_of(variant):
    m = re.search(r"MASKC_WS_BLOCK_N (\d+)", VARIANTS[variant])
    return int(m.group(1)) if m else None


def stages_of(variant):
    m = re.search(r"MASKC_WS_STAGES (\d+)", VARIANTS[variant])
    return int(m.group(1)) if m else 2


def source_for(src, d, variant):
    src = re.sub(r"#define MASKC_HEAD_DIM \d+", "#define MASKC_HEAD_DIM %d" % d, src)
    return VARIANTS[variant] + src


class WSKernel(mg.Kernel):
    """A kernel built from attn_fwd_sm90.h: the forward takes WS_THREADS
    threads and ws_smem bytes; the pre-pass keeps the manifest's threads."""

    def __init__(self, src, entry, abi, name, compiled, d, stages, bn):
        super().__init__(src, entry, abi, name, compiled=compiled, platform=PLATFORM)
        self.flag_threads = self.threads
        self.threads, self.smem = WS_THREADS, ws_smem(d, stages, bn)
        mg.libs()[1].set_max_dynamic_smem(self.fwd, self.smem)

    def _launch(self, f, grid, block, smem, args, what="cuLaunchKernel"):
        mg.Kernel._launch(f, grid, self.flag_threads if f is self.flags_fn else block, smem, args, what)


def build(abi, case, src, d, variant, ex):
    """Compiles (in the executor) and returns a thunk that loads the kernel."""
    s = source_for(src, d, variant)
    name = "%s_d%d_%s" % (case.name, d, variant)
    fut = ex.submit(mg.compile_source, s, name, PLATFORM, abi)
    entry = dict(case.entry, head_dim=d)

    def load():
        if variant.startswith("ws"):
            k = WSKernel(s, entry, abi, name, fut.result(), d, stages_of(variant), block_n_of(variant))
        else:
            k = mg.Kernel(s, entry, abi, name, compiled=fut.result(), platform=PLATFORM)
            k.head_dim = d
        return k
    return name, load


def ptxas_summary(log):
    regs = re.findall(r"Used (\d+) registers", log)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    warns = sorted(set(re.findall(r"warning[^\n]*", log)))[:4]
    return dict(ptxas_regs=regs[:2], ptxas_spills=spills[:2], ptxas_warnings=warns)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True)
    ap.add_argument("--mode", choices=["check", "bench"], required=True)
    ap.add_argument("--variants", default="ws")
    ap.add_argument("--dims", default="128")
    ap.add_argument("--seqs", default="8192")
    ap.add_argument("--cases", default="full,causal")
    ap.add_argument("--big", action="store_true", help="check: also the 8192-token shape")
    ap.add_argument("--out", default="dense.jsonl")
    a = ap.parse_args()
    emit = JsonLog(a.out, "a")

    import concurrent.futures
    variants = a.variants.split(",")
    dims = [int(x) for x in a.dims.split(",")]
    abi, gcases = mg.generated_cases(a.generated)
    by_name = {c.name: (c, src) for c, src in gcases}
    names = a.cases.split(",") if a.mode == "check" else ["full", "causal"]
    mg.libs()
    torch.empty(1, device="cuda")
    emit(kind="env", torch=torch.__version__, gpu=torch.cuda.get_device_name(), mode=a.mode)
    t0 = time.time()
    loads = {}
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        for n in names:
            c, src = by_name[n]
            for d in dims:
                for v in variants:
                    if v == "wg" and d == 256 or v.startswith("ws") and ws_smem(d, stages_of(v), block_n_of(v)) > SMEM_MAX:
                        continue
                    loads[(n, d, v)] = build(abi, c, src, d, v, ex)
    kernels = {}
    for key, (name, load) in loads.items():
        try:
            k = kernels[key] = load()
            emit(kind="kernel", name=name, regs=k.regs, local_bytes=k.local_bytes, **ptxas_summary(k.log))
        except Exception as e:
            emit(kind="kernel", name=name, error=repr(e)[-3000:])
    emit(kind="compiled", n=len(kernels), seconds=round(time.time() - t0, 1))

    if a.mode == "check":
        import check
        gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
        shapes = check.SHAPES if a.big else check.SHAPES[:-1]
        fails = total = 0
        for (n, d, v), k in kernels.items():
            case = by_name[n][0]
            for shape in shapes:
                if case.entry.get("buffers") and shape[3] > shape[4]:
                    continue
                try:
                    r = check.check_one(k, case, shape, d, case.entry["dtype"], gen, flex=False)
                except Exception as e:
                    r = dict(ok=False, error=repr(e)[:400])
                total += 1
                fails += not r["ok"]
                if not r["ok"]:
                    emit(kind="check", case=n, D=d, variant=v, shape=list(shape), **r)
            emit(kind="checked", case=n, D=d, variant=v)
        print("dense check: %d passed, %d failed" % (total - fails, fails))
        sys.exit(1 if fails else 0)

    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    fa = torch.compile(flex_attention)
    rows = []
    for d in dims:
        for S in [int(x) for x in a.seqs.split(",")]:
            B, H = max(1, 16384 // S), HEADS[d]
            q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            o = torch.empty_like(q)
            lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
            scale = 1.0 / math.sqrt(d)
            for mname in ["full", "causal"]:
                causal = mname == "causal"
                pairs = S * (S + 1) / 2 if causal else S * S
                flops = 4.0 * B * H * pairs * d
                row = dict(kind="bench", mask=mname, D=d, S=S, B=B, H=H)
                ref = None
                try:
                    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                        ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
                        row["cudnn_ms"] = mg.time_ms(lambda: F.scaled_dot_product_attention(
                            q, k, v, is_causal=causal, scale=scale))
                except Exception as e:
                    row["cudnn_error"] = repr(e)[:300]
                try:
                    bm = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, S, S) if causal else None
                    fa(q, k, v, block_mask=bm, scale=scale)
                    row["flex_ms"] = mg.time_ms(lambda: fa(q, k, v, block_mask=bm, scale=scale))
                except Exception as e:
                    row["flex_error"] = repr(e)[:300]
                for var in variants:
                    kern = kernels.get((mname, d, var))
                    if kern is None:
                        continue
                    o.fill_(float("nan"))
                    run = kern.prepare(q, k, v, o, lse, scale)
                    run()
                    torch.cuda.synchronize()
                    row[var + "_ms"] = mg.time_ms(run)
                    if ref is not None:
                        row[var + "_vs_cudnn"] = mg.rel_err(o, ref)
                    row[var + "_nan_rows"] = int(torch.isnan(o).any(-1).sum().item())
                for key in list(row):
                    if key.endswith("_ms"):
                        row[key[:-3] + "_tflops"] = round(flops / row[key] / 1e9, 1)
                emit(**row)
                rows.append(row)
                torch.cuda.empty_cache()
    cols = ["cudnn", "flex"] + variants
    print("\n%-6s %-4s %-6s %-3s %-3s " % ("mask", "D", "S", "B", "H") + " ".join("%-9s" % c for c in cols) +
          "  (TFLOP/s)  best-maskc/cudnn")
    for r in rows:
        best = max([r.get(v + "_tflops", 0) for v in variants] or [0])
        print("%-6s %-4d %-6d %-3d %-3d " % (r["mask"], r["D"], r["S"], r["B"], r["H"]) +
              " ".join("%-9s" % r.get(c + "_tflops", "-") for c in cols) +
              "  %.3f" % (best / r.get("cudnn_tflops", math.nan)))


if __name__ == "__main__":
    main()
