"""The MaskcTensorMaps of the forward (ABI 7) and the backward (ABI 8), through the launcher on the
stand-in torch: encoded by maskc.cuda.Driver over test_cuda's stand-in
libcuda where the kernel's launch on the device's platform says
tensor_maps, with exactly the dims, strides, boxes, dtype and swizzle of
MANIFEST.md; all zero (ok = 0) everywhere else, and where the driver
refuses an encoding or cannot encode: the kernel then copies by cp.async,
and the forward is launched all the same."""
import os
import sys

import pytest

import fake_torch as ft
from conftest import EXAMPLES
from test_cuda import FakeCuda, map_bytes
from test_torch_generated import env, launches, ptr  # noqa: F401  (env: the fake driver and NVRTC, a fixture)

SM90A = "nvidia-sm90a"

# bhsd, fp16: the maps' other layout and dtype
HALF_BHSD = """mask causal(b, h, q, kv) = q >= kv
attention half_layer {
    mask = causal
    layout = bhsd
    dtype = fp16
    head_dim = 128
}
"""


def block(mt, tmp_path, name):
    if name == "decoder":
        return mt.load(os.path.join(EXAMPLES, "causal.flex")).attention("decoder")
    p = tmp_path / "half.flex"
    p.write_text(HALF_BHSD)
    return mt.load(str(p)).attention("half_layer")


def forward_maps(drv, man):
    """The last launch, the forward: (its function, its MaskcTensorMaps)."""
    _, f, _, _, _, _, args = launches(drv)[-1]
    assert len(args[-1]) == 576
    return f, man.TensorMaps.from_buffer_copy(args[-1])


def qkv(layout, dtype, B, H, HKV, Sq, Skv, D, view):
    """q, k, v in layout; view: q is the bhsd view of bshd memory (its
    strides not those of a contiguous bhsd tensor)."""
    if layout == "bshd":
        return ft.Tensor((B, Sq, H, D), dtype), ft.Tensor((B, Skv, HKV, D), dtype), ft.Tensor((B, Skv, HKV, D), dtype)
    q = ft.Tensor((B, Sq, H, D), dtype).transpose(1, 2) if view else ft.Tensor((B, H, Sq, D), dtype)
    return q, ft.Tensor((B, HKV, Skv, D), dtype), ft.Tensor((B, HKV, Skv, D), dtype)


def seq_head_batch(t, layout):
    """The element strides of t's sequence, head and batch dimensions."""
    s = t.stride()
    return (s[1], s[2], s[0]) if layout == "bshd" else (s[2], s[1], s[0])


# (block, layout, dtype, CUtensorMapDataType, B, H, HKV, Sq, Skv, q a view)
CASES = [
    ("decoder", "bshd", ft.bfloat16, 9, 2, 8, 2, 300, 520, False),  # GQA, Sq != Skv
    ("decoder", "bshd", ft.bfloat16, 9, 1, 4, 4, 1000, 1000, False),
    ("half_layer", "bhsd", ft.float16, 6, 2, 6, 2, 520, 300, False),  # GQA
    ("half_layer", "bhsd", ft.float16, 6, 3, 4, 1, 257, 257, True),  # q's bhsd view of bshd memory, MQA
]


