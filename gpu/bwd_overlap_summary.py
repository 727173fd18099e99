"""Compact summaries for gpu/bwd_overlap.sh's device call (stdout is all
that comes back whole from the device).

  python3 gpu/bwd_overlap_summary.py kernels BWD_BENCH.jsonl
      one line per (variant, case) kernel of gpu/bwd_bench.py: backward
      registers and local memory, and ptxas's wgmma serialization warning
      where it gave one (an overlap that ptxas undid).
  python3 gpu/bwd_overlap_summary.py dense A.jsonl B.jsonl ...
      one line per (mask, D, S) of gpu/dense_bench.py runs: maskc's forward
      and forward + backward over cuDNN SDPA in each file, side by side.
"""
import json
import os
import sys


def records(path):
    """The JSON objects of a JSON-lines log (other lines skipped)."""
    with open(path) as f:
        for line in f:
            if line.startswith("{"):
                try:
                    yield json.loads(line)
                except ValueError:
                    continue


def kernel_lines(path):
    out = []
    for r in records(path):
        if r.get("kind") != "kernel":
            continue
        if "error" in r:
            out.append("%s %s ERROR %s" % (r.get("variant"), r.get("case"), r["error"][-200:]))
            continue
        serial = [x for x in r.get("ptxas", []) if "serializ" in x.lower()]
        out.append("%s %s bwd regs %s local %s%s" % (r["variant"], r["case"], r.get("bwd_regs"),
                                                     r.get("bwd_local_bytes"), " SERIALIZED" if serial else ""))
    return out


def dense_lines(paths):
    rows = {}
    for path in paths:
        name = os.path.basename(path).rsplit(".", 1)[0]
        for r in records(path):
            if "maskc_fb_vs_cudnn" not in r and "maskc_fwd_vs_cudnn" not in r:
                continue
            rows.setdefault((r["mask"], r["D"], r["S"]), []).append(
                "%s fwd %s fb %s" % (name, r.get("maskc_fwd_vs_cudnn"), r.get("maskc_fb_vs_cudnn")))
    return ["%-6s D%-3d S%-5d " % k + " | ".join(v) for k, v in sorted(rows.items())]


def main(argv):
    if len(argv) >= 2 and argv[0] == "kernels":
        lines = kernel_lines(argv[1])
    elif len(argv) >= 2 and argv[0] == "dense":
        lines = dense_lines(argv[1:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
