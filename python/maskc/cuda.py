"""The CUDA driver API and NVRTC through ctypes, in the process PyTorch set up.

libcuda is the one torch already loaded (dlopen returns the same handle), and
modules load into the context that is current on the calling thread: torch's
primary context once torch has touched the device. Nothing here creates a
context, allocates memory or synchronises. Every call's return code is
checked; a failure raises CudaError naming the call and the driver's own
name and text for the code.

NVRTC compiles a kernel source to a cubin for the running GPU when the cache
holds none for its architecture (JIT where the arch is not prebuilt).
"""
import ctypes
import glob
import os

from .diagnostics import MaskcError

__all__ = ["CudaError", "Driver", "NVRTC", "load_library"]

# CUfunction_attribute values (cuda.h).
ATTR_NUM_REGS = 4
ATTR_LOCAL_SIZE_BYTES = 3
ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

# A CUtensorMap (cuda.h): 16 64-bit words, 64-byte aligned; what cuTensorMapEncodeTiled writes (abi.py
# checks MaskcTensorMaps' fields against it).
TENSOR_MAP_BYTES = 128
TENSOR_MAP_ALIGN = 64


class CudaError(MaskcError):
    """A CUDA driver or NVRTC call failed: call, code, and the library's text."""

    def __init__(self, call, code, text, log=""):
        self.call, self.code, self.text = call, code, text
        super().__init__("%s failed: error %d (%s)" % (call, code, text), output=log)


def load_library(patterns):
    """The first of the library names or glob patterns that dlopen accepts."""
    tried = []
    for pat in patterns:
        paths = sorted(glob.glob(pat), reverse=True) if any(c in pat for c in "*?[") else [pat]
        for p in paths:
            try:
                return ctypes.CDLL(p)
            except OSError as e:
                tried.append("%s (%s)" % (p, e))
    raise MaskcError("cannot load any of %s: %s" % (", ".join(patterns), "; ".join(tried) or "no such files"))


_vp = ctypes.c_void_p