@pytest.mark.filterwarnings("ignore:block .* runs maskc's generated kernel")  # the plan's, where Sq != Skv
@pytest.mark.parametrize("name, layout, dtype, map_dtype, B, H, HKV, Sq, Skv, view", CASES)
def test_forward_encodes_q_k_v(env, tmp_path, name, layout, dtype, map_dtype, B, H, HKV, Sq, Skv, view):
    mt, drv, _ = env
    attn = block(mt, tmp_path, name)
    gen = attn.generated()
    man, spec = gen.man, gen.spec
    assert SM90A in spec.tensor_maps, "the generator no longer gives tensor_maps here: this test shows nothing"
    assert tuple(man.tensor_maps) == (64, 128, 3)
    D = spec.head_dim
    q, k, v = qkv(layout, dtype, B, H, HKV, Sq, Skv, D, view)
    attn(q, k, v, layout=layout, backend="generated")
    # the rows the launch gives: the forward's block_m, and the warp-specialized forward's key tile
    # (hipsrc.WSBlockN), not the launch's block_n
    block_m, block_n = spec.tensor_maps[SM90A]
    assert block_m == man.block_m
    assert block_n == (64 if D == 256 else 128) and block_n != spec.launch[SM90A][0]

    def want(t, seq, heads, rows):
        s = seq_head_batch(t, layout)
        return dict(aligned=True, dtype=map_dtype, rank=4, address=t.data_ptr(), dims=(D, seq, heads, B),
                    strides=(2 * s[0], 2 * s[1], 2 * s[2]), box=(64, rows, 1, 1), element_strides=(1, 1, 1, 1),
                    interleave=0, swizzle=3, l2_promotion=0, oob_fill=0)

    assert drv.cuda.encodes == [want(q, Sq, H, block_m), want(k, Skv, HKV, block_n), want(v, Skv, HKV, block_n)]
    if layout == "bshd":  # the strides spelled out once, as MANIFEST.md states them
        assert drv.cuda.encodes[0]["strides"] == (2 * H * D, 2 * D, 2 * Sq * H * D)
        assert drv.cuda.encodes[1]["strides"] == (2 * HKV * D, 2 * D, 2 * Skv * HKV * D)
    elif not view:
        assert drv.cuda.encodes[0]["strides"] == (2 * D, 2 * Sq * D, 2 * H * Sq * D)
    f, maps = forward_maps(drv, man)
    assert f == 100 and maps.ok == 1
    assert bytes(maps.q) == map_bytes(q.data_ptr(), block_m)
    assert bytes(maps.k) == map_bytes(k.data_ptr(), block_n) and bytes(maps.v) == map_bytes(v.data_ptr(), block_n)
    # the maps follow the call: a second call encodes its own tensors
    q2, k2, v2 = qkv(layout, dtype, B, H, HKV, Sq, Skv, D, view)
    attn(q2, k2, v2, layout=layout, backend="generated")
    assert [e["address"] for e in drv.cuda.encodes[3:]] == [q2.data_ptr(), k2.data_ptr(), v2.data_ptr()]
    assert bytes(forward_maps(drv, man)[1].q) == map_bytes(q2.data_ptr(), block_m)


def test_without_tensor_maps_the_maps_are_zero(env, tmp_path, monkeypatch):
    """A kernel whose launch does not say tensor_maps, the same kernel with
    the flag off, and a device whose platform's launch has no maps (sm_80):
    all zero, nothing encoded."""
    mt, drv, _ = env
    B, S, H, D = 1, 1000, 2, 128
    doc = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    assert SM90A not in doc.generated().spec.tensor_maps, "packed_layer reads maps now: this test shows nothing"
    q = ft.Tensor((B, S, H, D))
    doc(q, q, q, buffers={"doc": ft.Tensor((S,), ft.int32)}, backend="generated")
    f, maps = forward_maps(drv, doc.generated().man)
    assert f == 100 and bytes(maps) == bytes(576)

    dec = block(mt, tmp_path, "decoder")
    gen = dec.generated()
    monkeypatch.delitem(gen.spec.tensor_maps, SM90A)
    dec(q, q, q, backend="generated")
    assert bytes(forward_maps(drv, gen.man)[1]) == bytes(576)
    assert drv.cuda.encodes == []


def test_a_platform_without_maps_passes_zero(env, tmp_path, monkeypatch):
    mt, drv, _ = env
    monkeypatch.setattr(sys.modules["torch"].cuda, "get_device_capability", lambda i=0: (8, 0))
    dec = block(mt, tmp_path, "decoder")
    gen = dec.generated()
    assert gen.spec.tensor_maps == {SM90A: (128, 128)}
    q = ft.Tensor((2, 300, 4, 128))
    dec(q, q, q, backend="generated")
    assert gen._loaded[0][0].name == "nvidia"
    assert bytes(forward_maps(drv, gen.man)[1]) == bytes(576) and drv.cuda.encodes == []


@pytest.mark.parametrize("how, tried", [
    ("every encode fails", 1),  # the driver refuses Q's map: no more tried
    ("K's encode fails", 2),  # Q's was encoded, K's refused: none passed
    ("V's encode fails", 3),
    ("no cuTensorMapEncodeTiled", 0),  # a driver before CUDA 12
])
def test_a_refused_encoding_passes_zero_and_launches(env, tmp_path, how, tried):
    mt, drv, _ = env
    dec = block(mt, tmp_path, "decoder")
    q, k, v = qkv("bshd", ft.bfloat16, 2, 8, 2, 300, 300, 128, False)
    if how == "every encode fails":
        drv.cuda.fail["cuTensorMapEncodeTiled"] = 1  # CUDA_ERROR_INVALID_VALUE
    elif how == "K's encode fails":
        drv.cuda.fail_addresses[k.data_ptr()] = 1
    elif how == "V's encode fails":
        drv.cuda.fail_addresses[v.data_ptr()] = 1
    else:
        drv.cuda = FakeCuda(tensor_maps=False)
    out = dec(q, k, v, backend="generated")
    assert out.shape == q.shape
    assert len(drv.cuda.encodes) == tried
    (launch,) = launches(drv)  # the forward, launched all the same
    f, maps = forward_maps(drv, dec.generated().man)
    assert f == 100 and maps.ok == 0 and bytes(maps) == bytes(576)
    assert [ptr(a) for a in launch[6][:3]] == [q.data_ptr(), k.data_ptr(), v.data_ptr()]
    # the driver takes them again: the next call's maps are encoded
    drv.cuda = FakeCuda()
    dec(q, k, v, backend="generated")
    assert forward_maps(drv, dec.generated().man)[1].ok == 1 and len(drv.cuda.encodes) == 3


