"""maskc.torch's dispatch and argument handling, on a stand-in torch
(fake_torch): which kernel a call reaches, with which arguments, and what
raises before anything is launched."""
import os

import pytest

import fake_torch as ft
from conftest import EXAMPLES
from maskc.diagnostics import MaskcError


@pytest.fixture
def mt(monkeypatch, maskc_bin, cache_dir):
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    ft.install(monkeypatch)
    import maskc.torch as mt
    return mt


def bshd(B, S, H, D=128, dtype=ft.bfloat16, **kw):
    return ft.Tensor((B, S, H, D), dtype, **kw)


def test_causal_equal_lengths_runs_sdpa_cudnn_first(mt):
    attn = mt.load(os.path.join(EXAMPLES, "causal.flex")).attention("decoder")
    q, k = bshd(2, 256, 8), bshd(2, 256, 2)
    out = attn(q, k, k)
    assert out.shape == q.shape
    (_, backends, prio), (_, qs, ks, causal, scale, gqa) = ft.rec.calls
    assert backends[0] == ft.SDPBackend.CUDNN_ATTENTION and prio
    # bshd is handed to SDPA as [B, H, S, D] views.
    assert (qs, ks, causal, scale, gqa) == ((2, 8, 256, 128), (2, 2, 256, 128), True, None, True)


def test_full_any_lengths_runs_sdpa_not_causal(mt):
    attn = mt.load(os.path.join(EXAMPLES, "full.flex")).attention("encoder")
    attn(bshd(1, 100, 4, 64), bshd(1, 300, 4, 64), bshd(1, 300, 4, 64))
    assert ft.rec.calls[-1][3:] == (False, None, False)


@pytest.mark.parametrize("call, msg", [
    (lambda a: a(ft.Tensor((2, 256, 1024)), bshd(2, 256, 2), bshd(2, 256, 2)), "q has 3 dimensions"),
    (lambda a: a(bshd(2, 256, 8), bshd(2, 256, 2), bshd(2, 256, 2), buffers={"doc": ft.Tensor((256,))}),
     "does not read doc"),
    (lambda a: a(bshd(2, 256, 8, device="cpu"), bshd(2, 256, 2), bshd(2, 256, 2)), "q is on cpu"),
    (lambda a: a(bshd(2, 256, 8, dtype=ft.float16), bshd(2, 256, 2), bshd(2, 256, 2)), "q is f16"),
    (lambda a: a(bshd(2, 256, 8), bshd(2, 256, 2), bshd(2, 256, 2), layout="sbhd"), "layout='sbhd'"),
    (lambda a: a(bshd(2, 256, 8), bshd(2, 256, 2), bshd(2, 256, 2), backend="turbo"), "primus_turbo"),
])
def test_bad_calls_raise_before_sdpa(mt, call, msg):
    attn = mt.load(os.path.join(EXAMPLES, "causal.flex")).attention("decoder")
    with pytest.raises(MaskcError, match=msg):
        call(attn)
    assert not [c for c in ft.rec.calls if c[0] == "sdpa"]


def test_load_errors_carry_positions(mt, tmp_path):
    p = tmp_path / "bad.flex"
    p.write_text("mask m(b, h, q, kv) = q >= kvv\nattention a {\n    mask = m\n}\n")
    with pytest.raises(MaskcError) as ei:
        mt.load(str(p))
    assert ei.value.diagnostics[0].code == "E020"


def test_unknown_block_names_the_blocks(mt):
    prog = mt.load(os.path.join(EXAMPLES, "gpt_oss.flex"), defines={"WINDOW": 64})
    assert prog.names == ["layer_0", "layer_1", "layer_2", "layer_3"]
    with pytest.raises(MaskcError, match="the file declares: layer_0, layer_1"):
        prog.attention("layer_9")


def test_ops_are_registered_with_fake_and_autograd(mt, monkeypatch):
    import types
    from maskc import launcher
    fwd, bwd = ft.ops.maskc.attn_fwd, ft.ops.maskc.attn_bwd
    assert fwd.fake is not None and fwd.backward is not None and bwd.fake is not None
    # the fake's tile flags have as many elements as the launcher's flag_count says
    counts = []
    stub = types.SimpleNamespace(flag_count=lambda q, k, layout: counts.append((q.shape, k.shape, layout)) or 77)
    monkeypatch.setitem(launcher._LAUNCHERS, "key", stub)
    q, k = bshd(2, 100, 8), bshd(2, 300, 2)
    out, lse, flags = fwd.fake(q, k, k, [], None, "key", "bshd", False, None, None)
    assert out.shape == q.shape and out.is_contiguous() and lse.shape == (2, 8, 100) and lse.dtype is ft.float32
    assert flags.shape == (77,) and flags.dtype is ft.uint8 and counts == [(q.shape, k.shape, "bshd")]
    q2 = ft.Tensor((2, 8, 100, 128))
    assert fwd.fake(q2, k, k, [], None, "key", "bhsd", False, None, None)[1].shape == (2, 8, 100)
    # the backward's fake gives each buffer, of any rank, a gradient of its shape
    sel, bias = ft.Tensor((8, 4, 2), ft.int32), ft.Tensor((2, 8, 3, 5), ft.float32)
    grads = bwd.fake(q, None, q, k, k, q, ft.Tensor((2, 8, 100), ft.float32), [sel, bias], None, "key", "bshd", False, 0)[3]
    assert [g.shape for g in grads] == [(8, 4, 2), (2, 8, 3, 5)]


