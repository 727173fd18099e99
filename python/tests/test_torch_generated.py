"""maskc.torch's generated-kernel launcher on a stand-in torch and driver:
the code object compiled and cached once, the launches' grids, block,
shared memory, stream and packed arguments, all read from maskc compile's
manifest; bad calls raise before any launch."""
import ctypes
import os
import struct
import sys

import pytest

import fake_torch as ft
from conftest import EXAMPLES, REPO
from maskc.diagnostics import MaskcError
from test_cuda import FakeCuda

ODD = """buffer tab: i32[B, KV]
mask odd(b, h, q, kv) = (q * kv + h + tab[b, kv]) % 7 != 3
attention odd_layer {
    mask = odd
    layout = bhsd
    dtype = fp16
    head_dim = 128
}
"""


def odd_block(mt, tmp_path, requires_grad=False):
    """ODD's pre-pass block loaded, a q of 2 x 4 x 300 x 128 (bhsd) and its
    tab buffer."""
    p = tmp_path / "odd.flex"
    p.write_text(ODD)
    attn = mt.load(str(p)).attention("odd_layer")
    return attn, ft.Tensor((2, 4, 300, 128), ft.float16, requires_grad=requires_grad), ft.Tensor((2, 300), ft.int32)


class FakeDriver:
    """Records the launcher's driver calls. Tensor maps are encoded by the
    real maskc.cuda.Driver over test_cuda's stand-in libcuda (self.cuda:
    its encodes, fail codes, or none of the symbol)."""

    def __init__(self):
        self.calls = []
        self.cuda = FakeCuda()

    def encode_tensor_map(self, *args, **kw):
        from maskc.cuda import Driver
        return Driver(self.cuda).encode_tensor_map(*args, **kw)

    def ensure_context(self, ordinal):
        self.calls.append(("context", ordinal))
        return 1

    def load_module(self, image):
        self.calls.append(("load", image))
        return 7

    def function(self, mod, name):
        self.calls.append(("function", name))
        return {"maskc_attn_fwd": 100, "maskc_tile_flags": 200, "maskc_attn_bwd_pre": 300, "maskc_attn_bwd": 301,
                "maskc_attn_bwd_dq": 302, "maskc_attn_bwd_dq_convert": 303, "maskc_attn_bwd_sink": 304,
                "maskc_attn_bwd_buf_convert": 305, "maskc_attn_bwd_ordered": 306, "maskc_seg_check": 106}[name]

    def set_max_dynamic_smem(self, f, n):
        self.calls.append(("smem", f, n))

    def launch(self, f, grid, block, smem, stream, args, what=""):
        self.calls.append(("launch", f, grid, block, smem, stream, [bytes(a) for a in args]))


class FakeNVRTC:
    def __init__(self):
        self.compiles = []

    def version(self):
        return "nvrtc-13.0"

    def compile(self, src, name, options):
        self.compiles.append((name, options))
        return b"CUBIN:" + name.encode(), ""


@pytest.fixture
def env(monkeypatch, maskc_bin, cache_dir):
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    ft.install(monkeypatch)
    import maskc.torch as mt
    from maskc import launcher
    drv, nv = FakeDriver(), FakeNVRTC()
    monkeypatch.setattr(launcher, "_libs", lambda: (drv, nv))
    return mt, drv, nv


def launches(drv):
    return [c for c in drv.calls if c[0] == "launch"]


def ptr(b):
    return struct.unpack("<Q", b)[0]


