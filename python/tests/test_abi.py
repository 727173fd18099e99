"""The ABI manifest read into ctypes structs, grids and argument lists.

testdata/manifest_v8.json is a manifest written by the hipsrc package
(genkernels over examples and a prepass mask: version 4's, whose kernels[]
keys versions 5 to 7 kept (it has no bwd_launch, which 6 and 7 changed),
with the manifest version field of 7, MaskcBuffers of ABI 6 (5's:
dim[8][8]; 6 changed MaskcBwdShape only), and ABI 8's MaskcTensorMaps
(7's with dout), maskc_attn_fwd's maps and abi.tensor_maps, as hipsrc
writes them, with launch["nvidia-sm90a"].tensor_maps on odd_layer and
packed_layer);
test_launch_plan reads the binary's own output too."""
import copy
import ctypes
import json
import os
import struct

import pytest

from maskc.abi import Manifest, pick_platform
from maskc.diagnostics import MaskcError

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def doc():
    with open(os.path.join(HERE, "testdata", "manifest_v8.json")) as f:
        return json.load(f)


def test_structs_match_the_manifest_layout(doc):
    m = Manifest(doc)
    shape = {s["name"]: s for s in doc["abi"]["structs"]}["MaskcShape"]
    assert ctypes.sizeof(m.Shape) == shape["size"] and ctypes.sizeof(m.Buffers) == 632
    for f in shape["fields"]:
        assert getattr(m.Shape, f["name"]).offset == f["offset"]


def test_pack_puts_values_at_the_manifest_offsets(doc):
    m = Manifest(doc)
    spec = m.kernel("biased_layer")
    sizes = dict(B=2, H=16, HKV=2, Sq=1000, Skv=700)
    strides = dict(q=(1, 2, 3), k=(4, 5, 6), v=(7, 8, 9), o=(10, 11, 12))
    sh, bufs = m.pack(spec, sizes, strides, 0.125, 0xdead0, 0, [(0xbeef00, [16, 1699])])
    raw = bytes(sh)
    off = {f["name"]: f["offset"] for s in doc["abi"]["structs"] if s["name"] == "MaskcShape" for f in s["fields"]}
    assert struct.unpack_from("<5i", raw, off["B"]) == (2, 16, 2, 1000, 700)
    assert struct.unpack_from("<3q", raw, off["k_stride"]) == (4, 5, 6)
    assert struct.unpack_from("<3q", raw, off["o_stride"]) == (10, 11, 12)
    assert struct.unpack_from("<f", raw, off["scale"]) == (0.125,)
    assert struct.unpack_from("<QQ", raw, off["sink"]) == (0xdead0, 0)
    rb = bytes(bufs)
    assert struct.unpack_from("<Q", rb, 0) == (0xbeef00,)
    assert struct.unpack_from("<2q", rb, 64) == (16, 1699)
    boff = {f["name"]: f["offset"] for s in doc["abi"]["structs"] if s["name"] == "MaskcBuffers" for f in s["fields"]}
    assert struct.unpack_from("<6q", rb, boff["q_offset"]) == (0,) * 6  # no frame: the whole attention
    assert struct.unpack_from("<Q", rb, boff["status"]) == (0,)  # no status words: the kernel records nothing


def test_status_words_come_from_the_manifest(doc):
    m = Manifest(doc)
    assert m.status_words == 1 + m.max_buffers == 9
    assert m.status_bits == {"segments_unsorted": 1, "read_out_of_range": 2}
    z = dict(q=(0,) * 3, k=(0,) * 3, v=(0,) * 3, o=(0,) * 3)
    _, bufs = m.pack(m.kernel("packed_layer"), dict(B=1, H=2, HKV=2, Sq=5, Skv=5), z, 1.0, 0, 0, [(64, [5])],
                     status=0x5000)
    boff = {f["name"]: f["offset"] for s in doc["abi"]["structs"] if s["name"] == "MaskcBuffers" for f in s["fields"]}
    assert boff["status"] == ctypes.sizeof(m.Buffers) - 8
    assert struct.unpack_from("<Q", bytes(bufs), boff["status"]) == (0x5000,)
    bad = copy.deepcopy(doc)
    bad["abi"]["status"]["words"] = 4
    with pytest.raises(MaskcError, match="4 status words"):
        Manifest(bad)
    del bad["abi"]["status"]
    with pytest.raises(MaskcError, match="malformed"):
        Manifest(bad)


