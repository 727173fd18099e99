"""Runs the README's FlexAttention-API training example twice: as written
(`from maskc.torch import flex_attention, create_block_mask`) and with only
that import line replaced by torch's own. Checks that both train (one more
step lowers the loss; every gradient, the learned ALiBi slopes' included,
is finite) and that maskc's first loss, output and gradients agree with
torch's (relative error < 2e-2; if torch's own run raises, that is printed
and maskc's is judged alone). Prints PASS or FAIL last.

    PYTHONPATH=/tmp/site python3 python/gpu_tests/readme_flex_example.py

The example is the ```python block under "### FlexAttention's API" in
README.md. It is written to a file and run from there, since maskc reads
the mods' source.
"""
import importlib.util
import math
import os
import re
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MASKC_IMPORT = "from maskc.torch import flex_attention, create_block_mask"
TORCH_IMPORT = "from torch.nn.attention.flex_attention import flex_attention, create_block_mask"


def example():
    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    section = text[text.index("### FlexAttention's API"):]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    if not m:
        raise SystemExit("README.md: no python block under ### FlexAttention's API")
    return m.group(1)


def run(src, name, d):
    path = os.path.join(d, name + ".py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def main():
    src = example()
    lines = src.splitlines()
    imports = [i for i, line in enumerate(lines) if line.startswith(MASKC_IMPORT)]
    if len(imports) != 1:
        print("README example: want exactly one line starting %r, found %d" % (MASKC_IMPORT, len(imports)))
        print("FAIL")
        return 1
    swapped = list(lines)
    swapped[imports[0]] = TORCH_IMPORT
    torch_src = "\n".join(swapped) + "\n"
    changed = [i for i, (a, b) in enumerate(zip(lines, swapped)) if a != b]
    ok = changed == imports
    with tempfile.TemporaryDirectory() as d:
        ns = {}
        for name, text in (("readme_maskc", src), ("readme_torch", torch_src)):
            try:
                m = run(text, name, d)
            except Exception as e:
                if name == "readme_maskc":
                    raise
                print("%s: torch's own run failed (%s: %s); maskc's run is not compared" %
                      (name, type(e).__name__, str(e).splitlines()[0][:200] if str(e) else ""))
                continue
            import torch
            grads = [p.grad for p in m.proj.parameters()] + [m.slopes.grad]
            finite = all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
            first = m.loss.item()
            out1 = m.out.detach().clone()
            g1 = [g.detach().clone() for g in grads]
            q, k, v = m.proj(m.x).view(m.B, m.S, 3, m.H, m.D).permute(2, 0, 3, 1, 4)
            second = m.flex_attention(q, k, v, score_mod=m.alibi, block_mask=m.block_mask).float().square().mean().item()
            trained = finite and math.isfinite(second) and second < first
            print("%s: loss %.6f -> %.6f after one AdamW step, gradients finite: %s" % (name, first, second, finite))
            if name == "readme_maskc":
                ok = ok and trained
            ns[name] = (first, out1, g1)
    if "readme_torch" in ns:
        (lm, om, gm), (lt, ot, gt) = ns["readme_maskc"], ns["readme_torch"]
        errs = [abs(lm - lt) / abs(lt), rel(om, ot)] + [rel(a, b) for a, b in zip(gm, gt)]
        agree = all(e < 2e-2 for e in errs)
        print("maskc vs torch: loss %.2e, output %.2e, gradients %s" % (
            errs[0], errs[1], " ".join("%.2e" % e for e in errs[2:])))
        ok = ok and agree
    print("README FlexAttention example (only the import changed): %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