class Driver:
    """The driver API calls the launcher makes, every return code checked.
    lib is libcuda (or a stand-in with the same functions, for tests)."""

    def __init__(self, lib=None):
        if lib is None:
            lib = load_library(["libcuda.so.1", "libcuda.so"])
            lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
            lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
            lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(_vp)]
            lib.cuCtxSetCurrent.argtypes = [_vp]
            lib.cuCtxGetDevice.argtypes = [ctypes.POINTER(ctypes.c_int)]
            lib.cuDeviceGet.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int]
            lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(_vp), ctypes.c_int]
            lib.cuModuleLoadData.argtypes = [ctypes.POINTER(_vp), ctypes.c_char_p]
            lib.cuModuleUnload.argtypes = [_vp]
            lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(_vp), _vp, ctypes.c_char_p]
            lib.cuFuncSetAttribute.argtypes = [_vp, ctypes.c_int, ctypes.c_int]
            lib.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, _vp]
            lib.cuLaunchKernel.argtypes = [_vp, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                           ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, _vp, ctypes.POINTER(_vp), _vp]
            try:  # CUDA 12's; an older driver lacks it (encode_tensor_map then encodes nothing)
                enc = lib.cuTensorMapEncodeTiled
            except AttributeError:
                pass
            else:
                u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
                enc.argtypes = [_vp, ctypes.c_int, ctypes.c_uint32, _vp, u64p, u64p, u32p, u32p, ctypes.c_int,
                                ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self.lib = lib

    def check(self, rc, call):
        """Raises CudaError for a non-zero CUresult rc of call."""
        if rc == 0:
            return
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        self.lib.cuGetErrorName(rc, ctypes.byref(name))
        self.lib.cuGetErrorString(rc, ctypes.byref(text))
        raise CudaError(call, rc, "%s: %s" % ((name.value or b"?").decode(), (text.value or b"?").decode()))

    def current_context(self):
        """The calling thread's current context; CudaError when there is none
        (torch has not initialised the device on this thread)."""
        ctx = _vp()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise CudaError("cuCtxGetCurrent", 0, "no current context: touch the device with torch first")
        return ctx.value

    def ensure_context(self, ordinal):
        """Makes device ordinal's primary context (the one torch uses) current
        on the calling thread when it is not already: a thread that has not
        run a CUDA call yet has none. Returns the context."""
        ctx = _vp()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if ctx.value:
            dev = ctypes.c_int()
            self.check(self.lib.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
            if dev.value == ordinal:
                return ctx.value
        dev = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(dev), int(ordinal)), "cuDeviceGet(%d)" % ordinal)
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return ctx.value

    def load_module(self, image):
        """Loads a cubin (bytes) into the current context; the module handle."""
        mod = _vp()
        self.check(self.lib.cuModuleLoadData(ctypes.byref(mod), image), "cuModuleLoadData")
        return mod.value

    def unload_module(self, mod):
        """Unloads a module loaded by load_module."""
        self.check(self.lib.cuModuleUnload(_vp(mod)), "cuModuleUnload")

    def function(self, mod, name):
        """The kernel of an extern "C" name in a module."""
        f = _vp()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(f), _vp(mod), name.encode()),
                   "cuModuleGetFunction(%s)" % name)
        return f.value

    def set_max_dynamic_smem(self, f, nbytes):
        """Allows f up to nbytes of dynamic shared memory per block."""
        self.check(self.lib.cuFuncSetAttribute(_vp(f), ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(nbytes)),
                   "cuFuncSetAttribute(max dynamic shared memory = %d)" % nbytes)

    def attribute(self, f, attr):
        """An int attribute of a kernel (ATTR_NUM_REGS, ...)."""
        v = ctypes.c_int()
        self.check(self.lib.cuFuncGetAttribute(ctypes.byref(v), attr, _vp(f)), "cuFuncGetAttribute")
        return v.value

    def encode_tensor_map(self, dtype, address, dims, strides, box, element_strides=None, interleave=0, swizzle=0,
                          l2_promotion=0, oob_fill=0):
        """The TENSOR_MAP_BYTES bytes of a tiled CUtensorMap that
        cuTensorMapEncodeTiled encodes: dtype a CUtensorMapDataType, the
        tensor at device address address of len(dims) dimensions dims
        (innermost first), strides the byte strides of every dimension but
        the innermost, box the box's extents, element_strides (default all
        1), and the CUtensorMapInterleave, CUtensorMapSwizzle,
        CUtensorMapL2promotion and CUtensorMapFloatOOBfill values. Encoded
        into a 64-byte-aligned scratch, as the driver requires, and copied
        out. Returns None where the driver has no cuTensorMapEncodeTiled
        (before CUDA 12): it cannot encode. CudaError where it refuses the
        arguments (a misaligned address or stride, a box too large)."""
        fn = getattr(self.lib, "cuTensorMapEncodeTiled", None)
        if fn is None:
            return None
        rank = len(dims)
        element_strides = [1] * rank if element_strides is None else list(element_strides)
        if not 1 <= rank <= 5 or len(strides) != rank - 1 or len(box) != rank or len(element_strides) != rank:
            raise MaskcError("a tensor map of rank %d takes %d dims, %d strides, %d box extents and %d element "
                             "strides; got %d, %d, %d, %d" % (rank, rank, rank - 1, rank, rank, len(dims),
                                                              len(strides), len(box), len(element_strides)))
        scratch = ctypes.create_string_buffer(TENSOR_MAP_BYTES + TENSOR_MAP_ALIGN)
        at = -(-ctypes.addressof(scratch) // TENSOR_MAP_ALIGN) * TENSOR_MAP_ALIGN
        u32, u64 = ctypes.c_uint32, ctypes.c_uint64
        self.check(fn(_vp(at), ctypes.c_int(dtype), u32(rank), _vp(address), (u64 * rank)(*dims),
                      (u64 * max(1, rank - 1))(*strides), (u32 * rank)(*box), (u32 * rank)(*element_strides),
                      ctypes.c_int(interleave), ctypes.c_int(swizzle), ctypes.c_int(l2_promotion),
                      ctypes.c_int(oob_fill)),
                   "cuTensorMapEncodeTiled(dims %s, strides %s, box %s)" % (tuple(dims), tuple(strides), tuple(box)))
        return ctypes.string_at(at, TENSOR_MAP_BYTES)

    def launch(self, f, grid, block, smem, stream, args, what="cuLaunchKernel"):
        """Launches f on stream (a CUstream handle, e.g.
        torch.cuda.current_stream().cuda_stream) with args, a list of ctypes
        objects whose addresses become the kernel parameters. Asynchronous:
        args need only live until this returns (the driver copies them)."""
        params = (_vp * len(args))(*[ctypes.addressof(a) for a in args])
        self.check(self.lib.cuLaunchKernel(_vp(f), int(grid[0]), int(grid[1]), int(grid[2]), int(block[0]),
                                           int(block[1]), int(block[2]), int(smem), _vp(stream), params, None), what)


def _nvrtc_paths():
    dirs = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda", "/usr/local/cuda-*"]
    pats = ["libnvrtc.so", "libnvrtc.so.*"]
    out = [os.path.join(d, "lib64", p) for d in dirs if d for p in pats]
    try:  # the nvidia-cuda-nvrtc wheel torch depends on
        import importlib.util
        spec = importlib.util.find_spec("nvidia")
        for root in (spec.submodule_search_locations or []) if spec else []:
            out += [os.path.join(root, "*", "lib", p) for p in pats]
    except (ImportError, ValueError):
        pass
    return out + pats


class NVRTC:
    """NVRTC: compiles a kernel source to a cubin for one architecture."""

    def __init__(self, lib=None):
        if lib is None:
            lib = load_library(_nvrtc_paths())
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            lib.nvrtcVersion.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
            lib.nvrtcCreateProgram.argtypes = [ctypes.POINTER(_vp), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                               _vp, _vp]
            lib.nvrtcCompileProgram.argtypes = [_vp, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
            lib.nvrtcGetProgramLogSize.argtypes = [_vp, ctypes.POINTER(ctypes.c_size_t)]
            lib.nvrtcGetProgramLog.argtypes = [_vp, ctypes.c_char_p]
            lib.nvrtcGetCUBINSize.argtypes = [_vp, ctypes.POINTER(ctypes.c_size_t)]
            lib.nvrtcGetCUBIN.argtypes = [_vp, ctypes.c_char_p]
            lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(_vp)]
        self.lib = lib

    def check(self, rc, call, log=""):
        """Raises CudaError for a non-zero nvrtcResult."""
        if rc != 0:
            raise CudaError(call, rc, (self.lib.nvrtcGetErrorString(rc) or b"?").decode(), log)

    def version(self):
        """"nvrtc-MAJOR.MINOR", part of the JIT cache key."""
        a, b = ctypes.c_int(), ctypes.c_int()
        self.check(self.lib.nvrtcVersion(ctypes.byref(a), ctypes.byref(b)), "nvrtcVersion")
        return "nvrtc-%d.%d" % (a.value, b.value)

    def compile(self, source, name, options):
        """(cubin bytes, log) for source compiled with options (which name
        the architecture); CudaError carrying the log when it fails."""
        prog = _vp()
        self.check(self.lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None),
                   "nvrtcCreateProgram")
        try:
            opts = [o.encode() for o in options]
            rc = self.lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
            n = ctypes.c_size_t()
            self.check(self.lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n)), "nvrtcGetProgramLogSize")
            buf = ctypes.create_string_buffer(n.value + 1)
            self.check(self.lib.nvrtcGetProgramLog(prog, buf), "nvrtcGetProgramLog")
            log = buf.value.decode(errors="replace")
            self.check(rc, "nvrtcCompileProgram(%s)" % name, log)
            self.check(self.lib.nvrtcGetCUBINSize(prog, ctypes.byref(n)), "nvrtcGetCUBINSize")
            cubin = ctypes.create_string_buffer(n.value)
            self.check(self.lib.nvrtcGetCUBIN(prog, cubin), "nvrtcGetCUBIN")
            return cubin.raw, log
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))
