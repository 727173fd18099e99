"""gpu/harness.py: the manifest's mask_torch / score_torch read without eval
(TorchExpr gives what Python's eval of the same text gives, and refuses
anything else), and kernels launched through the package's launcher (the
same launch sequence maskc.torch runs for the same call)."""
import glob
import json
import os
import struct
import sys

import pytest
import torch

import harness
from conftest import EXAMPLES, REPO
from maskc import cache
from maskc.diagnostics import MaskcError

FLEX = sorted(glob.glob(os.path.join(EXAMPLES, "*.flex")) +
              glob.glob(os.path.join(REPO, "codegen", "testdata", "golden", "*.flex")) +
              # N-D buffers (issue 27): 3-D and 4-D reads in masks and scores
              [os.path.join(REPO, "gpu", "bwd_cases", "nd_buffers.flex"),
               os.path.join(REPO, "testdata", "tilemasks", "moba_3d.flex")])


def generated_entries(maskc_bin):
    """(name, manifest kernel entry) of every generated kernel maskc compile
    writes for FLEX (files it refuses have none)."""
    out = []
    for path in FLEX:
        try:
            e = cache.compile_flex(path, binary=maskc_bin)
        except MaskcError:
            continue
        if not e.has("manifest.json"):
            continue
        _, kernels = harness.load_manifest(e.directory)
        out += [("%s:%s" % (os.path.basename(path), k["name"]), k) for k in kernels]
    return out


def outcome(fn):
    """fn()'s value, or the type of what it raised."""
    try:
        return fn()
    except Exception as e:  # the reference refuses what eval refuses, the same way
        return type(e)


def same(a, b):
    if isinstance(a, type) or isinstance(b, type):
        return a is b
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    return a.shape == b.shape and a.dtype == b.dtype and bool(((a == b) | (a.isnan() & b.isnan())).all())


def test_torch_expr_equals_eval_on_every_generated_kernel(maskc_bin, cache_dir):
    entries = generated_entries(maskc_bin)
    assert len(entries) >= 20, [n for n, _ in entries]
    B, H, HKV, Q, KV = 2, 4, 2, 48, 40
    b = torch.arange(B)[:, None, None, None]
    h = torch.arange(H)[None, :, None, None]
    q = torch.arange(Q)[None, None, :, None]
    kv = torch.arange(KV)[None, None, None, :]
    score = torch.randn(B, H, Q, KV, generator=torch.Generator().manual_seed(5))
    checked = 0
    for name, entry in entries:
        case = harness.GeneratedCase(entry)
        bufs, mask, score_mod = case.build(B, H, HKV, Q, KV, "cpu", torch.Generator().manual_seed(1))
        ns = dict(B=B, H=H, HKV=HKV, Q=Q, KV=KV, torch=torch)
        ns.update({s["name"]: t for s, t in zip(sorted(entry.get("buffers") or [], key=lambda s: s["slot"]), bufs)})
        if entry.get("mask_torch"):
            want = outcome(lambda: eval("lambda b, h, q, kv: " + entry["mask_torch"], dict(ns))(b, h, q, kv))
            assert same(outcome(lambda: mask(b, h, q, kv)), want), (name, entry["mask_torch"])
            checked += 1
        if entry.get("score_torch"):
            want = outcome(lambda: eval("lambda score, b, h, q, kv: " + entry["score_torch"], dict(ns))(
                score, b, h, q, kv))
            assert same(outcome(lambda: score_mod(score, b, h, q, kv)), want), (name, entry["score_torch"])
            checked += 1
    assert checked >= 20, checked


@pytest.mark.parametrize("text, params, want", [
    ("(q >= kv) & (kv > q - W)", ("q", "kv"), [[True, False], [True, True]]),
    ("torch.where(q != 0, kv, q) if W > 1 else q", ("q", "kv"), [[0, 0], [0, 1]]),
    ("0 <= q < kv", ("q", "kv"), None),  # chained as Python chains it (bool of a tensor raises: tensors never chain)
    ("min(W, 3) + float('inf') * 0 + torch.div(q, 2, rounding_mode='floor')[::-1].sum()", ("q",), None),
])
def test_torch_expr_reads_what_eval_reads(text, params, want):
    ns = {"W": 2, "torch": torch}
    args = {"q": torch.arange(2)[:, None], "kv": torch.arange(2)[None, :]}
    got = outcome(lambda: harness.TorchExpr(text, params, ns)(*[args[p] for p in params]))
    ref = outcome(lambda: eval("lambda %s: %s" % (", ".join(params), text), dict(ns))(*[args[p] for p in params]))
    assert same(got, ref)
    if want is not None:
        assert torch.equal(got, torch.tensor(want))


def test_torch_expr_has_its_parameters_as_signature():
    # FlexAttention (torch 2.11) counts a mod's positional parameters with
    # inspect.signature: 4 for a mask_mod, 5 for a score_mod, never *args.
    import inspect
    mask = harness.TorchExpr("q >= kv", ("b", "h", "q", "kv"), {"torch": torch})
    score = harness.TorchExpr("score + q - kv", ("score", "b", "h", "q", "kv"), {"torch": torch})
    assert list(inspect.signature(mask).parameters) == ["b", "h", "q", "kv"]
    assert list(inspect.signature(score).parameters) == ["score", "b", "h", "q", "kv"]
    assert all(p.default is inspect.Parameter.empty for p in inspect.signature(score).parameters.values())
    assert bool(mask(0, 0, torch.tensor(3), torch.tensor(2)))


