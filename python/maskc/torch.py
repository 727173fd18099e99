"""maskc in PyTorch: load a .flex file once, call its attention blocks in a training step.

    import maskc.torch as mt
    prog = mt.load("model.flex", defines={"WINDOW": 2048})   # runs maskc once, cached on disk
    attn = prog.attention("doc_layer")
    out = attn(q, k, v, layout="bshd", buffers={"doc": doc})

Each call dispatches by the block's plan (maskc.plan.choose): the plan's
Primus-Turbo entry when primus_turbo imports and the plan's preconditions
hold for this call's shapes, torch's SDPA (cuDNN first) where that is exact,
else maskc's generated kernel through the custom ops maskc::attn_fwd and
maskc::attn_bwd (registered with fake and autograd implementations, so
torch.compile(fullgraph=True) traces through them). When a better kernel
cannot run a call exactly the generated kernel runs and a warning says why,
once per reason; backend="turbo" or "sdpa" raises instead.
"""
import concurrent.futures
import os
import threading
import warnings
from typing import List, Optional, Tuple

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from . import abi as _abi
from . import cache as _cache
from . import checks as _checks
from . import dtypes as _dtypes
from . import plan as _plan
from .diagnostics import MaskcError

__all__ = ["load", "Program", "Attention", "MaskcError", "dtype_name", "cu_seqlens_from_segments"]

_DTYPE_NAMES = {getattr(torch, t): n for n, t in _dtypes.TORCH.items()}


def dtype_name(t):
    """maskc's name of a tensor's element type (bf16, f16, f32, i32, ...)."""
    return _DTYPE_NAMES.get(t.dtype, str(t.dtype).replace("torch.", ""))


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


def _platform():
    return "hip" if getattr(torch.version, "hip", None) else "cuda"


def load(path, defines=None, target=None):
    """Compiles path (with -D defines, for a Turbo target profile) through
    the on-disk cache and returns its Program. Errors in the file raise
    MaskcError carrying maskc's positioned diagnostics."""
    return Program(_cache.compile_flex(os.fspath(path), defines, target))


class Program:
    """A compiled .flex file: its plan and its attention blocks."""

    def __init__(self, entry):
        self.entry = entry
        # plan.json names each generated kernel's descriptor in manifest.json (read here, so that an
        # older maskc's cache entry is refused when loaded)
        man = _abi.read_manifest(entry.directory) if entry.has(_abi.MANIFEST_FILE) else None
        self.plan = _plan.Plan(entry.plan_json, man.descriptors if man is not None else None)
        self._attns = {}

    def attention(self, name):
        """The callable for attention block name."""
        if name not in self._attns:
            self._attns[name] = Attention(self, self.plan.attention(name))
        return self._attns[name]

    def prepare(self, device=None, threads=8):
        """Builds every generated kernel of the program, forward and backward,
        for a CUDA device (default: the current one), compiling in parallel
        threads, and
        loads them into torch's context: model-build work that the first
        training step would otherwise do."""
        dev = torch.device(device if device is not None else "cuda")
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        gens = [a.generated() for a in (self.attention(n) for n in self.names) if a.decision.has_generated]
        _libs()
        jobs = [(g.compile_for, g) for g in gens] + [(g.compile_bwd_for, g) for g in gens if g.spec.bwd_source]
        with concurrent.futures.ThreadPoolExecutor(max(1, min(threads, len(jobs)))) as ex:
            for f in [ex.submit(fn, idx) for fn, _ in jobs]:
                f.result()
        for g in gens:
            g._module(torch.device("cuda", idx))
            if g.spec.bwd_source:
                g._bwd_module(torch.device("cuda", idx))
        return self

    @property
    def names(self):
        """The attention blocks, in file order."""
        return list(self.plan.attentions)


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


def _heads_seq(t, layout):
    """(heads, seq) of a 4-D q/k/v in layout."""
    return (t.shape[2], t.shape[1]) if layout == "bshd" else (t.shape[1], t.shape[2])


