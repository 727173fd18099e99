"""maskc's generated-kernel launcher: the kernel of one attention block
(_Generated) with its argument checks, its code object (prebuilt, from the
cache, or NVRTC-compiled for the running GPU) loaded into torch's CUDA
context, its launches on the current stream, and its status words. The
custom ops (maskc.ops) find a launcher by key; maskc.api builds one per
block; the GPU scripts' harness (gpu/harness.py) launches through it too.

Also the facts about torch tensors and calls that the API, dispatch and the
launcher share: dtype_name, _heads_seq, _platform, _frame_values.
"""
import os
import threading

import torch

from . import abi as _abi
from . import cache as _cache
from . import checks as _checks
from . import decode as _decode
from . import dtypes as _dtypes
from .diagnostics import MaskcError

_DTYPE_NAMES = {getattr(torch, t): n for n, t in _dtypes.TORCH.items()}


def dtype_name(t):
    """maskc's name of a tensor's element type (bf16, f16, f32, i32, ...)."""
    return _DTYPE_NAMES.get(t.dtype, str(t.dtype).replace("torch.", ""))



def _platform():
    return "hip" if getattr(torch.version, "hip", None) else "cuda"



def _heads_seq(t, layout):
    """(heads, seq) of a 4-D q/k/v in layout."""
    return (t.shape[2], t.shape[1]) if layout == "bshd" else (t.shape[1], t.shape[2])



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


def load_functions(cubin, names, smem=0, smem_names=()):
    """Loads code object cubin into the current CUDA context (the caller
    makes torch's current) and returns (module, {name: function}) for each
    of names that is set, with the dynamic shared memory limit raised to
    smem bytes for smem_names. The one way maskc's generated kernels are
    loaded: _Generated and the GPU scripts' harness (gpu/harness.py)."""
    drv, _ = _libs()
    mod = drv.load_module(cubin)
    fns = {n: drv.function(mod, n) for n in names if n}
    if smem:
        for n in smem_names:
            drv.set_max_dynamic_smem(fns[n], smem)
    return mod, fns


def tensor_maps(man, spec, plat, sh, ptrs, drv=None, bwd=False):
    """The forward's MaskcTensorMaps (its last parameter), or with bwd
    maskc_attn_bwd's, for one launch of kernel spec on platform plat: where
    the launch (bwd_launch) gives tensor_maps (the rows of their boxes) and
    no size is zero, the maps of Q, K and V (and dO) (man.tensor_map_requests;
    sh the packed MaskcShape, or MaskcBwdShape) encoded by drv (default
    the process's Driver) with ok = 1; else, and where the driver cannot
    encode them (no cuTensorMapEncodeTiled, or a stand-in driver without
    encode_tensor_map) or refuses one (CudaError: a stride or address the
    copy engine cannot take), all zero: the kernel then copies by cp.async,
    as correct, slower."""
    reqs = man.tensor_map_requests(spec, plat.name, sh, ptrs, bwd=bwd)
    if reqs is None:
        return man.pack_maps()
    from .cuda import CudaError
    if drv is None:
        drv, _ = _libs()
    encode = getattr(drv, "encode_tensor_map", None)
    if encode is None:
        return man.pack_maps()
    encoded = {}
    for name, kw in reqs:
        try:
            encoded[name] = encode(**kw)
        except CudaError:
            return man.pack_maps()
        if encoded[name] is None:  # the driver has no cuTensorMapEncodeTiled
            return man.pack_maps()
    return man.pack_maps(encoded)


