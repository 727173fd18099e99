"""Shared GPU harness code for maskc's generated attention kernels (NVIDIA).

Reads a directory written by `go run ./codegen/cmd/genkernels -o DIR ...` or
`maskc compile FILE -o DIR`: DIR/manifest.json (hipsrc/MANIFEST.md) and the
complete kernel sources it lists. Everything about the ABI comes from the
manifest, not from copies here: the MaskcShape / MaskcBuffers layouts (built
as ctypes structures from its "abi.structs"), the platform's compile target
and options, threads, key tile and dynamic shared memory, the grid rule and
the tile-flag buffer size. Compiles with NVRTC (the path maskc's Go runtime
takes), loads with the CUDA driver API through ctypes into PyTorch's context
and launches on torch tensors. Every NVRTC and driver call is checked. The
manifest's mask_torch / score_torch expressions are the reference.
"""
import ctypes
import glob
import json
import math
import os
import re

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------- libraries
def _load(names):
    for n in names:
        for path in sorted(glob.glob(n), reverse=True) if any(c in n for c in "*?[") else [n]:
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    raise OSError("none of %s could be loaded" % names)


_nvrtc = None
_cuda = None


def libs():
    global _nvrtc, _cuda
    if _cuda is None:
        _cuda = _load(["libcuda.so.1", "libcuda.so"])
        _nvrtc = _load(["/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.*",
                        "/usr/local/cuda*/lib64/libnvrtc.so*", "libnvrtc.so",
                        os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "*", "lib", "libnvrtc.so*")])
        vp = ctypes.c_void_p
        _nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p
        _nvrtc.nvrtcCreateProgram.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                              vp, vp]
        _nvrtc.nvrtcCompileProgram.argtypes = [vp, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _nvrtc.nvrtcGetProgramLogSize.argtypes = [vp, ctypes.POINTER(ctypes.c_size_t)]
        _nvrtc.nvrtcGetProgramLog.argtypes = [vp, ctypes.c_char_p]
        _nvrtc.nvrtcGetCUBINSize.argtypes = [vp, ctypes.POINTER(ctypes.c_size_t)]
        _nvrtc.nvrtcGetCUBIN.argtypes = [vp, ctypes.c_char_p]
        _nvrtc.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(vp)]
        _cuda.cuModuleLoadData.argtypes = [ctypes.POINTER(vp), ctypes.c_char_p]
        _cuda.cuModuleGetFunction.argtypes = [ctypes.POINTER(vp), vp, ctypes.c_char_p]
        _cuda.cuFuncSetAttribute.argtypes = [vp, ctypes.c_int, ctypes.c_int]
        _cuda.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, vp]
        _cuda.cuLaunchKernel.argtypes = [vp, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                         ctypes.c_uint, ctypes.c_uint, vp, ctypes.POINTER(vp), vp]
        _cuda.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _cuda.cuCtxGetCurrent.argtypes = [ctypes.POINTER(vp)]
    return _nvrtc, _cuda


def _nvrtc_check(rc, what):
    if rc != 0:
        raise RuntimeError("%s: NVRTC error %d (%s)" % (what, rc, _nvrtc.nvrtcGetErrorString(rc).decode()))


def _cu_check(rc, what):
    if rc != 0:
        s = ctypes.c_char_p()
        _cuda.cuGetErrorString(rc, ctypes.byref(s))
        raise RuntimeError("%s: CUDA error %d (%s)" % (what, rc, (s.value or b"?").decode()))


# --------------------------------------------------------------------------- ABI (from the manifest)
ABI_VERSION = 2  # hipsrc.ABIVersion: the manifest schema this harness reads

_CTYPES = {"int": ctypes.c_int, "long long": ctypes.c_longlong, "float": ctypes.c_float}


