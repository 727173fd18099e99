"""Argument checks on fake tensors: every rule raises before a launch."""
import os

import pytest

from conftest import dtype_name
from maskc.abi import BufferSpec
from maskc.checks import Sizes, check_buffers, check_qkv, eval_dims
from maskc.diagnostics import MaskcError

B, S, H, HKV, D = 2, 100, 8, 2, 128


def qkv(fake, layout="bshd", **kw):
    if layout == "bshd":
        return (fake((B, S, H, D), **kw), fake((B, S, HKV, D), **kw), fake((B, S, HKV, D), **kw))
    return (fake((B, H, S, D), **kw), fake((B, HKV, S, D), **kw), fake((B, HKV, S, D), **kw))


@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
def test_good_call_sizes(fake, layout):
    q, k, v = qkv(fake, layout)
    assert check_qkv(q, k, v, layout, D, "bf16", dtype_name) == Sizes(B, H, HKV, S, S, D)


def test_transposed_views_are_accepted(fake):
    # bhsd memory seen as bshd through a transpose: strides are what count.
    q, k, v = (t.transpose12() for t in qkv(fake, "bhsd"))
    assert check_qkv(q, k, v, "bshd", D, "bf16", dtype_name) == Sizes(B, H, HKV, S, S, D)


def bad(fake, what):
    q, k, v = qkv(fake)
    if what == "dtype":
        q = fake(q.shape, dtype="f16")
    elif what == "device":
        k = fake(k.shape, device="cpu")
    elif what == "two devices":
        v = fake(v.shape, device="cuda:1")
    elif what == "rank":
        q = fake((B, S, H * D))
    elif what == "head_dim":
        q, k, v = (fake(t.shape[:3] + (64,)) for t in (q, k, v))
    elif what == "k != v":
        v = fake((B, S + 1, HKV, D))
    elif what == "batch":
        k, v = fake((B + 1, S, HKV, D)), fake((B + 1, S, HKV, D))
    elif what == "gqa":
        k, v = fake((B, S, 3, D)), fake((B, S, 3, D))
    elif what == "last dim":
        q = fake(q.shape, strides=(S * H * D, H * D, 1, H * S * D))
    elif what == "stride":
        q = fake(q.shape, strides=(S * H * (D + 4), H * (D + 4), D + 4, 1))
    elif what == "align":
        q = fake(q.shape, ptr=4098)
    elif what == "layout":
        return q, k, v, "sbhd"
    return q, k, v, "bshd"


@pytest.mark.parametrize("what, msg", [
    ("dtype", "q is f16; the block computes in bf16"),
    ("device", "k is on cpu"),
    ("two devices", "different devices"),
    ("rank", "has 3 dimensions"),
    ("head_dim", "built for head_dim = 128"),
    ("k != v", "must be equal"),
    ("batch", "batch"),
    ("gqa", "multiple of the kv heads"),
    ("last dim", "contiguous there"),
    ("stride", "multiple of 8 elements"),
    ("align", "16-byte aligned"),
    ("layout", "layout='sbhd'"),
])
def test_bad_calls_raise(fake, what, msg):
    q, k, v, layout = bad(fake, what)
    with pytest.raises(MaskcError, match=msg.replace("(", r"\(").replace("[", r"\[")):
        check_qkv(q, k, v, layout, D, "bf16", dtype_name)


@pytest.mark.parametrize("dims, want", [
    (["H"], [8]), (["H", "Q + KV - 1"], [8, 99 + 50 - 1]), (["B", "KV"], [2, 50]),
    (["(Q + 7) // 8"], [13]), (["KV % 7"], [1]), (["-Q + 2 * KV"], [1]),
])
def test_eval_dims(dims, want):
    assert eval_dims(dims, Sizes(2, 8, 2, 99, 50, 128)) == want


@pytest.mark.parametrize("dims, msg", [
    (["WINDOW"], "names WINDOW"), (["Q / 2"], "not an integer expression"), (["Q //"], "not an expression"),
    (["Q // (KV - KV)"], "divides by zero"), (["__import__('os')"], "not an integer expression"),
])
def test_eval_dims_rejects(dims, msg):
    with pytest.raises(MaskcError, match=msg):
        eval_dims(dims, Sizes(2, 8, 2, 99, 50, 128))


