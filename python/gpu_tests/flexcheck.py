"""What the GPU checks of a .flex text share (check_reads.py,
check_buffer_forms.py): the outputs' memory poisoned with NaN, the relative
error against a float64 reference, and the run itself: a fresh seed
(printed), the text loaded through the installed wheel, each named check
timed with its traceback logged, a final PASS or FAIL line, the log written
under --out, exit 1 on FAIL."""
import argparse
import os
import sys
import tempfile
import time
import traceback

import torch


def rel_err(out, ref):
    """||out - ref|| / ||ref|| in float64; inf where out holds a NaN."""
    out, ref = out.double(), ref.double()
    if torch.isnan(out).any():
        return float("inf")
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def poison(nbytes):
    """Fills the allocator block the next allocation of nbytes reuses with
    NaN: an output no kernel writes stays NaN."""
    t = torch.full((nbytes // 2 + 8,), float("nan"), dtype=torch.float16, device="cuda")
    del t


def run_checks(checks, prog, gen, log):
    """Runs each (name, fn) of checks as fn(prog, gen, log), logging
    'name: ok|FAILED (seconds)' (an exception is a failure, its traceback
    logged); returns {name: passed} in order."""
    results = {}
    for name, fn in checks:
        t0 = time.time()
        try:
            results[name] = bool(fn(prog, gen, log))
        except Exception:
            log(traceback.format_exc())
            results[name] = False
        log("%s: %s (%.1f s)" % (name, "ok" if results[name] else "FAILED", time.time() - t0))
    return results


def main(flex_name, flex, checks, log_name):
    """The command line of one check script: flex (written to flex_name in
    a temporary folder, so that diagnostics name it) loaded, checks run,
    the log also written to --out/log_name."""
    import maskc.torch as mt  # the wheel's torch front end: on the GPU machine only

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    lines = []

    def log(s):
        print(s, flush=True)
        lines.append(s)

    seed = int.from_bytes(os.urandom(4), "little")
    gen = torch.Generator(device="cuda").manual_seed(seed)
    log("seed %d, %s, torch %s" % (seed, torch.cuda.get_device_name(), torch.__version__))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, flex_name)
        with open(path, "w") as f:
            f.write(flex)
        results = run_checks(checks, mt.load(path), gen, log)
    ok = all(results.values())
    log("%s: %s" % ("PASS" if ok else "FAIL", ", ".join("%s %s" % (k, "ok" if v else "FAILED") for k, v in results.items())))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, log_name), "w") as f:
            f.write("\n".join(lines) + "\n")
    sys.exit(0 if ok else 1)