def fwd_launches(man, spec, plat, sizes, ptrs, sh, bf, flags=0, geometry=None, maps=True):
    """The forward's launches of kernel spec on platform plat, in order, as
    (entry, grid, threads, dynamic smem, ctypes args): the segments check
    (first: whether the ids are sorted, for the launches after it), the
    tile-flag pre-pass when the kernel has one and flags (the address of
    its buffer) is set, the forward. ptrs: the Q, K, V, O and LSE
    addresses; sh, bf: the packed MaskcShape and MaskcBuffers (man.pack);
    geometry: (block_n, threads, smem), default the manifest's for plat.
    The forward's MaskcTensorMaps are tensor_maps' (encoded where the launch
    says tensor_maps); maps False: all zero, encoding nothing (a caller
    that drops the forward's launch). The backward's are man.bwd_launches."""
    block_n, threads, smem = geometry or spec.launch[plat.name]
    out = []
    seg = man.seg_check_launch(spec, plat, bf)
    if seg is not None:
        out.append(seg)
    if spec.flags_entry and flags:
        e = man.entries[spec.flags_entry]
        out.append((spec.flags_entry, e.grid_dims(sizes, man.block_m, block_n), threads, 0,
                    e.args(dict(shape=sh, buf=bf, flags=flags), man.structs)))
    e = man.entries[spec.entry]
    tm = tensor_maps(man, spec, plat, sh, ptrs) if maps else man.pack_maps()
    out.append((spec.entry, e.grid_dims(sizes, man.block_m, block_n), threads, smem if e.shared_mem else 0,
                e.args(dict(ptrs, shape=sh, buf=bf, maps=tm), man.structs)))
    return out


def launch_all(fns, launches, stream):
    """Launches each (entry, grid, threads, smem, args) of launches
    (fwd_launches, man.bwd_launches) with its function in fns on stream (a
    CUDA stream handle), in order, every call checked."""
    drv, _ = _libs()
    for name, grid, threads, smem, args in launches:
        drv.launch(fns[name], grid, (threads, 1, 1), smem, stream, args, name)


class TileMap:
    """The tile flags of an attention block's pre-pass for one call's sizes
    and buffers, made once (Attention.tile_map) and passed to every call with
    the same sizes, device, frame and buffers (tile_map=), as a FlexAttention
    BlockMask is built once per batch and shared by the layers: such calls
    launch no pre-pass, and their backward reads the same flags. Where the
    forward runs no pre-pass of its own (a decode-sized call) the map has
    no flags (flags None) and changes nothing; Attention.tile_map gives
    None for a block without a pre-pass. A call refuses a map made for another block,
    sizes, device or frame, or whose buffers are other tensors or have been
    written since it was made (their version counters): its flags would not
    be the mask's."""

    def __init__(self, key, sizes, device, frame, buffers, flags):
        self.key, self.sizes, self.device, self.frame, self.flags = key, dict(sizes), device, frame, flags
        self._buffers = [(t, t._version) for t in buffers]

    def flags_for(self, gen, q, k, layout, buffers, frame):
        """This map's flags (None without a pre-pass) for a call of gen on
        q, k in layout with buffers (slot order) and frame (six ints or
        None); raises MaskcError where the map is not that call's."""
        name = gen.spec.attention
        sizes = _shape_sizes(q, k, layout)
        if self.key != gen.key:
            raise MaskcError("block %s: tile_map was made for %s" % (name, self.key))
        if self.sizes != sizes or self.device != q.device or self.frame != frame:
            raise MaskcError("block %s: tile_map was made for sizes %s on %s (frame %s); this call has %s on %s "
                             "(frame %s): make one per shape" % (name, _sizes_text(self.sizes), self.device,
                                                                  self.frame, _sizes_text(sizes), q.device, frame))
        for (t, version), b, spec in zip(self._buffers, buffers, gen.spec.buffers):
            if t is not b:
                raise MaskcError("block %s: buffer %s is another tensor than the one tile_map was made with: make the "
                                 "map again for these buffers" % (name, spec.name))
            if t._version != version:
                raise MaskcError("block %s: buffer %s was written after tile_map was made (version %d, then %d): "
                                 "make the map again" % (name, spec.name, version, t._version))
        return self.flags


def _shape_sizes(q, k, layout):
    """The kernel's sizes {B, H, HKV, Sq, Skv} read off q's and k's shapes
    in layout (unchecked: _check_call checks them)."""
    h, sq = _heads_seq(q, layout)
    hkv, skv = _heads_seq(k, layout)
    return dict(B=q.shape[0], H=h, HKV=hkv, Sq=sq, Skv=skv)


