"""Which kernel runs an attention call, and the adapters of the kernels that
are not maskc's own: the plan's choice for the call's shapes
(maskc.plan.choose), torch's SDPA (cuDNN first) and the plan's Primus-Turbo
entry; the generated kernel otherwise (maskc.launcher). When a better kernel
cannot run a call exactly, the generated kernel runs and a warning says
why, once per reason.
"""
import threading
import warnings

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from . import checks as _checks
from . import plan as _plan
from .diagnostics import MaskcError
from .launcher import _heads_seq, _platform, dtype_name

_turbo_mod = None
_turbo_tried = False


def _turbo():
    """primus_turbo.pytorch.ops when it imports, else None (tried once)."""
    global _turbo_mod, _turbo_tried
    if not _turbo_tried:
        _turbo_tried = True
        try:
            from primus_turbo.pytorch import ops
            _turbo_mod = ops
        except Exception:  # any import failure means: not available
            _turbo_mod = None
    return _turbo_mod


_warned = set()
_warn_lock = threading.Lock()


def _warn_once(msg):
    if torch.compiler.is_compiling():
        return
    with _warn_lock:
        if msg in _warned:
            return
        _warned.add(msg)
    warnings.warn(msg, stacklevel=3)



def choose(decision, q, k, layout, return_lse=False, backend="auto"):
    """The plan.Choice of block decision for a call with these q and k (4-D, in layout)."""
    _, sq = _heads_seq(q, layout)
    _, skv = _heads_seq(k, layout)
    facts = _plan.CallFacts(sq, skv, return_lse, _platform(), _turbo() is not None)
    return _plan.choose(decision, facts, backend)


def run(attn, q, k, v, layout, buffers, return_lse, deterministic, backend, frame, tile_map=None):
    """Runs a call of Attention attn whose arguments it checked (layout
    resolved, buffers a dict of names it reads, frame six ints or None)
    on the kernel the plan chooses: SDPA, Turbo, else the generated kernel.
    tile_map (Attention.tile_map) reaches the generated kernel only: SDPA
    and Turbo run no pre-pass."""
    choice = attn.choose(q, k, layout, return_lse, backend)
    if choice.note:
        _warn_once(choice.note)
    if choice.kind == "sdpa":
        return _sdpa(q, k, v, layout, choice, attn.dtype, attn.head_dim)
    if choice.kind == "turbo":
        out = _turbo_call(attn.decision, q, k, v, layout, buffers, deterministic)
        if out is not _NOT_VARLEN:
            return out
        # The ids are not contiguous documents (an id recurs after another: padding between
        # documents, reused or restarting ids): the varlen call would compute another mask.
        # The generated kernel computes the mask as written; without one the call fails
        # here, before anything ran.
        seg = attn.decision.segments
        if attn._generated is None:
            raise MaskcError("block %s: the ids in buffer %s are not contiguous documents (an id recurs after "
                             "another), so the plan's %s would compute another mask, and this build has no "
                             "generated kernel for the block to run the mask as written" %
                             (attn.name, seg, attn.decision.entry))
        _warn_once("maskc: block %s: the ids in buffer %s are not contiguous documents (an id recurs after "
                   "another: padding between documents, reused or restarting ids), so the plan's %s would "
                   "compute another mask; such calls run the block's generated kernel (the mask as written)" %
                   (attn.name, seg, attn.decision.entry))
    gen = attn.generated()
    return gen(q, k, v, layout, buffers, return_lse, deterministic, frame, tile_map)


# --------------------------------------------------------------------------- SDPA

def _sdpa(q, k, v, layout, choice, dtype, head_dim):
    """torch SDPA for a full or causal block with no score (choice says
    is_causal and the scale), cuDNN first; q, k, v in layout."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.device.type != "cuda" or t.device != q.device:
            raise MaskcError("%s is on %s; want q's CUDA device" % (name, t.device))
    if dtype is not None:  # the block's declared facts, when the plan has them
        for name, t in (("q", q), ("k", k), ("v", v)):
            if dtype_name(t) != dtype:
                raise MaskcError("%s is %s; the block computes in %s" % (name, dtype_name(t), dtype))
    if head_dim is not None and q.shape[-1] != head_dim:
        raise MaskcError("head dimension %d; the block is built for head_dim = %d" % (q.shape[-1], head_dim))
    h, _ = _heads_seq(q, layout)
    hkv, _ = _heads_seq(k, layout)
    if layout == "bshd":
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    def sdpa():
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=choice.is_causal, scale=choice.scale,
                                                                enable_gqa=h != hkv)
    if torch.compiler.is_compiling():
        o = sdpa()  # the compiler picks among its fused SDPA kernels; each computes the same function
    else:
        backends = [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
        with sdpa_kernel(backends, set_priority=True):
            o = sdpa()
    return o.transpose(1, 2) if layout == "bshd" else o


# --------------------------------------------------------------------------- Turbo

def cu_seqlens_from_segments(doc, B, S):
    """(cu_seqlens int32 [n + 1], max_seqlen, contiguous) of a segments
    buffer doc ([S], shared by every batch element, or [B, S]) as
    classify/PLAN.md defines them: every run of equal ids is one document,
    batches concatenated; contiguous says that the runs are the mask's
    documents (checks.varlen_documents). Computed on doc's device;
    max_seqlen and contiguous are read back (a host synchronisation)."""
    return _checks.varlen_documents(doc, B, S)


# _turbo_call's answer when the plan's varlen call would compute another
# mask: the caller runs the generated kernel instead.
_NOT_VARLEN = object()


def _turbo_call(dec, q, k, v, layout, buffers, deterministic):
    """The plan's Primus-Turbo entry with exactly the plan's kwargs (buffer
    names replaced by the tensors; cu_seqlens derived from the segments
    buffer). Turbo takes bshd."""
    ops = _turbo()
    fn = getattr(ops, dec.entry, None)
    if fn is None:
        raise MaskcError("primus_turbo has no %s, which the plan for block %s names" % (dec.entry, dec.name))
    if layout == "bhsd":
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    kw = {}
    for key, val in dec.kwargs.items():
        if key.startswith(("cu_seqlens", "max_seqlen")):
            continue
        if key in ("alibi_slopes", "sink"):
            if val not in buffers:
                raise MaskcError("block %s: buffer %s (the plan's %s) is missing: pass buffers={%r: tensor}" %
                                 (dec.name, val, key, val))
            t = buffers[val]
            kw[key] = t.float() if key == "sink" else t  # a bf16 sink is cast differentiably
        elif key == "window_size":
            kw[key] = tuple(val)
        else:
            kw[key] = val
    if deterministic:
        kw["deterministic"] = True
    if dec.entry != "flash_attn_varlen_func":
        return fn(q, k, v, **kw)
    if dec.segments not in buffers:
        raise MaskcError("block %s: segments buffer %s is missing: pass buffers={%r: tensor}" %
                         (dec.name, dec.segments, dec.segments))
    B, S, H, D = q.shape
    cu, maxlen, contiguous = cu_seqlens_from_segments(buffers[dec.segments], B, S)
    if not contiguous:  # nothing launched yet: the caller runs the mask as written
        return _NOT_VARLEN
    out = fn(q.reshape(B * S, H, D), k.reshape(B * S, k.shape[2], D), v.reshape(B * S, v.shape[2], D),
             cu, cu, maxlen, maxlen, **kw)
    out = out.reshape(B, S, H, D)
    return out.transpose(1, 2) if layout == "bhsd" else out