@pytest.fixture
def turbo(monkeypatch):
    """A stand-in primus_turbo.pytorch.ops recording its calls."""
    import sys
    import types
    calls = []

    def flash_attn_func(q, k, v, **kw):
        calls.append((q.shape, k.shape, kw))
        return ft.Tensor(q.shape, q.dtype, q.device)
    def flash_attn_varlen_func(q, k, v, cu_q, cu_k, max_q, max_k, **kw):
        calls.append((q.shape, k.shape, dict(kw, cu_seqlens=cu_q, max_seqlen=max_q)))
        return ft.Tensor(q.shape, q.dtype, q.device)
    ops = types.ModuleType("primus_turbo.pytorch.ops")
    ops.flash_attn_func = flash_attn_func
    ops.flash_attn_varlen_func = flash_attn_varlen_func
    pt = types.ModuleType("primus_turbo.pytorch")
    pt.ops = ops
    top = types.ModuleType("primus_turbo")
    top.pytorch = pt
    for name, m in (("primus_turbo", top), ("primus_turbo.pytorch", pt), ("primus_turbo.pytorch.ops", ops)):
        monkeypatch.setitem(sys.modules, name, m)
    return calls


def test_turbo_gets_the_plans_exact_kwargs(mt, turbo):
    attn = mt.load(os.path.join(EXAMPLES, "alibi.flex")).attention("alibi_layer")
    slopes = ft.Tensor((8,), ft.float32)
    q = ft.Tensor((2, 8, 256, 128))  # bhsd: handed to Turbo as bshd views
    attn(q, q, q, layout="bhsd", buffers={"slopes": slopes}, deterministic=True)
    ((qs, ks, kw),) = turbo
    assert qs == (2, 256, 8, 128)
    assert kw == {"causal": True, "window_size": (-1, -1), "alibi_slopes": slopes, "deterministic": True}


def test_turbo_sink_is_cast_to_float32(mt, turbo):
    attn = mt.load(os.path.join(EXAMPLES, "gpt_oss.flex")).attention("layer_0")
    sinks = ft.Tensor((4,), ft.bfloat16)
    q = ft.Tensor((1, 64, 4, 64))
    attn(q, q, q, buffers={"sinks": sinks})
    ((_, _, kw),) = turbo
    assert kw["sink"].dtype is ft.float32 and kw["window_size"] == (127, 0) and kw["causal"] is True


def test_turbo_precondition_failure_is_not_silent(mt, turbo):
    attn = mt.load(os.path.join(EXAMPLES, "alibi.flex")).attention("alibi_layer")
    q, k = ft.Tensor((1, 100, 8, 128)), ft.Tensor((1, 300, 8, 128))
    with pytest.raises(MaskcError, match="Sq=100 != Skv=300"):
        attn(q, k, k, buffers={"slopes": ft.Tensor((8,), ft.float32)}, backend="turbo")
    attn._generated = lambda *args: "generated ran"  # the launcher itself is tests_after_issue10's business
    with pytest.warns(UserWarning, match="alibi_layer runs maskc's generated kernel: .* Sq=100 != Skv=300"):
        assert attn(q, k, k, buffers={"slopes": ft.Tensor((8,), ft.float32)}) == "generated ran"
    assert not turbo


def test_turbo_varlen_takes_contiguous_documents_only(mt, turbo, monkeypatch):
    """Ids that are contiguous documents go to the plan's varlen call; ids
    that are not (an id recurs after another) would make it compute another
    mask: the call runs the generated kernel, with one warning naming the
    block, and never reaches Turbo."""
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    q, doc = ft.Tensor((1, 256, 8, 128)), ft.Tensor((256,), ft.int32)
    cu = ft.Tensor((3,), ft.int32)
    answer = [(cu, 200, True)]
    from maskc import dispatch
    monkeypatch.setattr(dispatch, "cu_seqlens_from_segments", lambda d, B, S: answer[0])
    attn._generated = lambda *args: "generated ran"
    attn(q, q, q, buffers={"doc": doc})
    ((_, _, kw),) = turbo
    assert kw["cu_seqlens"] is cu and kw["max_seqlen"] == 200 and kw["causal"] is True
    answer[0] = (cu, 200, False)
    with pytest.warns(UserWarning, match="block packed_layer: the ids in buffer doc are not contiguous documents"):
        assert attn(q, q, q, buffers={"doc": doc}) == "generated ran"
    assert len(turbo) == 1
    attn._generated = None  # no generated kernel: refused before anything runs
    with pytest.raises(MaskcError, match="no generated kernel for the block"):
        attn(q, q, q, buffers={"doc": doc})
    assert len(turbo) == 1


def test_an_older_cache_entry_is_refused_not_misread(mt, tmp_path):
    """A compile output of an older maskc (manifest version 5, plan version 1
    with the kernel restated as an object) is refused when loaded, naming
    the versions, never read with this package's meaning of its fields."""
    import json
    import shutil
    from maskc import cache
    e = cache.compile_flex(os.path.join(EXAMPLES, "prefix_lm.flex"))
    old = str(tmp_path / "old")
    shutil.copytree(e.directory, old)
    for name, version in (("manifest.json", 5), ("plan.json", 1)):
        with open(os.path.join(old, name)) as f:
            doc = json.load(f)
        doc["version"] = version
        with open(os.path.join(old, name), "w") as f:
            json.dump(doc, f)
    with pytest.raises(MaskcError, match="manifest.json has version 5; this package reads version 7"):
        mt.Program(cache.Entry(old, "old", {}))
    os.remove(os.path.join(old, "manifest.json"))  # the plan alone: refused by its own version
    with pytest.raises(MaskcError, match="schema version 1"):
        mt.Program(cache.Entry(old, "old", {}))
