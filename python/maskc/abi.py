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
import ctypes
import json
import os

from .diagnostics import MaskcError

__all__ = ["ABI_VERSION", "MANIFEST_FILE", "BufferSpec", "Platform", "Entry", "KernelSpec", "Manifest",
           "read_manifest", "pick_platform"]

#: The manifest schema and kernel ABI version this package reads (hipsrc.ABIVersion).
ABI_VERSION = 2
#: The manifest's file name in a compile output directory.
MANIFEST_FILE = "manifest.json"

_SCALARS = {"int": ctypes.c_int32, "long long": ctypes.c_int64, "float": ctypes.c_float}
# The values this package knows how to fill, by struct and field name.
_SHAPE_FIELDS = {"B", "H", "HKV", "Sq", "Skv", "q_stride", "k_stride", "v_stride", "o_stride", "scale", "sink",
                 "tile_flags"}
_BUFFERS_FIELDS = {"ptr", "dim"}
_GRID_SIZES = {"B", "H", "HKV", "Sq", "Skv", "1"}


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


def _struct(desc, known):
    """A ctypes.Structure for one manifest struct, its layout checked
    against every offset and size the manifest states."""
    name = desc["name"]
    fields = []
    for f in desc["fields"]:
        if f["name"] not in known:
            raise MaskcError("manifest: %s.%s is a field this package does not know how to fill (upgrade maskc's "
                             "Python package)" % (name, f["name"]))
        fields.append((f["name"], _ctype(f["c_type"], f.get("dims"), "%s.%s" % (name, f["name"]))))
    cls = type(str(name), (ctypes.Structure,), {"_fields_": fields})
    for f in desc["fields"]:
        got = (getattr(cls, f["name"]).offset, getattr(cls, f["name"]).size)
        if got != (f["offset"], f["size"]):
            raise MaskcError("manifest: %s.%s is at offset %d, size %d; this host lays it out at %d, %d" %
                             (name, f["name"], f["offset"], f["size"], got[0], got[1]))
    if (ctypes.sizeof(cls), ctypes.alignment(cls)) != (desc["size"], desc["align"]):
        raise MaskcError("manifest: %s is %d bytes (align %d); this host makes it %d (align %d)" %
                         (name, desc["size"], desc["align"], ctypes.sizeof(cls), ctypes.alignment(cls)))
    missing = known - {f["name"] for f in desc["fields"]}
    if missing:
        raise MaskcError("manifest: %s lacks %s" % (name, ", ".join(sorted(missing))))
    return cls


class BufferSpec:
    """One captured tensor of a kernel: its .flex name, its MaskcBuffers
    slot, element type, declared extents (.flex expressions over B, H, HKV,
    Q, KV) and whether it is a `segments` buffer."""

    __slots__ = ("name", "slot", "dtype", "dims", "segments")

    def __init__(self, name, slot, dtype, dims, segments=False):
        if not dims:
            raise MaskcError("buffer %s has no extents" % name)
        self.name, self.slot, self.dtype, self.dims, self.segments = name, int(slot), dtype, list(dims), bool(segments)

    def __repr__(self):
        return "BufferSpec(%s: %s%s slot %d)" % (self.name, self.dtype, self.dims, self.slot)


