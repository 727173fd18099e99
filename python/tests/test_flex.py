"""maskc.torch.flex_attention / create_block_mask on the user's own Python
mods (maskc.flex): the .flex text read from source and closures, checked by
the real maskc binary; the call reaching the generated kernel with the
captured tensors; the memo; the errors; fallback="torch"; on the stand-in
torch and driver."""
import json
import os
import subprocess
import sys
import types
import warnings

import pytest

import fake_torch as ft
from maskc.diagnostics import MaskcError
from test_torch_generated import FakeDriver, FakeNVRTC, launches, ptr

SIZES = {"B": 2, "H": 8, "Q": 256, "KV": 256}
MODS_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dropin_mods.py")


@pytest.fixture
def env(monkeypatch, maskc_bin, cache_dir):
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    ft.install(monkeypatch)
    import maskc.torch as mt
    from maskc import launcher
    from maskc import flex
    monkeypatch.setattr(flex, "_resolved", {})
    monkeypatch.setattr(flex, "_programs", {})
    drv, nv = FakeDriver(), FakeNVRTC()
    monkeypatch.setattr(launcher, "_libs", lambda: (drv, nv))
    import dropin_mods
    return types.SimpleNamespace(mt=mt, flex=flex, drv=drv, nv=nv, dm=dropin_mods, bin=maskc_bin)