class Attention:
    """One attention block of a Program, called like a function."""

    def __init__(self, program, decision):
        self.program, self.decision = program, decision
        self.name = decision.name
        k = decision.kernel or {}
        self.layout = k.get("layout", "bshd")
        self.dtype = {"fp16": "f16"}.get(k.get("dtype"), k.get("dtype"))  # maskc's tensor dtype names
        self.head_dim = k.get("head_dim")
        # Everything that reads files or imports runs here, eagerly, so that
        # a call traced by torch.compile(fullgraph=True) meets none of it.
        _turbo()
        self._generated = None
        if decision.has_generated and program.entry.has(_abi.MANIFEST_FILE):
            self._generated = _Generated(program.entry, decision)
        self.buffer_names = _plan_buffers(decision)
        if self._generated is not None:
            spec = self._generated.spec
            self.buffer_names |= self._generated.known

    def __repr__(self):
        return "<maskc attention %s: %s via %s>" % (self.name, self.decision.pattern, self.decision.entry)

    def choose(self, q, k, layout=None, return_lse=False, backend="auto"):
        """The plan.Choice a call with these q and k would take."""
        layout = layout or self.layout
        _, sq = _heads_seq(q, layout)
        _, skv = _heads_seq(k, layout)
        facts = _plan.CallFacts(sq, skv, return_lse, _platform(), _turbo() is not None)
        return _plan.choose(self.decision, facts, backend)

    def __call__(self, q, k, v, layout=None, buffers=None, return_lse=False, deterministic=False, backend="auto",
                 frame=None):
        """Attention of q over k, v (4-D, layout "bshd" or "bhsd"; default the
        block's) with the block's captured tensors in buffers ({name:
        tensor}). Returns the output in q's layout, and with return_lse also
        the log-sum-exp [B, H, Sq] (float32, natural log).

        frame (a maskc.cp.Frame, or None for the whole attention) places
        this call in a larger attention: q and k, v are its rows q_offset..
        and keys kv_offset.. (and heads h_offset..), the mask and score see
        those global positions and sizes, and buffers are the global ones
        (python/maskc/README_CP.md). Only the generated kernel runs a
        framed call; backend="turbo" or "sdpa" with a frame is refused."""
        layout = layout or self.layout
        frame = _frame_values(frame)
        if frame is not None:
            if backend not in ("auto", "generated"):
                raise MaskcError("block %s: backend=%r cannot run a slice of an attention (frame=%s); only the "
                                 "generated kernel applies the mask at global positions" % (self.name, backend,
                                                                                            frame))
            backend = "generated"
        if layout not in _checks.LAYOUTS:
            raise MaskcError("layout=%r: want %s" % (layout, " or ".join(_checks.LAYOUTS)))
        for name, t in (("q", q), ("k", k), ("v", v)):
            if t.dim() != 4:
                raise MaskcError("%s has %d dimensions, shape %s; want 4 (%s)" % (name, t.dim(), tuple(t.shape),
                                                                                 layout))
        buffers = dict(buffers or {})
        unknown = sorted(set(buffers) - self.buffer_names)
        if unknown:
            raise MaskcError("block %s does not read %s (it reads: %s)" % (
                self.name, ", ".join(unknown), ", ".join(sorted(self.buffer_names)) or "no buffers"))
        choice = self.choose(q, k, layout, return_lse, backend)
        if choice.note:
            _warn_once(choice.note)
        if choice.kind == "sdpa":
            return _sdpa(q, k, v, layout, choice, self.dtype, self.head_dim)
        if choice.kind == "turbo":
            out = _turbo_call(self.decision, q, k, v, layout, buffers, deterministic)
            if out is not _NOT_VARLEN:
                return out
            # The ids are not contiguous documents (an id recurs after another: padding between
            # documents, reused or restarting ids): the varlen call would compute another mask.
            # The generated kernel computes the mask as written; without one the call fails
            # here, before anything ran.
            seg = self.decision.segments
            if self._generated is None:
                raise MaskcError("block %s: the ids in buffer %s are not contiguous documents (an id recurs after "
                                 "another), so the plan's %s would compute another mask, and this build has no "
                                 "generated kernel for the block to run the mask as written" %
                                 (self.name, seg, self.decision.entry))
            _warn_once("maskc: block %s: the ids in buffer %s are not contiguous documents (an id recurs after "
                       "another: padding between documents, reused or restarting ids), so the plan's %s would "
                       "compute another mask; such calls run the block's generated kernel (the mask as written)" %
                       (self.name, seg, self.decision.entry))
        gen = self.generated()
        return gen(q, k, v, layout, buffers, return_lse, deterministic, frame)

    def status(self, device=None):
        """The sticky status bits the block's generated kernel recorded
        (_Generated.status: segments_unsorted 1, read_out_of_range 2); 0
        when the block has no generated kernel here. Synchronises: never
        call it in the hot path."""
        return self._generated.status(device) if self._generated is not None else 0

    def reset_status(self, device=None):
        """Clears the generated kernel's status words (_Generated.reset_status)."""
        if self._generated is not None:
            self._generated.reset_status(device)

    def generated(self):
        """The block's generated-kernel launcher."""
        if self._generated is None:
            if not self.decision.has_generated:
                raise MaskcError("block %s has no generated kernel" % self.name)
            raise _abi.manifest_missing(self.program.entry.directory)
        return self._generated


