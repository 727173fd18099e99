"""compute-sanitizer (memcheck and racecheck) on the generated backward
kernels of some masks with buffers, on a small GQA shape, within about a
minute:

    python3 gpu/bwd_sanitize.py --generated DIR --cases a,b,c [--out OUTDIR]

The parent process (no sanitizer) NVRTC-compiles the cases' backward sources
in parallel and saves the cubins, then runs one child per tool, both at
once, under `compute-sanitizer --tool T --kernel-name kns=maskc_` (only
maskc's kernels are instrumented: torch's own fills and copies run
natively, which is what made the unfiltered memcheck run past its timeout).
Each child loads the cubins and runs, per case, the forward and both
backward modes (atomic dQ, deterministic) with fresh random inputs,
buffers, dLSE and the sink where the kernel has one; results are not
checked here (bwd_check.py does that), only that every launch completes,
every case ran, and the sanitizer reports nothing. Logs go to
OUTDIR/sanitize_TOOL.txt; the exit status is 0 only when both tools report
0 errors (0 hazards) for every case.
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)


def child(a):
    B, H, HKV, Sq, Skv = map(int, a.shape.split(","))
    man = json.load(open(a.generated + "/manifest.json"))
    abi = harness.ABI(man["abi"])
    gen = torch.Generator(device="cuda").manual_seed(0)
    for e in man["kernels"]:
        if e["name"] not in a.cases.split(","):
            continue
        case = harness.GeneratedCase(e)
        cubin = open(os.path.join(a.cubins, e["name"] + ".cubin"), "rb").read()
        kern = harness.BwdKernel(harness.read(a.generated + "/" + e["bwd_source"]), e, abi, e["name"], compiled=(cubin, ""))
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


def parent(a):
    man = json.load(open(a.generated + "/manifest.json"))
    abi = harness.ABI(man["abi"])
    names = a.cases.split(",")
    entries = [e for e in man["kernels"] if e["name"] in names]
    missing = set(names) - {e["name"] for e in entries}
    if missing:
        sys.exit("no kernel named %s in %s" % (sorted(missing), a.generated))
    os.makedirs(a.out, exist_ok=True)
    cubins = os.path.join(a.out, "cubins")
    os.makedirs(cubins, exist_ok=True)
    harness.libs()
    torch.empty(1, device="cuda")
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(len(entries)) as ex:
        futs = [ex.submit(harness.compile_source, harness.read(a.generated + "/" + e["bwd_source"]), e["name"] + "_bwd", None, abi)
                for e in entries]
        for e, f in zip(entries, futs):
            open(os.path.join(cubins, e["name"] + ".cubin"), "wb").write(f.result()[0])
    print("compiled %d backward sources in %.1fs" % (len(entries), time.time() - t0), flush=True)

    def run(tool, filtered):
        cmd = ["compute-sanitizer", "--tool", tool, "--error-exitcode", "3"]
        if filtered:
            cmd += ["--kernel-name", "kns=maskc_"]
        cmd += [sys.executable, os.path.abspath(__file__), "--child", "--generated", a.generated, "--cases", a.cases,
                "--cubins", cubins, "--shape", a.shape]
        t = time.time()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=a.timeout, text=True)
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout"
        return out, rc, time.time() - t

    def tool_run(tool):
        out, rc, wall = run(tool, True)
        filtered = True
        if rc not in (0, 3, "timeout") and re.search(r"(?i)unrecognized|invalid.*kernel-name", out):
            out, rc, wall = run(tool, False)  # an older compute-sanitizer without --kernel-name
            filtered = False
        open(os.path.join(a.out, "sanitize_%s.txt" % tool), "w").write(out)
        return tool, out, rc, wall, filtered

    ok = True
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        results = list(ex.map(tool_run, a.tools.split(",")))
    for tool, out, rc, wall, filtered in results:
        ran = re.findall(r"^ran (\S+)", out, re.M)
        summary = re.findall(r"(?:ERROR SUMMARY|RACECHECK SUMMARY): .*", out)
        good = rc == 0 and sorted(ran) == sorted(names) and summary and all(
            re.search(r": 0 (errors|hazards)", s) for s in summary)
        ok = ok and bool(good)
        print("%s: exit %s in %.1fs, kernel filter %s, cases run %s/%d, %s: %s" % (
            tool, rc, wall, "kns=maskc_" if filtered else "off", len(ran), len(names),
            "; ".join(summary) or "no summary", "PASS" if good else "FAIL"), flush=True)
        if not good:
            print("\n".join(out.splitlines()[-25:]))
    sys.exit(0 if ok else 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--shape", default="1,4,2,200,200", help="B,H,HKV,Sq,Skv")
    ap.add_argument("--tools", default="memcheck,racecheck")
    ap.add_argument("--timeout", type=float, default=120, help="seconds per sanitizer run (both run at once)")
    ap.add_argument("--out", default="/tmp/maskc-sanitize")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cubins", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a)
    else:
        parent(a)


if __name__ == "__main__":
    main()