def check_text(env, tmp_path, text):
    """maskc check's exit code and output on an emitted text."""
    p = tmp_path / "emitted.flex"
    p.write_text(text)
    r = subprocess.run([env.bin, "check", str(p)], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def doc_ids(n=256):
    return ft.Tensor((n,), ft.int32)


# Each case: (mask_mod, score_mod) built from dropin_mods, lines the emitted text must hold.
CASES = {
    "causal": (lambda dm: (dm.causal_mask, None), ["def causal_mask(b, h, q_idx, kv_idx):", "mask = causal_mask"]),
    "sliding_window_factory": (lambda dm: (dm.generate_sliding_window(128), None),
                               ["param window_size = 128", "def sliding_window_128(b, h, q_idx, kv_idx):",
                                "    return q_idx - kv_idx <= window_size", "mask = sliding_window_128"]),
    "document_captured_tensor": (
        lambda dm: (dm.generate_doc_mask_mod(dm.causal_mask, doc_ids()), None),
        ["buffer document_id: i32[KV]", "    inner_mask = causal_mask(b, h, q_idx, kv_idx)",
         "mask = doc_mask_wrapper"]),
    "prefix_lm_or_masks": (lambda dm: (dm.mt.or_masks(dm.generate_prefix_lm_mask(16), dm.causal_mask), None),
                           ["param prefix_length = 16", "mask = or_masks(prefix_mask, causal_mask)"]),
    "alibi_captured_slopes": (lambda dm: (dm.causal_mask, dm.generate_alibi_bias(ft.Tensor((8,), ft.float32))),
                              ["buffer slopes: f32[H]", "score = alibi_mod"]),
    "softcap_torch_alias": (lambda dm: (None, dm.generate_tanh_softcap(20.0)),
                            ["param soft_cap = 20.0", "    return soft_cap * torch.tanh(score / soft_cap)"]),
    "and_masks_nested": (
        lambda dm: (dm.mt.and_masks(dm.causal_mask, dm.generate_sliding_window(64),
                                    dm.mt.or_masks(dm.generate_prefix_lm_mask(8), dm.causal_mask)), None),
        ["mask = and_masks(causal_mask, sliding_window_64, or_masks(prefix_mask, causal_mask))"]),
    "lambda": (lambda dm: (dm.LAMBDA_CAUSAL, dm.relative_positional),
               ["def lambda_mod(b, h, q, kv):", "    return (q >= kv)", "score = relative_positional"]),
    "checkerboard_where": (lambda dm: (None, dm.checkerboard), ["score = checkerboard"]),
    "log_distance_math": (lambda dm: (dm.causal_mask, dm.log_distance),
                          ["    return score - math.log(2.0) * torch.log(1 + (q_idx - kv_idx).abs().float())"]),
    "two_windows_two_params": (
        lambda dm: (dm.mt.and_masks(dm.generate_sliding_window(64), dm.generate_sliding_window(32)), None),
        ["param window_size = 64", "param window_size_1 = 32", "    return q_idx - kv_idx <= window_size_1"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_emitted_text_checks(env, tmp_path, name):
    build, want = CASES[name]
    env.dm.mt = env.mt
    mask, score = build(env.dm)
    em = env.flex.emit(mask, score, SIZES, "bf16", 64, None)
    lines = em.text.splitlines()
    for w in want:
        assert w in lines or "    " + w in lines, "%s: %r not in\n%s" % (name, w, em.text)
    rc, out = check_text(env, tmp_path, em.text)
    assert rc == 0, "%s:\n%s\n%s" % (name, em.text, out)


def test_emitted_lines_name_their_origin(env):
    em = env.flex.emit(env.dm.generate_sliding_window(128), None, SIZES, "bf16", 64, None)
    i = em.text.splitlines().index("    return q_idx - kv_idx <= window_size")
    file, line, _ = em.lines[i]
    with open(MODS_PY) as f:
        assert f.read().splitlines()[line - 1].strip() == "return q_idx - kv_idx <= window_size"
    assert file == MODS_PY


def test_dims_name_the_sizes_they_match(env):
    flex = env.flex
    t = ft.Tensor((2, 8, 256), ft.float32)
    em = flex.emit(None, env.dm.generate_alibi_bias(t), {"B": 2, "H": 8, "Q": 256, "KV": 512}, "bf16", 64, None)
    assert "buffer slopes: f32[B, H, Q]" in em.text
    em = flex.emit(None, env.dm.generate_alibi_bias(t), {"B": 8, "H": 8, "Q": 256, "KV": 256}, "bf16", 64, None)
    assert "buffer slopes: f32[2, 8, KV]" in em.text  # 8 is B and H: written as the number


def test_flex_attention_runs_the_generated_kernel_with_the_closures_tensor(env):
    mt, dm = env.mt, env.dm
    B, H, S, D = 2, 8, 256, 64
    q = ft.Tensor((B, H, S, D))
    doc = doc_ids(S)
    bm = mt.create_block_mask(dm.generate_doc_mask_mod(dm.causal_mask, doc), None, None, S, S, device="cuda")
    out = mt.flex_attention(q, q, q, block_mask=bm)
    assert out.shape == q.shape
    # The closure's ids are not declared sorted, so `doc[q] == doc[kv]`
    # relates q and kv through buffer values: the tile-flag pre-pass (200)
    # runs first, then the forward (100).
    assert [c[1] for c in launches(env.drv)] == [200, 100]
    (_, f, grid, block, smem, stream, args) = launches(env.drv)[-1]
    res = next(iter(env.flex._resolved.values()))
    man = res.attn.generated().man
    bufs = man.Buffers.from_buffer_copy(args[6])
    assert bufs.ptr[0] == doc.data_ptr()
    sh = man.Shape.from_buffer_copy(args[5])
    assert (sh.B, sh.H, sh.HKV, sh.Sq, sh.Skv) == (B, H, H, S, S)
    assert list(sh.q_stride) == [H * S * D, S * D, D]  # bhsd, FlexAttention's layout
    # Another closure of the same code and layout: no new resolution, its own tensor.
    doc2 = doc_ids(S)
    bm2 = mt.create_block_mask(dm.generate_doc_mask_mod(dm.causal_mask, doc2), None, None, S, S)
    mt.flex_attention(q, q, q, block_mask=bm2)
    assert len(env.flex._resolved) == 1 and len(env.flex._programs) == 1
    bufs = man.Buffers.from_buffer_copy(launches(env.drv)[-1][6][6])
    assert bufs.ptr[0] == doc2.data_ptr()
    assert len(env.nv.compiles) == 1


def test_one_block_mask_runs_the_prepass_once(env):
    """The calls given one block mask (every layer's) share its pre-pass's
    tile map: one flag launch for three calls, and a new one once the
    captured tensor is written (its version counter moves)."""
    mt, dm = env.mt, env.dm
    q = ft.Tensor((2, 8, 256, 64))
    doc = doc_ids(256)
    bm = mt.create_block_mask(dm.generate_doc_mask_mod(dm.causal_mask, doc), None, None, 256, 256)
    for _ in range(3):
        mt.flex_attention(q, q, q, block_mask=bm)
    assert [c[1] for c in launches(env.drv)] == [200, 100, 100, 100]
    man = next(iter(env.flex._resolved.values())).attn.generated().man
    assert len({man.Shape.from_buffer_copy(c[6][5]).tile_flags for c in launches(env.drv) if c[1] == 100}) == 1
    doc.zero_()
    mt.flex_attention(q, q, q, block_mask=bm)
    assert [c[1] for c in launches(env.drv)][4:] == [200, 100]


def test_gqa_return_lse_and_aux(env):
    mt, dm = env.mt, env.dm
    q, k = ft.Tensor((1, 8, 128, 64)), ft.Tensor((1, 2, 128, 64))
    with pytest.raises(ValueError, match="enable_gqa=True"):
        mt.flex_attention(q, k, k, score_mod=dm.relative_positional)
    out, lse = mt.flex_attention(q, k, k, score_mod=dm.relative_positional, enable_gqa=True, return_lse=True)
    assert out.shape == q.shape and lse.shape == (1, 8, 128) and lse.dtype is ft.float32
    sh = next(iter(env.flex._resolved.values())).attn.generated().man.Shape.from_buffer_copy(launches(env.drv)[-1][6][5])
    assert (sh.H, sh.HKV) == (8, 2)
    out, aux = mt.flex_attention(q, k, k, score_mod=dm.relative_positional, enable_gqa=True,
                                 return_aux=mt.AuxRequest(lse=True))
    assert aux.lse.shape == (1, 8, 128) and aux.max_scores is None
    with pytest.raises(MaskcError, match="max_scores"):
        mt.flex_attention(q, k, k, enable_gqa=True, return_aux=mt.AuxRequest(max_scores=True))


def test_scale_and_head_dim_reach_the_block(env):
    em = env.flex.emit(env.dm.causal_mask, None, SIZES, "fp16", 128, 0.25)
    assert "    head_dim = 128" in em.text and "    scale = 0.25" in em.text and "    dtype = fp16" in em.text


def test_memo_key(env):
    fp, dm, mt = env.flex._fingerprint, env.dm, env.mt
    assert fp(dm.generate_sliding_window(8)) == fp(dm.generate_sliding_window(8))
    assert fp(dm.generate_sliding_window(8)) != fp(dm.generate_sliding_window(9))
    assert fp(dm.generate_alibi_bias(ft.Tensor((8,), ft.float32))) == \
        fp(dm.generate_alibi_bias(ft.Tensor((8,), ft.float32)))  # tensors by dtype and shape, not identity
    assert fp(dm.generate_alibi_bias(ft.Tensor((8,), ft.float32))) != \
        fp(dm.generate_alibi_bias(ft.Tensor((16,), ft.float32)))
    assert fp(dm.generate_alibi_bias(ft.Tensor((8,), ft.float32))) != \
        fp(dm.generate_alibi_bias(ft.Tensor((8,), ft.float64)))
    w = dm.generate_sliding_window(8)
    # sharing is part of the key: and_masks(w, w) declares w once
    assert fp(mt.and_masks(w, w)) != fp(mt.and_masks(w, dm.generate_sliding_window(8)))
    # a global the code names is read: a new value is a new key
    assert fp(dm.causal_mask) == fp(dm.causal_mask)


def test_maskc_refusal_points_at_the_python_line(env, tmp_path):
    src = tmp_path / "user_mods.py"
    src.write_text("def looped(b, h, q_idx, kv_idx):\n"
                   "    while q_idx > 0:\n"
                   "        q_idx = q_idx - 1\n"
                   "    return q_idx >= kv_idx\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import user_mods
    finally:
        sys.path.remove(str(tmp_path))
    q = ft.Tensor((1, 2, 64, 64))
    with pytest.raises(MaskcError) as ei:
        env.mt.flex_attention(q, q, q, block_mask=env.mt.create_block_mask(user_mods.looped, 1, 2, 64, 64))
    d = [d for d in ei.value.diagnostics if d.is_error][0]
    assert d.file == str(src) and 1 <= d.line <= 4, str(ei.value)
    assert "user_mods.py:%d" % d.line in str(ei.value)


@pytest.mark.parametrize("mod, msg, line", [
    (lambda dm: dm.uses_unknown, "`not_defined_anywhere` is not defined", "return q_idx >= kv_idx + not_defined"),
    (lambda dm: dm.TWO_LAMBDAS[0], "2 lambdas with parameters (b, h, q, kv) on this line", "TWO_LAMBDAS = "),
    (lambda dm: dm.captures_object(object()), "`config` is a object", "return q_idx - kv_idx < config"),
    (lambda dm: dm.Holder().method_mask, "a bound method", None),
])
def test_unreadable_functions_raise_at_their_source(env, mod, msg, line):
    q = ft.Tensor((1, 2, 64, 64))
    bm = env.mt.create_block_mask(mod(env.dm), 1, 2, 64, 64)
    with pytest.raises(MaskcError) as ei:
        env.mt.flex_attention(q, q, q, block_mask=bm)
    assert msg in str(ei.value)
    if line is not None:
        (d,) = ei.value.diagnostics
        assert d.file == MODS_PY
        with open(MODS_PY) as f:
            assert f.read().splitlines()[d.line - 1].strip().startswith(line)
    assert not launches(env.drv)


def test_fallback_torch_runs_torchs_flex_and_says_so(env, monkeypatch):
    calls = []
    tfa = types.ModuleType("torch.nn.attention.flex_attention")
    tfa.flex_attention = lambda q, k, v, **kw: calls.append(("flex", kw)) or "torch-out"
    tfa.create_block_mask = lambda *a, **kw: calls.append(("bm", a)) or "torch-block-mask"
    monkeypatch.setitem(sys.modules, "torch.nn.attention.flex_attention", tfa)
    monkeypatch.setattr(sys.modules["torch.nn.attention"], "flex_attention", tfa, raising=False)
    q = ft.Tensor((1, 2, 64, 64))
    bm = env.mt.create_block_mask(env.dm.uses_unknown, 1, 2, 64, 64)
    with pytest.warns(UserWarning, match="(?s)runs torch's flex_attention.*not_defined_anywhere"):
        assert env.mt.flex_attention(q, q, q, block_mask=bm, fallback="torch") == "torch-out"
    assert calls[0][0] == "bm" and calls[1] == ("flex", dict(score_mod=None, block_mask="torch-block-mask",
                                                             scale=None, enable_gqa=False, kernel_options=None))
    with pytest.raises(MaskcError):
        env.mt.flex_attention(q, q, q, block_mask=bm)  # never silently: without the option it raises
    with pytest.raises(ValueError, match="fallback='cpu'"):
        env.mt.flex_attention(q, q, q, block_mask=bm, fallback="cpu")


def test_block_mask_reads_like_torchs(env):
    bm = env.mt.create_block_mask(env.dm.causal_mask, None, 4, 1000, 2000)
    assert bm.shape == (1, 4, 1000, 2000) and bm.seq_lengths == (1000, 2000) and bm.mask_mod is env.dm.causal_mask
    assert "causal_mask" in repr(bm) and bm.to_string() == repr(bm)
    moved = bm.to("cuda:1")
    assert moved.device == "cuda:1" and moved.shape == bm.shape and moved.mask_mod is bm.mask_mod
    with pytest.raises(MaskcError, match="kv_num_blocks.*to_torch"):
        bm.kv_num_blocks
    assert not hasattr(bm, "full_kv_indices")
    q = ft.Tensor((1, 4, 1000, 64))
    with pytest.raises(ValueError, match="block_mask was created for"):
        env.mt.flex_attention(q, q, q, block_mask=env.mt.create_block_mask(env.dm.causal_mask, 1, 4, 512, 512))


def test_torch_and_masks_and_noop_are_recognised(env):
    flex = env.flex
    ns = {}
    exec("def and_masks(*mask_mods):\n"
         "    def and_mask(b, h, q_idx, kv_idx):\n"
         "        return mask_mods[0](b, h, q_idx, kv_idx)\n"
         "    return and_mask\n"
         "def noop_mask(b, h, q_idx, kv_idx):\n"
         "    return q_idx >= 0\n", ns)
    for f in (ns["and_masks"], ns["noop_mask"]):
        f.__module__ = "torch.nn.attention.flex_attention"
    m = ns["and_masks"](env.dm.causal_mask, env.dm.generate_prefix_lm_mask(4))
    m.__module__ = "torch.nn.attention.flex_attention"
    em = flex.emit(m, None, SIZES, "bf16", 64, None)
    assert "    mask = and_masks(causal_mask, prefix_mask)" in em.text.splitlines()
    em = flex.emit(ns["noop_mask"], None, SIZES, "bf16", 64, None)
    assert "mask =" not in em.text
    # transformers.masking_utils' own combinators, as written there
    tf = {}
    exec("def or_masks(*mask_functions):\n"
         "    def or_mask(batch_idx, head_idx, q_idx, kv_idx):\n"
         "        result = q_idx.new_zeros((), dtype=torch.bool)\n"
         "        for mask in mask_functions:\n"
         "            result = result | mask(batch_idx, head_idx, q_idx, kv_idx).to(result.device)\n"
         "        return result\n"
         "    return or_mask\n", tf)
    m = tf["or_masks"](env.dm.causal_mask, env.dm.generate_prefix_lm_mask(4))
    m.__module__ = "transformers.masking_utils"
    assert "    mask = or_masks(causal_mask, prefix_mask)" in flex.emit(m, None, SIZES, "bf16", 64, None).text.splitlines()
    m.__module__ = "someone.else"  # the same shape elsewhere is read as the function it is: its loop is refused
    with pytest.raises(MaskcError, match="source of this function is not available"):
        flex.emit(m, None, SIZES, "bf16", 64, None)


def test_bad_dtypes_and_shapes(env):
    q = ft.Tensor((1, 2, 64, 64), ft.float32)
    with pytest.raises(MaskcError, match="bfloat16 or torch.float16"):
        env.mt.flex_attention(q, q, q)
    with pytest.raises(ValueError, match="want 4"):
        env.mt.flex_attention(ft.Tensor((2, 64, 64)), q, q)


class StandInTensors:
    """dropin_cases' tensor factory, with fake_torch tensors."""

    def ints(self, shape, hi):
        return ft.Tensor(shape, ft.int32)

    def floats(self, shape, scale, grad):
        return ft.Tensor(shape, ft.float32, requires_grad=grad)

    def docs(self, S):
        return ft.Tensor((S,), ft.int32)

    def doc_offsets(self, S):
        return ft.Tensor((7,), ft.int32), ft.Tensor((S,), ft.int32)


def gpu_cases():
    """python/gpu_tests/dropin_cases.py, imported (once) with the stand-in
    torch: the host needs no real torch for these tests."""
    if "dropin_cases" in sys.modules:
        return sys.modules["dropin_cases"]
    sys.path.insert(0, os.path.join(os.path.dirname(MODS_PY), "..", "gpu_tests"))
    try:
        with pytest.MonkeyPatch.context() as mp:
            ft.install(mp)
            import dropin_cases
    finally:
        sys.path.pop(0)
    return dropin_cases


@pytest.mark.parametrize("name", sorted(set(gpu_cases().CASES) - set(gpu_cases().TORCH_ONLY)))
def test_gpu_cases_compile_and_launch_here(env, name):
    """Every case of python/gpu_tests/check_dropin.py is read, checked and
    compiled by maskc and reaches the generated kernel (or SDPA) here."""
    cases = gpu_cases()
    B, H, S = 2, 8, 256
    c = cases.CASES[name](StandInTensors(), B, H, S)
    D = c.head_dim or 64
    q, k = ft.Tensor((B, H, S, D)), ft.Tensor((B, c.hkv or H, S, D))
    bm = env.mt.create_block_mask(c.mask_mod, B, H, S, S) if c.mask_mod is not None else None
    got = env.mt.flex_attention(q, k, k, score_mod=c.score_mod, block_mask=bm, scale=c.scale,
                                enable_gqa=c.hkv is not None, return_lse=c.lse)
    out = got[0] if c.lse else got
    assert out.shape == q.shape
    r = next(iter(env.flex._resolved.values()))
    if c.leaves or c.lse or c.score_mod is not None or c.mask_mod is not None:
        assert r.attn.decision.has_generated, r.emitted.text
        assert launches(env.drv), r.emitted.text
        ptrs = set(r.attn.generated().man.Buffers.from_buffer_copy(launches(env.drv)[-1][6][6]).ptr)
        for t in c.leaves:
            assert t.data_ptr() in ptrs


def test_readme_flex_example_mods_check(env, tmp_path):
    """The README's FlexAttention-API example: its import is maskc's, and its
    mods (with stand-ins for its doc and slopes tensors) read and check."""
    import re
    with open(os.path.join(os.path.dirname(MODS_PY), "..", "..", "README.md")) as f:
        text = f.read()
    block = re.search(r"```python\n(.*?)```", text[text.index("### FlexAttention's API"):], re.S).group(1)
    assert "\nfrom maskc.torch import flex_attention, create_block_mask" in "\n" + block
    defs = re.findall(r"^def .*?\n(?:    .*\n)+", block, re.M)
    assert [d.split("(")[0] for d in defs] == ["def document_causal", "def alibi"]
    mod = tmp_path / "readme_mods.py"
    mod.write_text("from fake_torch import Tensor, int64, float32\n"
                   "doc = Tensor((2048,), int64)\nslopes = Tensor((8,), float32)\n\n" + "\n".join(defs))
    sys.path.insert(0, str(tmp_path))
    try:
        import readme_mods
    finally:
        sys.path.remove(str(tmp_path))
    em = env.flex.emit(readme_mods.document_causal, readme_mods.alibi, {"B": 2, "H": 8, "Q": 2048, "KV": 2048},
                       "bf16", 64, None)
    assert "buffer doc: i64[KV]" in em.text and "buffer slopes: f32[H]" in em.text
    rc, out = check_text(env, tmp_path, em.text)
    assert rc == 0, em.text + out


def test_captured_numbers_and_dtypes(env, tmp_path):
    import fractions
    em = env.flex.emit(None, env.dm.generate_cast(ft.float32, fractions.Fraction(1, 4)), SIZES, "bf16", 64, None)
    assert "param scale = 0.25" in em.text
    assert "    return score + (q_idx - kv_idx).to(torch.float32) * scale" in em.text.splitlines()
    rc, out = check_text(env, tmp_path, em.text)
    assert rc == 0, em.text + out
    fp = env.flex._fingerprint
    assert fp(env.dm.generate_cast(ft.float32, 0.5)) != fp(env.dm.generate_cast(ft.float64, 0.5))


def test_params_never_shadowed_by_mod_parameters(env, tmp_path):
    em = env.flex.emit(env.dm.generate_head_mask(4), env.dm.generate_scaled(0.5), SIZES, "bf16", 64, None)
    assert "param h_1 = 0.5" in em.text and "        return score * h_1" not in em.text
    assert "    return score * h_1" in em.text.splitlines()
    rc, out = check_text(env, tmp_path, em.text)
    assert rc == 0 and "W005" not in out, em.text + out


def test_maskc_warnings_point_at_the_python_line(env):
    q = ft.Tensor((1, 2, 64, 64))
    with pytest.warns(UserWarning) as rec:
        env.mt.flex_attention(q, q, q, block_mask=env.mt.create_block_mask(env.dm.python_and, 1, 2, 64, 64))
    msgs = [str(w.message) for w in rec if "W030" in str(w.message)]
    assert msgs, [str(w.message) for w in rec]
    with open(MODS_PY) as f:
        lines = f.read().splitlines()
    loc = msgs[0].split(": warning")[0]
    file, line, col = loc.rsplit(":", 2)
    assert file == MODS_PY and lines[int(line) - 1].strip() == "return q_idx >= kv_idx and kv_idx >= 0"
    assert lines[int(line) - 1][int(col) - 1:].startswith("and kv_idx >= 0"), msgs[0]  # maskc points at `and`


@pytest.mark.parametrize("bad", [False, True])
def test_gpu_script_plumbing_on_cpu(bad):
    """check_dropin.py's loop under real torch on the CPU (Debian's
    python3-torch; .ci/run installs it): every case passes with the float64
    reference standing in for both kernels, and fails with a wrong scale."""
    script = os.path.join(os.path.dirname(MODS_PY), "dropin_cpu_smoke.py")
    r = subprocess.run([sys.executable, script] + (["--bad"] if bad else []), capture_output=True, text=True,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert r.returncode == 0, "%s needs torch (Debian: apt-get install python3-torch)\n%s" % (sys.executable, r.stderr)
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert sorted(got) == sorted(set(gpu_cases().CASES) - set(gpu_cases().TORCH_ONLY))
    if not bad:
        assert all(got.values()), got
    else:  # every case but the one with an explicit scale
        assert {n for n, ok in got.items() if ok} == {"times_two"}, got


def test_default_values_stand_for_their_parameters(env, tmp_path):
    dm, flex = env.dm, env.flex
    em = flex.emit(dm.generate_window_default(16), None, SIZES, "bf16", 64, None)
    lines = em.text.splitlines()
    assert "def windowed(b, h, q_idx, kv_idx):" in lines and "param w = 16" in lines and "param causal = true" in lines
    assert "    return (q_idx - kv_idx <= w) & ((q_idx >= kv_idx) | (not causal))" in lines
    i = lines.index("    return (q_idx - kv_idx <= w) & ((q_idx >= kv_idx) | (not causal))")
    with open(MODS_PY) as f:
        assert f.read().splitlines()[em.lines[i][1] - 1].strip().startswith("return (q_idx - kv_idx <= w)")
    rc, out = check_text(env, tmp_path, em.text)
    assert rc == 0, em.text + out
    em = flex.emit(dm.LAMBDA_DEFAULT[1], None, SIZES, "bf16", 64, None)
    assert "def lambda_mod(b, h, q, kv):" in em.text and "param n = 7" in em.text
    fp = flex._fingerprint
    assert fp(dm.LAMBDA_DEFAULT[0]) != fp(dm.LAMBDA_DEFAULT[1])
    assert fp(dm.generate_window_default(16)) == fp(dm.generate_window_default(16))


def test_decorated_multiline_lambda_and_linecache_sources(env, tmp_path):
    dm, flex = env.dm, env.flex
    em = flex.emit(dm.registered_causal, None, SIZES, "bf16", 64, None)
    assert "@register" not in em.text and "def registered_causal(b, h, q_idx, kv_idx):" in em.text
    lam = dm.call_with_lambda(lambda f, other: f)
    em = flex.emit(lam, None, SIZES, "bf16", 64, None)
    assert "    return ((q >= kv)" in em.text.splitlines() and "        & (q - kv < 8))" in em.text.splitlines()
    rc, out = check_text(env, tmp_path, em.text)
    assert rc == 0, em.text + out
    # source that lives only in linecache (a notebook cell, an exec'd string registered there)
    import linecache
    src = "def cell_mask(b, h, q_idx, kv_idx):\n    return q_idx // 4 >= kv_idx // 4\n"
    linecache.cache["<cell-1>"] = (len(src), None, src.splitlines(True), "<cell-1>")
    ns = {}
    exec(compile(src, "<cell-1>", "exec"), ns)
    em = flex.emit(ns["cell_mask"], None, SIZES, "bf16", 64, None)
    assert "    return q_idx // 4 >= kv_idx // 4" in em.text.splitlines()
    ns2 = {}
    exec(compile(src.replace("cell_mask", "lost_mask"), "<cell-2>", "exec"), ns2)
    with pytest.raises(MaskcError, match="source of this function is not available"):
        flex.emit(ns2["lost_mask"], None, SIZES, "bf16", 64, None)


def test_readme_flex_example_script_on_cpu():
    """readme_flex_example.py's bookkeeping on the CPU under real torch (the
    float64 reference for both imports): the block runs, trains, compares."""
    script = os.path.join(os.path.dirname(MODS_PY), "dropin_cpu_smoke.py")
    r = subprocess.run([sys.executable, script, "--readme"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "only the import changed): PASS" in r.stdout and "readme_torch: loss" in r.stdout


def test_small_head_dims_are_zero_padded(env):
    mt, flex = env.mt, env.flex
    q = ft.Tensor((1, 2, 64, 16))
    out = mt.flex_attention(q, q, q, score_mod=env.dm.relative_positional)
    assert out.shape == q.shape
    r = next(iter(flex._resolved.values()))
    assert "    head_dim = 64" in r.emitted.text and "    scale = 0.25" in r.emitted.text  # 1/sqrt(16), not 1/sqrt(64)
    assert [c for c in ft.rec.calls if c[0] == "pad"] == [("pad", (1, 2, 64, 16), 48)] * 3
    assert ("slice", (1, 2, 64, 64), 16) in ft.rec.calls
    man = r.attn.generated().man
    sh = man.Shape.from_buffer_copy(launches(env.drv)[-1][6][5])
    assert abs(sh.scale - 0.25) < 1e-7
    out, lse = mt.flex_attention(q, q, q, score_mod=env.dm.relative_positional, scale=0.5, return_lse=True)
    assert out.shape == q.shape and lse.shape == (1, 2, 64)
    assert "    scale = 0.5" in list(flex._resolved.values())[-1].emitted.text


def test_kernel_head_dims_match_maskc(env, tmp_path):
    """maskc.flex.KERNEL_HEAD_DIMS is what maskc compile's E300 hint lists."""
    import re
    p = tmp_path / "d96.flex"
    p.write_text("mask m(b, h, q, kv) = q >= kv\nattention a {\n    mask = m\n    head_dim = 96\n}\n")
    r = subprocess.run([env.bin, "compile", "-o", str(tmp_path / "out"), str(p)], capture_output=True, text=True)
    assert r.returncode == 1 and "E300" in r.stderr, r.stderr
    listed = re.search(r"use head_dim = ([\d, or]+)", r.stderr).group(1)
    assert tuple(int(x) for x in re.findall(r"\d+", listed)) == env.flex.KERNEL_HEAD_DIMS


def test_call_refusals_name_the_call_and_fall_back_on_request(env, monkeypatch):
    q = ft.Tensor((1, 2, 64, 512))  # beyond every kernel's head dim
    with pytest.raises(MaskcError, match="maskc refuses this call") as ei:
        env.mt.flex_attention(q, q, q, score_mod=env.dm.relative_positional)
    assert any(d.code == "E051" for d in ei.value.diagnostics)  # head_dim at most 256
    calls = []
    tfa = types.ModuleType("torch.nn.attention.flex_attention")
    tfa.flex_attention = lambda q, k, v, **kw: calls.append(kw) or "torch-out"
    monkeypatch.setitem(sys.modules, "torch.nn.attention.flex_attention", tfa)
    monkeypatch.setattr(sys.modules["torch.nn.attention"], "flex_attention", tfa, raising=False)
    with pytest.warns(UserWarning, match="E051"):
        assert env.mt.flex_attention(q, q, q, score_mod=env.dm.relative_positional, fallback="torch") == "torch-out"
    # a captured tensor on another device: refused by maskc's checks before any launch, then torch's
    q = ft.Tensor((1, 8, 64, 64))
    slopes = ft.Tensor((8,), ft.float32, device="cpu")
    with pytest.raises(MaskcError, match="slopes is on cpu"):
        env.mt.flex_attention(q, q, q, score_mod=env.dm.generate_alibi_bias(slopes))
    with pytest.warns(UserWarning, match="slopes is on cpu"):
        env.mt.flex_attention(q, q, q, score_mod=env.dm.generate_alibi_bias(slopes), fallback="torch")
    assert len(calls) == 2 and not launches(env.drv)


def test_strided_operands_are_copied_only_when_a_kernel_cannot_read_them(env):
    q = ft.Tensor((1, 2, 64, 64))
    odd = ft.Tensor((1, 2, 64, 64), strides=(64 * 64 * 2 + 4, 64 * 64 + 2, 64, 1))  # a view at odd strides
    env.mt.flex_attention(q, q, odd, score_mod=env.dm.relative_positional)
    man = next(iter(env.flex._resolved.values())).attn.generated().man
    sh = man.Shape.from_buffer_copy(launches(env.drv)[-1][6][5])
    assert list(sh.q_stride) == [2 * 64 * 64, 64 * 64, 64] and list(sh.v_stride) == [2 * 64 * 64, 64 * 64, 64]
    assert list(sh.k_stride) == list(sh.q_stride)
    args = launches(env.drv)[-1][6]
    assert ptr(args[0]) == q.data_ptr() and ptr(args[2]) != odd.data_ptr()  # q as it is, v copied


def test_all_kernels_is_its_own_cache_entry(env):
    from conftest import EXAMPLES
    from maskc import cache
    path = os.path.join(EXAMPLES, "full.flex")
    plain, every = cache.compile_flex(path), cache.compile_flex(path, all_kernels=True)
    assert plain.key != every.key and every.info["all_kernels"] and not plain.info["all_kernels"]
    assert not plain.has("encoder.hip") and every.has("encoder.hip") and every.has("encoder.bwd.hip")
    assert env.mt.Program(every).attention("encoder").decision.has_generated
    assert cache.compile_flex(path, all_kernels=True).directory == every.directory  # reused


def test_3d_captured_tensor_is_read_as_written(env):
    # A mod indexing a captured 3-D tensor (issue 27) pastes as is: the
    # buffer keeps its three extents, the read its three indices, and the
    # generated kernel gets the tensor with its extents in MaskcBuffers.dim.
    mt, dm = env.mt, env.dm
    B, H, S, D = 1, 8, 512, 64
    sel = ft.Tensor((H, S // 128, 2), ft.int32)
    mod = dm.generate_moba_mask(sel)
    em = env.flex.emit(mod, None, {"B": B, "H": H, "Q": S, "KV": S}, "bf16", D, None)
    assert "buffer selected: i32[H, 4, 2]" in em.text, em.text
    assert "(selected[h, q_idx // block, 0] == kv_idx // block)" in em.text, em.text
    q = ft.Tensor((B, H, S, D))
    out = mt.flex_attention(q, q, q, block_mask=mt.create_block_mask(mod, None, None, S, S, device="cuda"))
    assert out.shape == q.shape
    ((_, f, grid, block, smem, stream, args),) = launches(env.drv)
    res = next(iter(env.flex._resolved.values()))
    bufs = res.attn.generated().man.Buffers.from_buffer_copy(args[6])
    assert bufs.ptr[0] == sel.data_ptr() and list(bufs.dim[0]) == [H, S // 128, 2, 1, 1, 1, 1, 1]


def test_functools_partial_binds_like_defaults(env, tmp_path):
    """A functools.partial of a def: its bound parameters (by position from
    the first, by name, keyword-only) stand in the body like defaults, a
    bound tensor is a buffer read through the partial at every call, and
    what Python would refuse is refused at the def."""
    import functools
    dm, flex, mt = env.dm, env.flex, env.mt
    for mod, name, param in [
        (functools.partial(dm.kv_offset_mask_flex, offset=16), "kv_offset_mask_flex", "param offset = 16"),
        (functools.partial(dm.context_mask_mod, context_len=4), "context_mask_mod", "param context_len = 4"),
        (functools.partial(dm.rank_mask, 2), "rank_mask", "param rank = 2"),
    ]:
        em = flex.emit(mod, None, SIZES, "bf16", 64, None)
        lines = em.text.splitlines()
        assert "def %s(b, h, q_idx, kv_idx):" % name in lines and param in lines, em.text
        rc, out = check_text(env, tmp_path, em.text)
        assert rc == 0, em.text + out
    fp = flex._fingerprint
    offset = functools.partial(functools.partial, dm.kv_offset_mask_flex)
    assert fp(offset(offset=16)) == fp(offset(offset=16)) and fp(offset(offset=16)) != fp(offset(offset=8))
    # a tensor bound by position: a buffer, read through the partial at each call
    B, H, S, D = 1, 2, 128, 64
    q = ft.Tensor((B, H, S, D))
    ids = doc_ids(S)
    mt.flex_attention(q, q, q, block_mask=mt.create_block_mask(functools.partial(dm.ids_mask, ids), None, None, S, S))
    man = next(iter(flex._resolved.values())).attn.generated().man
    assert man.Buffers.from_buffer_copy(launches(env.drv)[-1][6][6]).ptr[0] == ids.data_ptr()
    ids2 = doc_ids(S)
    mt.flex_attention(q, q, q, block_mask=mt.create_block_mask(functools.partial(dm.ids_mask, ids2), None, None, S, S))
    assert man.Buffers.from_buffer_copy(launches(env.drv)[-1][6][6]).ptr[0] == ids2.data_ptr()
    assert len(flex._resolved) == 1
    # bound by name where FlexAttention's positional arguments would fill it
    with pytest.raises(MaskcError, match="binds rank by name, but FlexAttention's arguments fill it by position"):
        flex.emit(functools.partial(dm.rank_mask, rank=1), None, SIZES, "bf16", 64, None)
    with pytest.raises(MaskcError, match="binds window, which `kv_offset_mask_flex` has no parameter of"):
        flex.emit(functools.partial(dm.kv_offset_mask_flex, window=1), None, SIZES, "bf16", 64, None)


def test_captured_scalar_tensor_is_a_0d_buffer(env, tmp_path):
    """A mod capturing a 0-d tensor (torch.tensor(37)) emits a 0-d buffer
    read by its name, which maskc checks, and the launch passes that tensor
    itself (no reshape, no copy) with no extents."""
    mt = env.mt
    B, H, S, D = 2, 8, 256, 64
    offset = ft.Tensor((), ft.int32)

    def shifted(b, h, q_idx, kv_idx):
        return kv_idx <= q_idx + offset

    em = env.flex.emit(shifted, None, SIZES, "bf16", 64, None)
    assert "buffer offset: i32[]" in em.text.splitlines(), em.text
    rc, out = check_text(env, tmp_path, em.text)
    assert rc == 0, out
    q = ft.Tensor((B, H, S, D))
    mt.flex_attention(q, q, q, block_mask=mt.create_block_mask(shifted, None, None, S, S, device="cuda"))
    (_, f, grid, block, smem, stream, args) = launches(env.drv)[-1]
    man = next(iter(env.flex._resolved.values())).attn.generated().man
    bufs = man.Buffers.from_buffer_copy(args[6])
    assert bufs.ptr[0] == offset.data_ptr()
    assert list(bufs.dim[0]) == [1] * man.max_rank  # no extents: every dim entry 1
