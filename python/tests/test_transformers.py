"""maskc.transformers on stand-ins for transformers (fake_transformers) and
torch (fake_torch): every mask transformers composes is lowered to a .flex
expression whose mask, drawn by the real maskc binary (maskc eval), equals
the mask function's own values pair by pair; each layer setting reaches the
block (scale, softcap, sinks) and the call (the frame of a cached decode
step, global buffers); what maskc cannot run exactly raises naming the
layer and the setting, before any launch."""
import os
import random
import re
import subprocess
import sys

import pytest

import fake_torch as ft
import fake_transformers as ftf
from fake_transformers import Grid
from maskc.diagnostics import MaskcError


@pytest.fixture
def tf(monkeypatch):
    return ftf.install(monkeypatch)


@pytest.fixture
def mtf(tf):
    sys.modules.pop("maskc.transformers", None)
    import maskc.transformers as mtf
    return mtf


def eval_grid(maskc_bin, tmp_path, text, B, b, Q, KV, buffers):
    """maskc eval's drawing of block "layer" for batch index b, as a set of (q, kv)."""
    p = tmp_path / "m.flex"
    p.write_text(text)
    args = [maskc_bin, "eval", str(p), "--attention", "layer", "--q", str(Q), "--kv", str(KV), "-B", str(B),
            "-b", str(b)]
    for name, _, t in buffers:
        args += ["--buffer", "%s=%s" % (name, ",".join(map(str, t.values())))]
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = [m.group(2) for m in (re.match(r"^\s*(\d+)  ([#.]+)$", ln) for ln in out.stdout.splitlines()) if m]
    assert len(rows) == Q and all(len(r) == KV for r in rows), out.stdout
    return {(q, kv) for q, row in enumerate(rows) for kv, ch in enumerate(row) if ch == "#"}


def rand_rows(rng, B, n, lo, hi, sort=False):
    rows = [[rng.randint(lo, hi) for _ in range(n)] for _ in range(B)]
    return Grid([sorted(r) for r in rows] if sort else rows)