def test_pack_writes_the_position_frame(doc):
    m = Manifest(doc)
    spec = m.kernel("packed_layer")
    z = dict(q=(0,) * 3, k=(0,) * 3, v=(0,) * 3, o=(0,) * 3)
    _, bufs = m.pack(spec, dict(B=1, H=2, HKV=2, Sq=5, Skv=5), z, 1.0, 0, 0, [(64, [20])],
                     frame=(10, 5, 2, 20, 20, 8))
    boff = {f["name"]: f["offset"] for s in doc["abi"]["structs"] if s["name"] == "MaskcBuffers" for f in s["fields"]}
    got = [struct.unpack_from("<q", bytes(bufs), boff[n])[0] for n in
           ("q_offset", "kv_offset", "h_offset", "q_total", "kv_total", "h_total")]
    assert got == [10, 5, 2, 20, 20, 8]
    with pytest.raises(MaskcError, match="six|has 6 values"):
        m.pack(spec, dict(B=1, H=2, HKV=2, Sq=5, Skv=5), z, 1.0, 0, 0, [(64, [20])], frame=(1, 2))


def test_pack_one_dim_buffer_second_extent_is_one(doc):
    m = Manifest(doc)
    spec = m.kernel("packed_layer")
    _, bufs = m.pack(spec, dict(B=1, H=1, HKV=1, Sq=5, Skv=5), dict(q=(0,) * 3, k=(0,) * 3, v=(0,) * 3, o=(0,) * 3),
                     1.0, 0, 0, [(64, [5])])
    assert list(bufs.dim[0]) == [5, 1, 1, 1, 1, 1, 1, 1]
    with pytest.raises(MaskcError, match="takes 1 buffers, got 0"):
        m.pack(spec, dict(B=1, H=1, HKV=1, Sq=5, Skv=5), dict(q=(0,) * 3, k=(0,) * 3, v=(0,) * 3, o=(0,) * 3),
               1.0, 0, 0, [])


@pytest.mark.parametrize("ext", [[5], [2, 3], [4, 3, 2], [2, 16, 64, 4], [2] * 8])
def test_pack_nd_extents(doc, ext):
    # Every rank up to max_buffer_rank: the extents outermost first, then 1s,
    # at the manifest's offset of dim[slot].
    m = Manifest(doc)
    assert m.max_rank == 8
    spec = m.kernel("packed_layer")
    z = dict(q=(0,) * 3, k=(0,) * 3, v=(0,) * 3, o=(0,) * 3)
    _, bufs = m.pack(spec, dict(B=1, H=1, HKV=1, Sq=5, Skv=5), z, 1.0, 0, 0, [(64, ext)])
    want = list(ext) + [1] * (8 - len(ext))
    assert list(bufs.dim[0]) == want
    off = {f["name"]: f["offset"] for s in doc["abi"]["structs"] if s["name"] == "MaskcBuffers" for f in s["fields"]}["dim"]
    assert list(struct.unpack_from("<8q", bytes(bufs), off)) == want


def test_pack_refuses_more_extents_than_the_abi_holds(doc):
    m = Manifest(doc)
    z = dict(q=(0,) * 3, k=(0,) * 3, v=(0,) * 3, o=(0,) * 3)
    with pytest.raises(MaskcError, match="has 9 extents; MaskcBuffers holds 0 to 8"):
        m.pack(m.kernel("packed_layer"), dict(B=1, H=1, HKV=1, Sq=5, Skv=5), z, 1.0, 0, 0, [(64, [2] * 9)])


def test_grids_and_flags(doc):
    m = Manifest(doc)
    sizes = dict(B=2, H=16, HKV=2, Sq=1000, Skv=700)
    assert m.entries["maskc_attn_fwd"].grid_dims(sizes, m.block_m, 64) == (8, 16, 2)
    assert m.entries["maskc_tile_flags"].grid_dims(sizes, m.block_m, 64) == (11, 8, 1)
    odd = m.kernel("odd_layer")
    assert (odd.flags_entry, odd.dtype, odd.layout) == ("maskc_tile_flags", "f16", "bhsd")
    assert odd.flag_bytes(sizes, 64) == 2 * 16 * 8 * 11  # the mask reads b and h
    assert m.kernel("packed_layer").flag_bytes(sizes, 32) == 8 * 22