def struct_type(spec):
    """A ctypes.Structure for one of the manifest's abi.structs, checked
    against its published offsets and size."""
    fields = []
    for f in spec["fields"]:
        t = ctypes.c_void_p if f["c_type"].endswith("*") else _CTYPES[f["c_type"]]
        for d in reversed(f.get("dims") or []):
            t = t * d
        fields.append((f["name"], t))
    cls = type(spec["name"], (ctypes.Structure,), {"_fields_": fields})
    for f in spec["fields"]:
        if getattr(cls, f["name"]).offset != f["offset"]:
            raise ValueError("%s.%s: ctypes offset %d, manifest %d" % (spec["name"], f["name"],
                                                                       getattr(cls, f["name"]).offset, f["offset"]))
    if ctypes.sizeof(cls) != spec["size"]:
        raise ValueError("sizeof(%s): ctypes %d, manifest %d" % (spec["name"], ctypes.sizeof(cls), spec["size"]))
    return cls


class ABI:
    """The manifest's "abi" section: structs, entries, platforms."""

    def __init__(self, abi):
        self.raw = abi
        structs = {s["name"]: struct_type(s) for s in abi["structs"]}
        self.Shape, self.Buffers = structs["MaskcShape"], structs["MaskcBuffers"]
        self.entries = {e["name"]: e for e in abi["entries"]}
        self.platforms = {p["name"]: p for p in abi["platforms"]}
        self.block_m = abi["block_m"]
        self.max_buffers = abi["max_buffers"]
        self.max_seq_len = abi["max_seq_len"]

    def grid(self, entry, sizes, block_n):
        """The launch grid of an entry point: ceil(size / tile) per dimension."""
        tiles = {"block_m": self.block_m, "block_n": block_n}
        return tuple(-(-(sizes.get(d["size"], 1)) // tiles.get(d.get("tile", ""), 1)) for d in self.entries[entry]["grid"])


def load_manifest(directory):
    """(ABI, [kernel entries]) of DIR/manifest.json."""
    man = json.load(open(os.path.join(directory, "manifest.json")))
    if man.get("version") != ABI_VERSION:
        raise ValueError("%s: manifest version %s, this harness reads %d" % (directory, man.get("version"), ABI_VERSION))
    return ABI(man["abi"]), man["kernels"]


def read(path):
    with open(path) as f:
        return f.read()


def device_platform():
    """The platform maskc's runtime builds for this GPU (Go's
    hipsrc.ForDevice): the sm_90a warpgroup-MMA kernel on sm_90, mma.sync
    elsewhere; MASKC_PLATFORM=nvidia asks for mma.sync on sm_90 too."""
    if os.environ.get("MASKC_PLATFORM") == "nvidia":
        return "nvidia"
    return "nvidia-sm90a" if torch.cuda.get_device_capability() == (9, 0) else "nvidia"


def compile_source(src, name="kernel", platform=None, abi=None):
    """NVRTC-compiles a full kernel source for this GPU as the manifest's
    platform (default device_platform()) says: returns (cubin bytes, compile
    log). Needs no CUDA context (thread-safe)."""
    nvrtc, _ = libs()
    plat = abi.platforms[platform or device_platform()]
    major, minor = torch.cuda.get_device_capability()
    arch = plat.get("arch") or "sm_%d%d" % (major, minor)
    extra = [o.encode() for o in plat.get("compile_options") or []]
    prog = ctypes.c_void_p()
    _nvrtc_check(nvrtc.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), (name + ".cu").encode(), 0, None, None),
                 "nvrtcCreateProgram")
    opts = [b"--gpu-architecture=" + arch.encode(), b"-std=c++17", b"--ptxas-options=--verbose", b"-lineinfo"] + extra
    rc = nvrtc.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    n = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value + 1)
    nvrtc.nvrtcGetProgramLog(prog, log)
    log = log.value.decode(errors="replace")
    if rc != 0:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
        raise RuntimeError("NVRTC compile of %s failed (%d):\n%s" % (name, rc, log[-6000:]))
    _nvrtc_check(nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(n)), "nvrtcGetCUBINSize")
    cubin = ctypes.create_string_buffer(n.value)
    _nvrtc_check(nvrtc.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
    nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
    return cubin.raw, log


class Kernel:
    """One compiled generated kernel: maskc_attn_fwd (+ maskc_tile_flags),
    loaded into the calling thread's current (PyTorch's) CUDA context, with
    its launch geometry from the manifest entry for the chosen platform."""

    def __init__(self, src, entry, abi, name="kernel", compiled=None, platform=None):
        _, cuda = libs()
        torch.empty(1, device="cuda")  # make torch's primary context current on this thread
        self.entry, self.abi, self.name = entry, abi, name
        self.platform = platform or device_platform()
        launch = entry["launch"][self.platform]
        self.block_m, self.block_n = abi.block_m, launch["block_n"]
        self.threads, self.smem = launch["threads"], launch["shared_mem_bytes"]
        self.head_dim, self.dtype = entry["head_dim"], entry["dtype"]
        self.prepass = bool(entry.get("flags_entry"))
        mts = re.findall(r"#define MASKC_NV_MTILES (\d+)", src)  # for reports only
        self.mtiles = 1 if self.platform == "nvidia-sm90a" else (int(mts[-1]) if mts else None)
        self.cubin, self.log = compiled if compiled is not None else compile_source(src, name, self.platform, abi)
        self.module = ctypes.c_void_p()
        _cu_check(cuda.cuModuleLoadData(ctypes.byref(self.module), self.cubin), "cuModuleLoadData")
        self.fwd = self._func(entry["entry"].encode())
        self.flags_fn = self._func(entry["flags_entry"].encode()) if self.prepass else None
        _cu_check(cuda.cuFuncSetAttribute(self.fwd, 8, self.smem), "cuFuncSetAttribute(max dynamic smem)")
        self.regs = self._attr(self.fwd, 4)
        self.local_bytes = self._attr(self.fwd, 3)

    def _func(self, name):
        f = ctypes.c_void_p()
        _cu_check(_cuda.cuModuleGetFunction(ctypes.byref(f), self.module, name), "cuModuleGetFunction")
        return f

    def _attr(self, f, attr):
        v = ctypes.c_int()
        _cu_check(_cuda.cuFuncGetAttribute(ctypes.byref(v), attr, f), "cuFuncGetAttribute")
        return v.value

    @staticmethod
    def _launch(f, grid, block, smem, args):
        params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        _cu_check(_cuda.cuLaunchKernel(f, grid[0], grid[1], grid[2], block, 1, 1, smem, stream, params, None),
                  "cuLaunchKernel")

    def prepare(self, q, k, v, o, lse, scale, buffers=(), sink=None):
        """Packs the launch of q, k, v, o as [B, H, S, D] views (any strides,
        last dim contiguous) into a callable that runs the pre-pass (when the
        kernel has one) and the forward."""
        B, H, Sq, D = q.shape
        HKV, Skv = k.shape[1], k.shape[2]
        # codegen's int32 arithmetic assumes Q, KV <= 2^31 - 257 (codegen/intrange.go MaxSeqLen)
        assert Sq <= self.abi.max_seq_len and Skv <= self.abi.max_seq_len, "sequence longer than a generated kernel accepts"
        assert D == self.head_dim and H % HKV == 0 and v.shape == k.shape and o.shape == q.shape
        for t in (q, k, v, o):
            assert t.stride(3) == 1 and t.data_ptr() % 16 == 0 and all(s % 8 == 0 for s in t.stride()[:3])
        assert lse.shape == (B, H, Sq) and lse.is_contiguous() and lse.dtype == torch.float32
        sh = self.abi.Shape()
        sh.B, sh.H, sh.HKV, sh.Sq, sh.Skv = B, H, HKV, Sq, Skv
        for name, t in (("q_stride", q), ("k_stride", k), ("v_stride", v), ("o_stride", o)):
            getattr(sh, name)[:] = t.stride()[:3]
        sh.scale = scale
        sh.sink = sink.data_ptr() if sink is not None else None
        keep = [q, k, v, o, lse, sink]
        sizes = {"B": B, "H": H, "Sq": Sq, "Skv": Skv}
        fwd_grid = self.abi.grid(self.entry["entry"], sizes, self.block_n)
        flags = None
        if self.prepass:
            flags_grid = self.abi.grid(self.entry["flags_entry"], sizes, self.block_n)
            # hipsrc.TileFlags: FB * FH * QTiles * KVTiles bytes
            fb = B if self.entry["mask_uses_b"] else 1
            fh = H if self.entry["mask_uses_h"] else 1
            nqt, nkt = -(-Sq // self.block_m), -(-Skv // self.block_n)
            flags = torch.empty(max(1, fb * fh * nqt * nkt), dtype=torch.uint8, device=q.device)
            sh.tile_flags = flags.data_ptr()
        bufs = self.abi.Buffers()
        assert len(buffers) <= self.abi.max_buffers
        for i, t in enumerate(buffers):
            assert t.is_contiguous() and t.dim() in (1, 2)
            bufs.ptr[i] = t.data_ptr()
            bufs.dim[i][0] = t.shape[0]
            bufs.dim[i][1] = t.shape[1] if t.dim() == 2 else 1
            keep.append(t)
        fwd_args = [ctypes.c_void_p(q.data_ptr()), ctypes.c_void_p(k.data_ptr()), ctypes.c_void_p(v.data_ptr()),
                    ctypes.c_void_p(o.data_ptr()), ctypes.c_void_p(lse.data_ptr()), sh, bufs]
        flag_args = [sh, bufs, ctypes.c_void_p(flags.data_ptr() if flags is not None else 0)]
        keep.append(flags)

        def run(prepass=True):
            if Sq == 0:
                return
            if flags is not None and prepass:
                self._launch(self.flags_fn, flags_grid, self.threads, 0, flag_args)
            self._launch(self.fwd, fwd_grid, self.threads, self.smem, fwd_args)
        run.keep = keep
        run.flags = flags
        return run


# --------------------------------------------------------------------------- cases
def doc_ids(n, gen):
    lens, rem = [], n
    while rem > 0:
        l = min(rem, int(torch.randint(256, 2048, (1,), generator=gen)))
        lens.append(l)
        rem -= l
    return torch.repeat_interleave(torch.arange(len(lens)), torch.tensor(lens))


class Case:
    """A mask/score with its torch definition (the reference) and its
    captured buffers."""

    def __init__(self, name, make, sink=False):
        self.name, self.make, self.sink = name, make, sink

    def build(self, B, H, HKV, Sq, Skv, device, gen):
        """Returns (buffers in MaskcBuffers order, mask_mod or None, score_mod or None)."""
        return self.make(B, H, HKV, Sq, Skv, device, gen)


TORCH_DTYPES = {"i32": torch.int32, "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16,
                "f32": torch.float32, "f64": torch.float64, "bool": torch.bool}


def _random_buffer(spec, sizes, dev, gen):
    """Random contents for a captured buffer of a generated kernel: sorted
    document ids for `segments` buffers, ints in [0, max(Q, KV)], normal
    floats, random bools. Dims are .flex expressions over B H HKV Q KV."""
    dims = [int(eval(d, {"__builtins__": {}}, dict(sizes))) for d in spec["dims"]]
    n = 1
    for d in dims:
        n *= d
    dt = TORCH_DTYPES[spec["dtype"]]
    if spec.get("segments"):
        lens, rem = [], n
        while rem > 0:
            l = min(rem, int(torch.randint(max(1, n // 16), max(2, n // 3) + 1, (1,), generator=gen)))
            lens.append(l)
            rem -= l
        t = torch.repeat_interleave(torch.arange(len(lens)), torch.tensor(lens))
    elif dt == torch.bool:
        t = torch.randint(0, 2, (n,), generator=gen).bool()
    elif dt.is_floating_point:
        t = torch.randn(n, generator=gen)
    else:
        t = torch.randint(0, max(sizes["Q"], sizes["KV"]) + 1, (n,), generator=gen)
    return t.to(dt).reshape(dims).contiguous().to(dev)


class GeneratedCase(Case):
    """A kernel from a genkernels manifest entry: the reference is the
    manifest's mask_torch / score_torch expressions (over tensors b, h, q,
    kv, score, ints B H HKV Q KV and the buffers by name), evaluated on
    random buffer contents."""

    def __init__(self, entry):
        super().__init__(entry["name"], self._make, sink=bool(entry.get("has_sink")))
        self.entry = entry

    def _make(self, B, H, HKV, Sq, Skv, dev, gen):
        sizes = {"B": B, "H": H, "HKV": HKV, "Q": Sq, "KV": Skv}
        specs = sorted(self.entry.get("buffers") or [], key=lambda b: b["slot"])
        bufs = [_random_buffer(b, sizes, dev, gen) for b in specs]
        ns = dict(sizes, torch=torch)
        ns.update({b["name"]: t for b, t in zip(specs, bufs)})
        mask = score = None
        if self.entry.get("mask_torch"):
            mask = eval("lambda b, h, q, kv: " + self.entry["mask_torch"], ns)
        if self.entry.get("score_torch"):
            score = eval("lambda score, b, h, q, kv: " + self.entry["score_torch"], ns)
        return bufs, mask, score


def generated_cases(directory):
    """(ABI, [(GeneratedCase, source)]) from a genkernels or maskc compile
    output directory: DIR/manifest.json and the sources it lists."""
    abi, kernels = load_manifest(directory)
    return abi, [(GeneratedCase(k), read(os.path.join(directory, k["source"]))) for k in kernels]


# --------------------------------------------------------------------------- reference
def reference(q, k, v, scale, mask, score, rows, sink=None):
    """float64 attention for query rows `rows` of q [B,H,Sq,D] against k, v
    [B,HKV,Skv,D]: returns (O [B,H,R,D], LSE [B,H,R]) with fully masked rows
    giving O = 0 and LSE = -inf (or the sink's logit)."""
    B, H, Sq, D = q.shape
    HKV, Skv = k.shape[1], k.shape[2]
    dev = q.device
    hh = torch.arange(H, device=dev)[:, None, None]
    qi = rows[None, :, None]
    ki = torch.arange(Skv, device=dev)[None, None, :]
    os_, ls_ = [], []
    for b in range(B):
        bb = torch.tensor(b, device=dev)
        qs = q[b][:, rows].double()
        ks = k[b].double().repeat_interleave(H // HKV, 0)
        vs = v[b].double().repeat_interleave(H // HKV, 0)
        s = qs @ ks.transpose(1, 2) * scale
        if score is not None:
            s = score(s, bb, hh, qi, ki).double()
        if mask is not None:
            m = mask(bb, hh, qi, ki)
            s = s.masked_fill(~m.expand_as(s), float("-inf"))
        if sink is not None:
            sk = sink.double()[:, None, None].expand(H, s.shape[1], 1)
            lse = torch.logsumexp(torch.cat([s, sk], -1), -1)
        else:
            lse = torch.logsumexp(s, -1)
        p = torch.exp(s - lse[..., None])
        p = torch.nan_to_num(p, nan=0.0)
        os_.append(p @ vs)
        ls_.append(lse)
    return torch.stack(os_), torch.stack(ls_)


def rel_err(out, ref):
    """||out - ref|| / ||ref|| in float64 (absolute when ref is all zero);
    NaN anywhere gives inf."""
    out, ref = out.double(), ref.double()
    if torch.isnan(out).any():
        return float("inf")
    den = ref.norm().item()
    num = (out - ref).norm().item()
    return num / den if den > 0 else num


def lse_err(out, ref):
    """Relative error of the finite LSE entries; inf if the -inf pattern or NaNs differ."""
    out, ref = out.double(), ref.double()
    if torch.isnan(out).any() or not torch.equal(torch.isinf(out), torch.isinf(ref)):
        return float("inf")
    fin = torch.isfinite(ref)
    if not fin.any():
        return 0.0
    return rel_err(out[fin], ref[fin])


def density(mask, Sq, Skv, H, device, b=0):
    """Exact fraction of kept pairs over all (h, q, kv) of batch b."""
    if mask is None:
        return 1.0
    ki = torch.arange(Skv, device=device)[None, None, :]
    hh = torch.arange(H, device=device)[:, None, None]
    tot = 0
    for s in range(0, Sq, 512):
        qi = torch.arange(s, min(Sq, s + 512), device=device)[None, :, None]
        tot += mask(torch.tensor(b, device=device), hh, qi, ki).expand(H, qi.shape[1], Skv).sum().item()
    return tot / (H * Sq * Skv)


def time_ms(fn, iters=20, warmup=3):
    """Median milliseconds of fn over iters runs, CUDA events per run."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        ts.append((a, b))
    torch.cuda.synchronize()
    return sorted(a.elapsed_time(b) for a, b in ts)[len(ts) // 2]


# --------------------------------------------------------------------------- backward
class MaskcBwdShape(ctypes.Structure):
    """Mirror of struct MaskcBwdShape (hipsrc/attn_bwd.h)."""
    _fields_ = [("B", ctypes.c_int), ("H", ctypes.c_int), ("HKV", ctypes.c_int), ("Sq", ctypes.c_int),
                ("Skv", ctypes.c_int)] + [
        (n, ctypes.c_longlong * 3) for n in ("q_stride", "k_stride", "v_stride", "o_stride", "do_stride",
                                             "dq_stride", "dk_stride", "dv_stride")] + [
        ("scale", ctypes.c_float), ("sink", ctypes.c_void_p), ("tile_flags", ctypes.c_void_p), ("lse", ctypes.c_void_p),
        ("dlse", ctypes.c_void_p), ("delta", ctypes.c_void_p), ("dq_acc", ctypes.c_void_p), ("dsink", ctypes.c_void_p),
        ("dbuf", ctypes.c_void_p * 8)]


def bwd_config(src):
    """The backward's tile shape read back from a backward source
    (hipsrc/attn_bwd.h's #defines, mirrored by hipsrc.Bwd* in Go)."""
    def num(name):
        m = re.search(r"^#define %s (\d+)$" % name, src, re.M)
        if not m:
            raise ValueError("source lacks #define %s" % name)
        return int(m.group(1))
    lanes = re.search(r"^#define MASKC_BWD_PRE_ROWS \(MASKC_BWD_THREADS / (\d+)\)", src, re.M)
    if not lanes:
        raise ValueError("source lacks MASKC_BWD_PRE_ROWS")
    return dict(block_m=num("MASKC_BWD_BLOCK_M"), block_n=num("MASKC_BWD_BLOCK_N"), warps=num("MASKC_BWD_WARPS"),
                pre_lanes=int(lanes.group(1)))


class BwdKernel(Kernel):
    """A kernel compiled from a backward source (genkernels NAME.bwd.cu): the
    forward's entry points plus hipsrc/attn_bwd.h's."""

    def __init__(self, src, entry, abi, name="kernel", compiled=None, platform=None):
        super().__init__(src, entry, abi, name, compiled, platform)
        for e in ("maskc_attn_bwd_pre", "maskc_attn_bwd", "maskc_attn_bwd_dq", "maskc_attn_bwd_dq_convert",
                  "maskc_attn_bwd_sink", "maskc_attn_bwd_buf_convert"):
            setattr(self, e[len("maskc_attn_"):], self._func(e.encode()))
        d = self.head_dim
        bc = self.bwd_cfg = bwd_config(src)
        self.bwd_threads = bc["warps"] * 32
        # MASKC_BWD_SMEM_BYTES: K, V tiles, Q, dO tiles, P^T and dS^T, LSE and delta
        bm, bn = bc["block_m"], bc["block_n"]
        self.bwd_smem = 2 * (2 * bn * d + 2 * bm * d + 2 * bn * bm) + 8 * bm
        for f in (self.bwd, self.bwd_dq):
            _cu_check(_cuda.cuFuncSetAttribute(f, 8, self.bwd_smem), "cuFuncSetAttribute(max dynamic smem)")
        self.bwd_regs = self._attr(self.bwd, 4)
        self.bwd_local_bytes = self._attr(self.bwd, 3)
        self.bwd_dq_regs = self._attr(self.bwd_dq, 4)

    def prepare_bwd(self, q, k, v, o, lse, do, dq, dk, dv, scale, buffers=(), grad_slots=(), sink=None,
                    dlse=None, flags=None, deterministic=False):
        """A callable running the backward on [B, H, S, D] views: dq, dk, dv
        written; returns (dbufs {slot: fp32 tensor}, dsink or None) tensors
        that each call refills. flags: the forward's tile flags (prepass)."""
        B, H, Sq, D = q.shape
        HKV, Skv = k.shape[1], k.shape[2]
        for t in (q, k, v, o, do, dq, dk, dv):
            assert t.stride(3) == 1 and t.data_ptr() % 16 == 0 and all(s % 8 == 0 for s in t.stride()[:3])
        sh = MaskcBwdShape()
        sh.B, sh.H, sh.HKV, sh.Sq, sh.Skv = B, H, HKV, Sq, Skv
        for name, t in (("q_stride", q), ("k_stride", k), ("v_stride", v), ("o_stride", o), ("do_stride", do),
                        ("dq_stride", dq), ("dk_stride", dk), ("dv_stride", dv)):
            getattr(sh, name)[:] = t.stride()[:3]
        sh.scale = scale
        dev = q.device
        delta = torch.empty(B, H, Sq, device=dev, dtype=torch.float32)
        dq_acc = None if deterministic else torch.empty(B, H, Sq, D, device=dev, dtype=torch.float32)
        dsink = torch.empty(H, device=dev, dtype=torch.float32) if sink is not None else None
        sh.sink = sink.data_ptr() if sink is not None else None
        sh.tile_flags = flags.data_ptr() if flags is not None else None
        sh.lse = lse.data_ptr()
        sh.dlse = dlse.data_ptr() if dlse is not None else None
        sh.delta = delta.data_ptr()
        sh.dq_acc = dq_acc.data_ptr() if dq_acc is not None else None
        sh.dsink = dsink.data_ptr() if dsink is not None else None
        bufs = self.abi.Buffers()
        for i, t in enumerate(buffers):
            bufs.ptr[i] = t.data_ptr()
            bufs.dim[i][0] = t.shape[0]
            bufs.dim[i][1] = t.shape[1] if t.dim() == 2 else 1
        accs, dbufs = {}, {}
        for s in grad_slots:
            accs[s] = torch.empty(buffers[s].numel(), device=dev, dtype=torch.int64)
            dbufs[s] = torch.empty(buffers[s].shape, device=dev, dtype=torch.float32)
            sh.dbuf[s] = accs[s].data_ptr()
        P = ctypes.c_void_p
        T = self.bwd_threads
        BM, BN = self.bwd_cfg["block_m"], self.bwd_cfg["block_n"]
        pre_rows = T // self.bwd_cfg["pre_lanes"]
        pre_args = [P(o.data_ptr()), P(do.data_ptr()), sh]
        main_args = [P(q.data_ptr()), P(k.data_ptr()), P(v.data_ptr()), P(do.data_ptr()), P(dk.data_ptr()),
                     P(dv.data_ptr()), sh, bufs]
        dq_args = [P(q.data_ptr()), P(k.data_ptr()), P(v.data_ptr()), P(do.data_ptr()), P(dq.data_ptr()), sh, bufs]
        conv_args = [P(dq.data_ptr()), sh]
        buf_args = {s: [P(accs[s].data_ptr()), P(dbufs[s].data_ptr()), ctypes.c_longlong(accs[s].numel())]
                    for s in accs}
        keep = [q, k, v, o, lse, do, dq, dk, dv, sink, dlse, flags, delta, dq_acc, dsink, accs, dbufs, list(buffers)]

        def run():
            if Sq == 0 or Skv == 0:  # nothing attends: every gradient is zero
                for t in [dq, dk, dv] + list(dbufs.values()) + ([dsink] if dsink is not None else []):
                    t.zero_()
                return dbufs, dsink
            for a in accs.values():
                a.zero_()
            self._launch(self.bwd_pre, ((Sq + pre_rows - 1) // pre_rows, H, B), T, 0, pre_args)
            self._launch(self.bwd, ((Skv + BN - 1) // BN, HKV, B), T, self.bwd_smem, main_args)
            if deterministic:
                self._launch(self.bwd_dq, ((Sq + BM - 1) // BM, H, B), T, self.bwd_smem, dq_args)
            else:
                self._launch(self.bwd_dq_convert, ((Sq + pre_rows - 1) // pre_rows, H, B), T, 0, conv_args)
            if dsink is not None:
                self._launch(self.bwd_sink, (H, 1, 1), T, 0, [sh])
            for s, a in buf_args.items():
                self._launch(self.bwd_buf_convert, ((accs[s].numel() + T - 1) // T, 1, 1), T, 0, a)
            return dbufs, dsink
        run.keep = keep
        run.dsink, run.dbufs = dsink, dbufs
        return run


def reference_grads(q, k, v, scale, mask, score, do, dlse=None, buffers=(), grad_slots=(), sink=None, o_delta=None):
    """float64 torch autograd of O and the natural-log LSE (with the sink,
    fully masked rows O = 0, LSE = -inf) w.r.t. q, k, v, the float buffers in
    grad_slots and the sink, for the loss sum(O * dO) + sum(LSE * dLSE) over
    rows with a finite LSE. One (b, h) at a time. score and mask take the
    buffers as closures; `buffers` must be the tensors they close over, so
    they are swapped for float64 leaves here through make(bufs) when given
    as (make, buffers). Returns (dq, dk, dv, {slot: dbuf}, dsink).

    o_delta, when given ([B, H, Sq, D], e.g. the kernel's bf16 O), replaces
    the exact O in delta = rowsum(dO * O) - dLSE, as a backward kernel reads
    it: the loss gets sum(c * LSE) with the constant c = rowsum(dO * (O -
    o_delta)), which turns every dS = P (dP - delta) into P (dP - delta'),
    everything else exact in float64. A gradient that cancels (an ALiBi
    slope's) is as sensitive to O's rounding as that isolates."""
    B, H, Sq, D = q.shape
    HKV, Skv = k.shape[1], k.shape[2]
    G = H // HKV
    dev = q.device
    dq = torch.zeros(B, H, Sq, D, dtype=torch.float64, device=dev)
    dk = torch.zeros(B, HKV, Skv, D, dtype=torch.float64, device=dev)
    dv = torch.zeros_like(dk)
    leaves = {s: buffers[s].detach().double().requires_grad_(True) for s in grad_slots}
    sink_leaf = sink.detach().double().requires_grad_(True) if sink is not None else None
    qi = torch.arange(Sq, device=dev)[:, None]
    ki = torch.arange(Skv, device=dev)[None, :]
    for b in range(B):
        bb = torch.tensor(b, device=dev)
        for h in range(H):
            hh = torch.tensor(h, device=dev)
            qs = q[b, h].detach().double().requires_grad_(True)
            ks = k[b, h // G].detach().double().requires_grad_(True)
            vs = v[b, h // G].detach().double().requires_grad_(True)
            s = qs @ ks.T * scale
            if score is not None:
                s = score(s, bb, hh, qi, ki, leaves).double()
            keep = mask(bb, hh, qi, ki).expand(Sq, Skv) if mask is not None else torch.ones(Sq, Skv, dtype=torch.bool,
                                                                                             device=dev)
            s = s.masked_fill(~keep, float("-inf"))
            m = s.amax(-1, keepdim=True)
            if sink_leaf is not None:
                m = torch.maximum(m, sink_leaf[h].detach().expand_as(m))
            m = torch.where(torch.isinf(m), torch.zeros_like(m), m).detach()
            e = torch.exp(s - m)
            l = e.sum(-1, keepdim=True)
            if sink_leaf is not None:
                l = l + torch.exp(sink_leaf[h] - m)
            empty = l == 0
            lsafe = torch.where(empty, torch.ones_like(l), l)
            p = e / lsafe
            o = p @ vs
            loss = (o * do[b, h].double()).sum()
            lse = (m + torch.log(lsafe)).squeeze(-1)
            if dlse is not None:
                loss = loss + torch.where(empty.squeeze(-1), torch.zeros_like(lse), lse * dlse[b, h].double()).sum()
            if o_delta is not None:
                c = ((o.detach() - o_delta[b, h].double()) * do[b, h].double()).sum(-1)
                loss = loss + torch.where(empty.squeeze(-1), torch.zeros_like(lse), lse * c).sum()
            loss.backward()
            dq[b, h] = qs.grad
            dk[b, h // G] += ks.grad
            dv[b, h // G] += vs.grad
    return dq, dk, dv, {s: t.grad if t.grad is not None else torch.zeros_like(t) for s, t in leaves.items()}, \
        (sink_leaf.grad if sink_leaf is not None else None)
