"""A short summary of Nsight Compute reports (gpu/ncu_step.py's): per
report and kernel launch, the figures that say where a launch's time goes
(duration, SM and memory throughput, tensor pipe, L2 hit rate, DRAM
throughput, occupancy, issue rate) and its largest warp stall reasons, one
block of lines each, so that several builds of one kernel compare at a
glance.

With --sass, a report collected with the SourceCounters section (ncu
--section SourceCounters --section WarpStateStats) is read per SASS
instruction instead: the kernel's code cut into runs of instructions
executed equally often (a loop body, a once-per-block prologue or
epilogue, a wait loop), the runs that hold most of the warps' stall
samples with their share, execution count and stall reasons, then the
instructions with most samples. Execution counts divided by the work
items (pairs, blocks) say which run is per pair and which per block.

    python3 gpu/ncu_summary.py OUT/a.ncu-rep OUT/b.ncu-rep ... [--kernel maskc_attn_bwd]
    python3 gpu/ncu_summary.py --sass OUT/a.ncu-rep [--top 25]
"""
import argparse
import csv
import io
import subprocess
import sys

# Details-page rows (section, metric name) printed when present.
DETAILS = [
    ("GPU Speed Of Light Throughput", "Duration"),
    ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"),
    ("GPU Speed Of Light Throughput", "Memory Throughput"),
    ("GPU Speed Of Light Throughput", "DRAM Throughput"),
    ("Memory Workload Analysis", "L2 Hit Rate"),
    ("Memory Workload Analysis", "L1/TEX Hit Rate"),
    ("Occupancy", "Achieved Occupancy"),
    ("Scheduler Statistics", "Issue Slots Busy"),
    ("Scheduler Statistics", "No Eligible"),
    ("Warp State Statistics", "Warp Cycles Per Issued Instruction"),
    ("Launch Statistics", "Registers Per Thread"),
    ("Launch Statistics", "Grid Size"),
]
# Raw metrics printed when present.
RAW = [
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_active",
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
]
# Warp stall reasons: smsp__average_warps_issue_stalled_REASON_per_issue_active.ratio
# (Warp State Statistics: warps stalled for REASON per issued instruction).
STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"


def ncu_csv(report, page):
    out = subprocess.run(["ncu", "--import", report, "--page", page, "--csv"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("ncu --import %s: %s" % (report, out.stderr.strip()))
    return list(csv.reader(io.StringIO(out.stdout)))


def num(x):
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def sass_report(rep, top):
    """The runs of equally executed instructions and the instructions of
    report rep's (one kernel's) source page with most stall samples."""
    rows = ncu_csv(rep, "source")
    hi = next((i for i, r in enumerate(rows) if "Warp Stall Sampling (All Samples)" in r), None)
    if hi is None:
        sys.exit("%s: no source counters (collect with --section SourceCounters)" % rep)
    head, body = rows[hi], [r for r in rows[hi + 1:] if len(r) == len(rows[hi])]
    sc, ex = head.index("Warp Stall Sampling (All Samples)"), head.index("Instructions Executed")
    reasons = [i for i, c in enumerate(head) if c.startswith("stall_") and "Not Issued" not in c]
    total = sum(num(r[sc]) for r in body) or 1.0
    base = int(body[0][0], 16)

    def why(rs):
        agg = {}
        for r in rs:
            for i in reasons:
                agg[head[i][6:]] = agg.get(head[i][6:], 0.0) + num(r[i])
        t = sum(agg.values()) or 1.0
        return ", ".join("%s %.0f%%" % (k, 100 * v / t) for v, k in sorted(((v, k) for k, v in agg.items()),
                                                                          reverse=True)[:4])

    runs = []
    for r in body:
        if runs and num(runs[-1][-1][ex]) == num(r[ex]):
            runs[-1].append(r)
        else:
            runs.append([r])
    runs.sort(key=lambda rs: -sum(num(r[sc]) for r in rs))
    print("%s: %d instructions, %.0f stall samples" % (rep, len(body), total))
    print("  runs of equally executed instructions (offset range, count, executions, share of samples, why):")
    for rs in runs[:top]:
        share = sum(num(r[sc]) for r in rs) / total
        if share < 0.005:
            break
        print("  %#7x..%#7x %5d instrs  exec %9d  %5.1f%%  %s  | %s" % (
            int(rs[0][0], 16) - base, int(rs[-1][0], 16) - base, len(rs), num(rs[0][ex]), 100 * share, why(rs),
            rs[0][1].strip()[:50]))
    print("  instructions with most samples:")
    for r in sorted(body, key=lambda r: -num(r[sc]))[:top]:
        print("  %#7x %5.2f%%  exec %9d  %-60s %s" % (int(r[0], 16) - base, 100 * num(r[sc]) / total, num(r[ex]),
                                                   r[1].strip()[:60], why([r])))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--kernel", default="maskc_attn_bwd", help="the kernel name to report (exact)")
    ap.add_argument("--sass", action="store_true", help="per instruction, from the SourceCounters section")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    if a.sass:
        for rep in a.reports:
            sass_report(rep, a.top)
        return
    for rep in a.reports:
        rows = ncu_csv(rep, "details")
        head, body = rows[0], rows[1:]
        col = {n: i for i, n in enumerate(head)}
        launches = {}
        for r in body:
            if r[col["Kernel Name"]].split("(")[0] != a.kernel:
                continue
            launches.setdefault(r[col["ID"]], {})[(r[col["Section Name"]], r[col["Metric Name"]])] = (
                r[col["Metric Value"]], r[col["Metric Unit"]])
        raw = ncu_csv(rep, "raw")
        rhead, rbody = raw[0], raw[2:]  # row 1: units
        rcol = {n: i for i, n in enumerate(rhead)}
        for lid, m in launches.items():
            print("%s  %s launch %s" % (rep, a.kernel, lid))
            for key in DETAILS:
                if key in m:
                    print("  %-40s %s %s" % (key[1], *m[key]))
            rr = next((r for r in rbody if r[rcol["ID"]] == lid), None)
            if rr is None:
                continue
            for name in RAW:
                if name in rcol:
                    print("  %-40s %s" % (name, rr[rcol[name]]))
            stalls = []
            for name, i in rcol.items():
                if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX):
                    stalls.append((num(rr[i]), name[len(STALL_PREFIX):-len(STALL_SUFFIX)]))
            stalls.sort(reverse=True)
            print("  stalls (warps per issued instruction): " + ", ".join("%s %.2f" % (n, v) for v, n in stalls[:8]))


if __name__ == "__main__":
    main()