def _frame_values(frame):
    """The six position-frame ints (abi.FRAME_FIELDS) of frame (a
    maskc.cp.Frame, a sequence of six ints, or None), or None for an
    all-zero frame (the whole attention)."""
    if frame is None:
        return None
    vals = list(frame.values()) if hasattr(frame, "values") else list(frame)
    if len(vals) != len(_abi.FRAME_FIELDS) or not all(isinstance(x, int) and x >= 0 for x in vals):
        raise MaskcError("frame=%r: want a maskc.cp.Frame or %d non-negative ints (%s)" %
                         (frame, len(_abi.FRAME_FIELDS), ", ".join(_abi.FRAME_FIELDS)))
    return None if not any(vals) else vals


def _global_sizes(sz, frame):
    """The sizes the mask sees (and buffer extents are evaluated with) for a
    call of local sizes sz in frame (six ints or None); MaskcError when the
    slice does not lie inside them."""
    if frame is None:
        return sz
    q0, kv0, h0, qt, kvt, ht = frame
    Q, KV, H = qt or q0 + sz.Q, kvt or kv0 + sz.KV, ht or h0 + sz.H
    group = sz.H // sz.HKV
    if q0 + sz.Q > Q or kv0 + sz.KV > KV or h0 + sz.H > H:
        raise MaskcError("frame %s: the call's rows %d..%d, keys %d..%d or heads %d..%d lie outside the attention "
                         "of %d x %d positions and %d heads" % (frame, q0, q0 + sz.Q, kv0, kv0 + sz.KV, h0, h0 + sz.H,
                                                               Q, KV, H))
    if h0 % group or H % group:
        raise MaskcError("frame %s: h_offset %d and h_total %d must be multiples of the group size H / HKV = %d" %
                         (frame, h0, H, group))
    if Q > _checks.MAX_SEQ_LEN or KV > _checks.MAX_SEQ_LEN:
        raise MaskcError("frame %s: a generated kernel takes at most %d positions" % (frame, _checks.MAX_SEQ_LEN))
    return _checks.Sizes(sz.B, H, H // group, Q, KV, sz.D)


def _plan_buffers(dec):
    """The buffer names a block's calls may pass: those the plan's kwargs
    name, its segments buffer, and its generated kernel's buffers."""
    names = {v for v in dec.kwargs.values() if isinstance(v, str)} - {dec.kwargs.get("kernel")}
    if dec.segments:
        names.add(dec.segments)
    names.update(b["name"] for b in (dec.kernel or {}).get("buffers") or [])
    names.update(b for b in dec.kwargs.get("buffers") or [] if isinstance(b, str))
    if (dec.kernel or {}).get("sink"):
        names.add(dec.kernel["sink"])
    return names


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


# --------------------------------------------------------------------------- generated kernels

# Launchers by key, so that the custom ops (which take only tensors and
# scalars) can find theirs: "<cache key>/<block>".
_LAUNCHERS = {}


def _launcher(key):
    try:
        return _LAUNCHERS[key]
    except KeyError:
        raise MaskcError("maskc kernel %r is not loaded in this process (load its program first)" % key)


_driver = None
_nvrtc = None
_lib_lock = threading.Lock()


def _libs():
    """The process's Driver and NVRTC wrappers (loaded once)."""
    global _driver, _nvrtc
    with _lib_lock:
        if _driver is None:
            from . import cuda
            _driver = cuda.Driver()
            _nvrtc = cuda.NVRTC()
    return _driver, _nvrtc


class _Generated:
    """The generated kernel of one block: argument checks, the ABI read from
    the compile output's manifest, the code object (prebuilt, cached, or
    compiled with NVRTC for the running GPU), launches on the current stream."""

    def __init__(self, entry, decision):
        if not decision.has_generated:
            raise MaskcError("block %s has no generated kernel" % decision.name)
        man = _abi.read_manifest(entry.directory)
        if man is None:
            raise _abi.manifest_missing(entry.directory)
        self.entry, self.man, self.spec = entry, man, man.kernel(decision.name)
        self.key = "%s/%s" % (entry.key, decision.name)
        self._loaded = {}
        self._bwd_loaded = {}
        self._flags = {}
        self._status = {}  # device index -> the kernel's status words on it (abi status_words int32)
        self._lock = threading.Lock()
        self.known = {b.name for b in self.spec.buffers} | ({self.spec.sink} if self.spec.sink else set())
        _LAUNCHERS[self.key] = self

    def __call__(self, q, k, v, layout, buffers, return_lse, deterministic, frame=None):
        spec, known = self.spec, self.known
        unknown = sorted(set(buffers) - known)
        if unknown:
            raise MaskcError("block %s does not read %s (it reads: %s)" %
                             (spec.attention, ", ".join(unknown), ", ".join(sorted(known)) or "no buffers"))
        missing = sorted(known - set(buffers))
        if missing:
            raise MaskcError("block %s: buffer %s is missing: pass buffers={%r: tensor}" %
                             (spec.attention, missing[0], missing[0]))
        blist = [buffers[b.name] for b in spec.buffers]
        sink = buffers[spec.sink] if spec.sink else None
        if sink is not None and sink.dtype in (torch.bfloat16, torch.float16):
            sink = sink.float()  # differentiably, as Turbo's contract casts it
        grad = False
        if torch.is_grad_enabled():
            for t in [q, k, v] + blist + ([sink] if sink is not None else []):
                grad = grad or t.requires_grad
        if torch.compiler.is_compiling() or grad:
            out, lse = torch.ops.maskc.attn_fwd(q, k, v, blist, sink, self.key, layout, deterministic, frame)
        else:  # plain eager inference: skip the dispatcher
            out, lse = self.forward(q, k, v, blist, sink, layout, frame)
        return (out, lse) if return_lse else out

    def _target(self, idx):
        """(platform, compile target) for CUDA device idx."""
        if _platform() != "cuda":
            raise NotImplementedError("maskc's generated-kernel launcher drives the CUDA driver only; on ROCm "
                                      "the block's code objects (maskc compile --offload-arch) need a HIP "
                                      "module loader, which this package does not have yet")
        major, minor = torch.cuda.get_device_capability(idx)
        arch = "sm_%d%d" % (major, minor)
        plat = _abi.pick_platform(self.man.platforms, "cuda", arch)
        return plat, plat.target(arch)

    def compile_for(self, idx):
        """Builds (or finds in the cache) the code object for CUDA device idx,
        without loading it: safe to call from several threads at once."""
        return self._cubin(*self._target(idx))

    def compile_bwd_for(self, idx):
        """Builds (or finds in the cache) the backward's code object for CUDA
        device idx, without loading it (thread-safe)."""
        plat, target = self._target(idx)
        return self._cubin(plat, target, self.spec.bwd_source)

    def _module(self, device):
        """(platform, forward function, flags function or None) for device,
        loading the code object into torch's context on first use."""
        idx = device.index if device.index is not None else torch.cuda.current_device()
        got = self._loaded.get(idx)
        if got is not None:
            return got
        with self._lock:
            if idx in self._loaded:
                return self._loaded[idx]
            drv, _ = _libs()
            with torch.cuda.device(idx):
                drv.ensure_context(idx)
                plat, target = self._target(idx)
                mod = drv.load_module(self._cubin(plat, target))
                fwd = drv.function(mod, self.spec.entry)
                flags = drv.function(mod, self.spec.flags_entry) if self.spec.flags_entry else None
                seg = drv.function(mod, self.spec.seg_check_entry) if self.spec.seg_check_entry else None
                if plat.name not in self.spec.launch:
                    raise MaskcError("the manifest has no launch configuration of %s for platform %s" %
                                     (self.spec.name, plat.name))
                smem = self.spec.launch[plat.name][2]
                if smem:
                    drv.set_max_dynamic_smem(fwd, smem)
            self._status_words(device, torch.cuda.current_stream(device).cuda_stream)
            self._loaded[idx] = (plat, fwd, flags, seg)
            return self._loaded[idx]

    def _bwd_module(self, device):
        """(platform, {entry name: function}) of the backward source for
        device: its bwd_entries and the tile-flag pre-pass, loaded into
        torch's context on first use (from the cache, or NVRTC)."""
        idx = device.index if device.index is not None else torch.cuda.current_device()
        got = self._bwd_loaded.get(idx)
        if got is not None:
            return got
        spec = self.spec
        if not spec.bwd_source:
            raise NotImplementedError("maskc::attn_bwd for block %s: this maskc wrote no backward kernel for it "
                                      "(the manifest has no bwd_source)" % spec.attention)
        with self._lock:
            if idx in self._bwd_loaded:
                return self._bwd_loaded[idx]
            drv, _ = _libs()
            with torch.cuda.device(idx):
                drv.ensure_context(idx)
                plat, target = self._target(idx)
                mod = drv.load_module(self._cubin(plat, target, spec.bwd_source))
                fns = {e: drv.function(mod, e) for e in spec.bwd_entries}
                for e in (spec.flags_entry, spec.seg_check_entry):
                    if e:
                        fns[e] = drv.function(mod, e)
                smem = spec.bwd_launch[plat.name][3]
                for e in spec.bwd_entries:
                    if self.man.bwd_entries[e].shared_mem and smem:
                        drv.set_max_dynamic_smem(fns[e], smem)
            self._status_words(device, torch.cuda.current_stream(device).cuda_stream)
            self._bwd_loaded[idx] = (plat, fns)
            return self._bwd_loaded[idx]

    def _status_words(self, device, stream):
        """The kernel's status words for launches on stream of device
        (MANIFEST.md "Status words"): man.status_words int32, zeroed once
        when first used there (Program.prepare makes the current stream's
        before any CUDA graph capture) and passed as MaskcBuffers.status in
        every launch on that stream. One set per stream: the segments
        check's per-slot words must not be shared by launches that may run
        at once with other ids."""
        idx = device.index if device.index is not None else torch.cuda.current_device()
        key = (idx, stream)
        t = self._status.get(key)
        if t is None:  # (callers may hold self._lock: setdefault keeps one set when threads race)
            t = self._status.setdefault(key, torch.zeros(self.man.status_words, dtype=torch.int32,
                                                         device=torch.device("cuda", idx)))
        return t

    def status(self, device=None):
        """The sticky bits of status word 0 (man.status_bits by name:
        segments_unsorted 1, read_out_of_range 2) that this kernel's launches
        on device (None: every device it ran on) recorded since they were
        first used or reset_status, or-ed over its streams. Reading copies
        the words to the host, which waits for the work in flight: call it
        off the hot path (once per step, in a check), never per call."""
        want = None if device is None else self._index(device)
        bits = 0
        for (idx, _), t in list(self._status.items()):
            if want is None or idx == want:
                bits |= int(t[0].item()) & 0xFFFFFFFF
        return bits

    def reset_status(self, device=None):
        """Zeroes the status words on device (None: every device), each on
        the current stream: launches enqueued after it record into cleared
        words."""
        want = None if device is None else self._index(device)
        for (idx, _), t in list(self._status.items()):
            if want is None or idx == want:
                with torch.cuda.device(idx):
                    t.zero_()

    @staticmethod
    def _index(device):
        d = torch.device(device) if not isinstance(device, torch.device) else device
        return d.index if d.index is not None else torch.cuda.current_device()

    def _cubin(self, plat, target, source=None):
        """The cubin of source (default the forward's) for target: from the
        cache entry, else NVRTC-compiled and stored there."""
        _, nvrtc = _libs()
        source = source or self.spec.source
        name = "%s.%s.%s.%s.cubin" % (source.rsplit(".", 1)[0], plat.name, target, nvrtc.version())
        path = self.entry.path(name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                return f.read()
        with open(self.entry.path(source)) as f:
            src = f.read()
        cubin, _ = nvrtc.compile(src, source, plat.nvrtc_options(target))
        _cache.write_atomic(path, cubin)
        return cubin

    def _flag_buffer(self, device, stream, sizes, block_n):
        key = (device, stream, tuple(sorted(sizes.items())))
        t = self._flags.get(key)
        if t is None:
            t = torch.empty(max(1, self.spec.flag_bytes(sizes, block_n)), dtype=torch.uint8, device=device)
            self._flags[key] = t
        return t

    def _check_call(self, q, k, v, buffers, layout, frame):
        """(sizes, checked buffers) of a forward or backward call, before
        anything is launched: q, k, v against the block, the buffers against
        their declarations at the sizes the mask sees (frame: six ints or
        None), and every buffer read against its buffer at those sizes."""
        spec = self.spec
        sz = _checks.check_qkv(q, k, v, layout, spec.head_dim, spec.dtype, dtype_name)
        glob = _global_sizes(sz, frame)
        checked = _checks.check_buffers(spec.buffers, {b.name: t for b, t in zip(spec.buffers, buffers)},
                                        glob, q.device, dtype_name)
        _checks.check_reads(spec.reads, _checks.bound_env(sz, glob, frame), [ext for _, ext in checked])
        return sz, checked

    def forward(self, q, k, v, buffers, sink, layout, frame=None):
        """(out, lse) of the generated kernel: checks, then one or two
        launches on the current stream; no synchronisation. frame: six
        position-frame ints or None (Attention.__call__)."""
        spec, man = self.spec, self.man
        frame = _frame_values(frame)
        sz, checked = self._check_call(q, k, v, buffers, layout, frame)
        if _checks.segments_check_enabled():  # opt-in: reads segments buffers back (checks.check_segments)
            _checks.check_segments(spec.buffers, checked)
        if sink is not None:
            if sink.dtype != torch.float32 or list(sink.shape) != [sz.H] or sink.device != q.device:
                raise MaskcError("sink %s must be float32 [H] = [%d] on %s; got %s %s on %s" %
                                 (spec.sink, sz.H, q.device, sink.dtype, list(sink.shape), sink.device))
            sink = sink.contiguous()
        out, lse = _out_lse_like(q, layout)
        if sz.B == 0 or sz.H == 0 or sz.Q == 0:
            return out, lse
        if sz.KV == 0:
            raise MaskcError("Skv = 0: a generated kernel needs at least one key")
        plat, fwd, flagsfn, segfn = self._module(q.device)
        block_n, threads, smem = spec.launch[plat.name]
        sizes = dict(B=sz.B, H=sz.H, HKV=sz.HKV, Sq=sz.Q, Skv=sz.KV)
        strides = {n: _checks.bhsd_strides(t, layout)[:3] for n, t in (("q", q), ("k", k), ("v", v), ("o", out))}
        stream = torch.cuda.current_stream(q.device)
        flags = self._flag_buffer(q.device, stream.cuda_stream, sizes, block_n) if flagsfn is not None else None
        fptr = flags.data_ptr() if flags is not None else 0
        status = self._status_words(q.device, stream.cuda_stream)
        sh, bf = man.pack(spec, sizes, strides, spec.scale, sink.data_ptr() if sink is not None else 0, fptr,
                          [(t.data_ptr(), ext) for t, ext in checked], frame, status.data_ptr())
        drv, _ = _libs()
        block = (threads, 1, 1)
        with torch.cuda.device(q.device):
            drv.ensure_context(q.device.index if q.device.index is not None else torch.cuda.current_device())
            seg = man.seg_check_launch(spec, plat, bf)
            if seg is not None:  # first: whether the segments ids are sorted, for the launches below
                name, grid, sthreads, _, args = seg
                drv.launch(segfn, grid, (sthreads, 1, 1), 0, stream.cuda_stream, args, name)
            if flagsfn is not None:
                e = man.entries[spec.flags_entry]
                drv.launch(flagsfn, e.grid_dims(sizes, man.block_m, block_n), block, 0, stream.cuda_stream,
                           e.args(dict(shape=sh, buf=bf, flags=fptr), man.structs), spec.flags_entry)
            e = man.entries[spec.entry]
            drv.launch(fwd, e.grid_dims(sizes, man.block_m, block_n), block, smem if e.shared_mem else 0,
                       stream.cuda_stream, e.args(dict(Q=q.data_ptr(), K=k.data_ptr(), V=v.data_ptr(),
                                                       O=out.data_ptr(), LSE=lse.data_ptr(), shape=sh, buf=bf),
                                                  man.structs), spec.entry)
        return out, lse

    def grad_slots(self, buffers):
        """The slots whose gradient the backward can give: buffers the score
        reads differentiably (manifest grad) that are floating point."""
        return [b.slot for b, t in zip(self.spec.buffers, buffers) if b.grad and t.dtype.is_floating_point]

    def backward(self, dout, dlse, q, k, v, out, lse, buffers, sink, layout, deterministic, want=-1, frame=None):
        """(dq, dk, dv, grads) of the generated backward: dq, dk, dv in
        q's, k's, v's layout (GQA-reduced), grads one per buffer (the
        gradient of each differentiable float buffer whose bit is set in
        want, in the buffer's dtype; zeros for the others) then dsink (f32
        [H]) when there is a sink (bit max_buffers of want). dlse, the
        gradient of the LSE output, may be None. Launches on the current
        stream; no synchronisation; deterministic selects the dQ kernel
        without atomics (bitwise-reproducible gradients). frame: the
        forward's position frame (six ints or None); out and lse may be a
        merged output and LSE of several framed calls (maskc.cp's ring)."""
        spec, man = self.spec, self.man
        frame = _frame_values(frame)
        sz, checked = self._check_call(q, k, v, buffers, layout, frame)
        dout = _kernel_operand(dout, layout)
        out = _kernel_operand(out, layout)
        if tuple(dout.shape) != tuple(q.shape) or dout.dtype != q.dtype:
            raise MaskcError("the gradient of O is %s %s; want %s %s" % (dout.dtype, tuple(dout.shape), q.dtype,
                                                                         tuple(q.shape)))
        dq, dk, dv = q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)
        slots = [s for s in self.grad_slots(buffers) if want >> s & 1]
        with_sink = sink is not None and bool(want >> man.max_buffers & 1)
        grads = [torch.zeros_like(t) for t in buffers]
        dsink = torch.zeros(sz.H, dtype=torch.float32, device=q.device) if sink is not None else None
        if sz.B == 0 or sz.H == 0 or sz.Q == 0 or sz.KV == 0:  # nothing attends: every gradient is zero
            return dq.zero_(), dk.zero_(), dv.zero_(), grads + ([dsink] if dsink is not None else [])
        plat, fns = self._bwd_module(q.device)
        dev = q.device
        delta = torch.empty((sz.B, sz.H, sz.Q), dtype=torch.float32, device=dev)
        dq_acc = None if deterministic else torch.empty((sz.B, sz.H, sz.Q, sz.D), dtype=torch.float32, device=dev)
        accs = {s: torch.zeros(buffers[s].numel(), dtype=torch.int64, device=dev) for s in slots}
        dbufs = {s: torch.empty(buffers[s].shape, dtype=torch.float32, device=dev) for s in slots}
        if dlse is not None:
            dlse = dlse.to(torch.float32).contiguous()
        sizes = dict(B=sz.B, H=sz.H, HKV=sz.HKV, Sq=sz.Q, Skv=sz.KV)
        named = (("q", q), ("k", k), ("v", v), ("o", out), ("do", dout), ("dq", dq), ("dk", dk), ("dv", dv))
        strides = {n: _checks.bhsd_strides(t, layout)[:3] for n, t in named}
        ptr = lambda t: t.data_ptr() if t is not None else 0
        block_n = spec.launch[plat.name][0]
        flags = None
        if spec.flags_entry:  # the tile flags of these buffers, recomputed for this backward
            flags = torch.empty(max(1, spec.flag_bytes(sizes, block_n)), dtype=torch.uint8, device=dev)
        stream = torch.cuda.current_stream(dev).cuda_stream
        fsh, bf = man.pack(spec, sizes, {n: strides[n] for n in "qkvo"}, spec.scale, ptr(sink), ptr(flags),
                           [(t.data_ptr(), ext) for t, ext in checked], frame,
                           self._status_words(dev, stream).data_ptr())
        sh = man.pack_bwd(sizes, strides, spec.scale,
                          dict(sink=ptr(sink), tile_flags=ptr(flags), lse=lse.data_ptr(), dlse=ptr(dlse),
                               delta=delta.data_ptr(), dq_acc=ptr(dq_acc), dsink=ptr(dsink) if with_sink else 0),
                          {s: a.data_ptr() for s, a in accs.items()})
        ptrs = dict(O=out.data_ptr(), dO=dout.data_ptr(), Q=q.data_ptr(), K=k.data_ptr(), V=v.data_ptr(),
                    dQ=dq.data_ptr(), dK=dk.data_ptr(), dV=dv.data_ptr(), flags=ptr(flags), flags_shape=fsh)
        launches = man.bwd_launches(spec, plat, sizes, ptrs, sh, bf, deterministic, with_sink,
                                    {s: (accs[s].data_ptr(), dbufs[s].data_ptr(), accs[s].numel()) for s in slots})
        drv, _ = _libs()
        with torch.cuda.device(dev):
            drv.ensure_context(dev.index if dev.index is not None else torch.cuda.current_device())
            for name, grid, threads, smem, args in launches:
                drv.launch(fns[name], grid, (threads, 1, 1), smem, stream, args, name)
        for s in slots:
            grads[s] = dbufs[s].to(buffers[s].dtype)
        return dq, dk, dv, grads + ([dsink] if dsink is not None else [])


def _kernel_operand(t, layout):
    """t itself when a kernel can read it through strides (contiguous last
    dimension, 16-byte aligned, (batch, head, seq) strides multiples of 8
    elements), else a contiguous copy (a gradient torch expanded from a
    scalar, say)."""
    s = _checks.bhsd_strides(t, layout)
    if t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and all(x % 8 == 0 and x > 0 for x in s[:3]):
        return t
    return t.contiguous()


def _out_lse_like(q, layout):
    """Empty output (q's shape, contiguous) and LSE [B, H, Sq] float32."""
    h, sq = _heads_seq(q, layout)
    return q.new_empty(q.shape), q.new_empty((q.shape[0], h, sq), dtype=torch.float32)


@torch.library.custom_op("maskc::attn_fwd", mutates_args=())
def attn_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, buffers: List[torch.Tensor],
             sink: Optional[torch.Tensor], kernel: str, layout: str, deterministic: bool,
             frame: Optional[List[int]]) -> Tuple[torch.Tensor, torch.Tensor]:
    """maskc's generated attention forward: (out in q's layout, LSE [B, H, Sq]).
    kernel names a launcher of this process; buffers are in slot order;
    sink is the block's f32 [H] sink logits or None; frame the position
    frame's six ints (abi.FRAME_FIELDS) or None for the whole attention.
    frame has no default on purpose: torch's dispatcher drops an argument
    equal to its default before autograd, and the backward must return one
    gradient per argument it kept (device run 17 cp)."""
    return _launcher(kernel).forward(q, k, v, buffers, sink, layout, frame)


