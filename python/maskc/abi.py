"""The generated kernels' ABI, read from the manifest `maskc compile` writes.

The one definition of the ABI lives in Go (hipsrc/abi.go) and reaches Python
only through DIR/manifest.json (schema: hipsrc/MANIFEST.md): the argument
structs with their byte layout, the entry points with their parameters and
grid rule, the platforms (threads, key tile, compile options) and, per
kernel, its buffers, launch configuration and sparsity. Nothing here restates
an offset, a size or a grid; this module turns the manifest into ctypes
structures (checked field by field against the manifest's offsets), argument
lists and grids, and refuses a manifest whose version it does not read.

Field and parameter *names* are the contract this package fills values in
by (MaskcShape.B, maskc_attn_fwd's Q, ...); a name it does not know is an
error when the manifest is read, never a silently zero argument.
"""
import collections
import ctypes
import json
import os
import re

from .cuda import TENSOR_MAP_BYTES  # what MaskcTensorMaps.q, .k and .v hold (hipsrc.TensorMapBytes)
from .diagnostics import MaskcError

__all__ = ["ABI_VERSION", "MANIFEST_VERSION", "MANIFEST_FILE", "BWD_SEM_ROWS", "FRAME_FIELDS", "TENSOR_MAP_BYTES",
           "BufferSpec", "Platform", "Entry", "BwdLaunch", "TensorMapDesc", "KernelSpec", "Manifest", "read_manifest",
           "pick_platform"]

#: The manifest schema version this package reads (hipsrc.ManifestVersion): 5 made each kernels[] entry
#: the kernel's one descriptor (hipsrc.KernelDesc), which plan.json names; 6 gave the backward's main
#: and dQ kernels their own block size and shared memory (bwd_launch main_threads, dq_shared_mem_bytes); 7 says
#: where deterministic mode adds dQ in order in the main kernel (bwd_launch dq_ordered).
MANIFEST_VERSION = 7
#: The kernel ABI version this package fills structs for (hipsrc.ABIVersion, the manifest's abi.version):
#: 7 gave maskc_attn_fwd its last parameter, MaskcTensorMaps (abi.tensor_maps, launch[platform].tensor_maps);
#: 8 gave MaskcTensorMaps dout and maskc_attn_bwd the same last parameter (bwd_launch[platform].tensor_maps).
ABI_VERSION = 8
#: The manifest's file name in a compile output directory.
MANIFEST_FILE = "manifest.json"
#: Query rows per turn counter of the ordered dQ (MaskcBwdShape.dq_sem): attn_bwd.h's MASKC_BWD_SEM_ROWS
#: (hipsrc.BwdSemRows), which a test compares.
BWD_SEM_ROWS = 16

_SCALARS = {"int": ctypes.c_int32, "long long": ctypes.c_int64, "float": ctypes.c_float,
            "unsigned char": ctypes.c_uint8}
# The values this package knows how to fill, by struct and field name.
_SHAPE_FIELDS = {"B", "H", "HKV", "Sq", "Skv", "q_stride", "k_stride", "v_stride", "o_stride", "scale", "sink",
                 "tile_flags"}
#: The position frame's members of MaskcBuffers (hipsrc.FrameFields, hipsrc/frame.h), in order.
FRAME_FIELDS = ("q_offset", "kv_offset", "h_offset", "q_total", "kv_total", "h_total")
_BUFFERS_FIELDS = {"ptr", "dim", "status"} | set(FRAME_FIELDS)
# MaskcTensorMaps, the copy-engine maps of the forward and the backward (hipsrc.TensorMapsStruct), filled by
# Manifest.pack_maps.
_TENSOR_MAPS_FIELDS = {"q", "k", "v", "dout", "ok"}
# CUtensorMapSwizzle (cuda.h) by the swizzle's bytes, the manifest's abi.tensor_maps.swizzle_bytes.
_SWIZZLES = {32: 1, 64: 2, 128: 3}
# CUtensorMapDataType (cuda.h) and element bytes of the kernels' dtypes (KernelSpec.dtype) a map can describe.
_MAP_DTYPES = {"bf16": (9, 2), "f16": (6, 2)}  # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16
_GRID_SIZES = {"B", "H", "HKV", "Sq", "Skv", "n", "1"}
_GRID_TILES = ("", "block_m", "block_n", "bwd_block_m", "bwd_block_n", "bwd_pre_rows", "bwd_threads")
# The backward's struct, filled by name through pack_bwd.
_BWD_SHAPE_FIELDS = {"B", "H", "HKV", "Sq", "Skv", "q_stride", "k_stride", "v_stride", "o_stride", "do_stride",
                     "dq_stride", "dk_stride", "dv_stride", "scale", "sink", "tile_flags", "lse", "dlse", "delta",
                     "dq_acc", "dq_sem", "dsink", "dbuf"}


def _ctype(c_type, dims, where):
    if c_type.endswith("*"):
        t = ctypes.c_void_p
    elif c_type in _SCALARS:
        t = _SCALARS[c_type]
    else:
        raise MaskcError("manifest: %s has C type %r, which this package cannot pass" % (where, c_type))
    for n in reversed(dims or []):
        t = t * int(n)
    return t