def test_sink_and_buffers(doc):
    m = Manifest(doc)
    assert m.kernel("layer_0").sink == "sinks" and m.kernel("layer_0").buffers == []
    (b,) = m.kernel("packed_layer").buffers
    assert (b.name, b.slot, b.dtype, b.dims, b.segments) == ("doc", 0, "i32", ["KV"], True)


@pytest.mark.parametrize("backend, arch, want", [
    ("cuda", "sm_90", "nvidia-sm90a"), ("cuda", "sm_80", "nvidia"), ("cuda", "sm_100", "nvidia"),
    ("hip", "gfx942", "amd"),
])
def test_pick_platform(doc, backend, arch, want):
    assert pick_platform(Manifest(doc).platforms, backend, arch).name == want


def test_platform_options(doc):
    m = Manifest(doc)
    assert m.platform("nvidia-sm90a").nvrtc_options("sm_90") == [
        "--gpu-architecture=sm_90a", "-std=c++17", "-DMASKC_NV_WGMMA=1"]
    assert m.platform("nvidia").nvrtc_options("sm_80", ["-lineinfo"]) == [
        "--gpu-architecture=sm_80", "-std=c++17", "-lineinfo"]
    with pytest.raises(MaskcError, match="no platform 'tpu'"):
        m.platform("tpu")


def test_args_by_parameter_name(doc):
    m = Manifest(doc)
    fwd = m.entries["maskc_attn_fwd"]
    sh, bufs = m.Shape(), m.Buffers()
    maps = m.pack_maps()
    args = fwd.args(dict(Q=16, K=32, V=48, O=64, LSE=80, shape=sh, buf=bufs, maps=maps), m.structs)
    assert [a.value for a in args[:5]] == [16, 32, 48, 64, 80] and args[5] is sh and args[6] is bufs
    assert args[7] is maps and len(args) == 8  # ABI 7: the maps are the last parameter
    with pytest.raises(MaskcError, match="no value for parameter LSE"):
        fwd.args(dict(Q=16, K=32, V=48, O=64, shape=sh, buf=bufs, maps=maps), m.structs)
    with pytest.raises(MaskcError, match="no value for parameter maps"):
        fwd.args(dict(Q=16, K=32, V=48, O=64, LSE=80, shape=sh, buf=bufs), m.structs)
    with pytest.raises(MaskcError, match="wants a MaskcShape"):
        fwd.args(dict(Q=16, K=32, V=48, O=64, LSE=80, shape=bufs, buf=bufs, maps=maps), m.structs)
    with pytest.raises(MaskcError, match="maps wants a MaskcTensorMaps"):
        fwd.args(dict(Q=16, K=32, V=48, O=64, LSE=80, shape=sh, buf=bufs, maps=sh), m.structs)


def edit(doc, what):
    d = copy.deepcopy(doc)
    shape = d["abi"]["structs"][0]
    if what == "version":
        d["version"] = 4  # an older maskc's manifest (a compile cache entry it wrote)
    elif what == "abi version":
        d["abi"]["version"] = 4  # an older maskc's kernels: MaskcBuffers.dim[8][2]
    elif what == "offset":
        shape["fields"][5]["offset"] += 8
    elif what == "unknown field":
        shape["fields"].append({"name": "window", "c_type": "int", "offset": 144, "size": 4})
    elif what == "missing field":
        del shape["fields"][-1]
        shape["size"] = 136
    elif what == "c_type":
        shape["fields"][0]["c_type"] = "short"
    elif what == "grid":
        d["abi"]["entries"][0]["grid"][0]["size"] = "D"
    elif what == "slots":
        d["kernels"][0]["buffers"][0]["slot"] = 3
    elif what == "entry":
        d["kernels"][0]["entry"] = "maskc_attn_fwd2"
    elif what == "key":
        del d["abi"]["block_m"]
    return d


@pytest.mark.parametrize("what, msg", [
    ("version", "has version 4; this package reads version 7 .*delete the compile cache entry"),
    ("abi version", "kernel ABI 4; this package fills ABI 8"), ("offset", "q_stride is at offset 32"), ("unknown field", "MaskcShape.window"),
    ("missing field", "lacks tile_flags"), ("c_type", "'short'"), ("grid", "D/block_m"),
    ("slots", "slots \\[3\\]"), ("entry", "maskc_attn_fwd2"), ("key", "malformed"),
])
def test_manifest_changes_are_refused(doc, what, msg):
    with pytest.raises(MaskcError, match=msg):
        Manifest(edit(doc, what))