class Platform:
    """A kernel variant: backend ("cuda", "hip"), the architecture it must
    be compiled for (or "" for the device's), extra compile options, threads
    per block and key tile."""

    def __init__(self, d):
        self.name, self.backend = d["name"], d["backend"]
        self.arch = d.get("arch", "")
        self.compile_options = list(d.get("compile_options") or [])
        self.threads, self.block_n = int(d["threads"]), int(d["block_n"])

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
            if size not in _GRID_SIZES or tile not in ("", "block_m", "block_n"):
                raise MaskcError("manifest: %s has grid dimension %s/%s, which this package cannot compute" %
                                 (self.name, size, tile))
        self.shared_mem = bool(d["shared_mem"])
        self.when = d["when"]

    def grid_dims(self, sizes, block_m, block_n):
        """The launch grid for sizes ({B, H, HKV, Sq, Skv})."""
        tiles = {"": 1, "block_m": block_m, "block_n": block_n}
        out = []
        for size, tile in self.grid:
            n = 1 if size == "1" else sizes[size]
            out.append(-(-n // tiles[tile]))
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
            else:
                raise MaskcError("manifest: %s parameter %s has type %r" % (self.name, name, c_type))
        return out


class KernelSpec:
    """One kernel of the manifest: the block it computes and how it is launched."""

    def __init__(self, d, manifest):
        self.manifest = manifest
        self.name, self.source = d["name"], d["source"]
        self.attention = d["attention"]
        self.code_objects = dict(d.get("code_objects") or {})
        self.entry, self.flags_entry = d["entry"], d.get("flags_entry", "")
        self.head_dim = int(d["head_dim"])
        self.dtype = {"fp16": "f16"}.get(d["dtype"], d["dtype"])  # buffer dtypes spell it f16
        self.layout = d["layout"]
        self.scale = float(d["scale"])
        self.sparsity = d["sparsity"]
        self.sink = d.get("sink", "") if d.get("has_sink") else ""
        self.mask_uses_b, self.mask_uses_h = bool(d["mask_uses_b"]), bool(d["mask_uses_h"])
        self.buffers = [BufferSpec(b["name"], b["slot"], b["dtype"], b["dims"], b.get("segments", False))
                        for b in d["buffers"]]
        if [b.slot for b in self.buffers] != list(range(len(self.buffers))):
            raise MaskcError("manifest: kernel %s lists buffer slots %s, not 0.." % (self.name,
                                                                                   [b.slot for b in self.buffers]))
        if len(self.buffers) > manifest.max_buffers:
            raise MaskcError("manifest: kernel %s has %d buffers; MaskcBuffers holds %d" %
                             (self.name, len(self.buffers), manifest.max_buffers))
        self.launch = {p: (int(c["block_n"]), int(c["threads"]), int(c["shared_mem_bytes"]))
                       for p, c in d["launch"].items()}
        for e in [self.entry] + ([self.flags_entry] if self.flags_entry else []):
            if e not in manifest.entries:
                raise MaskcError("manifest: kernel %s names entry %s, which the ABI does not list" % (self.name, e))

    def flag_bytes(self, sizes, block_n):
        """The size of the tile-flag buffer of a prepass kernel for sizes."""
        fb = sizes["B"] if self.mask_uses_b else 1
        fh = sizes["H"] if self.mask_uses_h else 1
        return fb * fh * -(-sizes["Sq"] // self.manifest.block_m) * -(-sizes["Skv"] // block_n)


class Manifest:
    """A parsed manifest.json: the ABI (structs as ctypes classes, entries,
    platforms, block_m) and the kernels by attention block."""

    def __init__(self, doc):
        if not isinstance(doc, dict) or doc.get("version") != ABI_VERSION:
            raise MaskcError("manifest.json has version %r; this package reads version %d (use the maskc binary "
                             "of the same release)" % (doc.get("version") if isinstance(doc, dict) else None,
                                                       ABI_VERSION))
        try:
            a = doc["abi"]
            structs = {s["name"]: s for s in a["structs"]}
            self.Shape = _struct(structs["MaskcShape"], _SHAPE_FIELDS)
            self.Buffers = _struct(structs["MaskcBuffers"], _BUFFERS_FIELDS)
            self.structs = {"MaskcShape": self.Shape, "MaskcBuffers": self.Buffers}
            self.entries = {e["name"]: Entry(e) for e in a["entries"]}
            self.block_m = int(a["block_m"])
            self.max_buffers, self.max_rank = int(a["max_buffers"]), int(a["max_buffer_rank"])
            self.platforms = [Platform(p) for p in a["platforms"]]
            self.kernels = {}
            for k in doc["kernels"]:
                spec = KernelSpec(k, self)
                self.kernels[spec.attention] = spec
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

    def pack(self, spec, sizes, strides, scale, sink, tile_flags, buffers):
        """(MaskcShape, MaskcBuffers) for one launch: sizes {B, H, HKV, Sq,
        Skv}, strides {q, k, v, o: (batch, head, seq) element strides},
        device pointers sink and tile_flags (0 for none), and buffers, a list
        of (pointer, extents) in slot order."""
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
            if not 1 <= len(ext) <= self.max_rank:
                raise MaskcError("buffer %s has %d extents; MaskcBuffers holds 1 to %d" %
                                 (spec.buffers[i].name, len(ext), self.max_rank))
            bufs.ptr[i] = ptr
            bufs.dim[i][:] = list(ext) + [1] * (self.max_rank - len(ext))
        return sh, bufs


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
