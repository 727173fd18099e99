"""Dense attention on the H200 (issue 15): maskc's generated full and causal
kernels at head dims 64, 128 and 256 against torch SDPA's cuDNN backend and
torch.compile(flex_attention), forward and forward + backward side by side in
one GPU run, plus forward variants of the warp-specialized sm_90a kernel
(hipsrc/attn_fwd_sm90.h) and their correctness.

Usage:
  go run ./cmd/genkernels -o DIR gpu/dense_cases/*.flex      (where Go is)
  python3 gpu/dense_bench.py --generated DIR --mode bench [--dims 128,64,256] [--seqs 2048,8192,32768]
                             [--variants ws-r240,...] [--variant-dims 128] [--check-variants]
  python3 gpu/dense_bench.py --generated DIR --mode check [--variants ...] [--dims ...] [--big]

DIR holds gpu/dense_cases' kernels, named MASK_dD (full_d64 ... causal_d256);
each is launched through the package's launcher (gpu/harness.py, on maskc.launcher) with
the manifest's geometry, its forward and backward from NAME.bwd.cu (which
holds the forward's entry points too), as gpu/bwd_bench.py does.

--mode bench: for each head dim D and length S, B = max(1, 16384 / S) and
H = 32, 16, 8 for D = 64, 128, 256 (bf16, bhsd, scale 1/sqrt(D)), fresh
random q, k, v, dO per (D, S); per mask: cuDNN (sdpa_kernel(CUDNN_ATTENTION)),
FlexAttention (torch.compile(flex_attention), create_block_mask for causal)
and maskc, forward and forward + backward (maskc: forward then the backward's
launches, dQ atomics, as the package's default). Every forward is timed on
inputs that require grad (the training forward: output and LSE), forward +
backward as out.backward(dO). TFLOP/s count 4*D flops per kept (q, kv) pair
forward (causal S(S+1)/2 pairs, as flex_baseline.py's density) and 3.5x that
forward + backward. Before maskc's first launch of a row, O, LSE, dQ, dK, dV
are NaN-poisoned; O is then compared with cuDNN's, dQ/dK/dV with cuDNN's
gradients (relative error), and unwritten (NaN) elements counted. Every
launch's return code is checked by the launcher, and each timing ends with a
synchronize that raises a kernel's fault.

Variants (forward only, extra columns; --variant-dims picks where they are
timed; timed after the whole table, so that a variant that faults or hangs
takes no column of it along): the kernel's forward source with switches set
by -D (harness.switch_options); "ws*" compile attn_fwd_sm90.h (MASKC_NV_WS 1) and launch it with
its own geometry (WS_THREADS threads, ws_smem bytes). "ws": the file's
defaults (the manifest's own kernel at D = 64, 128; at D = 256, where
codegen keeps attn_fwd.h, the warp-specialized one instead); "*-r240": the register split of FA3's two-consumer kernels (producer
24, consumers 240, instead of 40 / 232: what the producer gives back is all
the consumers can take, attn_fwd_sm90.h's static_assert);
backward variants, by switches (BWD_VARIANTS; none now: the block-built
tensor maps of the warp-specialized backward, "bwd-blockmaps", lost to the
launcher's in run 53a and were removed with the forward's "ws-blockmaps")
or from another genkernels build of gpu/dense_cases (--bwd-alt NAME=DIR, a
branch's kernels): forward + backward with the manifest's forward, in rounds
rotated with the manifest's backward, their dQ, dK, dV compared with the
manifest's;
"ws-seq": the consumers' sequential step (MASKC_WS_OVERLAP 0: Q.K^T, softmax,
P.V one after another) instead of the intra-warpgroup overlap that codegen
writes into every warp-specialized forward (run 49 measured the overlap with the 24 / 240 split, no faster and 16-24
bytes of local memory);
the cp.async copies instead of the copy engine, the ping-pong consumer step,
the lagged barrier arrival, 3 stages and 64-key tiles at D = 128 were measured in runs 14 and 17,
the block-built tensor maps (and Q's copy first with them) in runs 51-53,
4-D tensor maps built once per multiprocessor in run 37, the persistent forward (its ws-persist
variants) in runs 37-38 and 52a, and removed with their switches (docs/kernel-decisions.md, issue 26). --check-variants LIST (bench mode) then checks those
variants (compiled for it at every one of --dims) on gpu/check.py's shapes
(without the 8192-token one): fresh random inputs, NaN-poisoned O and LSE,
float64 reference, check.py's tolerance.

--mode check: the manifest kernels (and --variants) on gpu/check.py's shapes.
"""
import argparse
import concurrent.futures
import math
import os
import re
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)
from runlog import JsonLog  # noqa: E402  (gpu/runlog.py)