@pytest.mark.parametrize("dims, sq, skv, want", [
    (["KV"], 100, 300, True), (["KV"], 300, 100, False), (["KV"], 200, 200, True),
    (["Q"], 300, 100, True), (["Q"], 100, 300, False),
    (["H", "(Q + KV) - 1"], 300, 100, True), (["H", "(Q + KV) - 1"], 100, 300, True),
    (["H"], 300, 100, True), (["B"], 100, 300, True), (["H", "32"], 300, 100, True),
    (["QKV"], 300, 100, True),  # a name that only contains the letters is no length
])
def test_buffer_covers_shapes(dims, sq, skv, want):
    from maskc.abi import BufferSpec
    assert BufferSpec("t", 0, "i32", dims).covers(sq, skv) is want


def test_a_new_descriptor_fact_needs_no_edit_here(doc):
    """A per-kernel fact the descriptor (hipsrc.KernelDesc) gains is an
    attribute of KernelSpec, and the plan's kernel, under its JSON name,
    with no change to this package; a name the descriptor lacks is an
    AttributeError, never a silent None."""
    from maskc.plan import Plan
    d = copy.deepcopy(doc)
    d["kernels"][0]["mask_uses_q"] = True  # a fact this package has never heard of
    m = Manifest(d)
    spec = m.kernels[d["kernels"][0]["attention"]]
    assert spec.mask_uses_q is True and spec.mask_torch == d["kernels"][0]["mask_torch"]
    with pytest.raises(AttributeError, match="no 'mask_uses_r'"):
        spec.mask_uses_r
    plan = Plan({"version": 2, "attentions": [{"name": spec.attention, "pattern": "generated", "entry": "maskc_generated",
                                               "kernel": spec.name}]}, m.descriptors)
    assert plan.attention(spec.attention).kernel["mask_uses_q"] is True


@pytest.mark.parametrize("ordered", [False, True])
@pytest.mark.parametrize("deterministic", [False, True])
def test_bwd_dq_scratch_per_mode(deterministic, ordered):
    """dq_acc where the main kernel adds dQ (atomic mode, or deterministic
    mode with dq_ordered), dq_sem (one counter per BWD_SEM_ROWS query rows,
    rounded up) only where it adds them in order."""
    from maskc.abi import BWD_SEM_ROWS, BwdLaunch
    bl = BwdLaunch(64, 64, 128, 82432, 128, 82432, ordered)
    acc, sem = bl.dq_scratch(deterministic, 2, 8, 17, 128)
    assert acc == ((2, 8, 17, 128) if not deterministic or ordered else None)
    assert sem == ((2, 8, 2) if deterministic and ordered else None)
    assert BWD_SEM_ROWS == 16


def test_bwd_sem_rows_is_the_kernels():
    """BWD_SEM_ROWS mirrors the kernel's MASKC_BWD_SEM_ROWS (hipsrc/attn_bwd.h,
    which the Go runtime's hipsrc.BwdSemRows mirrors too)."""
    import re
    from maskc.abi import BWD_SEM_ROWS
    with open(os.path.join(HERE, "..", "..", "hipsrc", "attn_bwd.h")) as f:
        m = re.search(r"^#define MASKC_BWD_SEM_ROWS (\d+)$", f.read(), re.M)
    assert m is not None and int(m.group(1)) == BWD_SEM_ROWS


def tensor_maps_struct(doc):
    return next(s for s in doc["abi"]["structs"] if s["name"] == "MaskcTensorMaps")


