"""Runs the README's PyTorch training example as written, then checks that
it trained: one more step lowers the loss and every parameter got a finite
gradient.

    PYTHONPATH=/tmp/site python3 python/gpu_tests/readme_example.py

The example is the first ```python block after "## PyTorch" in README.md,
executed from the repository root (it loads examples/*.flex by relative path).
"""
import math
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def example():
    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    section = text[text.index("## PyTorch"):]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    if not m:
        raise SystemExit("README.md: no python block under ## PyTorch")
    return m.group(1)


def main():
    os.chdir(REPO)
    src = example()
    ns = {}
    exec(compile(src, "README.md", "exec"), ns)
    torch, proj, loss = ns["torch"], ns["proj"], ns["loss"]
    grads = [p.grad for p in proj.parameters()]
    ok = all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
    first = loss.item()
    again = "\n".join(line for line in src.splitlines() if line.startswith(("q, k, v =", "loss =")))
    exec(compile(again, "README.md (the loss again)", "exec"), ns)
    second = ns["loss"].item()
    ok = ok and math.isfinite(second) and second < first
    print("README example: loss %.6f -> %.6f after one AdamW step, grads finite: %s, attention via %s" % (
        first, second, ok, ns["attn"].choose(ns["q"], ns["k"], "bshd").kind))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