PLATFORM = "nvidia-sm90a"
WS = {"MASKC_NV_WS": 1}
R240 = {"MASKC_WS_PRODUCER_REGS": 24, "MASKC_WS_CONSUMER_REGS": 240}
# Each variant is the switches it sets by -D (harness.switch_options).
VARIANTS = {
    "ws": WS,
    "ws-r240": {**WS, **R240},
    "ws-seq": {**WS, "MASKC_WS_OVERLAP": 0},
}
# Backward variants: the manifest's backward source with switches set by -D,
# timed forward + backward (the manifest's forward) in rounds rotated with the
# manifest's own backward, their gradients compared with its.
BWD_VARIANTS = {}
# Backward variants from another genkernels build of gpu/dense_cases
# (--bwd-alt NAME=DIR: a branch's kernels), timed as BWD_VARIANTS are.
ALT_BWD = {}


def is_bwd(variant):
    """Whether a variant is a backward one (BWD_VARIANTS or --bwd-alt)."""
    return variant in BWD_VARIANTS or variant in ALT_BWD


SMEM_MAX = 232448  # sm_90's opt-in dynamic shared memory per block
HEADS = {64: 32, 128: 16, 256: 8}
WS_THREADS = 384  # hipsrc.WSThreads
MASKS = ("full", "causal")


def ws_block_n(d):  # hipsrc.WSBlockN
    return 64 if d == 256 else 128


def ws_smem(d, stages=2, bn=None):  # hipsrc.WSSharedMemBytes
    return 2 * (128 * d + 2 * stages * (bn or ws_block_n(d)) * d) + 8 * (4 * stages + 1)


def block_n_of(variant):
    return VARIANTS[variant].get("MASKC_WS_BLOCK_N")


def stages_of(variant):
    return VARIANTS[variant].get("MASKC_WS_STAGES", 2)


def is_ws_source(src):
    """Whether codegen selected the warp-specialized forward for this kernel."""
    return re.search(r"^#define MASKC_NV_WS 1$", src, re.M) is not None


class WSKernel(harness.Kernel):
    """A kernel built from attn_fwd_sm90.h: the forward (and the pre-pass,
    MASKC_NUM_THREADS being WS_THREADS in such builds) take WS_THREADS
    threads, the forward ws_smem bytes."""

    def __init__(self, src, entry, abi, name, compiled, d, stages, bn):
        super().__init__(src, entry, abi, name, compiled=compiled, platform=PLATFORM)
        self.threads, self.smem = WS_THREADS, ws_smem(d, stages, bn)
        harness.libs()[1].set_max_dynamic_smem(self.fwd, self.smem)


def ptxas_summary(log):
    regs = re.findall(r"Used (\d+) registers", log)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    warns = sorted(set(re.findall(r"warning[^\n]*", log)))[:4]
    return dict(ptxas_regs=regs[:4], ptxas_spills=spills[:4], ptxas_warnings=warns)


def pairs_of(mask, S):
    return S * (S + 1) / 2 if mask == "causal" else float(S) * S


class Timer:
    """Seconds since start, for the phase lines of the log."""

    def __init__(self):
        self.t0 = time.time()

    def __call__(self):
        return round(time.time() - self.t0, 1)