@attn_fwd.register_fake
def _attn_fwd_fake(q, k, v, buffers, sink, kernel, layout, deterministic, frame):
    return _out_lse_like(q, layout)


@torch.library.custom_op("maskc::attn_bwd", mutates_args=())
def attn_bwd(dout: torch.Tensor, dlse: Optional[torch.Tensor], q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             out: torch.Tensor, lse: torch.Tensor, buffers: List[torch.Tensor], sink: Optional[torch.Tensor],
             kernel: str, layout: str, deterministic: bool, want: int, frame: Optional[List[int]] = None
             ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, List[torch.Tensor]]:
    """maskc's generated attention backward: (dq, dk, dv, grads) where grads
    holds one gradient per buffer (zeros for buffers that are not
    differentiable or not wanted), then dsink when there is a sink. want:
    bit i asks for buffer slot i's gradient, bit max_buffers for dsink;
    frame as in attn_fwd."""
    return _launcher(kernel).backward(dout, dlse, q, k, v, out, lse, buffers, sink, layout, deterministic, want,
                                      frame)


@attn_bwd.register_fake
def _attn_bwd_fake(dout, dlse, q, k, v, out, lse, buffers, sink, kernel, layout, deterministic, want, frame=None):
    return (q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape),
            [b.new_empty(b.shape) for b in buffers] + ([] if sink is None else [sink.new_empty(sink.shape)]))