SPECS = [BufferSpec("doc", 0, "i32", ["KV"], segments=True), BufferSpec("bias", 1, "f32", ["H", "Q + KV - 1"])]
SIZES = Sizes(2, 8, 2, 99, 50, 128)


def test_buffers_in_slot_order(fake):
    doc, bias = fake((50,), "i32"), fake((8, 148), "f32")
    got = check_buffers(SPECS, {"bias": bias, "doc": doc}, SIZES, "cuda:0", dtype_name)
    assert [t for t, _ in got] == [doc, bias] and [e for _, e in got] == [[50], [8, 148]]


@pytest.mark.parametrize("bufs, msg", [
    ({"bias": ((8, 148), "f32")}, "buffer doc .* is missing"),
    ({"doc": ((50,), "i32"), "bias": ((8, 148), "f32"), "extra": ((1,), "f32")}, "extra are not read"),
    ({"doc": ((50,), "i64"), "bias": ((8, 148), "f32")}, "doc is i64; it is declared i32"),
    ({"doc": ((50,), "i32"), "bias": ((8, 147), "f32")}, r"shape \[8, 147\]; declared \[H, Q \+ KV - 1\]"),
    ({"doc": ((50,), "i32", "cuda:1"), "bias": ((8, 148), "f32")}, "doc is on cuda:1"),
    ({"doc": ((50,), "i32"), "bias": ((8, 148), "f32", "cuda:0", (1, 8))}, "bias is not contiguous"),
])
def test_bad_buffers_raise(fake, bufs, msg):
    tensors = {}
    for name, spec in bufs.items():
        shape, dt = spec[0], spec[1]
        dev = spec[2] if len(spec) > 2 else "cuda:0"
        strides = spec[3] if len(spec) > 3 else None
        tensors[name] = fake(shape, dt, dev, strides)
    with pytest.raises(MaskcError, match=msg):
        check_buffers(SPECS, tensors, SIZES, "cuda:0", dtype_name)


def test_nonpositive_extent_raises(fake):
    spec = [BufferSpec("t", 0, "f32", ["Q - KV"])]
    with pytest.raises(MaskcError, match="extents must be positive"):
        check_buffers(spec, {"t": fake((0,), "f32")}, Sizes(1, 1, 1, 10, 10, 64), "cuda:0", dtype_name)


class _Ids:
    """A list-backed stand-in for an integer tensor: just what
    first_decrease and check_segments use."""

    def __init__(self, vals):
        self.vals = list(vals)

    def reshape(self, *shape):
        return self

    def numel(self):
        return len(self.vals)

    def __getitem__(self, i):
        return _Ids(self.vals[i]) if isinstance(i, slice) else self.vals[i]

    def __lt__(self, other):
        return _Ids([a < b for a, b in zip(self.vals, other.vals)])

    def nonzero(self):
        return _Ids([i for i, x in enumerate(self.vals) if x])


@pytest.mark.parametrize("ids,want", [([], None), ([7], None), ([0, 0, 1, 5, 5], None), ([0, 1, 0], 2),
                                      ([3, 2, 1], 1), ([-5, -5, -6], 2)])
def test_first_decrease(ids, want):
    from maskc.checks import first_decrease
    assert first_decrease(_Ids(ids)) == want


def test_check_segments(monkeypatch):
    from maskc.checks import check_segments, segments_check_enabled
    doc = BufferSpec("doc", 0, "i32", ["KV"], segments=True)
    bias = BufferSpec("bias", 1, "f32", ["H"])
    check_segments([doc, bias], [(_Ids([0, 0, 1, 1]), [4]), (_Ids([3.0, 1.0]), [2])])  # bias is not looked at
    with pytest.raises(MaskcError, match=r"segments buffer doc: element 2 \(0\) is smaller than element 1 \(1\): "
                                         r"document ids must not decrease"):
        check_segments([doc], [(_Ids([0, 1, 0, 1]), [4])])
    with pytest.raises(MaskcError, match="document ids need i32 or i64"):
        check_segments([BufferSpec("doc", 0, "f32", ["KV"], segments=True)], [(_Ids([0.0]), [1])])
    assert not segments_check_enabled({})
    assert segments_check_enabled({"MASKC_CHECK_SEGMENTS": "1"})
    assert not segments_check_enabled({"MASKC_CHECK_SEGMENTS": "0"})


