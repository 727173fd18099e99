"""Context parallelism's torch-free parts: the frame, the chunk layouts and
ring schedule, each pair's frame, and the LSE merge checked in float64
against softmax over the union of the key sets; and the torch launcher's
frame handling on the stand-in torch (the values reach MaskcBuffers, the
buffers are checked with the global sizes, other backends are refused)."""
import math
import os
import random

import pytest

import fake_torch as ft
from conftest import EXAMPLES
from maskc import abi
from maskc.cp import Frame, PyScalarOps, chunk_layout, merge_math, pair_frames, ring_schedule
from maskc.diagnostics import MaskcError

NEG_INF = float("-inf")


def test_frame_values_are_the_abi_order():
    f = Frame(q_offset=1, kv_offset=2, h_offset=3, q_total=4, kv_total=5, h_total=6)
    assert f.values() == [1, 2, 3, 4, 5, 6]
    assert list(Frame.__slots__) == list(abi.FRAME_FIELDS)
    assert Frame().values() == [0] * 6
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(MaskcError, match="want an int >= 0"):
            Frame(q_offset=bad)


@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
@pytest.mark.parametrize("world", [1, 2, 4])
def test_chunks_partition_the_sequence(layout, world):
    S = 64
    chunks = chunk_layout(S, world, layout)
    assert len(chunks) == world
    covered = sorted(p for rank in chunks for s, n in rank for p in range(s, s + n))
    assert covered == list(range(S))
    sizes = {sum(n for _, n in rank) for rank in chunks}
    assert sizes == {S // world}  # every rank holds the same number of positions


def test_zigzag_pairs_first_and_last_chunks():
    assert chunk_layout(16, 2, "zigzag") == [[(0, 4), (12, 4)], [(4, 4), (8, 4)]]
    assert chunk_layout(16, 4, "contiguous") == [[(0, 4)], [(4, 4)], [(8, 4)], [(12, 4)]]
    # causal work (kept pairs) per rank is balanced by zigzag, not by contiguous
    def causal_work(layout, world, S=64):
        return [sum(p + 1 for s, n in rank for p in range(s, s + n)) for rank in chunk_layout(S, world, layout)]
    assert len(set(causal_work("zigzag", 4))) == 1
    assert len(set(causal_work("contiguous", 4))) == 4


@pytest.mark.parametrize("S, world, layout, msg", [
    (10, 4, "contiguous", "does not split into 4 equal"),
    (12, 4, "zigzag", "does not split into 8 equal"),
    (16, 0, "contiguous", "world size"),
    (16, 2, "striped", "layout 'striped'"),
])
def test_chunk_layout_refuses(S, world, layout, msg):
    with pytest.raises(MaskcError, match=msg):
        chunk_layout(S, world, layout)


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_ring_schedule_visits_every_chunk_once(world):
    sched = ring_schedule(world)
    assert sched[0] == list(range(world))
    for r in range(world):
        assert sorted(step[r] for step in sched) == list(range(world))
    for i in range(1, world):  # step i's chunk is the one rank r-1 held at step i-1 (one rotation)
        assert sched[i] == [sched[i - 1][(r - 1) % world] for r in range(world)]


@pytest.mark.parametrize("layout", ["contiguous", "zigzag"])
def test_pair_frames_cover_every_global_pair_once(layout):
    S, world = 32, 4
    chunks = chunk_layout(S, world, layout)
    seen = set()
    for r in range(world):
        for owner in range(world):
            for (q0, q1), (k0, k1), fr in pair_frames(S, world, layout, r, owner, h_offset=2, h_total=8):
                assert (fr.q_total, fr.kv_total, fr.h_offset, fr.h_total) == (S, S, 2, 8)
                # local slice start -> the chunk's global start
                local_q = [p for s, n in chunks[r] for p in range(s, s + n)]
                local_k = [p for s, n in chunks[owner] for p in range(s, s + n)]
                assert local_q[q0] == fr.q_offset and local_k[k0] == fr.kv_offset
                for q in range(q0, q1):
                    for k in range(k0, k1):
                        g = (local_q[q], local_k[k])
                        assert g == (fr.q_offset + q - q0, fr.kv_offset + k - k0)
                        assert g not in seen
                        seen.add(g)
    assert len(seen) == S * S


def _partial(scores, values):
    """(lse, out) of softmax attention over the given keys, float64."""
    if not scores:
        return NEG_INF, float("nan")  # no key: the merge must not read out
    m = max(scores)
    z = sum(math.exp(s - m) for s in scores)
    return m + math.log(z), sum(math.exp(s - m) / z * v for s, v in zip(scores, values))


@pytest.mark.parametrize("seed", range(6))
def test_merge_equals_softmax_over_the_union(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    scores = [rng.uniform(-30, 30) * (10 if seed == 5 else 1) for _ in range(n)]
    values = [rng.uniform(-2, 2) for _ in range(n)]
    parts = rng.randint(1, 5)
    owner = [rng.randrange(parts) for _ in range(n)]
    lses, outs = [], []
    for p in range(parts):
        l, o = _partial([s for s, w in zip(scores, owner) if w == p], [v for v, w in zip(values, owner) if w == p])
        lses.append(l)
        outs.append(o)
    lse, out = merge_math(lses, outs, PyScalarOps)
    want_lse, want_out = _partial(scores, values)
    assert lse == pytest.approx(want_lse, rel=1e-12, abs=1e-12)
    assert out == pytest.approx(want_out, rel=1e-10, abs=1e-12)


def test_merge_of_fully_masked_rows():
    assert merge_math([NEG_INF, NEG_INF], [float("nan"), 0.0], PyScalarOps) == (NEG_INF, 0.0)
    lse, out = merge_math([NEG_INF, 1.5, NEG_INF], [float("nan"), 0.25, 7.0], PyScalarOps)
    assert (lse, out) == (1.5, 0.25)
    with pytest.raises(MaskcError, match="same number"):
        merge_math([0.0], [], PyScalarOps)


def test_merge_does_not_overflow():
    lse, out = merge_math([1000.0, 1000.0 + math.log(3)], [1.0, 2.0], PyScalarOps)
    assert lse == pytest.approx(1000.0 + math.log(4)) and out == pytest.approx(1.75)


# ---------------------------------------------------------------- the launcher's frame, on the stand-in torch

class FakeDriver:
    def __init__(self):
        self.calls = []

    def ensure_context(self, ordinal):
        return 1

    def load_module(self, image):
        return 7

    def function(self, mod, name):
        return 100 if name == "maskc_attn_fwd" else 200

    def set_max_dynamic_smem(self, f, n):
        pass

    def launch(self, f, grid, block, smem, stream, args, what=""):
        self.calls.append((f, [bytes(a) for a in args]))


class FakeNVRTC:
    def version(self):
        return "nvrtc-13.0"

    def compile(self, src, name, options):
        return b"CUBIN", ""


@pytest.fixture
def env(monkeypatch, maskc_bin, cache_dir):
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    ft.install(monkeypatch)
    import maskc.torch as mt
    from maskc import launcher
    drv = FakeDriver()
    monkeypatch.setattr(launcher, "_libs", lambda: (drv, FakeNVRTC()))
    return mt, drv


def test_frame_reaches_the_kernel_and_buffers_are_global(env):
    mt, drv = env
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    B, S, H, D = 1, 256, 4, 128
    q = ft.Tensor((B, S, H, D))
    doc = ft.Tensor((4 * S,), ft.int32)  # the whole sequence's document ids
    attn(q, q, q, buffers={"doc": doc}, frame=Frame(q_offset=3 * S, kv_offset=S, q_total=4 * S, kv_total=4 * S))
    (_, check), (_, args) = drv.calls  # the segments check, then the forward: the same buffers
    bufs = attn.generated().man.Buffers.from_buffer_copy(args[6])
    assert check[0] == args[6]
    assert [getattr(bufs, n) for n in abi.FRAME_FIELDS] == [3 * S, S, 0, 4 * S, 4 * S, 0]
    assert list(bufs.dim[0]) == [4 * S] + [1] * 7
    with pytest.raises(MaskcError, match=r"doc has shape \[256\]"):  # a local doc vector is refused
        attn(q, q, q, buffers={"doc": ft.Tensor((S,), ft.int32)},
             frame=Frame(q_offset=S, kv_offset=0, q_total=4 * S, kv_total=4 * S))
    # without a frame nothing changes: zeros, local sizes
    attn(q, q, q, buffers={"doc": ft.Tensor((S,), ft.int32)})
    bufs = attn.generated().man.Buffers.from_buffer_copy(drv.calls[-1][1][6])
    assert [getattr(bufs, n) for n in abi.FRAME_FIELDS] == [0] * 6


@pytest.mark.parametrize("frame, msg", [
    (Frame(q_offset=900, q_total=1000, kv_total=1000), "lie outside the attention"),
    (Frame(h_offset=1, h_total=8), "multiples of the group size"),
    ((1, 2), "want a maskc.cp.Frame or 6 non-negative ints"),
])
def test_bad_frames_raise_before_launch(env, frame, msg):
    mt, drv = env
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    q = ft.Tensor((1, 256, 4, 128))
    k = ft.Tensor((1, 256, 2, 128))
    with pytest.raises(MaskcError, match=msg):
        attn(q, k, k, buffers={"doc": ft.Tensor((1000,), ft.int32)}, frame=frame)
    assert not drv.calls


def test_a_frame_refuses_other_backends(env):
    mt, drv = env
    attn = mt.load(os.path.join(EXAMPLES, "causal.flex")).attention(
        mt.load(os.path.join(EXAMPLES, "causal.flex")).names[0])
    q = ft.Tensor((1, 128, 2, 128))
    fr = Frame(q_offset=128, q_total=256, kv_total=256)
    with pytest.raises(MaskcError, match="cannot run a slice"):
        attn(q, q, q, frame=fr, backend="sdpa")
    attn(q, q, q, frame=fr)  # auto: the generated kernel, never SDPA's local causal
    assert not [c for c in ft.rec.calls if c[0] == "sdpa"] and len(drv.calls) == 1


def test_the_ops_frame_has_no_default(env):
    """torch's dispatcher drops an argument equal to its default before
    autograd sees it, and the registered backward must return one gradient
    per argument kept: a defaulted frame=None made the backward's count
    wrong whenever no frame was passed. The frame is a required argument,
    and the op's backward returns one gradient per argument."""
    import inspect
    mt, drv = env
    for op in (mt.attn_fwd,):
        for p in ("frame", "tile_flags"):
            assert inspect.signature(op.fn).parameters[p].default is inspect.Parameter.empty
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    q = ft.Tensor((1, 256, 4, 128), requires_grad=True)
    args = (q, q, q, [ft.Tensor((256,), ft.int32)], None, attn.generated().key, "bshd", False, None, None)
    o, lse, flags = ft.ops.maskc.attn_fwd(*args)

    class Ctx:
        def save_for_backward(self, *ts):
            self.saved_tensors = ts
    ctx = Ctx()
    ft.ops.maskc.attn_fwd.setup(ctx, args, (o, lse, flags))
    assert len(ft.ops.maskc.attn_fwd.backward(ctx, ft.Tensor(q.shape, q.dtype), None, None)) == len(args)