CASES = {
    "causal": lambda mu, g: mu.causal_mask_function,
    "bidirectional": lambda mu, g: mu.bidirectional_mask_function,
    "sliding_causal": lambda mu, g: mu.sliding_window_causal_mask_function(3),
    "sliding_bidirectional": lambda mu, g: mu.sliding_window_bidirectional_mask_function(2),
    "chunked": lambda mu, g: mu.chunked_causal_mask_function(4, Grid([1, 3])),
    "packed": lambda mu, g: mu.and_masks(mu.causal_mask_function, mu.packed_sequence_mask_function(g["doc"])),
    "sliding_packed": lambda mu, g: mu.and_masks(mu.sliding_window_causal_mask_function(4),
                                                 mu.packed_sequence_mask_function(g["doc"])),
    "gemma3_images": lambda mu, g: mu.or_masks(mu.sliding_window_causal_mask_function(3),
                                               mu.blockwise_overlay(g["blk"])),
    "or_with_everything": lambda mu, g: mu.or_masks(mu.causal_mask_function, mu.bidirectional_mask_function),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("padded", [False, True])
def test_lowered_mask_is_transformers_mask(tf, mtf, maskc_bin, tmp_path, case, padded):
    _, mu = tf
    B, S = 2, 11
    rng = random.Random(hash((case, padded)) & 0xffff)
    g = {"doc": rand_rows(rng, B, S, 0, 3, sort=True),
         "blk": Grid([[-1, -1, 0, 0, 0, -1, 1, 1, -1, -1, -1], [2, 2, -1, -1, 3, 3, 3, 3, -1, 4, 4]]),
         "pad": Grid([[0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1], [1] * 9 + [0, 0]])}
    fn = CASES[case](mu, g)
    info = mtf.mask_interface(B, S, S, mask_function=fn, attention_mask=g["pad"] if padded else None)
    text = mtf.block_text(info.expr, info.buffers, 64)
    want_fn = mu.and_masks(fn, mu.padding_mask_function(g["pad"])) if padded else fn
    for b in range(B):
        want = {(q, kv) for q in range(S) for kv in range(S) if want_fn(b, 0, q, kv)}
        assert eval_grid(maskc_bin, tmp_path, text, B, b, S, S, info.buffers) == want, (case, b, info)


def test_padding_without_padding_is_dropped(tf, mtf):
    _, mu = tf
    info = mtf.mask_interface(2, 4, 4, mask_function=mu.causal_mask_function, attention_mask=Grid([[1] * 4] * 2))
    assert (info.expr, info.buffers) == ("(kv <= q)", [])


def test_mask_info_used_as_a_tensor_says_so(tf, mtf):
    _, mu = tf
    info = mtf.mask_interface(1, 4, 4, mask_function=mu.causal_mask_function)
    assert not hasattr(info, "shape")
    with pytest.raises(MaskcError, match=r"reads attention_mask.ndim, as if the mask were a tensor"):
        info.ndim


def test_one_tensor_is_one_buffer(tf, mtf):
    _, mu = tf
    doc = Grid([[0, 0, 1]])
    fn = mu.and_masks(mu.packed_sequence_mask_function(doc), mu.or_masks(mu.causal_mask_function,
                                                                         mu.packed_sequence_mask_function(doc)))
    expr, bufs = mtf.lower_mask(fn)
    assert [n for n, _, _ in bufs] == ["doc0"] and expr.count("doc0[b, q]") == 2


def test_unknown_mask_function_is_refused(tf, mtf):
    _, mu = tf

    def token_type_ids_mask(b, h, q, kv):  # a model's own overlay, e.g. an older Gemma 3
        return True
    with pytest.raises(MaskcError, match=r"test_transformers\..*token_type_ids_mask.*does not know"):
        mtf.mask_interface(1, 4, 4, mask_function=mu.or_masks(mu.causal_mask_function, token_type_ids_mask))


class Module:
    def __init__(self, layer_idx=3, **kw):
        self.layer_idx, self.is_causal = layer_idx, True
        self.__dict__.update(kw)


def bhsd(B, H, S, D=64, dtype=ft.bfloat16):
    return ft.Tensor((B, H, S, D), dtype)


class StubDriver:
    """The CUDA driver maskc's launcher drives, recording each launch as
    (entry name, its argument bytes)."""

    def __init__(self):
        self.launches = []

    def ensure_context(self, o):
        return 1

    def load_module(self, image):
        return 7

    def function(self, mod, name):
        return name

    def set_max_dynamic_smem(self, f, n):
        pass

    def launch(self, f, grid, block, smem, stream, args, what=""):
        self.launches.append((f, [bytes(a) for a in args]))


class StubNVRTC:
    def version(self):
        return "nvrtc-13.0"

    def compile(self, src, name, options):
        return b"CUBIN", ""


def info_for(mtf, mu, B, Sq, Skv, q0=0, kv0=0, fn=None, pad=None):
    return mtf.mask_interface(B, Sq, Skv, q0, kv0, mask_function=fn or mu.causal_mask_function, attention_mask=pad)


@pytest.mark.parametrize("call, msg", [
    (lambda mtf, mu: dict(dropout=0.1), r"Module \(layer 3\): attention dropout 0.1"),
    (lambda mtf, mu: dict(attention_mask=ft.Tensor((2, 1, 16, 16), ft.float32)),
     r"Module \(layer 3\): attention_mask is a Tensor of shape \(2, 1, 16, 16\).*4-D"),
    (lambda mtf, mu: dict(value=bhsd(2, 2, 16, 32)), "head dims q 64, k 64, v 32"),
    (lambda mtf, mu: dict(query=bhsd(2, 8, 16, 100), key=bhsd(2, 2, 16, 100), value=bhsd(2, 2, 16, 100)),
     "head_dim 100"),
    (lambda mtf, mu: dict(key=bhsd(2, 3, 16), value=bhsd(2, 3, 16)), "8 query heads over 3"),
    (lambda mtf, mu: dict(s_aux=ft.Tensor((4,), ft.float32)), r"sinks of shape \(4,\)"),
    (lambda mtf, mu: dict(attention_mask=info_for(mtf, mu, 2, 16, 8)), "mask was built for batch 2, 16 queries, "
                                                                       "8 keys"),
    (lambda mtf, mu: dict(attention_mask=info_for(mtf, mu, 1, 16, 16)), "mask was built for batch 1"),
    (lambda mtf, mu: dict(query=bhsd(2, 8, 16, dtype=ft.int32)), "query dtype int32"),
])
def test_refusals_name_the_layer_and_setting(tf, mtf, call, msg):
    _, mu = tf
    args = dict(module=Module(), query=bhsd(2, 8, 16), key=bhsd(2, 2, 16), value=bhsd(2, 2, 16),
                attention_mask=info_for(mtf, mu, 2, 16, 16))
    args.update(call(mtf, mu))
    with pytest.raises(MaskcError, match=msg):
        mtf.plan_call(**args)


def test_fewer_keys_than_the_mask_are_its_first(tf, mtf):
    """transformers' eager slices a mask to the keys it gets; so does the frame."""
    _, mu = tf
    info = info_for(mtf, mu, 2, 1, 64, q0=20, kv0=4, pad=Grid([[1] * 68, [0] + [1] * 67]))
    call = mtf.plan_call(Module(), bhsd(2, 8, 1), bhsd(2, 2, 17), bhsd(2, 2, 17), info)
    assert call.frame == [20, 4, 0, 21, 21, 0] and call.kv_total == 21


def test_static_cache_length_tensor_is_read_once(tf, mtf):
    _, mu = tf

    class Len:  # StaticCache's get_seq_length(): a 0-d tensor
        reads = 0

        def item(self):
            Len.reads += 1
            return 30
    info = info_for(mtf, mu, 1, 1, 64, q0=Len())
    for layer in range(3):
        call = mtf.plan_call(Module(layer_idx=layer), bhsd(1, 8, 1), bhsd(1, 2, 64), bhsd(1, 2, 64), info)
        assert call.frame == [30, 0, 0, 31, 64, 0]
    assert Len.reads == 1


def test_equal_layers_share_one_block(tf, mtf):
    _, mu = tf
    info = info_for(mtf, mu, 1, 16, 16)
    a = mtf.plan_call(Module(layer_idx=0), bhsd(1, 8, 16), bhsd(1, 2, 16), bhsd(1, 2, 16), info, scaling=0.125)
    other = type("GemmaAttention", (Module,), {})(layer_idx=5)
    b = mtf.plan_call(other, bhsd(1, 8, 16), bhsd(1, 2, 16), bhsd(1, 2, 16), info, scaling=0.125)
    assert a.text == b.text and a.layer != b.layer


def test_block_settings_reach_the_plan(tf, mtf, maskc_bin, cache_dir, monkeypatch, tmp_path):
    """scale, softcap and sinks become the block's; the plan reads them."""
    _, mu = tf
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    from maskc import cache, plan
    pad = Grid([[0, 1, 1, 1], [1, 1, 1, 1]])
    info = info_for(mtf, mu, 2, 4, 4, fn=mu.sliding_window_causal_mask_function(2), pad=pad)
    call = mtf.plan_call(Module(), bhsd(2, 8, 4, 256), bhsd(2, 2, 4, 256), bhsd(2, 2, 4, 256), info,
                         scaling=0.0625, softcap=50.0, s_aux=ft.Tensor((8,), ft.float32))
    assert call.frame is None and call.sink is not None
    p = str(tmp_path / "b.flex")
    with open(p, "w") as f:
        f.write(call.text)
    d = plan.Plan(cache.compile_flex(p).plan_json).attention("layer")
    assert d.has_generated and d.score == "softcap" and d.canonical == "0 <= q - kv <= 1 and pad0[b, kv] != 0"
    assert d.kwargs == {"buffers": ["pad0"], "kernel": "maskc_layer", "sink": "sinks", "softmax_scale": 0.0625}
    assert "    head_dim = 256\n" in call.text and "50.0 * tanh(score / 50.0)" in call.text


def test_decode_step_runs_generated_with_frame(tf, mtf, maskc_bin, cache_dir, monkeypatch):
    """A cached decode step (one query at position past_len = 37 over 38 keys,
    with padding) runs the generated kernel with the frame q_offset = 37, and
    the padding buffer sized to the keys."""
    _, mu = tf
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    ft.install(monkeypatch)
    import maskc.torch as mt
    from maskc import launcher
    from maskc import abi
    drv = StubDriver()
    monkeypatch.setattr(launcher, "_libs", lambda: (drv, StubNVRTC()))
    pad = ft.Tensor((2, 38), ft.bool_)
    pad.all = lambda: False
    info = info_for(mtf, mu, 2, 1, 38, q0=37, pad=pad)
    q, k = bhsd(2, 8, 1), bhsd(2, 2, 38)
    out, w = mtf.attention_forward(Module(), q, k, k, info, scaling=0.125)
    assert w is None and out.shape == (2, 1, 8, 64)
    ((_, args),) = drv.launches
    gen = mtf._derived_attention(mtf.plan_call(Module(), q, k, k, info, scaling=0.125).text).generated()
    bufs = gen.man.Buffers.from_buffer_copy(args[6])
    assert [getattr(bufs, n) for n in abi.FRAME_FIELDS] == [37, 0, 0, 38, 38, 0]
    assert list(bufs.dim[0])[:2] == [2, 38]  # pad0: [B, KV], KV the global key length
    sh = gen.man.Shape.from_buffer_copy(args[5])
    assert (sh.Sq, sh.Skv) == (1, 38) and abs(sh.scale - 0.125) < 1e-9


def test_layers_of_one_forward_share_buffers_and_tile_map(tf, mtf, maskc_bin, cache_dir, monkeypatch):
    """Gemma 3's mask with images (a window or-ed with bidirectional image
    blocks) takes the pre-pass: the layers of one forward, which get the
    same MaskInfo, run it once (the first layer's tile map) on one set of
    buffer tensors; the next forward's MaskInfo makes its own."""
    _, mu = tf
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    ft.install(monkeypatch)
    import maskc.torch  # noqa: F401 (registers the ops on the stand-in torch)
    from maskc import launcher
    drv = StubDriver()
    launches = drv.launches
    monkeypatch.setattr(launcher, "_libs", lambda: (drv, StubNVRTC()))
    # the int32 [B, KV] tensor the kernel reads, made anew at each conversion
    monkeypatch.setattr(mtf, "_fit", lambda t, n, fill: ft.Tensor((2, n), ft.int32))
    blk = Grid([[0, 0, 1, 1, 1, 0, 2, 2] * 8, [0] * 64])
    fn = mu.or_masks(mu.sliding_window_causal_mask_function(3), mu.blockwise_overlay(blk))
    q, k = bhsd(2, 8, 64), bhsd(2, 2, 64)
    for forward in range(2):
        info = info_for(mtf, mu, 2, 64, 64, fn=fn)
        for layer in range(3):
            mtf.attention_forward(Module(layer_idx=layer), q, k, k, info, scaling=0.125)
        names = [f for f, _ in launches]
        assert names.count("maskc_tile_flags") == 1 and names.count("maskc_attn_fwd") == 3, names
        fwd_bufs = {a[6] for f, a in launches if f == "maskc_attn_fwd"}
        assert len(fwd_bufs) == 1  # one set of buffer tensors for the three layers
        launches.clear()


def test_register_fills_both_interfaces(tf, mtf):
    t, mu = tf
    assert mtf.register() == "maskc"
    assert t.AttentionInterface._global_mapping["maskc"] is mtf.attention_forward
    assert mu.AttentionMaskInterface._global_mapping["maskc"] is mtf.mask_interface


def test_prepared_mask_info_passes_mask_creation(tf, mtf):
    """generate() with a StaticCache hands create_causal_mask the MaskInfo
    it built ahead of the step: the preprocessing returns it as prepared
    (early exit), as it does a 4-D tensor, and reads every other mask as
    before; registering twice wraps once."""
    _, mu = tf
    seen = []

    def preprocess(config, input_embeds, attention_mask, cache_position, past_key_values, position_ids, layer_idx):
        seen.append(attention_mask)
        return False, attention_mask, None, 7, 0

    mu._preprocess_mask_arguments = preprocess
    mtf.register()
    mtf.register()
    wrapped = mu._preprocess_mask_arguments
    assert wrapped.__wrapped__ is preprocess
    info = mtf.MaskInfo("kv <= q", [], 1, 1, 8, q_offset=7)
    assert wrapped(None, None, info, None, None, None, None) == (True, info, None, None, None)
    assert wrapped(None, None, attention_mask=info, cache_position=None, past_key_values=None, position_ids=None,
                   layer_idx=None) == (True, info, None, None, None)
    assert wrapped(None, None, "2-D mask", None, None, None, None) == (False, "2-D mask", None, 7, 0)
    assert seen == [None, None, "2-D mask"]


def test_import_needs_neither_torch_nor_transformers():
    code = ("import sys, maskc.transformers; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; print('ok')")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_user_flex_maps_layer_types(tf, mtf, maskc_bin, cache_dir, monkeypatch, tmp_path):
    _, mu = tf
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    ft.install(monkeypatch)
    from conftest import EXAMPLES
    mtf.register(flex=os.path.join(EXAMPLES, "gpt_oss.flex"), blocks={"sliding_attention": "layer_0",
                                                                     "full_attention": "layer_1"})
    cfg = type("Cfg", (), {"layer_types": ["sliding_attention", "full_attention"]})()
    q = bhsd(1, 4, 16)
    info = info_for(mtf, mu, 1, 16, 16)
    assert mtf.plan_call(Module(layer_idx=0, config=cfg), q, q, q, info).block == "layer_0"
    assert mtf.plan_call(Module(layer_idx=1, config=cfg), q, q, q, info).block == "layer_1"
    packed = info_for(mtf, mu, 1, 16, 16, fn=mu.and_masks(mu.causal_mask_function, mu.packed_sequence_mask_function(
        Grid([[0] * 8 + [1] * 8]))))
    with pytest.raises(MaskcError, match=r"layer 1\): the model's mask reads doc"):
        mtf.plan_call(Module(layer_idx=1, config=cfg), q, q, q, packed)
    with pytest.raises(MaskcError, match="no attention block nope"):
        mtf.register(flex=os.path.join(EXAMPLES, "gpt_oss.flex"), blocks={"full_attention": "nope"})


def test_modernbert_table_gets_the_name(tf, mtf, monkeypatch):
    """A transformers whose ModernBERT calls its own attention table gets
    "maskc" added there; the window is ModernBERT's local_attention."""
    import types
    mb = types.ModuleType("transformers.models.modernbert.modeling_modernbert")
    mb.MODERNBERT_ATTENTION_FUNCTION = {"eager": None}
    mb.apply_rotary_pos_emb = lambda q, k, cos, sin: (q, k)
    pkg = types.ModuleType("transformers.models.modernbert")
    pkg.modeling_modernbert = mb
    models = types.ModuleType("transformers.models")
    models.modernbert = pkg
    for n, m in (("transformers.models", models), ("transformers.models.modernbert", pkg),
                 ("transformers.models.modernbert.modeling_modernbert", mb)):
        monkeypatch.setitem(sys.modules, n, m)
    mtf.register()
    assert callable(mb.MODERNBERT_ATTENTION_FUNCTION["maskc"])
    assert mtf.modernbert_window_expr((-1, -1)) is None
    assert mtf.modernbert_window_expr((64, 64)) == "(abs(q - kv) <= 64)"
    with pytest.raises(MaskcError, match="symmetric window"):
        mtf.modernbert_window_expr((64, 0))
