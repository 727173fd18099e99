"""Runs the forward and both backward modes of some generated kernels once
on a small GQA shape, for compute-sanitizer (memcheck, racecheck):

    compute-sanitizer --tool memcheck python3 gpu/bwd_sanitize.py --generated DIR --cases a,b,c

Fresh random inputs (and buffers, dLSE, sink where the kernel has one); the
results are not checked here (bwd_check.py does that), only that every
launch completes with no sanitizer report.
"""
import argparse
import json
import math

import torch

import maskc_gpu as mg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--shape", default="1,4,2,200,200")
    a = ap.parse_args()
    B, H, HKV, Sq, Skv = map(int, a.shape.split(","))
    man = json.load(open(a.generated + "/manifest.json"))
    abi = mg.ABI(man["abi"])
    gen = torch.Generator(device="cuda").manual_seed(0)
    for e in man["kernels"]:
        if e["name"] not in a.cases.split(","):
            continue
        case = mg.GeneratedCase(e)
        kern = mg.BwdKernel(mg.read(a.generated + "/" + e["bwd_source"]), e, abi, e["name"])
        D = kern.head_dim
        t = lambda h, s: torch.randn(B, h, s, D, generator=gen, device="cuda").to(torch.bfloat16)
        q, k, v, do = t(H, Sq), t(HKV, Skv), t(HKV, Skv), t(H, Sq)
        o, lse = torch.empty_like(q), torch.empty(B, H, Sq, device="cuda")
        bufs, _, _ = case.build(B, H, HKV, Sq, Skv, "cuda", torch.Generator().manual_seed(1))
        slots = [b["slot"] for b in e["buffers"] if b.get("grad")]
        sink = torch.randn(H, generator=gen, device="cuda") if case.sink else None
        dlse = torch.randn(B, H, Sq, generator=gen, device="cuda")
        scale = e.get("scale") or 1 / math.sqrt(D)
        fwd = kern.prepare(q, k, v, o, lse, scale, bufs, sink)
        fwd()
        for det in (False, True):
            dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
            kern.prepare_bwd(q, k, v, o, lse, do, dq, dk, dv, scale, bufs, slots, sink, dlse, fwd.flags, det)()
        torch.cuda.synchronize()
        print("ran %s (buffers with gradients: %s)" % (e["name"], slots), flush=True)


if __name__ == "__main__":
    main()
