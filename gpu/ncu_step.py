"""One training step of a generated kernel, forward and backward, for a
profiler: Nsight Compute (ncu) reads what limits each launch (tensor pipe
utilisation, warp stall reasons, shared-memory and L2 traffic) where the
benchmarks only give times.

Usage (on the GPU machine; DIR is genkernels output, NAME a kernel of it):
  ncu --profile-from-start off --set full -k regex:maskc_ --export OUT/NAME \\
      python3 gpu/ncu_step.py --generated DIR --kernel NAME [--shape 2,16,8192] [--deterministic]
  ncu --import OUT/NAME.ncu-rep --page details --csv > OUT/NAME.csv

The kernel's buffers (a mask or score reading one) take the contents
--buffers gives (gpu/bench_ext_buffers.py's file, keyed FLEX:ATTENTION, as
bench_ext.py and bwd_bench.py --ext-buffers read it), else random contents
as check.py's (harness.GeneratedCase); the head dim is the kernel's.
The step runs three times unprofiled (NVRTC's build, the first launches),
then once between torch.cuda.profiler.start() and stop(), so that ncu
(--profile-from-start off) sees each launch of one step once. Every launch's
return code is checked by the launcher, and the step ends with a synchronize
that raises a kernel's fault; the outputs are poisoned before the profiled
step and checked to be written (no NaN) after it.
"""
import argparse
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)
from cases import case_id  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True)
    ap.add_argument("--kernel", required=True, help="a kernel name of DIR's manifest")
    ap.add_argument("--shape", default="2,16,8192", help="B,H,S (Sq = Skv = S, HKV = H)")
    ap.add_argument("--deterministic", action="store_true", help="the backward's deterministic mode")
    ap.add_argument("--buffers", metavar="BUF.json", help="buffer contents (gpu/bench_ext_buffers.py's file)")
    a = ap.parse_args()
    man = json.load(open(os.path.join(a.generated, "manifest.json")))
    e = {k["name"]: k for k in man["kernels"]}.get(a.kernel)
    if e is None:
        sys.exit("ncu_step: no kernel %r in %s" % (a.kernel, a.generated))
    B, H, S = (int(x) for x in a.shape.split(","))
    D, dev = e["head_dim"], "cuda"
    harness.libs()
    abi = harness.ABI(man["abi"])
    src = harness.read(os.path.join(a.generated, e["bwd_source"]))
    kern = harness.BwdKernel(src, e, abi, a.kernel, compiled=harness.compile_source(src, a.kernel + "_bwd", None, abi))
    gen = torch.Generator(device=dev)
    gen.manual_seed(0)
    q, k, v, do = (torch.randn(B, H, S, D, generator=gen, device=dev).to(torch.bfloat16) for _ in range(4))
    o, lse = torch.empty_like(q), torch.empty(B, H, S, device=dev, dtype=torch.float32)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    specs = sorted(e.get("buffers") or [], key=lambda b: b["slot"])
    if a.buffers:
        cid = case_id(e)
        bufs = harness.given_case(e, json.load(open(a.buffers)).get(cid, {}), dev, B, H, S)[0]
    else:
        bufs = harness.GeneratedCase(e).build(B, H, H, S, S, dev, torch.Generator(device=dev).manual_seed(0))[0]
    grad_slots = [b["slot"] for b in specs if b.get("grad")]
    scale = 1.0 / math.sqrt(D)
    fwd = kern.prepare(q, k, v, o, lse, scale, bufs)
    bwd = kern.prepare_bwd(q, k, v, o, lse, do, dq, dk, dv, scale, bufs, grad_slots, None, None, fwd.flags,
                           a.deterministic)

    def step():
        fwd()
        bwd()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    for t in (o, dq, dk, dv):
        t.fill_(float("nan"))
    torch.cuda.profiler.start()
    step()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    unwritten = {n: int(torch.isnan(t).sum()) for n, t in (("O", o), ("dQ", dq), ("dK", dk), ("dV", dv))}
    print(json.dumps(dict(kernel=a.kernel, shape=[B, H, S, D], deterministic=a.deterministic,
                          regs=kern.regs, bwd_regs=kern.bwd_regs, bwd_local_bytes=kern.bwd_local_bytes,
                          nan_elements=unwritten)))
    # A fully masked row's O is 0, not NaN: any NaN is an element no launch wrote.
    if any(unwritten.values()):
        sys.exit("ncu_step: unwritten outputs %s" % unwritten)


if __name__ == "__main__":
    main()
