"""A kernel generated from a ported .flex file against FlexAttention running
the file's original Python score_mod / mask_mod.

Usage: python3 gpu/ported_check.py --generated DIR --flex FILE.flex [--out FILE.jsonl]

DIR is `go run ./cmd/genkernels -o DIR FILE.flex` output. For every
kernel and shape: fresh random inputs and buffers, O and LSE poisoned with
NaN, the kernel launched (gpu/harness.py), and O and LSE compared with
(1) a float64 reference attention and (2) torch FlexAttention, both running
the mods as the .flex file's defs execute under Python (gpu/ported.py),
not maskc's translation of them. Shares gpu/check.py's comparison
(check_one) and tolerance. Exits 1 on any failure.
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import harness  # noqa: E402  (gpu/harness.py, on the package's launcher: python/maskc)
import ported  # noqa: E402

# (B, H, HKV, Sq, Skv, layout)
SHAPES = [
    (1, 8, 8, 127, 300, "bshd"),
    (2, 16, 16, 1000, 1000, "bshd"),
    (1, 16, 2, 2048, 2048, "bhsd"),
]


class PortedCase(harness.Case):
    """A generated kernel whose reference is the original Python of the
    .flex file's defs, with its buffers drawn in MaskcBuffers order."""

    def __init__(self, entry, ff):
        super().__init__(entry["name"], self._make, sink=bool(entry.get("has_sink")))
        self.entry, self.ff = entry, ff
        self.settings = dict(ff.attentions)[entry["attention"]]
        self.specs = {name: (dt, dims, prop) for name, dt, dims, prop in ff.buffers}

    def _make(self, B, H, HKV, Sq, Skv, dev, gen):
        sizes = {"B": B, "H": H, "HKV": HKV, "Q": Sq, "KV": Skv}
        slots = sorted(self.entry.get("buffers") or [], key=lambda b: b["slot"])
        bufs = {b["name"]: ported.draw_buffer(*self.specs[b["name"]], sizes, gen).to(dev) for b in slots}
        ns = ported.namespace(self.ff, bufs)
        mask, score = ported.mods(self.ff, ns, self.settings)
        return [bufs[b["name"]] for b in slots], mask, score


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--generated", required=True)
    ap.add_argument("--flex", required=True)
    ap.add_argument("--out", default="ported_check.jsonl")
    a = ap.parse_args()
    ff = ported.FlexFile(open(a.flex).read())
    gen = torch.Generator(device="cuda").manual_seed(int(time.time()))
    log = open(a.out, "w")
    fails = 0
    print("torch %s, %s" % (torch.__version__, torch.cuda.get_device_name()))
    abi, cases = harness.generated_cases(a.generated)
    for entry_case, src in cases:
        case = PortedCase(entry_case.entry, ff)
        kern = harness.Kernel(src, entry_case.entry, abi, case.name)
        D, dtype = entry_case.entry["head_dim"], entry_case.entry["dtype"]
        print("%s: %s score_mod from %s, D=%d %s, %d regs" % (case.name, case.settings.get("score"), a.flex, D, dtype,
                                                               kern.regs))
        for shape in SHAPES:
            r = check.check_one(kern, case, shape, D, dtype, gen, flex=True)
            r.update(case=case.name, shape=shape, D=D, dtype=dtype)
            log.write(json.dumps(r) + "\n")
            fails += not r["ok"]
            print("  %-28s O vs f64 %.2e  LSE vs f64 %.2e  O vs flex %.2e  LSE vs flex %.2e  flex vs f64 %.2e  unwritten %d  %s" % (
                ",".join(map(str, shape)), r["o_err"], r["lse_err"], r.get("flex_o_err", float("nan")),
                r.get("flex_lse_err", float("nan")), r.get("flex_o_vs_ref", float("nan")), r["unwritten"],
                "ok" if r["ok"] else "FAIL %s" % r.get("flex_error", "")))
    print("ported_check: %d failed" % fails)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