def load_kernels(a, emit, clock):
    """Compiles (NVRTC, 12 threads, started at once) the manifest kernels'
    backward sources and the variants' forward sources; returns
    (abi, cases {name: GeneratedCase}, get(name, variant) -> kernel or None,
    variant keys [(name, d, variant)])."""
    abi, gcases = harness.generated_cases(a.generated)
    cases = {c.name: c for c, _ in gcases}
    dims = [int(x) for x in a.dims.split(",")]
    vdims = [int(x) for x in (a.variant_dims or a.dims).split(",")]
    variants = [v for v in a.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS and not is_bwd(v):
            sys.exit("unknown variant %s (known: %s)" % (v, ", ".join(list(VARIANTS) + list(BWD_VARIANTS))))
    alts = {n: harness.generated_cases(d) for n, d in ALT_BWD.items()}  # NAME: (abi, [(case, _)])
    alt_spec = {}  # (kernel name, variant): (its entry, its abi)
    ex = concurrent.futures.ThreadPoolExecutor(12)  # leave cores to inductor's compile workers
    futs, vkeys = {}, []
    for d in dims:  # head dim order = the bench's order, so the first rows' kernels come first
        for mname in MASKS:
            name = "%s_d%d" % (mname, d)
            if name not in cases:
                sys.exit("%s: no kernel %s (generate gpu/dense_cases/*.flex)" % (a.generated, name))
            e = cases[name].entry
            bsrc = harness.read(os.path.join(a.generated, e["bwd_source"]))
            futs[(name, "")] = (bsrc, ex.submit(harness.compile_source, bsrc, name + "_bwd", PLATFORM, abi))
            fsrc = harness.read(os.path.join(a.generated, e["source"]))
            for v in variants:
                if v in ALT_BWD:
                    acases = {c.name: c for c, _ in alts[v][1]}
                    if d in vdims and name in acases:
                        ae = acases[name].entry
                        asrc = harness.read(os.path.join(ALT_BWD[v], ae["bwd_source"]))
                        alt_spec[(name, v)] = (ae, alts[v][0])
                        futs[(name, v)] = (asrc, ex.submit(harness.compile_source, asrc, "%s_%s" % (name, v), PLATFORM,
                                                           alts[v][0]))
                    continue
                if v in BWD_VARIANTS:
                    if d in vdims:
                        futs[(name, v)] = (bsrc, ex.submit(harness.compile_source, bsrc, "%s_%s" % (name, v),
                                                           PLATFORM, abi, BWD_VARIANTS[v]))
                    continue
                check_dim = v in a.check_variants.split(",") or a.mode == "check"
                if d not in vdims and not check_dim:
                    continue
                if v == "ws" and is_ws_source(fsrc):
                    continue  # the manifest's own kernel
                if ws_smem(d, stages_of(v), block_n_of(v)) > SMEM_MAX:
                    continue
                futs[(name, v)] = (fsrc, ex.submit(harness.compile_source, fsrc, "%s_%s" % (name, v), PLATFORM, abi,
                                                   VARIANTS[v]))
                vkeys.append((name, d, v))
    ex.shutdown(wait=False)
    loaded = {}

    def get(name, v=""):
        """The loaded kernel (compiled on first use, loaded on this thread) or None."""
        if (name, v) in loaded:
            return loaded[(name, v)]
        if (name, v) not in futs:
            return None
        src, fut = futs[(name, v)]
        e, kabi = alt_spec.get((name, v), (cases[name].entry, abi))
        label = name + ("/" + v if v else "")
        try:
            compiled = fut.result()
            if not v or is_bwd(v):
                k = harness.BwdKernel(src, e, kabi, name, compiled=compiled, platform=PLATFORM)
                emit(kind="kernel", name=label, t=clock(), fwd_regs=k.regs, fwd_local_bytes=k.local_bytes,
                     bwd_regs=k.bwd_regs, bwd_local_bytes=k.bwd_local_bytes, dq_regs=k.bwd_dq_regs,
                     threads=k.threads, smem=k.smem, bwd_smem=k.bwd_launch.shared_mem_bytes, bwd_threads=k.bwd_launch.main_threads, **ptxas_summary(k.log))
            else:
                k = WSKernel(src, e, abi, label, compiled, e["head_dim"], stages_of(v), block_n_of(v))
                emit(kind="kernel", name=label, t=clock(), regs=k.regs, local_bytes=k.local_bytes, smem=k.smem,
                     **ptxas_summary(k.log))
        except Exception as ex_:
            emit(kind="kernel", name=label, t=clock(), error=repr(ex_)[-3000:])
            k = None
        loaded[(name, v)] = k
        return k
    return abi, cases, get, vkeys


def check_kernels(keys, cases, get, emit, big, clock=None, deadline=1e9):
    """gpu/check.py's shapes (all with big, else without the 8192-token
    one) on each (name, d, variant) kernel, none started past deadline
    seconds of clock; returns (passed, failed, [keys not checked])."""
    import check
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
    shapes = [s for s in check.SHAPES if big or max(s[3], s[4]) <= 4096]
    fails = total = 0
    skipped = []
    for name, d, v in keys:
        if clock is not None and clock() > deadline:
            skipped.append((name, d, v))
            continue
        kern = get(name, v)
        if kern is None:
            fails += 1
            total += 1
            emit(kind="check", case=name, D=d, variant=v, ok=False, error="not compiled")
            continue
        case = cases[name]
        worst = 0.0
        for shape in shapes:
            try:
                r = check.check_one(kern, case, shape, d, case.entry["dtype"], gen, flex=False)
            except Exception as e:
                r = dict(ok=False, error=repr(e)[:400])
            total += 1
            fails += not r["ok"]
            worst = max(worst, r.get("o_err", math.inf), r.get("lse_err", math.inf))
            if not r["ok"]:
                emit(kind="check", case=name, D=d, variant=v or "manifest", shape=list(shape), **r)
        emit(kind="checked", case=name, D=d, variant=v or "manifest", shapes=len(shapes), worst_err=worst)
    return total - fails, fails, skipped


def flex_fns(fa, qg, kg, vg, do, bm, scale):
    """FlexAttention's forward and forward + backward on the grad leaves."""
    def fx():
        return fa(qg, kg, vg, block_mask=bm, scale=scale)

    def fx_fb():
        qg.grad = kg.grad = vg.grad = None
        fx().backward(do)
    return fx, fx_fb


def bench(a, emit, clock, cases, get, vkeys):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    harness.raise_recompile_limits(256, 4096)  # every (D, S, mask) row is a new guard set for dynamo
    fa = torch.compile(flex_attention)
    dims = [int(x) for x in a.dims.split(",")]
    seqs = [int(x) for x in a.seqs.split(",")]
    vdims = [int(x) for x in (a.variant_dims or a.dims).split(",")]
    variants = [v for v in a.variants.split(",") if v]
    dev = "cuda"
    block_masks = {}

    def block_mask(mname, S):
        if mname != "causal":
            return None
        if S not in block_masks:
            block_masks[S] = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, S, S, device=dev)
        return block_masks[S]

    # Pass 1, while NVRTC builds maskc's kernels on other threads: compile
    # FlexAttention's forward and backward for every row (nothing timed).
    flex_warm = {}
    if not a.no_flex:
        for d in dims:
            for S in seqs:
                B, H = max(1, 16384 // S), HEADS[d]
                qg, kg, vg = (torch.randn(B, H, S, d, device=dev, dtype=torch.bfloat16).requires_grad_(True)
                              for _ in range(3))
                do = torch.randn(B, H, S, d, device=dev, dtype=torch.bfloat16)
                for mname in MASKS:
                    if clock() > a.flex_budget_s:
                        flex_warm[(d, S, mname)] = dict(flex_error="not compiled: past --flex-budget-s")
                        continue
                    t0 = time.time()
                    try:
                        _, fx_fb = flex_fns(fa, qg, kg, vg, do, block_mask(mname, S), 1.0 / math.sqrt(d))
                        fx_fb()
                        torch.cuda.synchronize()
                        flex_warm[(d, S, mname)] = dict(flex_compile_s=round(time.time() - t0, 1))
                    except Exception as e:
                        flex_warm[(d, S, mname)] = dict(flex_error=repr(e)[:300])
                        torch.cuda.empty_cache()
                del qg, kg, vg, do
        torch.cuda.empty_cache()
        emit(kind="flex_compiled", t=clock())

    # Pass 2: fresh inputs per (D, S), every column timed.
    rows = []
    for d in dims:
        for S in seqs:
            B, H = max(1, 16384 // S), HEADS[d]
            iters = max(5, min(20, int(a.iters * 8192 / S)))
            q, k, v, do = (torch.randn(B, H, S, d, device=dev, dtype=torch.bfloat16) for _ in range(4))
            qg, kg, vg = (t.clone().requires_grad_(True) for t in (q, k, v))
            o = torch.empty_like(q)
            lse = torch.empty(B, H, S, device=dev, dtype=torch.float32)
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            scale = 1.0 / math.sqrt(d)
            for mname in MASKS:
                causal = mname == "causal"
                name = "%s_d%d" % (mname, d)
                fl = 4.0 * B * H * pairs_of(mname, S) * d
                row = dict(kind="bench", mask=mname, D=d, S=S, B=B, H=H, iters=iters)
                t_row = time.time()

                def timed(key, fn, flops):
                    ms = harness.time_ms(fn, iters=iters, warmup=2)
                    torch.cuda.synchronize()
                    row[key + "_ms"] = round(ms, 4)
                    row[key + "_tflops"] = round(flops / ms / 1e9, 1)

                ref = ref_g = None

                def sd():
                    return F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, scale=scale)

                def sd_fb():
                    qg.grad = kg.grad = vg.grad = None
                    sd().backward(do)
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    try:
                        ref = sd().detach()
                        timed("cudnn_fwd", sd, fl)
                    except Exception as e:
                        row["cudnn_fwd_error"] = repr(e)[:300]
                    try:
                        sd_fb()
                        torch.cuda.synchronize()
                        ref_g = (qg.grad.clone(), kg.grad.clone(), vg.grad.clone())
                        timed("cudnn_fb", sd_fb, 3.5 * fl)
                    except Exception as e:
                        row["cudnn_fb_error"] = repr(e)[:300]
                qg.grad = kg.grad = vg.grad = None
                if not a.no_flex:
                    row.update(flex_warm.get((d, S, mname), {}))
                    if "flex_error" not in row:
                        try:
                            fx, fx_fb = flex_fns(fa, qg, kg, vg, do, block_mask(mname, S), scale)
                            timed("flex_fwd", fx, fl)
                            timed("flex_fb", fx_fb, 3.5 * fl)
                        except Exception as e:
                            row["flex_error"] = repr(e)[:300]
                    qg.grad = kg.grad = vg.grad = None
                kern = get(name)
                if kern is None:
                    row["maskc_error"] = "not compiled (see the kernel line)"
                else:
                    try:
                        for t in (o, lse, dq, dk, dv):
                            t.fill_(float("nan"))
                        fwd = kern.prepare(q, k, v, o, lse, scale)
                        bwd = kern.prepare_bwd(q, k, v, o, lse, do, dq, dk, dv, scale, (), (), None, None,
                                               fwd.flags, False)

                        def step():
                            fwd()
                            bwd()
                        fwd()
                        torch.cuda.synchronize()
                        row["maskc_o_nan_rows"] = int(torch.isnan(o).any(-1).sum().item())
                        row["maskc_lse_nan"] = int(torch.isnan(lse).sum().item())
                        if ref is not None:
                            row["maskc_o_vs_cudnn"] = harness.rel_err(o, ref)
                        bwd()
                        torch.cuda.synchronize()
                        row["maskc_grad_nan"] = int(sum(torch.isnan(t).sum().item() for t in (dq, dk, dv)))
                        if ref_g is not None:
                            for gname, got, want in zip(("dq", "dk", "dv"), (dq, dk, dv), ref_g):
                                row["maskc_%s_vs_cudnn" % gname] = harness.rel_err(got, want)
                        timed("maskc_fwd", fwd, fl)
                        timed("maskc_fb", step, 3.5 * fl)
                    except Exception as e:
                        row["maskc_error"] = repr(e)[:400]
                ratios(row, ["maskc", "flex"])
                row["seconds"], row["t"] = round(time.time() - t_row, 1), clock()
                emit(**row)
                rows.append(row)
                del ref, ref_g
            del q, k, v, do, qg, kg, vg, o, lse, dq, dk, dv
            torch.cuda.empty_cache()
    emit(kind="benched", rows=len(rows), t=clock())
    print_table(rows, [])

    # Pass 3: the forward variants, after the table (a variant that faults or
    # hangs takes no column of it along), on fresh inputs, against cuDNN's
    # output on the same inputs; their ratios use the row's cuDNN time.
    if not variants:
        return rows
    for row in rows:
        d, S, B, H = row["D"], row["S"], row["B"], row["H"]
        if d not in vdims:
            continue
        name = "%s_d%d" % (row["mask"], d)
        q, k, v = (torch.randn(B, H, S, d, device=dev, dtype=torch.bfloat16) for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device=dev, dtype=torch.float32)
        scale = 1.0 / math.sqrt(d)
        fl = 4.0 * B * H * pairs_of(row["mask"], S) * d
        ref = None
        try:
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                ref = F.scaled_dot_product_attention(q, k, v, is_causal=row["mask"] == "causal", scale=scale)
        except Exception as e:
            row["variants_ref_error"] = repr(e)[:300]
        vrow = dict(kind="variants", mask=row["mask"], D=d, S=S)
        bwd_variants(row, vrow, name, [v for v in variants if is_bwd(v)], get, q, k, v, o, lse, scale,
                     3.5 * fl)
        for var in variants:
            if is_bwd(var):
                continue
            vk = get(name, var)
            if vk is None:
                continue
            try:
                o.fill_(float("nan"))
                lse.fill_(float("nan"))
                run = vk.prepare(q, k, v, o, lse, scale)
                run()
                torch.cuda.synchronize()
                vrow[var + "_o_nan_rows"] = int(torch.isnan(o).any(-1).sum().item())
                vrow[var + "_lse_nan"] = int(torch.isnan(lse).sum().item())
                if ref is not None:
                    vrow[var + "_o_vs_cudnn"] = harness.rel_err(o, ref)
                ms = harness.time_ms(run, iters=row["iters"], warmup=2)
                torch.cuda.synchronize()
                vrow[var + "_fwd_ms"] = round(ms, 4)
                vrow[var + "_fwd_tflops"] = round(fl / ms / 1e9, 1)
            except Exception as e:
                vrow[var + "_error"] = repr(e)[:400]
        row.update({k_: x for k_, x in vrow.items() if k_ not in ("kind", "mask", "D", "S")})
        ratios(row, variants + ["main2"])
        vrow.update({k_: row[k_] for k_ in row if k_.endswith(("_fwd_vs_cudnn", "_fb_vs_cudnn")) and
                     k_.rsplit("_", 3)[0] in variants + ["main2"]})
        vrow["t"] = clock()
        emit(**vrow)
        del q, k, v, o, lse, ref
        torch.cuda.empty_cache()
    return rows


def bwd_variants(row, vrow, name, bvars, get, q, k, v, o, lse, scale, fb_flops):
    """Each backward variant of bvars on the row's kernel name: the
    manifest's forward then the variant's backward (fresh dO), its dQ, dK,
    dV against the manifest backward's on the same inputs (relative error,
    NaN count) and its forward + backward time in rounds rotated with the
    manifest's (main2_fb: the same process, the same inputs), into row and
    vrow (VAR_fb_ms, VAR_fb_tflops, VAR_grad_vs_main, VAR_grad_nan)."""
    if not bvars:
        return
    base = get(name)
    if base is None:
        return
    do = torch.randn_like(q)
    grads = {}
    timed = []
    for var in ["main2"] + bvars:
        kern = base if var == "main2" else get(name, var)
        if kern is None:
            continue
        try:
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            for t in (o, lse, dq, dk, dv):
                t.fill_(float("nan"))
            fwd = kern.prepare(q, k, v, o, lse, scale) if var == "main2" else base.prepare(q, k, v, o, lse, scale)
            bwd = kern.prepare_bwd(q, k, v, o, lse, do, dq, dk, dv, scale, (), (), None, None, fwd.flags, False)

            def step(fwd=fwd, bwd=bwd):
                fwd()
                bwd()
            step()
            torch.cuda.synchronize()
            grads[var] = (dq, dk, dv)
            vrow[var + "_grad_nan"] = int(sum(torch.isnan(t).sum().item() for t in (dq, dk, dv)))
            timed.append((var, step))
        except Exception as e:
            vrow[var + "_error"] = repr(e)[:400]
    if "main2" in grads:
        for var in bvars:
            if var in grads:
                vrow[var + "_grad_vs_main"] = max(harness.rel_err(g, m) for g, m in zip(grads[var], grads["main2"]))
    for var, ms in harness.time_rounds(timed, 4, iters=row["iters"]).items():
        row[var + "_fb_ms"] = vrow[var + "_fb_ms"] = round(ms, 4)
        row[var + "_fb_tflops"] = vrow[var + "_fb_tflops"] = round(fb_flops / ms / 1e9, 1)
    torch.cuda.synchronize()


def ratios(row, who):
    """row[W_fwd_vs_cudnn], row[W_fb_vs_cudnn]: W's TFLOP/s over cuDNN's."""
    for kind in ("fwd", "fb"):
        c = row.get("cudnn_%s_tflops" % kind)
        for w in who:
            t = row.get("%s_%s_tflops" % (w, kind))
            if c and t:
                row["%s_%s_vs_cudnn" % (w, kind)] = round(t / c, 3)


def print_table(rows, variants):
    def f(r, key):
        x = r.get(key)
        return "-" if x is None else ("%.1f" % x if isinstance(x, float) and x >= 10 else str(x))
    head = ("%-6s %-3s %-5s %-4s" % ("mask", "D", "S", "B/H") +
            " | fwd: %-6s %-6s %-6s %-5s %-5s" % ("cuDNN", "flex", "maskc", "m/cu", "f/cu") +
            "".join(" %-12s" % (v + "/cu") for v in variants if not is_bwd(v)) +
            " | fwd+bwd: %-6s %-6s %-6s %-5s %-5s" % ("cuDNN", "flex", "maskc", "m/cu", "f/cu"))
    print("\nTFLOP/s (4*D flops per kept pair forward, 3.5x forward+backward); m/cu, f/cu: maskc, flex over cuDNN")
    print(head)
    for r in rows:
        line = "%-6s %-3d %-5d %-4s" % (r["mask"], r["D"], r["S"], "%d/%d" % (r["B"], r["H"]))
        line += " | fwd: %-6s %-6s %-6s %-5s %-5s" % tuple(f(r, k) for k in (
            "cudnn_fwd_tflops", "flex_fwd_tflops", "maskc_fwd_tflops", "maskc_fwd_vs_cudnn", "flex_fwd_vs_cudnn"))
        line += "".join(" %-12s" % ("%s %s" % (f(r, v + "_fwd_tflops"), f(r, v + "_fwd_vs_cudnn")))
                        for v in variants if not is_bwd(v))
        line += " | fwd+bwd: %-6s %-6s %-6s %-5s %-5s" % tuple(f(r, k) for k in (
            "cudnn_fb_tflops", "flex_fb_tflops", "maskc_fb_tflops", "maskc_fb_vs_cudnn", "flex_fb_vs_cudnn"))
        bv = [v for v in variants if is_bwd(v)]
        if bv:
            line += " | rotated f+b/cu: main %s" % f(r, "main2_fb_vs_cudnn") + "".join(
                " %s %s" % (v, f(r, v + "_fb_vs_cudnn")) for v in bv)
        print(line)
    print("\nmaskc vs cuDNN (relative error of O; dQ, dK, dV) and unwritten outputs:")
    for r in rows:
        print("%-6s D=%-3d S=%-5d O %s  dQ %s dK %s dV %s  nan rows/grads %s/%s %s" % (
            r["mask"], r["D"], r["S"], *("%.1e" % r[k] if k in r else "-" for k in (
                "maskc_o_vs_cudnn", "maskc_dq_vs_cudnn", "maskc_dk_vs_cudnn", "maskc_dv_vs_cudnn")),
            r.get("maskc_o_nan_rows", "-"), r.get("maskc_grad_nan", "-"),
            " ".join("%s=%s" % (k, r[k]) for k in r if k.endswith("_error"))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True, help="genkernels output of gpu/dense_cases/*.flex")
    ap.add_argument("--mode", choices=["check", "bench"], required=True)
    ap.add_argument("--variants", default="", help="forward variants (comma-separated, see the module doc)")
    ap.add_argument("--variant-dims", help="head dims the variants are timed at (default --dims)")
    ap.add_argument("--bwd-alt", action="append", default=[], metavar="NAME=DIR",
                    help="a backward variant NAME: the backward of DIR's kernels (another genkernels build of "
                         "gpu/dense_cases), timed as the backward variants are")
    ap.add_argument("--check-variants", default="",
                    help="bench: then check.py's shapes on these variants (comma-separated, in this order)")
    ap.add_argument("--flex-budget-s", type=float, default=1e9,
                    help="bench: compile FlexAttention for no further row once this many seconds have passed")
    ap.add_argument("--deadline-s", type=float, default=1e9,
                    help="bench: check no further variant kernel once this many seconds have passed")
    ap.add_argument("--dims", default="128,64,256")
    ap.add_argument("--seqs", default="2048,8192,32768")
    ap.add_argument("--iters", type=int, default=10, help="timed runs at S = 8192 (scaled by 8192 / S, kept in 5..20)")
    ap.add_argument("--no-flex", action="store_true")
    ap.add_argument("--big", action="store_true", help="check: also the 8192-token shape")
    ap.add_argument("--out", default="dense.jsonl")
    a = ap.parse_args()
    for alt in a.bwd_alt:
        name, eq, d = alt.partition("=")
        if not eq or not name or name in VARIANTS or name in BWD_VARIANTS or name in ALT_BWD:
            sys.exit("--bwd-alt %r: want NAME=DIR, NAME a new variant name" % alt)
        ALT_BWD[name] = d
    a.variants = ",".join([v for v in a.variants.split(",") if v] + list(ALT_BWD))
    emit = JsonLog(a.out, "a")
    clock = Timer()
    harness.libs()
    torch.empty(1, device="cuda")
    emit(kind="env", torch=torch.__version__, gpu=torch.cuda.get_device_name(), mode=a.mode,
         cudnn=torch.backends.cudnn.version(), args=vars(a))
    abi, cases, get, vkeys = load_kernels(a, emit, clock)
    variants = [v for v in a.variants.split(",") if v]

    if a.mode == "check":
        keys = [("%s_d%d" % (m, d), d, "") for d in map(int, a.dims.split(",")) for m in MASKS] + vkeys
        passed, failed, _ = check_kernels(keys, cases, get, emit, a.big)
        print("dense check: %d passed, %d failed (%.0f s)" % (passed, failed, clock()))
        sys.exit(1 if failed else 0)

    rows = bench(a, emit, clock, cases, get, vkeys)
    if variants:
        print_table(rows, variants)
    failed = 0
    order = [v for v in a.check_variants.split(",") if v]
    ckeys = sorted((k for k in vkeys if k[2] in order), key=lambda k: (order.index(k[2]), k[1], k[0]))
    if ckeys:
        passed, failed, skipped = check_kernels(ckeys, cases, get, emit, a.big, clock, a.deadline_s)
        print("variant check: %d passed, %d failed (%.0f s); not checked (out of time): %s" % (
            passed, failed, clock(), ", ".join("%s/%s" % (n, v) for n, _, v in skipped) or "none"))
    bad = [r for r in rows if r.get("maskc_error") or r.get("maskc_o_nan_rows") or r.get("maskc_grad_nan")
           or r.get("maskc_o_vs_cudnn", 0) > 2e-2]
    for r in bad:
        print("BAD ROW %s D=%d S=%d: %s" % (r["mask"], r["D"], r["S"], {k: r[k] for k in r if k.startswith("maskc_") and (
            "error" in k or "nan" in k or "vs_cudnn" in k and "fwd" not in k and "fb" not in k)}))
    sys.exit(1 if failed or bad else 0)


if __name__ == "__main__":
    main()
