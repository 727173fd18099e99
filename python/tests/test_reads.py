"""Issue 33: a buffer read that can fall outside its extents at a call's
sizes is refused before anything is launched, with the .flex read's
file:line:col, its index range at these sizes and the declared extent; the
same blocks at sizes that fit launch as before. The blocks are
testdata/reads/issue33.flex, the bounds come from the manifest maskc
compile writes (checks.check_reads evaluates them: structured data, no
eval of strings), and the expected messages are the Go runtime's
(compiler/reads_test.go) word for word."""
import os

import pytest

import fake_torch as ft
from conftest import REPO
from maskc import checks
from maskc.cp import Frame
from maskc.diagnostics import MaskcError
from test_torch_generated import FakeDriver, FakeNVRTC, launches

FLEX = os.path.join(REPO, "testdata", "reads", "issue33.flex")


@pytest.fixture
def env(monkeypatch, maskc_bin, cache_dir):
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    ft.install(monkeypatch)
    import maskc.torch as mt
    from maskc import launcher
    drv, nv = FakeDriver(), FakeNVRTC()
    monkeypatch.setattr(launcher, "_libs", lambda: (drv, nv))
    return mt, drv, nv


def buffers_for(block, B, H, S):
    return {
        "rel_layer": {"rel": ft.Tensor((8,), ft.float32)},
        "sandwich_layer": {"sandwich": ft.Tensor((16384,), ft.float32)},
        "t5_layer": {"t5": ft.Tensor((H, 32), ft.float32)},
        "t5_small_layer": {"t5_small": ft.Tensor((H, 16), ft.float32)},
        "prefix_layer": {"prefix_len": ft.Tensor((4,), ft.int32)},
        "index_layer": {"idx": ft.Tensor((S,), ft.int32), "tab": ft.Tensor((16,), ft.float32)},
    }[block]


CASES = [
    ("rel_layer", 1, 2, 5, None),
    ("rel_layer", 1, 2, 6, "issue33.flex:13:46: rel[q - kv + 3] reads rel outside its extents: index 3..8 at B=1 H=2 "
                           "HKV=2 Q=6 KV=6, but rel is declared [8] = 8 there (valid 0..7)"),
    ("sandwich_layer", 1, 1, 8192, None),
    ("sandwich_layer", 1, 1, 16384, "sandwich[q - kv + 8191] reads sandwich outside its extents: index -8192..24574 at "
                                    "B=1 H=1 HKV=1 Q=16384 KV=16384, but sandwich is declared [16384]"),
    ("t5_layer", 1, 2, 300, None),
    ("t5_small_layer", 1, 2, 300, "t5_small[h, relative_buckets] reads t5_small outside its extents: index in dimension "
                                  "1 0..31 at B=1 H=2 HKV=2 Q=300 KV=300, but t5_small is declared [H, 16] = 16 there"),
    ("prefix_layer", 4, 1, 64, None),
    ("prefix_layer", 5, 1, 64, "prefix_len[b] reads prefix_len outside its extents: index 0..4 at B=5"),
    ("index_layer", 1, 1, 64, None),  # tab[idx[kv]]: value-dependent, flagged by the kernel (status()), not refused
]


@pytest.mark.parametrize("block, B, H, S, want", CASES)
def test_reads_refused_before_launch(env, block, B, H, S, want):
    mt, drv, nv = env
    attn = mt.load(FLEX).attention(block)
    q = ft.Tensor((B, S, H, 128))
    bufs = buffers_for(block, B, H, S)
    if want is None:
        attn(q, q, q, buffers=bufs, backend="generated")
        assert len(launches(drv)) >= 1
        return
    with pytest.raises(MaskcError) as e:
        attn(q, q, q, buffers=bufs, backend="generated")
    assert want in str(e.value)
    assert not launches(drv)


def test_frame_slices(env):
    """A context-parallel slice is checked at its own rows and keys (global
    positions): rel[q - kv + 3] of rel[8] under causal reads only q - kv in
    the slice's band."""
    mt, drv, nv = env
    attn = mt.load(FLEX).attention("rel_layer")
    q = ft.Tensor((1, 4, 1, 128))
    rel = {"rel": ft.Tensor((8,), ft.float32)}
    attn(q, q, q, buffers=rel, frame=Frame(q_offset=0, kv_offset=0, q_total=4096, kv_total=4096))
    attn(q, q, q, buffers=rel, frame=Frame(q_offset=0, kv_offset=8, q_total=4096, kv_total=4096))  # above the diagonal
    assert len(launches(drv)) == 2
    with pytest.raises(MaskcError, match=r"index 4\.\.10 at B=1 H=1 HKV=1 Q=4096 KV=4096 \(rows 4\.\.7, keys 0\.\.3, "
                                         r"heads 0\.\.0\)"):
        attn(q, q, q, buffers=rel, frame=Frame(q_offset=4, kv_offset=0, q_total=4096, kv_total=4096))
    assert len(launches(drv)) == 2


def test_backward_is_checked_too(env):
    mt, drv, nv = env
    gen = mt.load(FLEX).attention("rel_layer").generated()
    q = ft.Tensor((1, 6, 1, 128))
    lse = ft.Tensor((1, 1, 6), ft.float32)
    with pytest.raises(MaskcError, match="rel outside its extents"):
        gen.backward(q, None, q, q, q, q, lse, [ft.Tensor((8,), ft.float32)], None, "bshd", False)
    assert not launches(drv)


@pytest.mark.parametrize("bound, want", [
    ({"op": "const", "value": -3}, -3),
    ({"op": "add", "args": [{"op": "sym", "sym": "Q"}, {"op": "const", "value": 2}]}, 12),
    ({"op": "mul", "args": [{"op": "const", "value": -1}, {"op": "sym", "sym": "KV"}]}, -7),
    ({"op": "max", "args": [{"op": "sym", "sym": "q0"}, {"op": "const", "value": 4}, {"op": "sym", "sym": "B"}]}, 4),
    ({"op": "min", "args": [{"op": "sym", "sym": "Q"}, {"op": "sym", "sym": "KV"}]}, 7),
    ({"op": "floordiv", "args": [{"op": "const", "value": -7}, {"op": "const", "value": 2}]}, -4),
])
def test_eval_bound(bound, want):
    env = {"B": 2, "H": 1, "HKV": 1, "Q": 10, "KV": 7, "q0": 0, "kv0": 0, "h0": 0, "Sq": 10, "Skv": 7, "Sh": 1}
    assert checks.eval_bound(bound, env) == want


def test_malformed_reads_fail_when_the_manifest_is_read():
    from maskc import abi
    with pytest.raises(MaskcError, match="cannot evaluate"):
        abi._check_read({"buffer": "t", "slot": 0, "at": "x:1:1", "text": "t[q]", "in": "mask", "dims": ["8"],
                         "index": [{"lo": {"op": "pow", "args": []}, "hi": None}]}, "k", 1)