def _setup_context(ctx, inputs, output):
    q, k, v, buffers, sink, kernel, layout, deterministic, frame = inputs
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, sink, *buffers)
    ctx.kernel, ctx.layout, ctx.deterministic, ctx.frame = kernel, layout, deterministic, frame
    want = 0
    for i, b in enumerate(buffers):
        if b.requires_grad:
            want |= 1 << i
    if sink is not None and sink.requires_grad:
        want |= 1 << _launcher(kernel).man.max_buffers
    ctx.want = want


def _backward(ctx, dout, dlse):
    q, k, v, out, lse, sink, *buffers = ctx.saved_tensors
    dq, dk, dv, grads = attn_bwd(dout, dlse, q, k, v, out, lse, buffers, sink, ctx.kernel, ctx.layout,
                                 ctx.deterministic, ctx.want, ctx.frame)
    dbufs = [g if b.dtype.is_floating_point and ctx.want >> i & 1 else None
             for i, (g, b) in enumerate(zip(grads, buffers))]
    dsink = grads[len(buffers)] if sink is not None else None
    return dq, dk, dv, dbufs, dsink, None, None, None, None


attn_fwd.register_autograd(_backward, setup_context=_setup_context)


# FlexAttention's API over the user's own Python mods (maskc.flex reads their
# source and closures into a .flex text and runs it through load/Attention).
from .flex import (AuxOutput, AuxRequest, BlockMask, and_masks, create_block_mask, flex_attention,  # noqa: E402
                   noop_mask, or_masks)

__all__ += ["flex_attention", "create_block_mask", "BlockMask", "and_masks", "or_masks", "noop_mask", "AuxRequest",
            "AuxOutput"]
