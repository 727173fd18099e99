"""Realistic buffer contents for the tile-map corpus (testdata/tilemasks)
in gpu/check.py and gpu/bwd_check.py.

The harness draws random ints in [0, max(Q, KV)] for an int buffer; for a
block selection (`sel[h, q // 128 * 4 + j] == kv // 128`) nearly every such
value is past the keys, so the selected blocks would go untested. wrap(case)
gives a corpus kernel buffers.py's contents at the launch's H and lengths
(selections of earlier blocks, -1 padded; packed documents and image spans)
and then puts out-of-range block numbers into 1 selection entry in 8 (-7,
the number of key blocks, 2**31 - 1 for i32): they must select nothing
(SECURITY.md), which the float64 reference, reading the same buffer, holds
the kernel to. Other kernels are returned as they are.
"""
import importlib.util
import os

import torch

import harness  # gpu/harness.py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "testdata", "tilemasks")
_spec = importlib.util.spec_from_file_location("tilemask_buffers", os.path.join(CORPUS, "buffers.py"))
buffers_py = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(buffers_py)


def corpus_mask(case):
    """The corpus mask name of a generated case, or None."""
    flex = (getattr(case, "entry", None) or {}).get("flex", "")
    if os.path.basename(os.path.dirname(os.path.abspath(os.path.join(ROOT, flex)))) != "tilemasks":
        return None
    return os.path.basename(flex)[:-len(".flex")]


def wrap(case):
    """case with realistic corpus buffers (see the module doc)."""
    mask = corpus_mask(case)
    specs = sorted(case.entry.get("buffers") or [], key=lambda b: b["slot"])
    if mask is None or not specs:
        return case
    inner = case.make

    def make(B, H, HKV, Sq, Skv, dev, gen):
        bufs, mask_mod, score_mod = inner(B, H, HKV, Sq, Skv, dev, gen)
        sel = buffers_py.DECLARED.get(mask)
        vals = buffers_py.buffers(mask, H, Sq if sel else Skv)
        out = []
        for spec, t in zip(specs, bufs):
            v = vals.get(spec["name"])
            if v is None:
                out.append(t)
                continue
            x = torch.tensor(v, dtype=torch.int64)
            if sel and spec["name"] == sel[0]:
                g = torch.Generator().manual_seed(int(torch.randint(1 << 30, (1,), generator=gen)))
                bad = torch.randint(0, 8, x.shape, generator=g) == 0
                blocks = (Skv + sel[2] - 1) // sel[2]
                choice = torch.tensor([-7, blocks, 2 ** 31 - 1])[torch.randint(0, 3, x.shape, generator=g)]
                x = torch.where(bad, choice, x)
            if x.numel() != t.numel():
                raise ValueError("%s: buffers.py gives %d values for %s, the launch takes %d" % (
                    mask, x.numel(), spec["name"], t.numel()))
            out.append(x.to(t.dtype).reshape(t.shape).to(t.device))
        # The reference reads the buffers by name: rebuild it on the new ones.
        names = {s["name"]: b for s, b in zip(specs, out)}
        ns = {"B": B, "H": H, "HKV": HKV, "Q": Sq, "KV": Skv, "torch": torch}
        ns.update(names)
        if case.entry.get("mask_torch"):
            mask_mod = harness.TorchExpr(case.entry["mask_torch"], ("b", "h", "q", "kv"), ns)
        if case.entry.get("score_torch"):
            score_mod = harness.TorchExpr(case.entry["score_torch"], ("score", "b", "h", "q", "kv"), ns)
        return out, mask_mod, score_mod

    case.make = make
    return case
