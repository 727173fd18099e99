"""Runs python/gpu_tests/check_dropin.py's case loop on the CPU under real
torch (Debian's 1.13 is enough), with maskc's and torch's flex_attention
both replaced by the script's own float64 reference cast to bf16, or, with
--bad, maskc's replaced by one with a wrong default scale. Prints one JSON
object: {case: whether every check passed}. With --readme, runs
readme_flex_example.py the same way instead (the README's block on the CPU
at a small size; its exit status). test_flex.py runs it: the GPU scripts'
reference, tolerances and bookkeeping are exercised here."""
import json
import os
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "gpu_tests"), os.path.join(HERE, "..")]
import check_dropin as cd  # noqa: E402
import dropin_cases as dc  # noqa: E402


class Reference:
    """create_block_mask and flex_attention computed by cd.reference."""

    def __init__(self, bad=False):
        self.bad = bad

    def create_block_mask(self, mask_mod, B, H, Q, KV, device=None, **kw):
        return types.SimpleNamespace(mask_mod=mask_mod)

    def flex_attention(self, q, k, v, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                       return_lse=False):
        c = dc.Case(mask_mod=block_mask.mask_mod if block_mask else None, score_mod=score_mod)
        if self.bad and scale is None:
            scale = 0.9 / q.shape[-1] ** 0.5
        o, lse = cd.reference(c, q.double(), k.double(), v.double(), scale)
        return (o.to(q.dtype), lse.float()) if return_lse else o.to(q.dtype)


def readme():
    import readme_flex_example as r
    example = r.example
    r.example = lambda: example().replace('"cuda"', '"cpu"').replace(
        "B, S, H, D = 2, 2048, 8, 64", "B, S, H, D = 1, 96, 2, 16").replace("// 700", "// 40")
    ref = Reference()
    for name in ("maskc.torch", "torch.nn.attention.flex_attention"):
        m = types.ModuleType(name)
        m.flex_attention, m.create_block_mask = ref.flex_attention, ref.create_block_mask
        sys.modules[name] = m
    return r.main()


def main():
    if "--readme" in sys.argv:
        sys.exit(readme())
    cd.DEVICE, cd.INDEX_DTYPE, dc.COMPILED = "cpu", torch.int64, ()
    cd.mt, cd.tfa = Reference(bad="--bad" in sys.argv), Reference()
    g = torch.Generator().manual_seed(3)
    out = {}
    for name in dc.CASES:
        if name in dc.TORCH_ONLY:  # torch 1.13 has no FlexAttention
            continue
        res, notes = cd.run_case(name, 2, 4, 48, 16, g)
        out[name] = all(r[2] for r in res.values()) and not notes
    print(json.dumps(out))


if __name__ == "__main__":
    main()
