"""Where a generated kernel's registers and local memory go, from its SASS:
compiles the backward sources of a genkernels output with NVRTC as the
harness does (ptxas verbose), disassembles maskc_attn_bwd with cuobjdump and
prints, per kernel, ptxas's register count and stack frame, the highest
register the code names, the setmaxnreg instructions and, for each local
store and load (STL, LDL), whether it comes before the first setmaxnreg,
after a setmaxnreg that gives registers back (the producer's branch) or
after one that takes them (the consumers'), in the order of the code.

    python3 gpu/sass_regs.py --generated DIR [--cases a,b] [--entry maskc_attn_bwd]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True)
    ap.add_argument("--cases")
    ap.add_argument("--entry", default="maskc_attn_bwd")
    a = ap.parse_args()
    abi, cases = harness.generated_cases(a.generated)
    want = a.cases.split(",") if a.cases else None
    for case, _ in cases:
        if want and case.name not in want:
            continue
        src = harness.read(os.path.join(a.generated, case.entry["bwd_source"]))
        cubin, log = harness.compile_source(src, case.name, abi=abi)
        with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
            f.write(cubin)
        sass = subprocess.run(["cuobjdump", "-sass", "-fun", a.entry, f.name], capture_output=True, text=True).stdout
        os.unlink(f.name)
        info = [l for l in log.splitlines() if a.entry + "'" in l or "registers" in l or "stack frame" in l]
        regs = re.findall(r"Used (\d+) registers", log)
        top = max([int(r) for r in re.findall(r"\bR(\d+)\b", sass)] or [0])
        part, counts = "before", {}
        for line in sass.splitlines():
            if "SETMAXREG" in line or "SETMAXNREG" in line:  # USETMAXREG.TRY_ALLOC (raise) or .DEALLOC
                part = "producer" if "DEALLOC" in line else "consumers"
                counts.setdefault("setmaxnreg", []).append(line.split(";")[0].strip()[-60:])
            for op in ("STL", "LDL"):
                if re.search(r"\b%s\b" % op, line):
                    counts[(op, part)] = counts.get((op, part), 0) + 1
        print("%-24s ptxas regs %s, highest register named R%d; %s" % (
            case.name, "/".join(regs[-3:]), top, {k: v for k, v in counts.items() if k != "setmaxnreg"}))
        for l in counts.get("setmaxnreg", []):
            print("    " + l)
        for l in info[-4:]:
            print("    " + l.strip()[:150])


if __name__ == "__main__":
    main()