def _real_torch():
    """The host's CPU torch (Debian python3-torch; .ci/run installs it)."""
    try:
        import torch
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("no torch on this host: varlen_documents runs torch ops")
    return torch


@pytest.mark.parametrize("rows, cu, maxlen, contiguous", [
    ([[0, 0, 1, 1, 1, 2]], [0, 2, 5, 6], 3, True),  # sorted
    ([[2, 2, 0, 1, 1, 1]], [0, 2, 3, 6], 3, True),  # shuffled order, distinct ids: still one run per document
    ([[0, 0, 1, 1, 0, 0]], [0, 2, 4, 6], 2, False),  # an id reused after another
    ([[0, 0, -1, 1, 1, -1]], [0, 2, 3, 5, 6], 2, False),  # -1 padding between and after documents
    ([[0, 1, 1], [0, 0, 1]], [0, 1, 3, 5, 6], 2, True),  # restarting per row of a [B, S] buffer
    ([[0, 1, 0], [0, 0, 1]], [0, 1, 2, 3, 5, 6], 2, False),  # restarting within a row
])
def test_varlen_documents(rows, cu, maxlen, contiguous):
    torch = _real_torch()
    from maskc.checks import varlen_documents
    doc = torch.tensor(rows, dtype=torch.int32)
    got_cu, got_max, got_contiguous = varlen_documents(doc, len(rows), len(rows[0]))
    assert got_cu.dtype == torch.int32 and got_cu.tolist() == cu
    assert (got_max, got_contiguous) == (maxlen, contiguous)
    if len(rows) == 1:  # a 1-D buffer shared by every batch element: the same runs per row
        got_cu, _, got_contiguous = varlen_documents(doc.reshape(-1), 2, len(rows[0]))
        assert got_cu.tolist() == cu[:-1] + [c + len(rows[0]) for c in cu] and got_contiguous == contiguous


# A 0-d buffer (a captured scalar tensor, `buffer offset: i32[]`) takes a
# 0-d tensor, and only that: its manifest dims are []. Floor-divided
# extents (a per-block table) evaluate as the Go launcher's do.
BLOCK_SPECS = [BufferSpec("offset", 0, "i32", []), BufferSpec("keep", 1, "bool", ["B", "H", "Q // 64", "(KV + 63) // 64"])]
BLOCK_SIZES = Sizes(1, 2, 2, 128, 130, 64)


def test_zero_d_and_block_table_buffers(fake):
    offset, keep = fake((), "i32"), fake((1, 2, 2, 3), "bool")
    got = check_buffers(BLOCK_SPECS, {"offset": offset, "keep": keep}, BLOCK_SIZES, "cuda:0", dtype_name)
    assert [e for _, e in got] == [[], [1, 2, 2, 3]]


@pytest.mark.parametrize("shape, msg", [
    ((1,), r"offset has shape \[1\]; it is declared 0-d, a scalar tensor"),
    ((1, 1), r"offset has shape \[1, 1\]; it is declared 0-d"),
])
def test_zero_d_buffer_takes_only_0d(fake, shape, msg):
    with pytest.raises(MaskcError, match=msg):
        check_buffers(BLOCK_SPECS, {"offset": fake(shape, "i32"), "keep": fake((1, 2, 2, 3), "bool")}, BLOCK_SIZES,
                      "cuda:0", dtype_name)


def test_block_table_extent_at_sizes(fake):
    # Q // 64 at Q = 100 is 1 row: a (1, 2, 2, 3) table is refused, as the Go launcher refuses it.
    with pytest.raises(MaskcError, match=r"keep has shape \[1, 2, 2, 3\]; declared \[B, H, Q // 64, \(KV \+ 63\) // 64\] is \[1, 2, 1, 3\]"):
        check_buffers(BLOCK_SPECS, {"offset": fake((), "i32"), "keep": fake((1, 2, 2, 3), "bool")},
                      Sizes(1, 2, 2, 100, 130, 64), "cuda:0", dtype_name)