@pytest.mark.parametrize("text, what", [
    ("__import__('os').system('true')", "name __import__"),
    ("q.__class__", "attribute __class__"),
    ("torch._C", "attribute _C"),
    ("(lambda: 1)()", "Lambda"),
    ("[x for x in q]", "ListComp"),
    ("open('/etc/passwd')", "name open"),
    ("q @ q", "MatMult"),
    ("f(**q)", "\\*\\*"),
    ("q +", "invalid syntax"),
])
def test_torch_expr_refuses_what_is_not_a_torch_expr(text, what):
    with pytest.raises(ValueError, match=what):
        harness.TorchExpr(text, ("q",), {"torch": torch, "f": print})


# ---------------------------------------------------------------- launches, on the stand-in torch and driver

ODD = """buffer tab: i32[B, KV]
mask odd(b, h, q, kv) = (q * kv + h + tab[b, kv]) % 7 != 3
attention odd_layer {
    mask = odd
    layout = bhsd
    dtype = fp16
    head_dim = 128
}
"""


@pytest.fixture
def fake(monkeypatch, maskc_bin, cache_dir):
    """maskc.torch and a fresh gpu/harness.py on python/tests' stand-in torch,
    both on one recording driver."""
    import fake_torch as ft
    from test_torch_generated import FakeDriver, FakeNVRTC
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    ft.install(monkeypatch)
    for name in ("harness", "buffers"):
        monkeypatch.delitem(sys.modules, name)
    import maskc.torch as mt
    from maskc import launcher

    class Driver(FakeDriver):
        def attribute(self, f, attr):
            return 0

    drv = Driver()
    monkeypatch.setattr(launcher, "_libs", lambda: (drv, FakeNVRTC()))
    import harness as fresh
    return ft, mt, fresh, drv


def launch_facts(drv):
    """(function, grid, block, smem, stream) of every launch so far."""
    return [c[1:6] for c in drv.calls if c[0] == "launch"]


def qkv_args(drv):
    """The Q, K, V addresses the last launch (the forward) passes."""
    return [struct.unpack("<Q", a)[0] for a in [c for c in drv.calls if c[0] == "launch"][-1][6][:3]]


@pytest.mark.parametrize("flex, block, bufname, dtype", [
    (os.path.join(EXAMPLES, "document_causal.flex"), "packed_layer", "doc", "bf16"),
    (None, "odd_layer", "tab", "f16"),
])
def test_harness_launches_what_the_package_launches(fake, tmp_path, flex, block, bufname, dtype):
    ft, mt, h, drv = fake
    if flex is None:
        flex = str(tmp_path / "odd.flex")
        open(flex, "w").write(ODD)
    attn = mt.load(flex).attention(block)
    B, H, HKV, S, D = 2, 8, 2, 1000, 128
    tdt = {"bf16": ft.bfloat16, "f16": ft.float16}[dtype]
    q, k, v = ft.Tensor((B, H, S, D), tdt), ft.Tensor((B, HKV, S, D), tdt), ft.Tensor((B, HKV, S, D), tdt)
    buf = ft.Tensor((S,) if bufname == "doc" else (B, S), ft.int32)
    attn(q, k, v, layout="bhsd", buffers={bufname: buf})
    package, package_qkv = launch_facts(drv), qkv_args(drv)
    man = json.load(open(os.path.join(attn.program.entry.directory, "manifest.json")))
    entry = next(e for e in man["kernels"] if e["name"] == block)
    abi = h.ABI(man["abi"])
    kern = h.Kernel("", entry, abi, block, compiled=(b"CUBIN", ""), platform="nvidia-sm90a")
    o, lse = ft.Tensor((B, H, S, D), tdt), ft.Tensor((B, H, S), ft.float32)
    run = kern.prepare(q, k, v, o, lse, attn.generated().spec.scale, [buf])
    del drv.calls[:]
    run()
    assert launch_facts(drv) == package and len(package) == 2
    assert qkv_args(drv) == package_qkv == [q.data_ptr(), k.data_ptr(), v.data_ptr()]
    if entry.get("flags_entry"):
        del drv.calls[:]
        run(prepass=False)
        assert launch_facts(drv) == package[1:]


def test_given_case_builds_buffers_mask_and_score_from_a_manifest_entry():
    """bench_ext.py's and bwd_bench.py's cases: the buffers at the given contents in slot order,
    the mask and score the manifest's torch expressions compute over them."""
    entry = {
        "buffers": [{"name": "doc", "slot": 1, "dtype": "i32"}, {"name": "bias", "slot": 0, "dtype": "f32"}],
        "mask_torch": "(doc[b, q] == doc[b, kv]) & (kv <= q)",
        "score_torch": "score + bias[h]",
    }
    given = {"doc": {"data": [0, 0, 1, 1, 0, 1, 1, 1], "dims": [2, 4]}, "bias": {"data": [0.5, -1.0], "dims": [2]}}
    bufs, mask, score = harness.given_case(entry, given, "cpu", 2, 2, 4)
    assert [b.dtype for b in bufs] == [torch.float32, torch.int32]
    assert bufs[1].shape == (2, 4) and bufs[0].tolist() == [0.5, -1.0]
    q, kv = torch.tensor([2, 3, 3]), torch.tensor([1, 2, 0])
    b = torch.tensor([0, 0, 1])
    assert mask(b, 0, q, kv).tolist() == [False, True, False]
    assert float(score(torch.tensor(1.0), 0, 1, 3, 2)) == 0.0  # 1.0 + bias[1]
    _, none_mask, none_score = harness.given_case({"buffers": []}, {}, "cpu", 1, 1, 4)
    assert none_mask is None and none_score is None