def _sizes_text(sizes):
    return "B=%(B)d H=%(H)d HKV=%(HKV)d Sq=%(Sq)d Skv=%(Skv)d" % sizes


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

    def __call__(self, q, k, v, layout, buffers, return_lse, deterministic, frame=None, tile_map=None):
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
        given = None
        if tile_map is not None and not torch.compiler.is_compiling():
            # Under torch.compile the map is not read: its checks (buffer
            # identities and version counters) cannot be traced, and a
            # compiled call runs its own pre-pass (device run 44a).
            given = tile_map.flags_for(self, q, k, layout, blist, _frame_values(frame))
        if torch.compiler.is_compiling() or grad:
            out, lse, _ = torch.ops.maskc.attn_fwd(q, k, v, blist, sink, self.key, layout, deterministic, frame,
                                                   given)
        else:  # plain eager inference: skip the dispatcher
            out, lse = self.forward(q, k, v, blist, sink, layout, frame, given_flags=given)
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
        """(platform, {entry name: function}) of the forward source for
        device: the forward, its tile-flag pre-pass and segments check when
        it has them, loaded into torch's context on first use."""
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
                spec = self.spec
                if plat.name not in spec.launch:
                    raise MaskcError("the manifest has no launch configuration of %s for platform %s" %
                                     (spec.name, plat.name))
                _, fns = load_functions(self._cubin(plat, target), (spec.entry, spec.flags_entry,
                                                                     spec.seg_check_entry),
                                        spec.launch[plat.name][2], (spec.entry,))
            self._status_words(device, torch.cuda.current_stream(device).cuda_stream)
            self._loaded[idx] = (plat, fns)
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
                _, fns = load_functions(self._cubin(plat, target, spec.bwd_source),
                                        list(spec.bwd_entries) + [spec.flags_entry, spec.seg_check_entry],
                                        max(spec.bwd_launch[plat.name].entry(e)[1] for e in spec.bwd_entries),
                                        [e for e in spec.bwd_entries if self.man.bwd_entries[e].shared_mem])
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

    def flag_count(self, q, k, layout):
        """Elements of the tile flags that forward(keep_flags=True) returns
        for q and k in layout: the pre-pass's flag bytes at these sizes on
        q's device, or 0 where the forward computes none of its own (a
        kernel without a pre-pass, an empty problem, a forward that runs the
        decode kernel). Shapes only: the op's fake calls it too."""
        if not self.spec.flags_entry:
            return 0
        sizes = _shape_sizes(q, k, layout)
        if 0 in (sizes["B"], sizes["H"], sizes["Sq"], sizes["Skv"]) or _decode.applies(self.man, sizes["Sq"]):
            return 0
        plat, _ = self._target(self._index(q.device))
        return self.spec.flag_bytes(sizes, self.spec.launch[plat.name][0])

    def tile_map(self, q, k, buffers, layout, frame=None):
        """A TileMap for calls on q, k (their shapes, layout and device; k
        stands for v) with buffers (slot order) and frame: the pre-pass
        launched once into flags of its own (with the segments check before
        it where the kernel has one), or a map without flags where the
        forward would run none (flag_count 0)."""
        spec, man = self.spec, self.man
        frame = _frame_values(frame)
        sz, checked = self._check_call(q, k, k, buffers, layout, frame)
        sizes = sz.launch_sizes()
        n = self.flag_count(q, k, layout)
        if n == 0:
            return TileMap(self.key, sizes, q.device, frame, buffers, None)
        flags = torch.empty(n, dtype=torch.uint8, device=q.device)
        plat, fns = self._module(q.device)
        strides = {x: _checks.bhsd_strides(t, layout)[:3] for x, t in (("q", q), ("k", k), ("v", k), ("o", q))}
        stream = torch.cuda.current_stream(q.device)
        status = self._status_words(q.device, stream.cuda_stream)
        sh, bf = man.pack(spec, sizes, strides, spec.scale, 0, flags.data_ptr(),
                          [(t.data_ptr(), ext) for t, ext in checked], frame, status.data_ptr())
        ptrs = dict(Q=q.data_ptr(), K=k.data_ptr(), V=k.data_ptr(), O=0, LSE=0)
        launches = fwd_launches(man, spec, plat, sizes, ptrs, sh, bf, flags.data_ptr(),
                                maps=False)[:-1]  # not the forward
        drv, _ = _libs()
        with torch.cuda.device(q.device):
            drv.ensure_context(q.device.index if q.device.index is not None else torch.cuda.current_device())
            launch_all(fns, launches, stream.cuda_stream)
        return TileMap(self.key, sizes, q.device, frame, buffers, flags)

    def forward(self, q, k, v, buffers, sink, layout, frame=None, keep_flags=False, given_flags=None):
        """(out, lse) of the generated kernel: checks, then one or two
        launches on the current stream; no synchronisation. frame: six
        position-frame ints or None (Attention.__call__). keep_flags: return
        (out, lse, flags), flags the tile flags this forward computed, in a
        uint8 tensor of its own of flag_count elements (empty where it
        computed none), which the backward of the same call reads instead of
        recomputing them (backward's flags). given_flags: a TileMap's flags
        for this call (TileMap.flags_for has checked them): no pre-pass runs,
        and with keep_flags the flags returned are empty (the caller has
        them)."""
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
        n_kept = self.flag_count(q, k, layout) if keep_flags and given_flags is None else 0
        kept = torch.empty(n_kept, dtype=torch.uint8, device=q.device) if keep_flags else None
        done = (out, lse, kept) if keep_flags else (out, lse)
        if sz.B == 0 or sz.H == 0 or sz.Q == 0:
            return done
        if sz.KV == 0:
            raise MaskcError("Skv = 0: a generated kernel needs at least one key")
        plat, fns = self._module(q.device)
        block_n = spec.launch[plat.name][0]
        sizes = sz.launch_sizes()
        strides = {n: _checks.bhsd_strides(t, layout)[:3] for n, t in (("q", q), ("k", k), ("v", v), ("o", out))}
        stream = torch.cuda.current_stream(q.device)
        flags, run_prepass = None, True
        if given_flags is not None:  # a TileMap's
            want = self.flag_count(q, k, layout)
            if given_flags.numel() != want:
                raise MaskcError("block %s: tile_map's flags have %d elements; this call reads %d" %
                                 (spec.attention, given_flags.numel(), want))
            flags, run_prepass = given_flags, False
        elif n_kept:  # this call's own flags (flag_count: the pre-pass runs below)
            flags = kept
        elif spec.flags_entry:
            flags = self._flag_buffer(q.device, stream.cuda_stream, sizes, block_n)
        fptr = flags.data_ptr() if flags is not None else 0
        status = self._status_words(q.device, stream.cuda_stream)
        sh, bf = man.pack(spec, sizes, strides, spec.scale, sink.data_ptr() if sink is not None else 0, fptr,
                          [(t.data_ptr(), ext) for t, ext in checked], frame, status.data_ptr())
        ptrs = dict(Q=q.data_ptr(), K=k.data_ptr(), V=v.data_ptr(), O=out.data_ptr(), LSE=lse.data_ptr())
        drv, _ = _libs()
        with torch.cuda.device(q.device):
            drv.ensure_context(q.device.index if q.device.index is not None else torch.cuda.current_device())
            dec = _decode.launches(self, plat, sizes, ptrs, sh, bf, q.device)  # Sq <= 16: maskc.decode's kernel
            if dec and n_kept:  # flag_count said the decode kernel does not apply
                raise MaskcError("internal: block %s ran the decode kernel where flag_count promised tile flags" %
                                 spec.attention)
            fs, ls = dec[:2] if dec else (fns, fwd_launches(man, spec, plat, sizes, ptrs, sh, bf,
                                                            fptr if run_prepass else 0))
            launch_all(fs, ls, stream.cuda_stream)
        return done

    def grad_slots(self, buffers):
        """The slots whose gradient the backward can give: buffers the score
        reads differentiably (manifest grad) that are floating point."""
        return [b.slot for b, t in zip(self.spec.buffers, buffers) if b.grad and t.dtype.is_floating_point]

    def backward(self, dout, dlse, q, k, v, out, lse, buffers, sink, layout, deterministic, want=-1, frame=None,
                 flags=None):
        """(dq, dk, dv, grads) of the generated backward: dq, dk, dv in
        q's, k's, v's layout (GQA-reduced), grads one per buffer (the
        gradient of each differentiable float buffer whose bit is set in
        want, in the buffer's dtype; zeros for the others) then dsink (f32
        [H]) when there is a sink (bit max_buffers of want). dlse, the
        gradient of the LSE output, may be None. Launches on the current
        stream; no synchronisation; deterministic adds dQ in a fixed order
        (where the kernel's bwd_launch says dq_ordered) or by the dQ kernel,
        without atomics (bitwise-reproducible gradients). frame: the
        forward's position frame (six ints or None); out and lse may be a
        merged output and LSE of several framed calls (maskc.cp's ring).
        flags: the tile flags forward(keep_flags=True) returned for these
        inputs (their buffers unchanged since), read instead of running the
        pre-pass again; None or empty: the backward computes its own."""
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
        acc_dims, sem_dims = spec.bwd_launch[plat.name].dq_scratch(deterministic, sz.B, sz.H, sz.Q, sz.D)
        dq_acc = torch.empty(acc_dims, dtype=torch.float32, device=dev) if acc_dims else None
        dq_sem = torch.empty(sem_dims, dtype=torch.int32, device=dev) if sem_dims else None
        accs = {s: torch.zeros(buffers[s].numel(), dtype=torch.int64, device=dev) for s in slots}
        dbufs = {s: torch.empty(buffers[s].shape, dtype=torch.float32, device=dev) for s in slots}
        if dlse is not None:
            dlse = dlse.to(torch.float32).contiguous()
        sizes = sz.launch_sizes()
        named = (("q", q), ("k", k), ("v", v), ("o", out), ("do", dout), ("dq", dq), ("dk", dk), ("dv", dv))
        strides = {n: _checks.bhsd_strides(t, layout)[:3] for n, t in named}
        ptr = lambda t: t.data_ptr() if t is not None else 0
        block_n = spec.launch[plat.name][0]
        given = flags if flags is not None and flags.numel() > 0 and spec.flags_entry else None
        if given is not None:  # the forward's own flags of these buffers
            want_n = spec.flag_bytes(sizes, block_n)
            if given.numel() != want_n or given.dtype != torch.uint8 or given.device != dev:
                raise MaskcError("block %s: the forward's tile flags are %s %s on %s; this backward reads %d uint8 "
                                 "on %s" % (spec.attention, given.dtype, tuple(given.shape), given.device, want_n,
                                            dev))
        flags = None
        if given is not None:
            flags = given
        elif spec.flags_entry:  # the tile flags of these buffers, recomputed for this backward
            flags = torch.empty(max(1, spec.flag_bytes(sizes, block_n)), dtype=torch.uint8, device=dev)
        stream = torch.cuda.current_stream(dev).cuda_stream
        fsh, bf = man.pack(spec, sizes, {n: strides[n] for n in "qkvo"}, spec.scale, ptr(sink), ptr(flags),
                           [(t.data_ptr(), ext) for t, ext in checked], frame,
                           self._status_words(dev, stream).data_ptr())
        sh = man.pack_bwd(sizes, strides, spec.scale,
                          dict(sink=ptr(sink), tile_flags=ptr(flags), lse=lse.data_ptr(), dlse=ptr(dlse),
                               delta=delta.data_ptr(), dq_acc=ptr(dq_acc), dq_sem=ptr(dq_sem),
                               dsink=ptr(dsink) if with_sink else 0),
                          {s: a.data_ptr() for s, a in accs.items()})
        ptrs = dict(O=out.data_ptr(), dO=dout.data_ptr(), Q=q.data_ptr(), K=k.data_ptr(), V=v.data_ptr(),
                    dQ=dq.data_ptr(), dK=dk.data_ptr(), dV=dv.data_ptr(),
                    flags=ptr(flags) if given is None else 0, flags_shape=fsh)  # 0: no pre-pass launch
        launches = man.bwd_launches(spec, plat, sizes, ptrs, sh, bf, deterministic, with_sink,
                                    {s: (accs[s].data_ptr(), dbufs[s].data_ptr(), accs[s].numel()) for s in slots},
                                    maps=tensor_maps(man, spec, plat, sh, ptrs, bwd=True))
        drv, _ = _libs()
        with torch.cuda.device(dev):
            drv.ensure_context(dev.index if dev.index is not None else torch.cuda.current_device())
            launch_all(fns, launches, stream)
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
