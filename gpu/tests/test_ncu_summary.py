"""gpu/ncu_summary.py --sass reads an Nsight Compute source page (through
`ncu --import`, here a stand-in on PATH that prints a fixed CSV): the code is
cut into runs of equally executed instructions, ranked by their share of the
stall samples with their stall reasons, and the instructions with most
samples follow."""
import os
import stat
import subprocess
import sys

from conftest import REPO

HEAD = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)",
        "Instructions Executed", "stall_wait", "stall_barrier", "stall_long_sb", "stall_wait (Not Issued)"]
ROWS = [  # a prologue once per block, a per-pair body of three, a wait loop
    ("0x1000", "S2R R0, SR_TID.X", 1, 1, 16, 1, 0, 0, 1),
    ("0x1010", "LDS R1, [R0]", 10, 9, 512, 2, 0, 8, 2),
    ("0x1020", "WARPGROUP.DEPBAR.LE gsb0, 0x0", 60, 60, 512, 0, 60, 0, 0),
    ("0x1030", "FFMA R2, R1, R1, R2", 9, 5, 512, 9, 0, 0, 9),
    ("0x1040", "@!P0 BRA 0x1040", 20, 20, 4000, 0, 0, 20, 0),
]


def run_summary(tmp_path, rows, *args, head=HEAD):
    csv = tmp_path / "source.csv"
    csv.write_text("\n".join(",".join('"%s"' % c for c in r) for r in [head] + [list(map(str, r)) for r in rows]))
    ncu = tmp_path / "ncu"
    ncu.write_text("#!/bin/sh\ncat %s\n" % csv)
    ncu.chmod(ncu.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ, PATH="%s:%s" % (tmp_path, os.environ["PATH"]))
    return subprocess.run([sys.executable, os.path.join(REPO, "gpu", "ncu_summary.py"), "--sass", "r.ncu-rep"] +
                          list(args), capture_output=True, text=True, env=env)


def test_runs_ranked_by_samples(tmp_path):
    out = run_summary(tmp_path, ROWS, "--top", "3")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "r.ncu-rep: 5 instructions, 100 stall samples"
    runs = lines[2:5]
    # the per-pair body (three instructions executed 512 times) holds 79% of the samples, mostly at the barrier
    assert runs[0].split()[:2] == ["0x10..", "0x30"] and " 3 instrs" in runs[0] and "exec       512" in runs[0]
    assert "79.0%" in runs[0] and "barrier 76%, wait 14%, long_sb 10%" in runs[0]
    assert "exec      4000" in runs[1] and "20.0%" in runs[1] and "long_sb 100%" in runs[1]
    assert "1.0%" in runs[2] and "exec        16" in runs[2]
    assert lines[5] == "  instructions with most samples:"
    assert "WARPGROUP.DEPBAR" in lines[6] and "60.00%" in lines[6]


def test_report_without_source_counters(tmp_path):
    """A source page without the sampling columns (a report collected without
    SourceCounters) is refused with a message that names the section."""
    out = run_summary(tmp_path, [("0x0", "NOP")], head=["Address", "Source"])
    assert out.returncode != 0 and "SourceCounters" in out.stderr