def test_tile_map_encodes_nothing(env, tmp_path, monkeypatch):
    """Attention.tile_map launches the pre-pass only (fwd_launches without
    its last launch): no map is encoded for a forward it never launches."""
    mt, drv, _ = env
    p = tmp_path / "odd.flex"
    from test_torch_generated import ODD
    p.write_text(ODD)
    attn = mt.load(str(p)).attention("odd_layer")
    gen = attn.generated()
    monkeypatch.setitem(gen.spec.tensor_maps, SM90A, (128, 128))
    q, tab = ft.Tensor((2, 4, 300, 128), ft.float16), ft.Tensor((2, 300), ft.int32)
    tm = attn.tile_map(q, q, layout="bhsd", buffers={"tab": tab})
    assert tm.flags is not None and [c[1] for c in launches(drv)] == [200]
    assert drv.cuda.encodes == []
    attn(q, q, q, layout="bhsd", buffers={"tab": tab}, tile_map=tm, backend="generated")  # its forward does encode them
    assert len(drv.cuda.encodes) == 3 and forward_maps(drv, gen.man)[1].ok == 1


@pytest.mark.parametrize("layout, dtype, map_dtype", [("bshd", ft.bfloat16, 9), ("bhsd", ft.float16, 6)])
def test_backward_encodes_q_do_k_v(env, tmp_path, layout, dtype, map_dtype):
    """The warp-specialized backward's maps (ABI 8): its bwd_launch on sm_90a
    gives tensor_maps (a step's rows of Q and dO, the kv tile's keys), and
    the launcher passes maskc_attn_bwd Q's, K's, V's and dO's maps encoded
    with exactly those boxes, dO with its own strides; the backward's other
    launches take no maps."""
    mt, drv, _ = env
    src = HALF_BHSD.replace("layout = bhsd", "layout = " + layout)
    src = src.replace("fp16", "bf16" if dtype is ft.bfloat16 else "fp16")
    p = tmp_path / "causal.flex"
    p.write_text(src)
    gen = mt.load(str(p)).attention("half_layer").generated()
    man, spec = gen.man, gen.spec
    bl = spec.bwd_launch[SM90A]
    assert bl.main_threads == 384 and bl.tensor_maps == (64, 128), "no warp-specialized backward: this test shows nothing"
    assert all(spec.bwd_launch[p].tensor_maps is None for p in spec.bwd_launch if p != SM90A)
    B, H, HKV, Sq, Skv, D = 2, 8, 2, 520, 520, 128
    q, k, v = qkv(layout, dtype, B, H, HKV, Sq, Skv, D, False)
    out, lse = gen.forward(q, k, v, [], None, layout)
    dout = qkv(layout, dtype, B, H, HKV, Sq, Skv, D, False)[0]
    n_enc, nfwd = len(drv.cuda.encodes), len(launches(drv))
    gen.backward(dout, None, q, k, v, out, lse, [], None, layout, False)
    q_rows, kv_rows = bl.tensor_maps

    def want(t, seq, heads, rows):
        s = seq_head_batch(t, layout)
        return dict(aligned=True, dtype=map_dtype, rank=4, address=t.data_ptr(), dims=(D, seq, heads, B),
                    strides=(2 * s[0], 2 * s[1], 2 * s[2]), box=(64, rows, 1, 1), element_strides=(1, 1, 1, 1),
                    interleave=0, swizzle=3, l2_promotion=0, oob_fill=0)

    assert drv.cuda.encodes[n_enc:] == [want(q, Sq, H, q_rows), want(k, Skv, HKV, kv_rows),
                                        want(v, Skv, HKV, kv_rows), want(dout, Sq, H, q_rows)]
    bw = launches(drv)[nfwd:]
    main = [c for c in bw if c[1] == 301]  # maskc_attn_bwd
    assert len(main) == 1
    maps = man.TensorMaps.from_buffer_copy(main[0][-1][-1])
    assert maps.ok == 1 and bytes(maps.q) == map_bytes(q.data_ptr(), q_rows)
    assert bytes(maps.dout) == map_bytes(dout.data_ptr(), q_rows) and bytes(maps.v) == map_bytes(v.data_ptr(), kv_rows)