def test_document_block_launch(env):
    mt, drv, nv = env
    prog = mt.load(os.path.join(EXAMPLES, "document_causal.flex"))
    attn = prog.attention("packed_layer")
    B, S, H, HKV, D = 2, 1000, 8, 2, 128
    q, k, v = ft.Tensor((B, S, H, D)), ft.Tensor((B, S, HKV, D)), ft.Tensor((B, S, HKV, D))
    doc = ft.Tensor((S,), ft.int32)
    out = attn(q, k, v, buffers={"doc": doc})
    assert out.shape == q.shape
    ((name, opts),) = nv.compiles
    assert name == "packed_layer.hip" and opts == ["--gpu-architecture=sm_90a", "-std=c++17", "-DMASKC_NV_WGMMA=1"]
    assert os.path.isfile(os.path.join(prog.entry.directory, "packed_layer.nvidia-sm90a.sm_90a.nvrtc-13.0.cubin"))
    man = attn.generated().man
    block_n, threads, smem = man.kernel("packed_layer").launch["nvidia-sm90a"]
    assert ("smem", 100, smem) in drv.calls
    (_, cf, cgrid, cblock, csmem, cstream, cargs), (_, f, grid, block, got_smem, stream, args) = launches(drv)
    assert (cf, cgrid, cblock, csmem, cstream) == (106, (1, 1, 1), (threads, 1, 1), 0, ft.Stream.cuda_stream)
    assert cargs == [args[6]]  # the segments check reads the forward's buffers and status words
    assert (f, grid, block, got_smem, stream) == (100, (8, H, B), (threads, 1, 1), smem, ft.Stream.cuda_stream)
    assert [ptr(a) for a in args[:4]] == [q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()]
    sh = man.Shape.from_buffer_copy(args[5])
    assert (sh.B, sh.H, sh.HKV, sh.Sq, sh.Skv) == (B, H, HKV, S, S)
    assert list(sh.q_stride) == [S * H * D, D, H * D] and list(sh.k_stride) == [S * HKV * D, D, HKV * D]
    assert abs(sh.scale - 1 / D ** 0.5) < 1e-7 and not sh.sink and not sh.tile_flags
    bufs = man.Buffers.from_buffer_copy(args[6])
    assert bufs.ptr[0] == doc.data_ptr() and list(bufs.dim[0]) == [S] + [1] * 7
    # A second call reuses the loaded module; a new program reuses the cubin.
    attn(q, k, v, buffers={"doc": doc})
    assert len([c for c in drv.calls if c[0] == "load"]) == 1 and len(launches(drv)) == 4
    again = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    again(q, k, v, buffers={"doc": doc})
    assert len(nv.compiles) == 1