def test_tensor_maps_struct_matches_the_manifest(doc):
    """MaskcTensorMaps (alignas(64) in C): every field at the manifest's
    offset and size, 576 bytes with the tail padding C adds; ctypes' own
    alignment (4) stands for the declared 64, and pack_maps writes the
    maps and ok where the kernel reads them."""
    m = Manifest(doc)
    desc = tensor_maps_struct(doc)
    assert (desc["size"], desc["align"]) == (576, 64)
    assert ctypes.sizeof(m.TensorMaps) == 576 == len(bytes(m.TensorMaps()))
    assert ctypes.alignment(m.TensorMaps) < 64  # what the relaxed check accepts
    want = {"q": (0, 128), "k": (128, 128), "v": (256, 128), "dout": (384, 128), "ok": (512, 4)}
    assert {f["name"]: (f["offset"], f["size"]) for f in desc["fields"]} == want
    for name, (off, size) in want.items():
        assert (getattr(m.TensorMaps, name).offset, getattr(m.TensorMaps, name).size) == (off, size)
    assert m.structs["MaskcTensorMaps"] is m.TensorMaps
    assert bytes(m.pack_maps()) == bytes(576)  # no maps: all zero, ok = 0
    enc = {n: bytes([i + 1]) * 128 for i, n in enumerate("qkv")}
    raw = bytes(m.pack_maps(enc))  # the forward's: dout zero
    assert raw[0:128] == enc["q"] and raw[128:256] == enc["k"] and raw[256:384] == enc["v"]
    assert raw[384:512] == bytes(128) and struct.unpack_from("<i", raw, 512) == (1,) and raw[516:] == bytes(60)
    raw = bytes(m.pack_maps(dict(enc, dout=bytes([9]) * 128)))  # the backward's
    assert raw[0:384] == enc["q"] + enc["k"] + enc["v"] and raw[384:512] == bytes([9]) * 128
    assert struct.unpack_from("<i", raw, 512) == (1,)
    with pytest.raises(MaskcError, match="tensor map of K is 64 bytes; a CUtensorMap is 128"):
        m.pack_maps(dict(enc, k=bytes(64)))


def edit_maps(doc, what):
    d = copy.deepcopy(doc)
    tm = tensor_maps_struct(d)
    fields = {f["name"]: f for f in tm["fields"]}
    if what == "ok offset":
        fields["ok"]["offset"] = 516
    elif what == "k offset":
        fields["k"]["offset"] = 136
    elif what == "size":
        tm["size"] = 640  # more than alignas(64) pads
    elif what == "align":
        tm["align"] = 32  # 516 rounds to 544, not the 576 stated
    elif what == "under-aligned":
        tm["align"], tm["size"] = 2, 516  # below the members' own alignment
    elif what == "map size":
        for n in ("q", "k", "v", "dout"):
            fields[n]["dims"], fields[n]["size"] = [64], 64
        fields["k"]["offset"], fields["v"]["offset"], fields["dout"]["offset"], fields["ok"]["offset"] = 64, 128, 192, 256
        tm["size"] = 320
    elif what == "unknown field":
        fields["ok"]["name"] = "valid"
    elif what == "no struct":
        d["abi"]["structs"].remove(tm)
    elif what == "swizzle":
        d["abi"]["tensor_maps"]["swizzle_bytes"] = 256
    elif what == "rows":
        k = next(k for k in d["kernels"] if k["launch"]["nvidia-sm90a"].get("tensor_maps"))
        k["launch"]["nvidia-sm90a"]["tensor_maps"]["kv_rows"] = 0
    elif what == "box":
        d["abi"]["tensor_maps"]["box_cols"] = 0
    elif what == "launch flag":
        d["kernels"][0]["launch"]["nvidia-sm90a"]["tensor_maps"] = "yes"
    elif what == "dtype":
        k = next(k for k in d["kernels"] if k["launch"]["nvidia-sm90a"].get("tensor_maps"))
        k["dtype"] = "f32"
    return d


@pytest.mark.parametrize("what, msg", [
    ("ok offset", "MaskcTensorMaps.ok is at offset 516, size 4; this host lays it out at 512, 4"),
    ("k offset", "MaskcTensorMaps.k is at offset 136"),
    ("size", "MaskcTensorMaps is 640 bytes \\(align 64\\); this host makes it 516"),
    ("align", "MaskcTensorMaps is 576 bytes \\(align 32\\); this host makes it 516"),
    ("under-aligned", "MaskcTensorMaps is 516 bytes \\(align 2\\); this host makes it 516 \\(align 4\\)"),
    ("map size", "MaskcTensorMaps.q is 64 bytes; a CUtensorMap is 128"),
    ("unknown field", "MaskcTensorMaps.valid is a field this package does not know"),
    ("no struct", "malformed: KeyError 'MaskcTensorMaps'"),
    ("swizzle", "swizzle_bytes is 256; this package encodes swizzles of 32, 64, 128 bytes"),
    ("rows", "tensor_maps .*'kv_rows': 0.*want \\{q_rows, kv_rows\\}"), ("box", "box_cols is 0"),
    ("launch flag", "tensor_maps .*'yes'"), ("dtype", "of dtype f32 reads tensor maps"),
])
def test_tensor_maps_changes_are_refused(doc, what, msg):
    with pytest.raises(MaskcError, match=msg):
        Manifest(edit_maps(doc, what))


