"""The split-KV decode kernel's launcher (hipsrc/attn_decode.h).

A generated kernel's forward with at most DECODE_MAX_SQ query rows (a
generate() step, a speculative-decoding check) runs maskc_attn_decode, which
every generated source holds beside the forward: one block per (batch, kv
head, block of DECODE_ROWS packed query rows, key split), the splits' partial
results merged through their LSEs by maskc_attn_decode_merge. It computes
the same O and LSE as the forward (the same mask, score, sink, frame and
sparsity), so the backward, which reads only those, is unchanged.

The split count depends only on the shapes and the device's multiprocessor
count, and the workspace comes from torch's caching allocator: a decode
step captures into a CUDA graph and replays with no host synchronisation.
MASKC_DECODE=0 turns the kernel off (every call runs the forward).
"""
import os

from . import abi as _abi

__all__ = ["DECODE_WARPS", "DECODE_ROWS", "DECODE_MAX_SQ", "ENTRY", "MERGE_ENTRY", "applies", "split_plan",
           "launch"]

#: hipsrc.DecodeWarps, DecodeRows and DecodeMaxSq (attn_decode.h's MASKC_DEC_*; a test keeps them equal).
DECODE_WARPS, DECODE_ROWS, DECODE_MAX_SQ = 4, 8, 16
#: The entry points (hipsrc.DecodeEntry, hipsrc.DecodeMergeEntry).
ENTRY, MERGE_ENTRY = "maskc_attn_decode", "maskc_attn_decode_merge"
#: Blocks a launch aims at per multiprocessor (about two waves of resident blocks).
BLOCKS_PER_SM = 4
#: Fewest key tiles a split should cover, so that the merge's traffic stays small beside the keys'.
MIN_TILES_PER_SPLIT = 4
#: Most splits per row block.
MAX_SPLITS = 256

_functions = {}  # (launcher key, device index) -> (decode function, merge function), or None: not in the code object
_sms = {}


def enabled():
    """Whether the decode kernel may run (MASKC_DECODE=0 turns it off, for comparisons)."""
    return os.environ.get("MASKC_DECODE", "1") != "0"


def applies(man, sq):
    """Whether a forward of sq query rows runs the decode kernel: sq <= DECODE_MAX_SQ,
    the manifest's ABI has both decode entries, and MASKC_DECODE is not 0."""
    return 0 < sq <= DECODE_MAX_SQ and ENTRY in man.entries and MERGE_ENTRY in man.entries and enabled()


def block_n(head_dim):
    """Keys per tile of the decode kernel (MASKC_DEC_BLOCK_N)."""
    return 4096 // head_dim


def split_plan(B, H, HKV, Sq, Skv, head_dim, sms):
    """(n_split, row_blocks) of a decode launch: enough blocks for about
    BLOCKS_PER_SM per multiprocessor, at most one split per
    MIN_TILES_PER_SPLIT key tiles (at least one) and MAX_SPLITS. The kernel
    deals the tiles a row block visits (the kept ones, for analytic masks)
    out evenly to its splits."""
    rows = Sq * (H // HKV)
    row_blocks = -(-rows // DECODE_ROWS)
    base = B * HKV * row_blocks
    tiles = -(-Skv // block_n(head_dim))
    want = -(-BLOCKS_PER_SM * sms // base)
    return max(1, min(want, tiles // MIN_TILES_PER_SPLIT, MAX_SPLITS)), row_blocks


def _sm_count(idx):
    import torch
    n = _sms.get(idx)
    if n is None:
        n = _sms[idx] = int(torch.cuda.get_device_properties(idx).multi_processor_count)
    return n


def _functions_for(gen, plat, idx, drv):
    """The decode and merge functions of gen's code object on device idx,
    loaded once; None when the code object has none (a source from an older
    maskc)."""
    key = (gen.key, idx)
    if key in _functions:
        return _functions[key]
    got = None
    try:
        mod = drv.load_module(gen._cubin(*gen._target(idx)))
        got = (drv.function(mod, ENTRY), drv.function(mod, MERGE_ENTRY))
    except (KeyError, _abi.MaskcError):
        got = None
    _functions[key] = got
    return got


def launch(gen, plat, q, k, v, out, lse, sh, bf, sizes, stream, drv):
    """Launches the decode kernel (and the merge) for one forward of the
    generated kernel gen on the current stream, writing out and lse, and
    returns True; False when it does not apply (the caller runs the
    forward). sh and bf are the forward's packed MaskcShape and
    MaskcBuffers; the segments check, when the kernel has one, has been
    launched before."""
    import torch
    man, spec = gen.man, gen.spec
    if not applies(man, sizes["Sq"]):
        return False
    idx = q.device.index if q.device.index is not None else torch.cuda.current_device()
    fns = _functions_for(gen, plat, idx, drv)
    if fns is None:
        return False
    B, H, HKV, Sq, Skv = (sizes[n] for n in ("B", "H", "HKV", "Sq", "Skv"))
    D = spec.head_dim
    n_split, row_blocks = split_plan(B, H, HKV, Sq, Skv, D, _sm_count(idx))
    ws_o = ws_lse = None
    if n_split > 1:
        ws_o = torch.empty(B * H * Sq * n_split * D, dtype=torch.float32, device=q.device)
        ws_lse = torch.empty(B * H * Sq * n_split, dtype=torch.float32, device=q.device)
    ptr = lambda t: t.data_ptr() if t is not None else 0
    threads = (DECODE_WARPS * (64 if plat.backend == "hip" else 32), 1, 1)
    e = man.entries[ENTRY]
    grid = e.grid_dims(dict(sizes, n=n_split * row_blocks))
    drv.launch(fns[0], grid, threads, 0, stream,
               e.args(dict(Q=q.data_ptr(), K=k.data_ptr(), V=v.data_ptr(), O=out.data_ptr(), LSE=lse.data_ptr(),
                           shape=sh, buf=bf, ws_o=ptr(ws_o), ws_lse=ptr(ws_lse), n_split=n_split), man.structs), ENTRY)
    if n_split > 1:
        m = man.entries[MERGE_ENTRY]
        drv.launch(fns[1], m.grid_dims(sizes), threads, 0, stream,
                   m.args(dict(O=out.data_ptr(), LSE=lse.data_ptr(), shape=sh, ws_o=ws_o.data_ptr(),
                               ws_lse=ws_lse.data_ptr(), n_split=n_split), man.structs), MERGE_ENTRY)
    return True
