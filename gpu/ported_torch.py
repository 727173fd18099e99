"""Golden files for maskc's evaluator from real torch.

Usage: python3 gpu/ported_torch.py [--out DIR] [FILE.flex ...]
(default: every testdata/ported/*.flex, written to testdata/ported/torch/).

Every def of a ported .flex file is Python: this script executes it with
torch (gpu/ported.py), on random captured buffers, random scores and the
index tensors FlexAttention passes (int32 b, h, q_idx, kv_idx, broadcast over
the [B, H, Q, KV] grid), and writes per file NAME.json: the sizes, the
buffers, and for every attention block a sample of grid points with the
mask's value and the score_mod's input and output there. Half the points
are uniform over the grid, half within 64 of the diagonal. Non-finite
floats are written as the strings "inf", "-inf" and "nan". The Go test
TestPortedAgainstTorch (eval/ported_test.go) checks maskc's evaluator
against these files; torch on the CPU is enough.
"""
import argparse
import glob
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ported  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {"B": 2, "H": 4, "HKV": 4, "Q": 320, "KV": 320}
# FlexAttention passes int32 indices; torch before 2.0 (Debian's 1.13 on a
# CPU host) cannot index a tensor with them, so there they are int64, which
# gives the same values at these sizes.
INDEX = torch.int32 if int(torch.__version__.split(".")[0]) >= 2 else torch.int64
POINTS = 400


def num(x):
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def sample(gen):
    B, H, Q, KV = SIZES["B"], SIZES["H"], SIZES["Q"], SIZES["KV"]
    n = POINTS // 2
    b = torch.randint(0, B, (POINTS,), generator=gen)
    h = torch.randint(0, H, (POINTS,), generator=gen)
    q = torch.randint(0, Q, (POINTS,), generator=gen)
    kv = torch.randint(0, KV, (POINTS,), generator=gen)
    near = (q[n:] - torch.randint(-16, 64, (POINTS - n,), generator=gen)).clamp(0, KV - 1)
    kv[n:] = near
    return b, h, q, kv


def run_file(path, gen):
    ff = ported.FlexFile(open(path).read())
    bufs = {name: ported.draw_buffer(dt, dims, prop, SIZES, gen) for name, dt, dims, prop in ff.buffers}
    ns = ported.namespace(ff, bufs)
    B, H, Q, KV = SIZES["B"], SIZES["H"], SIZES["Q"], SIZES["KV"]
    bi = torch.arange(B, dtype=INDEX).view(B, 1, 1, 1)
    hi = torch.arange(H, dtype=INDEX).view(1, H, 1, 1)
    qi = torch.arange(Q, dtype=INDEX).view(1, 1, Q, 1)
    ki = torch.arange(KV, dtype=INDEX).view(1, 1, 1, KV)
    out = {"file": os.path.basename(path), "torch": torch.__version__, "sizes": SIZES, "buffers": {},
           "attentions": []}
    for (name, dt, dims, prop) in ff.buffers:
        t = bufs[name]
        data = t.flatten().tolist()
        out["buffers"][name] = {"dtype": dt, "shape": list(t.shape),
                                "data": [num(x) if dt.startswith("f") else int(x) for x in data]}
    for name, settings in ff.attentions:
        mask, score = ported.mods(ff, ns, settings)
        b, h, q, kv = sample(gen)
        rec = {"name": name, "points": torch.stack([b, h, q, kv], 1).tolist()}
        if mask is not None:
            try:
                m = torch.broadcast_to(mask(bi, hi, qi, ki), (B, H, Q, KV))
                rec["mask"] = [bool(x) for x in m[b, h, q, kv].tolist()]
            except (ValueError, TypeError, IndexError, RuntimeError):
                # A def that only runs as FlexAttention runs it, one (b, h,
                # q_idx, kv_idx) of 0-d tensors at a time under vmap (a loop
                # over modalities[b]'s rows): evaluated point by point.
                rec["mask"] = [bool(mask(*(torch.tensor(v, dtype=INDEX) for v in p)))
                               for p in zip(b.tolist(), h.tolist(), q.tolist(), kv.tolist())]
        if score is not None:
            s_in = torch.randn(B, H, Q, KV, generator=gen, dtype=torch.float32) * 3
            s_out = torch.broadcast_to(score(s_in, bi, hi, qi, ki), (B, H, Q, KV))
            rec["score_in"] = [num(x) for x in s_in[b, h, q, kv].tolist()]
            rec["score_out"] = [num(x) for x in s_out[b, h, q, kv].tolist()]
            rec["score_dtype"] = str(s_out.dtype).replace("torch.", "")
        out["attentions"].append(rec)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "testdata", "ported", "torch"))
    ap.add_argument("--seed", type=int, default=None, help="default: fresh from the clock")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    files = a.files or sorted(glob.glob(os.path.join(ROOT, "testdata", "ported", "*.flex")))
    seed = a.seed if a.seed is not None else int.from_bytes(os.urandom(4), "little")
    gen = torch.Generator().manual_seed(seed)
    os.makedirs(a.out, exist_ok=True)
    failed = 0
    for path in files:
        base = os.path.splitext(os.path.basename(path))[0]
        try:
            res = run_file(path, gen)
        except Exception as e:  # a def that is not valid torch is a finding: report it and go on
            print("FAIL %s: %r" % (base, e))
            failed += 1
            continue
        res["seed"] = seed
        with open(os.path.join(a.out, base + ".json"), "w") as f:
            json.dump(res, f, separators=(",", ":"))
            f.write("\n")
        print("ok   %s: %d attention block(s)" % (base, len(res["attentions"])))
    print("%d files, %d failed, seed %d, torch %s" % (len(files), failed, seed, torch.__version__))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