def test_tensor_maps_launch_flag_and_abi_section(doc):
    m = Manifest(doc)
    assert tuple(m.tensor_maps) == (64, 128, 3)  # CU_TENSOR_MAP_SWIZZLE_128B = 3
    assert m.kernel("packed_layer").tensor_maps == {"nvidia-sm90a": (128, 128)}
    assert m.kernel("odd_layer").tensor_maps == {"nvidia-sm90a": (256, 128)}
    assert m.kernel("biased_layer").tensor_maps == {}


def packed(m, spec, sizes, strides):
    sh, _ = m.pack(spec, sizes, strides, 1.0, 0, 0, [(64, [sizes["Skv"]])] * len(spec.buffers))
    return sh


# (kernel, sizes, element strides (batch, head, seq) of q and of k and v, the launch's q_rows and kv_rows
# (not its block_n, 64), dtype)
REQUEST_CASES = [
    # packed_layer: bf16 bshd, GQA (H 8 over HKV 2), Sq != Skv
    ("packed_layer", dict(B=2, H=8, HKV=2, Sq=300, Skv=520), (300 * 8 * 128, 128, 8 * 128),
     (520 * 2 * 128, 128, 2 * 128), 128, 128, 9),
    # odd_layer: f16 bhsd
    ("odd_layer", dict(B=3, H=4, HKV=4, Sq=1000, Skv=1000), (4 * 1000 * 128, 1000 * 128, 128),
     (4 * 1000 * 128, 1000 * 128, 128), 256, 128, 6),
]


@pytest.mark.parametrize("name, sizes, qs, kvs, block_m, block_n, dtype", REQUEST_CASES)
def test_tensor_map_requests(doc, name, sizes, qs, kvs, block_m, block_n, dtype):  # block_m, block_n: the rows
    """Three 4-D maps, innermost first: Q (D, Sq, H, B), K and V (D, Skv,
    HKV, B); byte strides of the (seq, head, batch) element strides; boxes
    of 64 columns x the launch's q_rows (Q) or kv_rows (K, V); the kernel's dtype;
    128-byte swizzle; nothing else."""
    m = Manifest(doc)
    spec = m.kernel(name)
    vs = tuple(2 * x for x in kvs)  # V laid out unlike K: its own strides
    sh = packed(m, spec, sizes, dict(q=qs, k=kvs, v=vs, o=qs))
    B, H, HKV, Sq, Skv = (sizes[n] for n in ("B", "H", "HKV", "Sq", "Skv"))
    common = dict(dtype=dtype, element_strides=(1, 1, 1, 1), interleave=0, swizzle=3, l2_promotion=0, oob_fill=0)
    want = [
        ("q", dict(common, address=0x1000, dims=(128, Sq, H, B), strides=(2 * qs[2], 2 * qs[1], 2 * qs[0]),
                   box=(64, block_m, 1, 1))),
        ("k", dict(common, address=0x2000, dims=(128, Skv, HKV, B), strides=(2 * kvs[2], 2 * kvs[1], 2 * kvs[0]),
                   box=(64, block_n, 1, 1))),
        ("v", dict(common, address=0x3000, dims=(128, Skv, HKV, B), strides=(2 * vs[2], 2 * vs[1], 2 * vs[0]),
                   box=(64, block_n, 1, 1))),
    ]
    ptrs = dict(Q=0x1000, K=0x2000, V=0x3000, O=0x4000, LSE=0x5000)
    assert m.tensor_map_requests(spec, "nvidia-sm90a", sh, ptrs) == want
    # platforms whose launch reads no maps, and empty problems: nothing to encode
    assert m.tensor_map_requests(spec, "nvidia", sh, ptrs) is None
    for zero in ("Sq", "Skv", "B"):
        sh0 = packed(m, spec, dict(sizes, **{zero: 0}), dict(q=qs, k=kvs, v=vs, o=qs))
        assert m.tensor_map_requests(spec, "nvidia-sm90a", sh0, ptrs) is None
    other = m.kernel("biased_layer")
    assert m.tensor_map_requests(other, "nvidia-sm90a", packed(m, other, sizes, dict(q=qs, k=kvs, v=vs, o=qs)),
                                 ptrs) is None
