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
           "launches"]

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


def _functions(gen, idx):
    """{entry: function} of the decode entries in gen's code object on
    device idx (the caller makes its context current), loaded once per
    launcher and device; None when the code object has none (a source from
    an older maskc)."""
    from .launcher import load_functions
    cache = gen.__dict__.setdefault("_decode_fns", {})
    if idx not in cache:
        try:
            cache[idx] = load_functions(gen._cubin(*gen._target(idx)), (ENTRY, MERGE_ENTRY))[1]
        except (KeyError, _abi.MaskcError):
            cache[idx] = None
    return cache[idx]


def launches(gen, plat, sizes, ptrs, sh, bf, device):
    """The decode kernel's launches for one forward of the generated kernel
    gen, as (functions, launches, workspace): launches in the form of
    launcher.fwd_launches (the segments check when the kernel has one, the
    decode kernel, the merge when there are several splits), functions by
    entry name, and the workspace tensors, which the caller keeps until the
    launches are enqueued; None when the decode kernel does not apply (the
    caller launches the forward). ptrs: Q, K, V, O and LSE addresses; sh,
    bf: the forward's packed MaskcShape and MaskcBuffers."""
    import torch
    man, spec = gen.man, gen.spec
    if not applies(man, sizes["Sq"]):
        return None
    idx = device.index if device.index is not None else torch.cuda.current_device()
    with torch.cuda.device(idx):
        fns = _functions(gen, idx)
    if fns is None:
        return None
    B, H, HKV, Sq, Skv = (sizes[n] for n in ("B", "H", "HKV", "Sq", "Skv"))
    D = spec.head_dim
    n_split, row_blocks = split_plan(B, H, HKV, Sq, Skv, D, _sm_count(idx))
    ws = []
    if n_split > 1:
        ws = [torch.empty(B * H * Sq * n_split * D, dtype=torch.float32, device=device),
              torch.empty(B * H * Sq * n_split, dtype=torch.float32, device=device)]
    wsp = dict(ws_o=ws[0].data_ptr() if ws else 0, ws_lse=ws[1].data_ptr() if ws else 0, n_split=n_split)
    threads = DECODE_WARPS * (64 if plat.backend == "hip" else 32)
    out = []
    seg = man.seg_check_launch(spec, plat, bf)
    if seg is not None:  # first, as before the forward: the walk's segment searches read its words
        out.append(seg)
        fns = dict(fns, **{seg[0]: gen._module(device)[1][seg[0]]})
    e = man.entries[ENTRY]
    out.append((ENTRY, e.grid_dims(dict(sizes, n=n_split * row_blocks)), threads, 0,
                e.args(dict(ptrs, shape=sh, buf=bf, **wsp), man.structs)))
    if n_split > 1:
        m = man.entries[MERGE_ENTRY]
        out.append((MERGE_ENTRY, m.grid_dims(sizes), threads, 0,
                    m.args(dict(O=ptrs["O"], LSE=ptrs["LSE"], shape=sh, **wsp), man.structs)))
    return fns, out, ws
