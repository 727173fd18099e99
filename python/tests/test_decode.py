"""maskc.decode: when a generated forward runs the split-KV decode kernel,
its split count, and its launches (grid, block, packed arguments, workspace)
on a stand-in torch and driver."""
import os
import re
import struct

import pytest

import fake_torch as ft
from conftest import EXAMPLES, REPO
from test_torch_generated import FakeDriver, FakeNVRTC, launches, ptr

from maskc import decode


class DecodeDriver(FakeDriver):
    """A driver whose code objects hold the decode entries (500, 501)."""

    def function(self, mod, name):
        if name in (decode.ENTRY, decode.MERGE_ENTRY):
            self.calls.append(("function", name))
            return {decode.ENTRY: 500, decode.MERGE_ENTRY: 501}[name]
        return super().function(mod, name)


@pytest.fixture
def env(monkeypatch, maskc_bin, cache_dir):
    monkeypatch.setenv("MASKC_BIN", maskc_bin)
    monkeypatch.delenv("MASKC_DECODE", raising=False)
    ft.install(monkeypatch)
    import maskc.torch as mt
    from maskc import launcher
    drv, nv = DecodeDriver(), FakeNVRTC()
    monkeypatch.setattr(launcher, "_libs", lambda: (drv, nv))
    monkeypatch.setattr(decode, "_sms", {})  # the fake device has 132 multiprocessors
    return mt, drv


def test_constants_mirror_the_kernel():
    with open(os.path.join(REPO, "hipsrc", "attn_decode.h")) as f:
        src = f.read()
    got = {n: int(v) for n, v in re.findall(r"(?m)^#define (MASKC_DEC_\w+) (\d+)$", src)}
    assert (got["MASKC_DEC_WARPS"], got["MASKC_DEC_ROWS"], got["MASKC_DEC_MAX_SQ"]) == (
        decode.DECODE_WARPS, decode.DECODE_ROWS, decode.DECODE_MAX_SQ)
    assert "#define MASKC_DEC_BLOCK_N (4096 / MASKC_HEAD_DIM)" in src
    assert [decode.block_n(d) for d in (64, 128, 256)] == [64, 32, 16]


@pytest.mark.parametrize("B,H,HKV,Sq,Skv,D,want", [
    (1, 32, 4, 1, 32768, 128, (132, 1)),    # 4 row blocks: 132 splits fill 528 blocks
    (32, 32, 4, 1, 32768, 128, (5, 1)),     # 128 row blocks: 5 splits
    (8, 32, 4, 1, 131072, 128, (17, 1)),
    (1, 32, 4, 1, 1 << 20, 128, (132, 1)),  # capped by the blocks wanted, not the keys
    (1, 1, 1, 1, 1 << 22, 64, (256, 1)),    # at most MAX_SPLITS
    (1, 32, 4, 1, 64, 128, (1, 1)),         # 2 tiles: one split
    (1, 32, 4, 1, 512, 128, (4, 1)),        # 16 tiles: 4 tiles a split
    (2, 32, 4, 16, 4096, 128, (5, 16)),     # 16 x 8 rows of a kv head: 16 row blocks
    (1, 8, 8, 4, 4096, 64, (16, 1)),        # no GQA: 4 rows
])
def test_split_plan(B, H, HKV, Sq, Skv, D, want):
    assert decode.split_plan(B, H, HKV, Sq, Skv, D, 132) == want


def test_decode_step_launches_decode_and_merge(env):
    mt, drv = env
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    B, H, HKV, D, L = 2, 8, 2, 128, 4096
    q, k, v = ft.Tensor((B, 1, H, D)), ft.Tensor((B, L, HKV, D)), ft.Tensor((B, L, HKV, D))
    doc = ft.Tensor((L,), ft.int32)
    out = attn(q, k, v, buffers={"doc": doc}, frame=[L - 1, 0, 0, L, L, 0])
    assert out.shape == q.shape
    (_, sf, _, _, _, _, sargs), (_, f, grid, block, smem, stream, args), (_, mf, mgrid, mblock, _, _, margs) = launches(drv)
    n_split, row_blocks = decode.split_plan(B, H, HKV, 1, L, D, 132)
    assert (n_split, row_blocks) == (32, 1)
    assert sf == 106 and sargs == [args[6]]  # the segments check first, on the same buffers
    assert (f, grid, block, smem, stream) == (500, (n_split * row_blocks, HKV, B), (128, 1, 1), 0, ft.Stream.cuda_stream)
    man = attn.generated().man
    sh = man.Shape.from_buffer_copy(args[5])
    assert (sh.B, sh.H, sh.HKV, sh.Sq, sh.Skv) == (B, H, HKV, 1, L)
    bufs = man.Buffers.from_buffer_copy(args[6])
    assert (bufs.q_offset, bufs.q_total, bufs.kv_total) == (L - 1, L, L) and bufs.ptr[0] == doc.data_ptr()
    assert [ptr(a) for a in args[:4]] == [q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr()]
    ws_o, ws_lse = ptr(args[7]), ptr(args[8])
    assert ws_o and ws_lse and ws_o != ws_lse and struct.unpack("<i", args[9])[0] == n_split
    # The merge: one block per (q, h, b), the same output, LSE and workspace.
    assert (mf, mgrid, mblock) == (501, (1, H, B), (128, 1, 1))
    assert [ptr(margs[0]), ptr(margs[1])] == [ptr(args[3]), ptr(args[4])] and margs[2] == args[5]
    assert (ptr(margs[3]), ptr(margs[4]), struct.unpack("<i", margs[5])[0]) == (ws_o, ws_lse, n_split)
    assert not any(c[0] == "launch" and c[1] in (100, 200) for c in drv.calls)  # no forward, no pre-pass


def test_one_split_writes_the_output_itself(env):
    mt, drv = env
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    q, k = ft.Tensor((1, 4, 8, 128)), ft.Tensor((1, 64, 2, 128))
    attn(q, k, k, buffers={"doc": ft.Tensor((64,), ft.int32)})
    (_, _, _, _, _, _, _), (_, f, grid, _, _, _, args) = launches(drv)
    assert f == 500 and grid == (2, 2, 1)  # 4 x 4 rows of a kv head: 2 row blocks, one split
    assert ptr(args[7]) == 0 and ptr(args[8]) == 0 and struct.unpack("<i", args[9])[0] == 1


@pytest.mark.parametrize("why", ["long", "off", "old"])
def test_forward_runs_otherwise(env, monkeypatch, why):
    mt, drv = env
    sq = 17 if why == "long" else 1
    if why == "off":
        monkeypatch.setenv("MASKC_DECODE", "0")
    if why == "old":  # a code object without the decode entries (an older maskc's source)
        monkeypatch.setattr(DecodeDriver, "function", FakeDriver.function)
    attn = mt.load(os.path.join(EXAMPLES, "document_causal.flex")).attention("packed_layer")
    q, k = ft.Tensor((1, sq, 8, 128)), ft.Tensor((1, 256, 2, 128))
    attn(q, k, k, buffers={"doc": ft.Tensor((256,), ft.int32)})
    fs = [c[1] for c in launches(drv)]
    assert fs == [106, 100]