def _struct(desc, known=None):
    """A ctypes.Structure for one manifest struct, its layout checked
    against every offset and size the manifest states. known: the field
    names the caller fills (every one must be there, and no other); None
    takes the struct as it is."""
    name = desc["name"]
    fields = []
    if known is None:
        known = {f["name"] for f in desc["fields"]}
    for f in desc["fields"]:
        if f["name"] not in known:
            raise MaskcError("manifest: %s.%s is a field this package does not know how to fill (upgrade maskc's "
                             "Python package)" % (name, f["name"]))
        fields.append((f["name"], _ctype(f["c_type"], f.get("dims"), "%s.%s" % (name, f["name"]))))
    natural = type(str(name), (ctypes.Structure,), {"_fields_": list(fields)})
    rounded = -(-ctypes.sizeof(natural) // desc["align"]) * desc["align"]
    if desc["align"] > ctypes.alignment(natural) and rounded == desc["size"] > ctypes.sizeof(natural):
        # A struct declared alignas(N) above its members' alignment (MaskcTensorMaps: alignas(64)) has
        # its size rounded up to a multiple of N in C; ctypes has no alignas, so C's tail padding is an
        # explicit field here (only that much: any other size is refused below).
        fields.append(("_alignas_tail", ctypes.c_uint8 * (rounded - ctypes.sizeof(natural))))
    cls = type(str(name), (ctypes.Structure,), {"_fields_": fields})
    for f in desc["fields"]:
        got = (getattr(cls, f["name"]).offset, getattr(cls, f["name"]).size)
        if got != (f["offset"], f["size"]):
            raise MaskcError("manifest: %s.%s is at offset %d, size %d; this host lays it out at %d, %d" %
                             (name, f["name"], f["offset"], f["size"], got[0], got[1]))
    # The size must be the manifest's; the alignment too, except that a declared alignment above ctypes'
    # (alignas, which ctypes cannot express) is accepted once every offset and the size match: these
    # structs reach the device only as kernel parameters, which cuLaunchKernel copies by value (their
    # bytes, from kernelParams) into the kernel's own parameter layout, aligned as the kernel declares
    # them, so the alignment of the host object the bytes are copied from does not matter.
    size, align = ctypes.sizeof(cls), ctypes.alignment(cls)
    if size != desc["size"] or (align != desc["align"] and not (desc["align"] > align and desc["align"] % align == 0)):
        raise MaskcError("manifest: %s is %d bytes (align %d); this host makes it %d (align %d)" %
                         (name, desc["size"], desc["align"], size, align))
    missing = known - {f["name"] for f in desc["fields"]}
    if missing:
        raise MaskcError("manifest: %s lacks %s" % (name, ", ".join(sorted(missing))))
    return cls


class BufferSpec:
    """One captured tensor of a kernel: its .flex name, its MaskcBuffers
    slot, element type, declared extents (.flex expressions over B, H, HKV,
    Q, KV) and whether it is a `segments` buffer."""

    __slots__ = ("name", "slot", "dtype", "dims", "segments", "grad")

    def __init__(self, name, slot, dtype, dims, segments=False, grad=False):
        # no extents: a 0-d buffer (a captured scalar tensor, torch.tensor(5))
        self.name, self.slot, self.dtype, self.dims, self.segments = name, int(slot), dtype, list(dims or ()), bool(segments)
        self.grad = bool(grad)  # the score reads it differentiably: the backward can give its gradient

    def __repr__(self):
        return "BufferSpec(%s: %s%s slot %d)" % (self.name, self.dtype, self.dims, self.slot)

    def covers(self, sq, skv):
        """False when the buffer's extents name one sequence length and not
        the other (`doc: i32[KV]`) and that one is the shorter at this
        shape: a per-position table the mask may also read at the other
        side's index (`doc[q]` with Sq > Skv) ends before it. Extents over
        both lengths (`[H, Q + KV - 1]`) or neither (`[H]`, `[B]`) cover
        every shape."""
        names = set()
        for d in self.dims:
            names.update(re.findall(r"\b(Q|KV)\b", str(d)))
        if names == {"KV"}:
            return sq <= skv
        if names == {"Q"}:
            return skv <= sq
        return True


class Platform:
    """A kernel variant: backend ("cuda", "hip"), the architecture it must
    be compiled for (or "" for the device's), extra compile options, threads
    per block and key tile."""

    def __init__(self, d):
        self.name, self.backend = d["name"], d["backend"]
        self.arch = d.get("arch", "")
        self.compile_options = list(d.get("compile_options") or [])
        self.threads, self.block_n = int(d["threads"]), int(d["block_n"])
        # the backward's block size and query rows per block of its row passes (0: no backward)
        self.bwd_threads, self.bwd_pre_rows = int(d.get("bwd_threads", 0)), int(d.get("bwd_pre_rows", 0))

    def __repr__(self):
        return "Platform(%s)" % self.name

    def target(self, device_arch):
        """The architecture to compile for on a device of device_arch: the
        platform's own (sm_90a) or the device's."""
        return self.arch or device_arch

    def nvrtc_options(self, device_arch, extra=()):
        """NVRTC options for this platform on a device of device_arch: the
        target, C++17 (as maskc's Go runtime compiles), the platform's
        compile options, then extra."""
        return ["--gpu-architecture=" + self.target(device_arch), "-std=c++17"] + self.compile_options + list(extra)


def pick_platform(platforms, backend, arch):
    """The platform a device of backend ("cuda"/"hip") and architecture
    ("sm_90", "gfx942") runs, as hipsrc.ForDevice picks it: the one built
    for that architecture's arch-specific target (sm_90 -> sm_90a), else the
    backend's generic one."""
    mine = [p for p in platforms if p.backend == backend]
    for p in mine:
        if p.arch and (p.arch == arch or p.arch.rstrip("a") == arch):
            return p
    generic = [p for p in mine if not p.arch]
    if len(generic) != 1:
        raise MaskcError("manifest: no single generic %s platform for %s (have %s)" % (backend, arch, mine))
    return generic[0]


class Entry:
    """An entry point: name, parameter names in order, grid rule, whether it
    takes the kernel's dynamic shared memory, and when it runs."""

    def __init__(self, d):
        self.name = d["name"]
        self.params = [(p["name"], p["c_type"]) for p in d["params"]]
        self.grid = [(g["size"], g.get("tile", "")) for g in d["grid"]]
        for size, tile in self.grid:
            if size not in _GRID_SIZES or tile not in _GRID_TILES:
                raise MaskcError("manifest: %s has grid dimension %s/%s, which this package cannot compute" %
                                 (self.name, size, tile))
        self.shared_mem = bool(d["shared_mem"])
        self.when = d["when"]

    def grid_dims(self, sizes, block_m=1, block_n=1, tiles=None):
        """The launch grid for sizes ({B, H, HKV, Sq, Skv}, and n for an
        entry over a buffer's elements); tiles gives the backward's tile
        names ({bwd_block_m: 64, ...}) where the grid uses them."""
        t = {"": 1, "block_m": block_m, "block_n": block_n}
        t.update(tiles or {})
        out = []
        for size, tile in self.grid:
            n = 1 if size == "1" else sizes[size]
            if tile not in t:
                raise MaskcError("%s: grid tile %s has no value here" % (self.name, tile))
            out.append(-(-n // t[tile]))
        return tuple(out)

    def args(self, values, structs):
        """The ctypes argument list for values ({param name: int pointer or
        struct instance}); every parameter must have a value."""
        out = []
        for name, c_type in self.params:
            if name not in values:
                raise MaskcError("%s: no value for parameter %s" % (self.name, name))
            v = values[name]
            if c_type.endswith("*"):
                out.append(ctypes.c_void_p(v))
            elif c_type in structs:
                if not isinstance(v, structs[c_type]):
                    raise MaskcError("%s: parameter %s wants a %s" % (self.name, name, c_type))
                out.append(v)
            elif c_type in _SCALARS:
                out.append(_SCALARS[c_type](v))
            else:
                raise MaskcError("manifest: %s parameter %s has type %r" % (self.name, name, c_type))
        return out


#: The operations and symbols of a read's index bounds (hipsrc.Bound, hipsrc.BoundSymbols).
BOUND_OPS = ("const", "sym", "add", "mul", "min", "max", "floordiv")
BOUND_SYMBOLS = ("B", "H", "HKV", "Q", "KV", "q0", "kv0", "h0", "Sq", "Skv", "Sh")


def _check_bound(b, where):
    if b is None:
        return
    if not isinstance(b, dict) or b.get("op") not in BOUND_OPS:
        raise MaskcError("manifest: %s has a bound %r this package cannot evaluate" % (where, b))
    if b["op"] == "sym" and b.get("sym") not in BOUND_SYMBOLS:
        raise MaskcError("manifest: %s names symbol %r" % (where, b.get("sym")))
    if b["op"] not in ("const", "sym"):
        if not b.get("args"):
            raise MaskcError("manifest: %s has a %s without operands" % (where, b["op"]))
        for a in b["args"]:
            _check_bound(a, where)


def _check_read(r, kernel, nbuf):
    where = "kernel %s read %s" % (kernel, r.get("text"))
    for k in ("buffer", "slot", "at", "text", "in", "dims", "index"):
        if k not in r:
            raise MaskcError("manifest: %s lacks %s" % (where, k))
    if not 0 <= int(r["slot"]) < nbuf or len(r["index"]) != len(r["dims"]):
        raise MaskcError("manifest: %s names slot %s with %d indices for %d extents" %
                         (where, r["slot"], len(r["index"]), len(r["dims"])))
    for ix in r["index"]:
        _check_bound(ix.get("lo"), where)
        _check_bound(ix.get("hi"), where)


class BwdLaunch(collections.namedtuple("BwdLaunch", "block_m block_n threads shared_mem_bytes main_threads "
                                                    "dq_shared_mem_bytes dq_ordered tensor_maps",
                                        defaults=(None,))):
    """The backward's launch on one platform (hipsrc.BwdLaunchConfig): its
    tiles, the block size of every backward kernel but maskc_attn_bwd
    (threads) and of maskc_attn_bwd (main_threads), the dynamic shared
    memory of maskc_attn_bwd and of maskc_attn_bwd_dq, whether
    deterministic mode runs maskc_attn_bwd_ordered, which adds dQ in order,
    in place of maskc_attn_bwd (dq_ordered), and where maskc_attn_bwd reads
    the launcher's tensor maps of Q, dO, K and V, the rows of their boxes
    (tensor_maps: (q_rows, kv_rows), dO's Q's; None: it reads none)."""

    def dq_by_main(self, deterministic):
        """Whether the main kernel adds dQ into dq_acc in this mode: atomic
        mode, or deterministic mode where dq_ordered (then
        maskc_attn_bwd_ordered, with dq_sem) (hipsrc.BwdLaunchConfig.DQByMain)."""
        return not deterministic or self.dq_ordered

    def ordered(self, deterministic):
        """Whether maskc_attn_bwd_ordered runs in place of maskc_attn_bwd:
        deterministic mode where dq_ordered (hipsrc.BwdLaunchConfig.Ordered)."""
        return deterministic and self.dq_ordered

    def dq_scratch(self, deterministic, B, H, Sq, D):
        """The extents of the backward's dQ scratch in this mode (both None
        where it takes none): dq_acc, float32 [B, H, Sq, D], where the main
        kernel adds dQ (dq_by_main), and dq_sem, the ordered dQ's int32 turn
        counters [B, H, ceil(Sq / BWD_SEM_ROWS)] (zeroed by
        maskc_attn_bwd_pre), where it adds them in order (ordered)."""
        acc = (B, H, Sq, D) if self.dq_by_main(deterministic) else None
        sem = (B, H, (Sq + BWD_SEM_ROWS - 1) // BWD_SEM_ROWS) if self.ordered(deterministic) else None
        return acc, sem

    def entry(self, name):
        """(threads, dynamic shared memory bytes) of backward entry name
        (hipsrc.BwdLaunchConfig.Entry)."""
        if name in ("maskc_attn_bwd", "maskc_attn_bwd_ordered"):
            return self.main_threads, self.shared_mem_bytes
        if name == "maskc_attn_bwd_dq":
            return self.threads, self.dq_shared_mem_bytes
        return self.threads, 0


class TensorMapDesc(collections.namedtuple("TensorMapDesc", "box_cols swizzle_bytes swizzle")):
    """The manifest's abi.tensor_maps (hipsrc.TensorMapDesc): how a launcher
    encodes MaskcTensorMaps for a forward whose launch (or a backward whose
    bwd_launch) gives tensor_maps:
    boxes of box_cols columns by the rows the launch gives, swizzle_bytes-byte
    swizzle (swizzle: its CUtensorMapSwizzle)."""

    @classmethod
    def read(cls, d):
        box_cols, swizzle_bytes = d["box_cols"], d["swizzle_bytes"]
        if type(box_cols) is not int or not 0 < box_cols <= 256:
            raise MaskcError("manifest: abi.tensor_maps.box_cols is %r; want 1 to 256 columns" % (box_cols,))
        if type(swizzle_bytes) is not int or swizzle_bytes not in _SWIZZLES:
            raise MaskcError("manifest: abi.tensor_maps.swizzle_bytes is %r; this package encodes swizzles of %s "
                             "bytes (CUtensorMapSwizzle)" % (swizzle_bytes, ", ".join(map(str, sorted(_SWIZZLES)))))
        return cls(box_cols, swizzle_bytes, _SWIZZLES[swizzle_bytes])


def _map_rows(tm, kernel, platform, where):
    """The (q_rows, kv_rows) of a launch's tensor_maps (hipsrc.TensorMapRows),
    None where it gives none; a malformed one is refused."""
    if tm is None:
        return None
    rows = tm.get("q_rows") if isinstance(tm, dict) else None, tm.get("kv_rows") if isinstance(tm, dict) else None
    if any(type(r) is not int or not 0 < r <= 256 for r in rows):
        raise MaskcError("manifest: kernel %s has %s tensor_maps %r on %s; want {q_rows, kv_rows} of 1 to 256 "
                         "rows (or none)" % (kernel, where, tm, platform))
    return rows


class KernelSpec:
    """One kernel of the manifest: its descriptor (hipsrc.KernelDesc, a
    kernels[] entry), the block it computes and how it is launched. The
    facts a launcher reads are checked and typed here; every key of the
    descriptor is also an attribute under its JSON name (spec.mask_torch,
    spec.kv_heads, ...), so a fact the descriptor gains reaches Python
    without an edit here. desc is the entry as the manifest has it."""

    def __init__(self, d, manifest):
        self.manifest = manifest
        self.desc = dict(d)
        self.name, self.source = d["name"], d["source"]
        self.attention = d["attention"]
        self.code_objects = dict(d.get("code_objects") or {})
        self.entry, self.flags_entry = d["entry"], d.get("flags_entry", "")
        # maskc_seg_check for kernels with integer segments buffers: launched first, before every forward and
        # backward, it writes whether their ids are sorted into the status words (MANIFEST.md "Status words")
        self.seg_check_entry = d.get("seg_check_entry", "")
        self.head_dim = int(d["head_dim"])
        self.dtype = {"fp16": "f16"}.get(d["dtype"], d["dtype"])  # buffer dtypes spell it f16
        self.layout = d["layout"]
        self.scale = float(d["scale"])
        self.sparsity = d["sparsity"]
        self.sink = d.get("sink", "") if d.get("has_sink") else ""
        self.mask_uses_b, self.mask_uses_h = bool(d["mask_uses_b"]), bool(d["mask_uses_h"])
        self.buffers = [BufferSpec(b["name"], b["slot"], b["dtype"], b["dims"], b.get("segments", False),
                                   b.get("grad", False)) for b in d["buffers"]]
        # The backward (absent from a manifest of a maskc without one).
        self.bwd_source = d.get("bwd_source", "")
        self.bwd_entries = list(d.get("bwd_entries") or [])
        # platform name -> BwdLaunch: the backward's tiles per platform at this kernel's head dim,
        # its kernels' block sizes and dynamic shared memory (hipsrc.BwdLaunchConfig)
        self.bwd_launch = {p: BwdLaunch(int(c["block_m"]), int(c["block_n"]), int(c["threads"]),
                                        int(c["shared_mem_bytes"]), int(c["main_threads"]),
                                        int(c["dq_shared_mem_bytes"]), bool(c["dq_ordered"]),
                                        _map_rows(c.get("tensor_maps"), self.name, p, "bwd_launch"))
                           for p, c in (d.get("bwd_launch") or {}).items()}
        self.bwd_code_objects = dict(d.get("bwd_code_objects") or {})
        if any(bl.dq_ordered for bl in self.bwd_launch.values()) and "maskc_attn_bwd_ordered" not in self.bwd_entries:
            # deterministic mode would launch neither main kernel
            raise MaskcError("manifest: kernel %s's bwd_launch orders dQ (dq_ordered) but its bwd_entries lack "
                             "maskc_attn_bwd_ordered" % self.name)
        if self.bwd_source:
            for e in self.bwd_entries:
                if e not in manifest.bwd_entries:
                    raise MaskcError("manifest: kernel %s names backward entry %s, which the ABI does not list" %
                                     (self.name, e))
        if [b.slot for b in self.buffers] != list(range(len(self.buffers))):
            raise MaskcError("manifest: kernel %s lists buffer slots %s, not 0.." % (self.name,
                                                                                   [b.slot for b in self.buffers]))
        if len(self.buffers) > manifest.max_buffers:
            raise MaskcError("manifest: kernel %s has %d buffers; MaskcBuffers holds %d" %
                             (self.name, len(self.buffers), manifest.max_buffers))
        # The buffer reads with their index ranges by the call's sizes (hipsrc.ReadBound;
        # checks.check_reads refuses a call whose reads fall outside). Validated here, so a
        # malformed bound fails when the manifest is read, not at a call.
        self.reads = list(d.get("reads") or [])
        for r in self.reads:
            _check_read(r, self.name, len(self.buffers))
        self.launch = {p: (int(c["block_n"]), int(c["threads"]), int(c["shared_mem_bytes"]))
                       for p, c in d["launch"].items()}
        # Where the forward on a platform reads the launcher's tensor maps (hipsrc.LaunchConfig.TensorMaps,
        # {q_rows, kv_rows}; absent: it does not), the rows of their boxes (Q's, K's and V's): its
        # MaskcTensorMaps are then encoded (Manifest.tensor_map_requests), else zero.
        self.tensor_maps = {p: _map_rows(c.get("tensor_maps"), self.name, p, "launch") for p, c in d["launch"].items()
                            if c.get("tensor_maps") is not None}
        if (any(self.tensor_maps.values()) or any(bl.tensor_maps for bl in self.bwd_launch.values())) and \
                self.dtype not in _MAP_DTYPES:
            raise MaskcError("manifest: kernel %s of dtype %s reads tensor maps; this package encodes maps of %s" %
                             (self.name, self.dtype, ", ".join(sorted(_MAP_DTYPES))))
        for e in [self.entry] + [x for x in (self.flags_entry, self.seg_check_entry) if x]:
            if e not in manifest.entries:
                raise MaskcError("manifest: kernel %s names entry %s, which the ABI does not list" % (self.name, e))

    def __getattr__(self, name):
        # only for names __init__ did not set: the descriptor's other keys
        desc = self.__dict__.get("desc")
        if desc is not None and name in desc:
            return desc[name]
        raise AttributeError("kernel descriptor has no %r" % name)

    def flag_bytes(self, sizes, block_n):
        """The size of the tile-flag buffer of a prepass kernel for sizes."""
        fb = sizes["B"] if self.mask_uses_b else 1
        fh = sizes["H"] if self.mask_uses_h else 1
        return fb * fh * -(-sizes["Sq"] // self.manifest.block_m) * -(-sizes["Skv"] // block_n)


class Manifest:
    """A parsed manifest.json: the ABI (structs as ctypes classes, entries,
    platforms, block_m) and the kernels by attention block."""

    def __init__(self, doc):
        if not isinstance(doc, dict) or doc.get("version") != MANIFEST_VERSION:
            raise MaskcError("manifest.json has version %r; this package reads version %d (use the maskc binary "
                             "of the same release, or delete the compile cache entry an older maskc wrote)" %
                             (doc.get("version") if isinstance(doc, dict) else None, MANIFEST_VERSION))
        try:
            a = doc["abi"]
            if a.get("version") != ABI_VERSION:
                raise MaskcError("manifest.json describes kernel ABI %r; this package fills ABI %d" %
                                 (a.get("version"), ABI_VERSION))
            structs = {s["name"]: s for s in a["structs"]}
            self.Shape = _struct(structs["MaskcShape"], _SHAPE_FIELDS)
            self.Buffers = _struct(structs["MaskcBuffers"], _BUFFERS_FIELDS)
            self.TensorMaps = _struct(structs["MaskcTensorMaps"], _TENSOR_MAPS_FIELDS)
            for n in ("q", "k", "v"):
                if getattr(self.TensorMaps, n).size != TENSOR_MAP_BYTES:
                    raise MaskcError("manifest: MaskcTensorMaps.%s is %d bytes; a CUtensorMap is %d" %
                                     (n, getattr(self.TensorMaps, n).size, TENSOR_MAP_BYTES))
            self.structs = {"MaskcShape": self.Shape, "MaskcBuffers": self.Buffers,
                            "MaskcTensorMaps": self.TensorMaps}
            # How MaskcTensorMaps are encoded (MANIFEST.md): boxes, swizzle.
            self.tensor_maps = TensorMapDesc.read(a["tensor_maps"])
            self.entries = {e["name"]: Entry(e) for e in a["entries"]}
            self.block_m = int(a["block_m"])
            self.max_buffers, self.max_rank = int(a["max_buffers"]), int(a["max_buffer_rank"])
            self.platforms = [Platform(p) for p in a["platforms"]]
            self.BwdShape = None
            self.bwd_entries = {}
            if a.get("bwd_structs"):
                bs = {s["name"]: s for s in a["bwd_structs"]}
                self.BwdShape = _struct(bs["MaskcBwdShape"], _BWD_SHAPE_FIELDS)
                self.structs["MaskcBwdShape"] = self.BwdShape
                self.bwd_entries = {e["name"]: Entry(e) for e in a["bwd_entries"]}
            self.bwd_fix_one = int(a.get("bwd_fix_one", 0))
            # The status words MaskcBuffers.status points at (hipsrc.StatusWords,
            # MANIFEST.md "Status words"): how many, and word 0's sticky bits by name.
            st = a["status"]
            self.status_words = int(st["words"])
            self.status_bits = {b["name"]: int(b["value"]) for b in st["bits"]}
            if self.status_words != 1 + self.max_buffers:
                raise MaskcError("manifest: %d status words; this package expects 1 + max_buffers = %d" %
                                 (self.status_words, 1 + self.max_buffers))
            self.kernels = {}  # by attention block
            self.descriptors = {}  # the kernels[] entries by name, what plan.json's kernel names
            for k in doc["kernels"]:
                spec = KernelSpec(k, self)
                self.kernels[spec.attention] = spec
                self.descriptors[spec.name] = spec.desc
        except (KeyError, TypeError, ValueError) as e:
            raise MaskcError("manifest.json is malformed: %s %s" % (type(e).__name__, e))
        ptr_dims = [f.get("dims") for f in structs["MaskcBuffers"]["fields"] if f["name"] == "ptr"]
        if ptr_dims != [[self.max_buffers]]:
            raise MaskcError("manifest: MaskcBuffers.ptr has extents %s, max_buffers is %d" %
                             (ptr_dims, self.max_buffers))

    def platform(self, name):
        """The platform of that name ("nvidia", "nvidia-sm90a", "amd")."""
        for p in self.platforms:
            if p.name == name:
                return p
        raise MaskcError("the manifest has no platform %r (has %s)" % (name, ", ".join(p.name for p in self.platforms)))

    def kernel(self, attention):
        """The kernel of an attention block; MaskcError when there is none."""
        if attention not in self.kernels:
            raise MaskcError("the manifest has no generated kernel for block %s" % attention)
        return self.kernels[attention]

    def pack(self, spec, sizes, strides, scale, sink, tile_flags, buffers, frame=None, status=0):
        """(MaskcShape, MaskcBuffers) for one launch: sizes {B, H, HKV, Sq,
        Skv}, strides {q, k, v, o: (batch, head, seq) element strides},
        device pointers sink and tile_flags (0 for none), buffers, a list
        of (pointer, extents) in slot order, frame, the position frame's
        six values in FRAME_FIELDS order (None: all zero, the launch is the
        whole attention), and status, the device pointer of the launcher's
        status_words words (0: none; the kernel then records nothing)."""
        sh = self.Shape()
        sh.B, sh.H, sh.HKV, sh.Sq, sh.Skv = (sizes[n] for n in ("B", "H", "HKV", "Sq", "Skv"))
        for n in "qkvo":
            getattr(sh, n + "_stride")[:] = list(strides[n])
        sh.scale = scale
        sh.sink, sh.tile_flags = sink or None, tile_flags or None
        if len(buffers) != len(spec.buffers):
            raise MaskcError("kernel %s takes %d buffers, got %d" % (spec.name, len(spec.buffers), len(buffers)))
        bufs = self.Buffers()
        for i, (ptr, ext) in enumerate(buffers):
            if not 0 <= len(ext) <= self.max_rank:
                raise MaskcError("buffer %s has %d extents; MaskcBuffers holds 0 to %d" %
                                 (spec.buffers[i].name, len(ext), self.max_rank))
            bufs.ptr[i] = ptr
            bufs.dim[i][:] = list(ext) + [1] * (self.max_rank - len(ext))
        if frame is not None:
            if len(frame) != len(FRAME_FIELDS):
                raise MaskcError("a position frame has %d values (%s); got %r" %
                                 (len(FRAME_FIELDS), ", ".join(FRAME_FIELDS), frame))
            for name, v in zip(FRAME_FIELDS, frame):
                setattr(bufs, name, int(v))
        bufs.status = status or None
        return sh, bufs

    def tensor_map_requests(self, spec, platform, sh, ptrs, bwd=False):
        """What to encode for MaskcTensorMaps of one forward launch of kernel
        spec on platform (its name), or with bwd of its maskc_attn_bwd:
        [(field, keyword arguments of cuda.Driver.encode_tensor_map)] for q,
        k and v (and dout, the backward's dO), or None where the launch
        reads no maps (its launch, or bwd_launch, gives no tensor_maps) or a
        size is zero. sh is the launch's packed MaskcShape (MaskcBwdShape
        with bwd: sizes and element strides), ptrs its Q, K, V (and dO)
        addresses. Each map is 4-D, innermost first: (D, Sq, H, B) for Q
        and dO and (D, Skv, HKV, B) for K and V, byte strides of the (seq,
        head, batch) element strides, boxes of box_cols x (the launch's
        q_rows or kv_rows) x 1 x 1."""
        if bwd:
            bl = spec.bwd_launch.get(platform)
            rows = bl.tensor_maps if bl is not None else None
        else:
            rows = spec.tensor_maps.get(platform)
        if rows is None or min(sh.B, sh.H, sh.HKV, sh.Sq, sh.Skv) <= 0:
            return None
        tm = self.tensor_maps
        dtype, size = _MAP_DTYPES[spec.dtype]
        q_rows, kv_rows = rows

        def one(ptr, seq, heads, stride, box_rows):
            return dict(dtype=dtype, address=int(ptr), dims=(spec.head_dim, seq, heads, sh.B),
                        strides=(size * stride[2], size * stride[1], size * stride[0]),
                        box=(tm.box_cols, box_rows, 1, 1), element_strides=(1, 1, 1, 1), interleave=0,
                        swizzle=tm.swizzle, l2_promotion=0, oob_fill=0)

        reqs = [("q", one(ptrs["Q"], sh.Sq, sh.H, sh.q_stride, q_rows)),
                ("k", one(ptrs["K"], sh.Skv, sh.HKV, sh.k_stride, kv_rows)),
                ("v", one(ptrs["V"], sh.Skv, sh.HKV, sh.v_stride, kv_rows))]
        if bwd:
            reqs.append(("dout", one(ptrs["dO"], sh.Sq, sh.H, sh.do_stride, q_rows)))
        return reqs

    def pack_maps(self, encoded=None):
        """MaskcTensorMaps for one launch: encoded {q, k, v (and dout, the
        backward's): the TENSOR_MAP_BYTES of each CUtensorMap} with ok = 1,
        or all zero (None: the kernel copies Q, K and V by cp.async)."""
        maps = self.TensorMaps()
        if encoded is not None:
            for n in ("q", "k", "v") + (("dout",) if "dout" in encoded else ()):
                b = bytes(encoded[n])
                if len(b) != TENSOR_MAP_BYTES:
                    raise MaskcError("an encoded tensor map of %s is %d bytes; a CUtensorMap is %d" %
                                     (n.upper(), len(b), TENSOR_MAP_BYTES))
                getattr(maps, n)[:] = b
            maps.ok = 1
        return maps

    def pack_bwd(self, sizes, strides, scale, ptrs, dbufs):
        """MaskcBwdShape for one backward launch: sizes {B, H, HKV, Sq, Skv},
        strides {q, k, v, o, do, dq, dk, dv: (batch, head, seq)}, device
        pointers ptrs {sink, tile_flags, lse, dlse, delta, dq_acc, dq_sem, dsink}
        (0 for none), dbufs {slot: pointer of its zeroed int64 sums}."""
        if self.BwdShape is None:
            raise MaskcError("the manifest has no backward ABI (abi.bwd_structs): this maskc writes no backward")
        sh = self.BwdShape()
        sh.B, sh.H, sh.HKV, sh.Sq, sh.Skv = (sizes[n] for n in ("B", "H", "HKV", "Sq", "Skv"))
        for n in ("q", "k", "v", "o", "do", "dq", "dk", "dv"):
            getattr(sh, n + "_stride")[:] = list(strides[n])
        sh.scale = scale
        for n in ("sink", "tile_flags", "lse", "dlse", "delta", "dq_acc", "dq_sem", "dsink"):
            setattr(sh, n, ptrs.get(n) or None)
        for slot, p in dbufs.items():
            sh.dbuf[slot] = p
        return sh

    def bwd_launches(self, spec, platform, sizes, ptrs, shape, buf, deterministic, dsink, dbufs, ordered=True,
                     maps=None):
        """The backward's launches in order, as manifest entries say, each
        (entry name, grid, threads, dynamic shared memory bytes, ctypes
        argument list): the segments check (kernels with one), the row pre-pass, the tile-flag pre-pass for
        prepass kernels (flags_shape/flags_buf/flags pointer in ptrs), the
        main kernel, dQ by the deterministic kernel or the accumulator's
        conversion (BwdLaunch.dq_by_main; ordered False: the dQ kernel in
        deterministic mode even where the kernel orders dQ, for
        comparisons; shape's dq_acc and dq_sem must agree), the sink gradient when dsink, and one
        conversion per wanted buffer gradient (dbufs {slot: (int64 sums
        pointer, fp32 output pointer, element count)}). ptrs holds the
        device pointers O, dO, Q, K, V, dQ, dK, dV; shape is the filled
        MaskcBwdShape, buf the forward's MaskcBuffers, maps the main
        kernel's MaskcTensorMaps (launcher.tensor_maps with bwd; None: all
        zero, which every kernel takes, copying without them)."""
        if not spec.bwd_source:
            raise MaskcError("kernel %s has no backward in this manifest" % spec.name)
        tiles = self.bwd_tiles(spec, platform)
        bl = spec.bwd_launch[platform.name]
        if not ordered:  # the dQ kernel in deterministic mode, as a kernel without the ordered dQ
            bl = bl._replace(dq_ordered=False)
        by_main, in_order = bl.dq_by_main(deterministic), bl.ordered(deterministic)
        out = []
        seg = self.seg_check_launch(spec, platform, buf)
        if seg is not None:
            out.append(seg)
        for name in spec.bwd_entries:
            e = self.bwd_entries[name]
            if e.when == "deterministic" and by_main or e.when == "atomic" and not by_main:
                continue
            if e.when == "unordered" and in_order or e.when == "ordered" and not in_order:
                continue
            if e.when == "sink" and not dsink:
                continue
            threads, smem = bl.entry(name)
            smem = smem if e.shared_mem else 0
            if e.when == "grad":
                for slot in sorted(dbufs):
                    acc, dst, n = dbufs[slot]
                    vals = dict(acc=acc, out=dst, n=n)
                    out.append((name, e.grid_dims(dict(sizes, n=n), tiles=tiles), threads, smem,
                                e.args(vals, self.structs)))
                continue
            vals = dict(ptrs, shape=shape, buf=buf, maps=maps if maps is not None else self.pack_maps())
            out.append((name, e.grid_dims(sizes, tiles=tiles), threads, smem, e.args(vals, self.structs)))
            if name == "maskc_attn_bwd_pre" and spec.flags_entry and ptrs.get("flags"):
                # the forward's tile flags for this shape, rewritten before the kernels that read them
                fe = self.entries[spec.flags_entry]
                fv = dict(shape=ptrs["flags_shape"], buf=buf, flags=ptrs["flags"])
                # the forward's block size and key tile, not the backward's
                # (names of their own: the launches after this one keep the
                # backward's threads)
                fwd_block_n, fwd_threads, _ = spec.launch[platform.name]
                out.append((spec.flags_entry, fe.grid_dims(sizes, self.block_m, fwd_block_n), fwd_threads, 0,
                            fe.args(fv, self.structs)))
        return out

    def seg_check_launch(self, spec, platform, buf):
        """The segments check's launch (entry name, grid, threads, 0, ctypes
        argument list) with buf, the launch's MaskcBuffers (its status
        words included), or None for a kernel without one. It runs first,
        before the forward's and the backward's kernels, on their stream,
        with the forward's block size."""
        if not spec.seg_check_entry:
            return None
        e = self.entries[spec.seg_check_entry]
        _, threads, _ = spec.launch[platform.name]
        return (spec.seg_check_entry, e.grid_dims({}, self.block_m), threads, 0, e.args(dict(buf=buf), self.structs))

    def bwd_tiles(self, spec, platform):
        """The backward's grid tiles of kernel spec on a platform: {bwd_block_m,
        bwd_block_n, bwd_pre_rows, bwd_threads} (the tiles depend on the
        platform and the kernel's head dim: its bwd_launch)."""
        if platform.name not in spec.bwd_launch:
            raise MaskcError("kernel %s has no backward launch for platform %s" % (spec.name, platform.name))
        bl = spec.bwd_launch[platform.name]
        return {"bwd_block_m": bl.block_m, "bwd_block_n": bl.block_n,
                "bwd_pre_rows": platform.bwd_pre_rows, "bwd_threads": bl.threads}


def read_manifest(directory):
    """The Manifest in directory, or None when maskc wrote none there."""
    path = os.path.join(directory, MANIFEST_FILE)
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        try:
            doc = json.load(f)
        except ValueError as e:
            raise MaskcError("%s is not JSON: %s" % (path, e))
    return Manifest(doc)


def manifest_missing(entry_dir):
    """The NotImplementedError raised when a compile output has no ABI
    manifest: the launcher cannot know the kernel's argument layout."""
    return NotImplementedError(
        "the generated-kernel launcher reads the ABI manifest %s/%s (hipsrc/MANIFEST.md), which this maskc "
        "binary does not write yet; only Turbo and SDPA dispatch can run" % (entry_dir, MANIFEST_FILE))