def test_prepass_block_launches_flags_first(env, tmp_path):
    mt, drv, nv = env
    attn, q, tab = odd_block(mt, tmp_path)
    B, H, S, D = q.shape
    attn(q, q, q, buffers={"tab": tab})
    (_, ff, fgrid, fblock, fsmem, _, fargs), (_, f, grid, _, _, _, args) = launches(drv)
    man = attn.generated().man
    block_n, threads, _ = man.kernel("odd_layer").launch["nvidia-sm90a"]
    nkt = -(-S // block_n)
    assert (ff, fgrid, fblock, fsmem) == (200, (nkt, 3, 1), (threads, 1, 1), 0)
    assert (f, grid) == (100, (3, H, B))
    sh = man.Shape.from_buffer_copy(args[5])
    assert sh.tile_flags and sh.tile_flags == ptr(fargs[2])
    assert list(sh.q_stride) == [H * S * D, S * D, D]  # bhsd
    flags = attn.generated()._flags
    ((_, t),) = flags.items()
    assert t.shape == (B * H * 3 * nkt,)  # the mask reads b and h


def test_prepass_backward_reads_the_forwards_flags(env, tmp_path):
    """Through the op, the forward writes the tile flags into a tensor of
    its own, its third output, and the backward reads them: no second
    pre-pass, and every backward kernel's tile_flags is the forward's."""
    mt, drv, nv = env
    attn, q, tab = odd_block(mt, tmp_path, requires_grad=True)
    B, H, S, D = q.shape
    attn(q, q, q, buffers={"tab": tab})
    (_, ff, _, _, _, _, fargs), _ = launches(drv)
    _, _, flags = ft.ops.maskc.attn_fwd.last
    gen = attn.generated()
    block_n = gen.spec.launch["nvidia-sm90a"][0]
    assert flags.dtype is ft.uint8 and flags.shape == (B * H * 3 * -(-S // block_n),)
    assert flags.shape[0] == gen.flag_count(q, q, "bhsd")  # what the op's fake returns
    assert ff == 200 and ptr(fargs[2]) == flags.data_ptr()
    assert not gen._flags  # not the cached buffer of inference calls
    nfwd = len(launches(drv))
    backward_through_op(attn, q, q, q, [tab])
    bw = launches(drv)[nfwd:]
    assert [c[1] for c in bw] == [300, 301, 303]
    bsh = gen.man.BwdShape.from_buffer_copy(bw[1][6][6])
    assert bsh.tile_flags == flags.data_ptr()


def test_tile_map_spares_the_prepass(env, tmp_path):
    """Attention.tile_map runs the pre-pass once, into flags of its own; a
    call given the map launches only the forward, on those flags, and its
    backward reads them too. Another shape, another buffer tensor or a
    buffer written since is refused before any launch."""
    mt, drv, nv = env
    attn, q, tab = odd_block(mt, tmp_path)
    B, H, S, D = q.shape
    tm = attn.tile_map(q, q, layout="bhsd", buffers={"tab": tab})
    ((_, ff, _, _, _, _, fargs),) = launches(drv)
    assert ff == 200 and ptr(fargs[2]) == tm.flags.data_ptr() and tm.flags.dtype is ft.uint8
    gen = attn.generated()
    assert tm.flags.shape == (gen.flag_count(q, q, "bhsd"),)
    for grad in (False, True):
        n = len(launches(drv))
        qq = ft.Tensor((B, H, S, D), ft.float16, requires_grad=grad)
        attn(qq, qq, qq, layout="bhsd", buffers={"tab": tab}, tile_map=tm)
        ((_, f, _, _, _, _, args),) = launches(drv)[n:]
        assert f == 100 and gen.man.Shape.from_buffer_copy(args[5]).tile_flags == tm.flags.data_ptr()
    _, _, kept = ft.ops.maskc.attn_fwd.last
    assert kept.shape == (0,)  # the op ran no pre-pass: its backward reads the map's flags
    n = len(launches(drv))
    backward_through_op(attn, qq, qq, qq, [tab])
    bw = launches(drv)[n:]
    assert [c[1] for c in bw] == [300, 301, 303]
    assert gen.man.BwdShape.from_buffer_copy(bw[1][6][6]).tile_flags == tm.flags.data_ptr()
    n = len(launches(drv))
    q2 = ft.Tensor((B, H, S + 1, D), ft.float16)
    with pytest.raises(MaskcError, match="tile_map was made for sizes B=2 H=4 HKV=4 Sq=300 Skv=300"):
        attn(q2, q2, q2, layout="bhsd", buffers={"tab": ft.Tensor((B, S + 1), ft.int32)}, tile_map=tm)
    with pytest.raises(MaskcError, match="buffer tab is another tensor"):
        attn(q, q, q, layout="bhsd", buffers={"tab": ft.Tensor((B, S), ft.int32)}, tile_map=tm)
    tab.zero_()
    with pytest.raises(MaskcError, match="buffer tab was written after tile_map was made"):
        attn(q, q, q, layout="bhsd", buffers={"tab": tab}, tile_map=tm)
    assert len(launches(drv)) == n
    # a block without a pre-pass: no map (its kernel's tile list is computed in the kernel)
    doc = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    qd = ft.Tensor((1, 1000, 2, 128))
    n = len(launches(drv))
    assert doc.tile_map(qd, qd, buffers={"doc": ft.Tensor((1000,), ft.int32)}) is None
    assert len(launches(drv)) == n
    # a map of another block
    p2 = tmp_path / "odd2.flex"
    p2.write_text(ODD.replace("% 7 != 3", "% 5 != 3"))
    other = mt.load(str(p2)).attention("odd_layer")
    tab2 = ft.Tensor((B, S), ft.int32)
    with pytest.raises(MaskcError, match="odd_layer: tile_map was made for .*odd_layer"):
        other(q, q, q, layout="bhsd", buffers={"tab": tab2}, tile_map=attn.tile_map(q, q, "bhsd", {"tab": tab2}))


def test_tile_map_is_not_read_under_compile(env, tmp_path, monkeypatch):
    """Under torch.compile a tile map is not read (its checks read version
    counters, which dynamo cannot trace; device run 44a): the compiled call
    runs its own pre-pass through the op."""
    mt, drv, nv = env
    attn, q, tab = odd_block(mt, tmp_path)
    tm = attn.tile_map(q, q, layout="bhsd", buffers={"tab": tab})
    n = len(launches(drv))
    monkeypatch.setattr(sys.modules["torch"].compiler, "is_compiling", lambda: True)
    tab.zero_()  # a map that would be refused: not even checked
    attn(q, q, q, layout="bhsd", buffers={"tab": tab}, tile_map=tm)
    assert [c[1] for c in launches(drv)[n:]] == [200, 100]
    assert ft.ops.maskc.attn_fwd.last[2].shape[0] > 0  # its own flags, for its backward


def test_prepass_backward_keeps_its_own_block_size(env, tmp_path):
    """Without the forward's flags (maskc.cp's ring calls the launcher's
    backward itself), the backward of a pre-pass block rewrites the tile
    flags with the forward's block size (256 threads on sm_90a) between its
    row pre-pass and its main kernel, which take the backward's (128): the
    H200 run found the main kernel launched with the flag kernel's 256
    threads (CUDA_ERROR_INVALID_VALUE)."""
    mt, drv, nv = env
    attn, q, tab = odd_block(mt, tmp_path)
    B, H, S, D = q.shape
    gen = attn.generated()
    out, lse = gen.forward(q, q, q, [tab], None, "bhsd")
    nfwd = len(launches(drv))
    gen.backward(ft.Tensor(q.shape, q.dtype), None, q, q, q, out, lse, [tab], None, "bhsd", False)
    bw = launches(drv)[nfwd:]
    spec = gen.spec
    fwd_block_n, fwd_threads, _ = spec.launch["nvidia-sm90a"]
    bl = spec.bwd_launch["nvidia-sm90a"]
    assert fwd_threads != bl.threads  # else this test shows nothing
    assert [(c[1], c[3][0]) for c in bw] == [(300, bl.threads), (200, fwd_threads), (301, bl.main_threads),
                                            (303, bl.threads)]
    assert bw[1][2] == (-(-S // fwd_block_n), 3, 1)


def test_sink_is_cast_and_passed(env):
    mt, drv, nv = env
    attn = mt.load(os.path.join(EXAMPLES, "gpt_oss.flex")).attention("layer_1")
    q = ft.Tensor((1, 64, 4, 64))
    sinks = ft.Tensor((4,), ft.bfloat16)
    attn(q, q, q, buffers={"sinks": sinks})
    ((_, _, _, _, _, _, args),) = launches(drv)
    sh = attn.generated().man.Shape.from_buffer_copy(args[5])
    assert sh.sink and sh.sink != sinks.data_ptr()  # a float32 copy


@pytest.mark.parametrize("bufs, msg", [
    ({}, "buffer doc is missing"),
    ({"doc": ft.Tensor((999,), ft.int32)}, r"doc has shape \[999\]"),
    ({"doc": ft.Tensor((1000,), ft.int64)}, "doc is i64"),
    ({"doc": ft.Tensor((1000,), ft.int32), "x": ft.Tensor((1,))}, "does not read x"),
])
def test_bad_buffers_raise_before_launch(env, bufs, msg):
    mt, drv, nv = env
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    q = ft.Tensor((1, 1000, 2, 128))
    with pytest.raises(MaskcError, match=msg):
        attn(q, q, q, buffers=bufs)
    assert not launches(drv) and not nv.compiles


class Ctx:
    def save_for_backward(self, *ts):
        self.saved_tensors = ts


def backward_through_op(attn, q, k, v, buffers, dlse=None):
    """Runs the op's registered setup_context and backward as autograd
    would after the forward call that was just made, on that call's
    outputs; the backward's launches are the driver calls after the
    forward's."""
    op = ft.ops.maskc.attn_fwd
    ((_, _, args),) = [c for c in ft.rec.calls if c[0] == "op"][-1:]
    o, lse, flags = op.last
    ctx = Ctx()
    op.setup(ctx, args, (o, lse, flags))
    grads = op.backward(ctx, ft.Tensor(q.shape, q.dtype), dlse, None)
    assert len(grads) == len(args)  # torch checks: one gradient per input the op was called with
    return ctx, grads, o, lse


@pytest.mark.parametrize("deterministic", [False, True])
@pytest.mark.parametrize("ordered", [False, True])
def test_backward_launches_from_the_manifest(env, deterministic, ordered):
    """The backward's launches as the manifest says: deterministic dQ by
    maskc_attn_bwd_dq, or, where the kernel's bwd_launch says dq_ordered
    (genkernels -bwd-dq-order; set here on the loaded descriptor), added in
    order by maskc_attn_bwd with dq_sem and converted as in atomic mode."""
    mt, drv, nv = env
    layer = "local_512_layer"  # a short window: the 64 x 64 tiles
    attn = mt.load(os.path.join(EXAMPLES, "sliding_window.flex")).attention(layer)
    if ordered:
        spec = attn.generated().spec
        spec.bwd_launch["nvidia-sm90a"] = spec.bwd_launch["nvidia-sm90a"]._replace(dq_ordered=True)
        spec.bwd_entries.insert(spec.bwd_entries.index("maskc_attn_bwd") + 1, "maskc_attn_bwd_ordered")
    B, S, H, HKV, D = 2, 1000, 8, 2, 128
    q = ft.Tensor((B, S, H, D), requires_grad=True)
    k, v = ft.Tensor((B, S, HKV, D), requires_grad=True), ft.Tensor((B, S, HKV, D), requires_grad=True)
    attn(q, k, v, deterministic=deterministic)
    assert [c[1] for c in ft.rec.calls if c[0] == "op"] == ["maskc::attn_fwd"]
    nfwd = len(launches(drv))
    ctx, grads, o, lse = backward_through_op(attn, q, k, v, [])
    dq, dk, dv, dbufs, dsink = grads[:5]
    assert (dq.shape, dk.shape, dv.shape, dbufs, dsink) == (q.shape, k.shape, v.shape, [], None)
    spec = attn.generated().spec
    assert (layer + ".bwd.hip", ["--gpu-architecture=sm_90a", "-std=c++17", "-DMASKC_NV_WGMMA=1"]) \
        in nv.compiles
    bw = launches(drv)[nfwd:]
    bl = spec.bwd_launch["nvidia-sm90a"]
    assert bl.dq_ordered == ordered
    dq_kernel = deterministic and not bl.dq_ordered
    main_kernel = 306 if deterministic and ordered else 301  # maskc_attn_bwd_ordered, maskc_attn_bwd
    dqf = (302, (-(-S // 64), H, B)) if dq_kernel else (303, (-(-S // 8), H, B))
    assert [(c[1], c[2]) for c in bw] == [(300, (-(-S // 8), H, B)), (main_kernel, (-(-S // bl.block_n), HKV, B)), dqf]
    assert [c[3][0] for c in bw] == [bl.threads, bl.main_threads, bl.threads] == [128, 128, 128]
    smem = bl.shared_mem_bytes
    assert bw[1][4] == smem > 48 * 1024 and ("smem", main_kernel, smem) in drv.calls
    assert bw[2][4] == (bl.dq_shared_mem_bytes if dq_kernel else 0)
    man = attn.generated().man
    sh = man.BwdShape.from_buffer_copy(bw[1][6][6])
    assert (sh.B, sh.H, sh.HKV, sh.Sq, sh.Skv) == (B, H, HKV, S, S)
    assert list(sh.dq_stride) == [S * H * D, D, H * D] and list(sh.dk_stride) == [S * HKV * D, D, HKV * D]
    assert sh.lse == lse.data_ptr() and not sh.dlse and sh.delta and not sh.dsink and not any(sh.dbuf)
    assert bool(sh.dq_acc) != dq_kernel and bool(sh.dq_sem) == (deterministic and bl.dq_ordered)
    assert [ptr(a) for a in bw[1][6][:6]] == [q.data_ptr(), k.data_ptr(), v.data_ptr(), ptr(bw[0][6][1]),
                                               dk.data_ptr(), dv.data_ptr()]
    assert ptr(bw[0][6][0]) == o.data_ptr()


def test_status_words_in_every_launch(env):
    """The kernel's status words: zeroed once per device, the same pointer in
    the forward's and the backward's MaskcBuffers, word 0 read by status()
    and cleared by reset_status()."""
    mt, drv, nv = env
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    B, S, H, HKV, D = 1, 500, 4, 2, 128
    q = ft.Tensor((B, S, H, D), requires_grad=True)
    k, v = ft.Tensor((B, S, HKV, D), requires_grad=True), ft.Tensor((B, S, HKV, D), requires_grad=True)
    doc = ft.Tensor((S,), ft.int32)
    assert attn.status() == 0  # nothing loaded, nothing recorded
    attn(q, k, v, buffers={"doc": doc})
    gen = attn.generated()
    ((key, words),) = gen._status.items()
    assert key == (0, ft.Stream.cuda_stream) and words.shape == (gen.man.status_words,) and words.dtype is ft.int32
    assert ("zeros", gen.man.status_words) in ft.rec.calls
    backward_through_op(attn, q, k, v, [doc])
    man = gen.man
    seen = []
    for c in launches(drv):
        for a in c[6]:
            if len(a) == ctypes.sizeof(man.Buffers):
                seen.append(man.Buffers.from_buffer_copy(a).status)
    # the segments check and the forward, then the check and the main kernel of the backward
    assert len(seen) == 4 and set(seen) == {words.data_ptr()}
    fwd_block_n, fwd_threads, _ = man.kernel("packed_layer").launch["nvidia-sm90a"]
    assert [(c[1], c[2], c[3]) for c in launches(drv)][:2] == [(106, (1, 1, 1), (fwd_threads, 1, 1)),
                                                              (100, (-(-S // 128), H, B), (fwd_threads, 1, 1))]
    assert [c[1] for c in launches(drv)][2:4] == [106, 300]  # the backward checks first too
    words.value = man.status_bits["segments_unsorted"]
    assert attn.status() == 1 and attn.status("cuda:0") == 1
    attn.reset_status()
    assert attn.status() == 0 and ("zero", words.data_ptr()) in ft.rec.calls
    assert len(gen._status) == 1  # one set of words per device, not per call


def test_backward_tiles_per_platform(env):
    """The backward's tiles come from the kernel's bwd_launch for the platform:
    at head dim 128 the MFMA kernels take 32 query rows (gfx90a and gfx942's
    64 KiB of LDS), the NVIDIA ones 64."""
    mt, drv, nv = env
    attn = mt.load(os.path.join(EXAMPLES, "sliding_window.flex")).attention("local_512_layer")
    gen = attn.generated()
    man, spec = gen.man, gen.spec
    sizes = dict(B=2, H=8, HKV=2, Sq=1000, Skv=1000)
    dq = man.bwd_entries["maskc_attn_bwd_dq"]
    amd, sm90 = man.platform("amd"), man.platform("nvidia-sm90a")
    tiles_amd = man.bwd_tiles(spec, amd)
    assert tiles_amd == dict(bwd_block_m=32, bwd_block_n=64, bwd_pre_rows=16, bwd_threads=256)
    assert dq.grid_dims(sizes, tiles=tiles_amd) == (32, 8, 2)
    assert dq.grid_dims(sizes, tiles=man.bwd_tiles(spec, sm90)) == (16, 8, 2)
    assert spec.bwd_launch["amd"] == (32, 64, 256, 57600, 256, 57600, False, None)
    assert spec.bwd_launch["nvidia-sm90a"] == (64, 64, 128, 82432, 128, 82432, False, None)
    del spec.bwd_launch["amd"]
    with pytest.raises(MaskcError, match="no backward launch for platform amd"):
        man.bwd_tiles(spec, amd)


def test_unmasked_backward_is_warp_specialized(env):
    """Attention without a mask (T5's bias; codegen's bwdChoice): on sm_90a at
    head dim 128 the main kernel is the warp-specialized one (a producer and
    two consumer warpgroups, 384 threads) on 128 keys with its own shared
    memory (K, V, two Q and dO stages, two dS^T buffers), deterministic
    mode's maskc_attn_bwd_ordered the same launch (dq_ordered), the dQ kernel
    one warpgroup with less; the other platforms keep their tiles."""
    mt, drv, nv = env
    gen = mt.load(os.path.join(EXAMPLES, "t5_bias.flex")).attention("t5_encoder").generated()
    spec = gen.spec
    sm90 = spec.bwd_launch["nvidia-sm90a"]
    smem = 2 * (2 * 128 * 128 + 4 * 64 * 128 + 2 * 128 * 64)
    assert sm90 == (64, 128, 128, smem, 384, 82432, True, (64, 128))  # tensor_maps: a step's rows, the kv tile
    assert sm90.entry("maskc_attn_bwd") == (384, smem) and sm90.entry("maskc_attn_bwd_dq") == (128, 82432)
    assert sm90.entry("maskc_attn_bwd_ordered") == (384, smem) and sm90.ordered(True) and not sm90.ordered(False)
    assert sm90.entry("maskc_attn_bwd_pre") == (128, 0)
    assert spec.bwd_launch["amd"] == (32, 64, 256, 57600, 256, 57600, False, None)
    sizes = dict(B=2, H=8, HKV=2, Sq=1000, Skv=1000)
    main = gen.man.bwd_entries["maskc_attn_bwd"]
    assert main.grid_dims(sizes, tiles=gen.man.bwd_tiles(spec, gen.man.platform("nvidia-sm90a"))) == (8, 2, 2)


def test_head_dim_256_forward_and_backward(env):
    """Head dim 256 (Gemma's softcapped attention): the forward takes the
    kernel's own launch (196,608 bytes of shared memory on sm_90a), the
    backward on sm_90a two warpgroups on 64 x 64 tiles split by the head dim
    (AMD: 32 x 32 tiles)."""
    mt, drv, nv = env
    attn = mt.load(os.path.join(REPO, "gpu", "bwd_cases", "softcap_d256.flex")).attention("softcap_d256")
    B, S, H, HKV, D = 1, 1000, 4, 4, 256
    q = ft.Tensor((B, S, H, D), requires_grad=True)
    k, v = ft.Tensor((B, S, HKV, D), requires_grad=True), ft.Tensor((B, S, HKV, D), requires_grad=True)
    attn(q, k, v)
    spec = attn.generated().spec
    block_n, threads, smem = spec.launch["nvidia-sm90a"]
    assert (spec.head_dim, block_n, threads, smem) == (256, 64, 256, 196608)
    ((_, f, grid, block, got_smem, _, _),) = launches(drv)
    assert (grid, block, got_smem) == ((8, H, B), (256, 1, 1), 196608)
    with pytest.raises(MaskcError, match="built for head_dim = 256"):
        attn(ft.Tensor((B, S, H, 128)), ft.Tensor((B, S, HKV, 128)), ft.Tensor((B, S, HKV, 128)))
    nfwd = len(launches(drv))
    backward_through_op(attn, q, k, v, [])
    bw = launches(drv)[nfwd:]
    assert [c[2] for c in bw][1] == (-(-S // 64), HKV, B) and bw[1][3] == (256, 1, 1) and bw[1][4] == 156160
    assert spec.bwd_launch["nvidia-sm90a"] == (64, 64, 128, 156160, 256, 107008, False, None)
    assert spec.bwd_launch["amd"] == (32, 32, 256, 53504, 256, 53504, False, None)


def test_backward_buffer_gradient_and_dlse(env):
    mt, drv, nv = env
    attn = mt.load(os.path.join(EXAMPLES, "relative_bias.flex")).attention("biased_layer")
    B, S, H, D = 1, 300, 4, 128
    q = ft.Tensor((B, S, H, D), requires_grad=True)
    bias = ft.Tensor((H, 2 * S - 1), ft.float32, requires_grad=True)
    attn(q, q, q, buffers={"bias": bias})
    nfwd = len(launches(drv))
    dlse = ft.Tensor((B, H, S), ft.float32)
    ctx, grads, _, _ = backward_through_op(attn, q, q, q, [bias], dlse)
    assert ctx.want == 1
    (dbias,) = grads[3]
    assert dbias.shape == bias.shape and dbias.dtype is ft.float32
    bw = launches(drv)[nfwd:]
    assert [c[1] for c in bw] == [300, 301, 303, 305]
    sh = attn.generated().man.BwdShape.from_buffer_copy(bw[1][6][6])
    assert sh.dlse == dlse.data_ptr() and sh.dbuf[0] and not any(sh.dbuf[1:])
    acc, out, n = bw[3][6]
    assert (ptr(acc), ptr(n), bw[3][2]) == (sh.dbuf[0], H * (2 * S - 1), (-(-H * (2 * S - 1) // 128), 1, 1))
    # int64 sums zeroed before the kernels add into them
    assert ("zeros", H * (2 * S - 1)) in ft.rec.calls
    # the bias not requiring grad: no conversion launched, no gradient returned
    bias.requires_grad = False
    attn(q, q, q, buffers={"bias": bias})
    nfwd = len(launches(drv))
    ctx, grads, _, _ = backward_through_op(attn, q, q, q, [bias])
    assert ctx.want == 0 and grads[3] == [None] and [c[1] for c in launches(drv)[nfwd:]] == [300, 301, 303]


def test_backward_sink_gradient(env):
    mt, drv, nv = env
    attn = mt.load(os.path.join(EXAMPLES, "gpt_oss.flex")).attention("layer_1")
    q = ft.Tensor((1, 64, 4, 64), requires_grad=True)
    sinks = ft.Tensor((4,), ft.float32, requires_grad=True)
    attn(q, q, q, buffers={"sinks": sinks})
    nfwd = len(launches(drv))
    ctx, grads, _, _ = backward_through_op(attn, q, q, q, [])
    assert ctx.want == 1 << 8 and grads[4].shape == (4,)
    bw = launches(drv)[nfwd:]
    assert [c[1] for c in bw] == [300, 301, 303, 304] and bw[3][2] == (4, 1, 1)
    sh = attn.generated().man.BwdShape.from_buffer_copy(bw[3][6][0])
    assert sh.dsink == grads[4].data_ptr() and sh.sink


def test_prepare_builds_every_kernel_once(env):
    mt, drv, nv = env
    prog = mt.load(os.path.join(EXAMPLES, "gpt_oss.flex")).prepare()
    # forward and backward of every block, so that neither the first step nor its backward compiles
    want = sorted(["layer_%d.hip" % i for i in range(4)] + ["layer_%d.bwd.hip" % i for i in range(4)])
    assert sorted(n for n, _ in nv.compiles) == want
    assert len([c for c in drv.calls if c[0] == "load"]) == 8
    q = ft.Tensor((1, 64, 4, 64))
    prog.attention("layer_2")(q, q, q, buffers={"sinks": ft.Tensor((4,), ft.float32)})
    assert len(nv.compiles) == 8 and len([c for c in drv.calls if c[0] == "load"]) == 8


def test_segments_check_is_opt_in(env, monkeypatch):
    # MASKC_CHECK_SEGMENTS=1 runs checks.check_segments on the segments
    # buffers before the launch; unset, contents are never read.
    mt, drv, nv = env
    import maskc.checks as checks
    seen = []
    monkeypatch.setattr(checks, "first_decrease", lambda t: seen.append(t) or 1)
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    q, doc = ft.Tensor((1, 1000, 2, 128)), ft.Tensor((1000,), ft.int32)
    attn(q, q, q, buffers={"doc": doc})
    assert not seen and [c[1] for c in launches(drv)] == [106, 100]  # the device check and the forward
    monkeypatch.setenv("MASKC_CHECK_SEGMENTS", "1")
    monkeypatch.setattr(checks, "first_decrease", lambda t: seen.append(t))
    attn(q, q, q, buffers={"doc": doc})
    assert seen == [doc] and len(launches(drv)) == 4
    monkeypatch.setattr(checks, "first_decrease", lambda t: 1)
    monkeypatch.setattr(ft.Tensor, "reshape", lambda self, *s: [5, 4], raising=False)
    with pytest.raises(MaskcError, match="segments buffer doc: element 1 \\(4\\) is smaller than element 0 \\(5\\)"):
        attn(q, q, q, buffers={"doc": doc})
    assert len(launches(drv)) == 4


MOBA3 = """buffer sel: i32[H, 16, 4]
mask moba(b, h, q, kv) = kv <= q and (q // 128 == kv // 128 or sel[h, q // 128, 0] == kv // 128 or sel[h, q // 128, 3] == kv // 128)
attention moba {
    mask = moba
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
"""


def test_nd_buffer_fill_and_bounds(env, tmp_path):
    # A 3-D buffer (issue 27): its three extents, outermost first, then 1s,
    # in MaskcBuffers.dim; a tensor of another shape, and a call at whose
    # sizes a read falls outside the second dimension, raise before launch.
    mt, drv, nv = env
    p = tmp_path / "moba3.flex"
    p.write_text(MOBA3)
    attn = mt.load(str(p)).attention("moba")
    B, H, S, D = 1, 2, 2048, 128
    q = ft.Tensor((B, H, S, D), ft.bfloat16)
    sel = ft.Tensor((H, 16, 4), ft.int32)
    attn(q, q, q, buffers={"sel": sel})
    (_, f, _, _, _, _, args), = [c for c in launches(drv) if c[1] == 100]
    bufs = attn.generated().man.Buffers.from_buffer_copy(args[6])
    assert bufs.ptr[0] == sel.data_ptr() and list(bufs.dim[0]) == [H, 16, 4, 1, 1, 1, 1, 1]
    n = len(launches(drv))
    with pytest.raises(MaskcError, match=r"buffer sel has shape \[2, 64\]; declared \[H, 16, 4\] is \[2, 16, 4\]"):
        attn(q, q, q, buffers={"sel": ft.Tensor((H, 64), ft.int32)})
    q2 = ft.Tensor((B, H, 2 * S, D), ft.bfloat16)
    with pytest.raises(MaskcError, match=r"moba3.flex:2:\d+: sel\[h, q // 128, 0\] reads sel outside its extents: "
                                         r"index in dimension 1 0..31 at .* sel is declared \[H, 16, 4\] = 16 there"):
        attn(q2, q2, q2, buffers={"sel": sel})
    assert len(launches(drv)) == n
