#!/usr/bin/env python3
"""Checks maskc's score derivatives against torch.autograd in float64.

gpu/grad_cases.json (written by `go test ./codegen -run TestTorchGradCases
-update`) holds, for every rule score of grad/testdata/scores.flex and every
example score: the score as a PyTorch expression (codegen.TorchExpr), small
buffers, points that include the kinks (ties, clamp bounds, 0), and maskc's
float64 derivatives at each point (grad.Differentiate evaluated by
eval.BindGrad): d/d score and d/d buf[i] for each differentiable read.

For each point this script evaluates the expression with torch on float64
scalars (score and the float buffers requiring grad), calls backward, and
compares every gradient with maskc's: d/d score, and every element of every
float buffer (the elements maskc reports summed over its reads, all others
0). It counts bitwise-equal values (NaN equal to NaN) and reports the worst
relative difference; it fails on a difference above 1e-12 relative or on a
NaN/infinity that only one side has. CPU torch is enough:

    python3 gpu/grad_torch_check.py [gpu/grad_cases.json]
"""
import json
import math
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import harness  # noqa: E402  (gpu/harness.py: TorchExpr)

torch.set_default_dtype(torch.float64)  # torch.as_tensor(0.1) exact as in maskc


def num(s):
    return float(s)


def same_bits(a, b):
    if math.isnan(a) and math.isnan(b):
        return True
    return struct.pack("<d", a) == struct.pack("<d", b)


def rel_diff(a, b):
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return 0.0 if same_bits(a, b) or a == b else math.inf
    return abs(a - b) / max(1.0, abs(a), abs(b))


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "grad_cases.json")
    with open(path) as f:
        cases = json.load(f)["cases"]
    print(f"torch {torch.__version__}, {len(cases)} scores from {path}")
    total = exact = 0
    worst = 0.0
    failures = []
    for c in cases:
        for pt in c["points"]:
            env = {"torch": torch, **c["sizes"]}
            leaves = {}
            for name, buf in c["buffers"].items():
                data = [num(x) for x in buf["data"]]
                if buf["float"]:
                    t = torch.tensor(data, dtype=torch.float64).reshape(buf["dims"]).requires_grad_(True)
                    leaves[name] = t
                else:
                    t = torch.tensor([int(x) for x in data], dtype=torch.int64).reshape(buf["dims"])
                env[name] = t
            score = torch.tensor(num(pt["score"]), dtype=torch.float64, requires_grad=True)
            env["score"] = score
            for v in ("b", "h", "q", "kv"):
                env[v] = torch.tensor(pt[v], dtype=torch.int64)
            out = harness.TorchExpr(c["torch"], (), env)()  # maskc's printer's language, read without eval
            if not torch.is_tensor(out):
                out = torch.as_tensor(out)
            if out.requires_grad:
                out.backward()
            got = [("d/d score", score.grad.item() if score.grad is not None else 0.0, num(pt["dscore"]))]
            want_bufs = {}
            for rd in pt["reads"] or []:
                key = (rd["buffer"], tuple(rd["index"]))
                want_bufs[key] = want_bufs.get(key, 0.0) + num(rd["d"])
            for name, t in leaves.items():
                g = t.grad if t.grad is not None else torch.zeros_like(t)
                for idx in torch.cartesian_prod(*[torch.arange(n) for n in t.shape]).reshape(-1, t.dim()).tolist():
                    tg = g[tuple(idx)].item()
                    got.append((f"d/d {name}{idx}", tg, want_bufs.get((name, tuple(idx)), 0.0)))
            where = f"{c['name']} ({c['torch']}) at score={pt['score']} b={pt['b']} h={pt['h']} q={pt['q']} kv={pt['kv']}"
            for what, t_val, m_val in got:
                total += 1
                if same_bits(t_val, m_val) or t_val == m_val:
                    exact += 1
                    continue
                d = rel_diff(t_val, m_val)
                worst = max(worst, d)
                if d > 1e-12:
                    failures.append(f"{where}: {what}: torch {t_val!r}, maskc {m_val!r}")
    print(f"{total} gradient values compared: {exact} bitwise equal, worst relative difference of the rest {worst:.3g}")
    for f in failures[:40]:
        print("MISMATCH", f)
    if failures:
        print(f"FAIL: {len(failures)} mismatches")
        return 1
    print("OK: maskc's derivatives match torch.autograd in float64")
    return 0


if __name__ == "__main__":
    sys.exit(main())
