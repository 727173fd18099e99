"""The driver and NVRTC wrappers check every return code (a stand-in library
plays libcuda / libnvrtc: no GPU here)."""
import ctypes
import struct

import pytest

from maskc.cuda import ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, CudaError, Driver, NVRTC
from maskc.diagnostics import MaskcError

NAMES = {1: (b"CUDA_ERROR_INVALID_VALUE", b"invalid argument"),
         200: (b"CUDA_ERROR_INVALID_IMAGE", b"device kernel image is invalid"),
         201: (b"CUDA_ERROR_INVALID_CONTEXT", b"invalid device context")}


def map_bytes(address, rows):
    """The 128 bytes the stand-in's cuTensorMapEncodeTiled writes for a map
    of address whose box has rows rows: distinct per tensor and box."""
    return struct.pack("<QQ", address, rows) * 8


class FakeCuda:
    """Returns the code in fail[name] (0 by default) and records calls.
    tensor_maps False: a driver before CUDA 12, without
    cuTensorMapEncodeTiled. fail_addresses {global address: code}: the
    encoding of a map of that address fails with code."""

    def __init__(self, fail=None, ctx=0x1000, tensor_maps=True):
        self.fail, self.ctx, self.calls, self.ctx_dev = dict(fail or {}), ctx, [], 0
        self.encodes, self.fail_addresses = [], {}
        if tensor_maps:
            self.cuTensorMapEncodeTiled = self._encode_tiled

    def _rc(self, name, *args):
        self.calls.append((name, args))
        return self.fail.get(name, 0)

    def cuGetErrorName(self, rc, out):
        out._obj.value = NAMES[rc][0]
        return 0

    def cuGetErrorString(self, rc, out):
        out._obj.value = NAMES[rc][1]
        return 0

    def cuCtxGetCurrent(self, out):
        out._obj.value = self.ctx
        return self._rc("cuCtxGetCurrent")

    def cuCtxGetDevice(self, out):
        out._obj.value = self.ctx_dev
        return self._rc("cuCtxGetDevice")

    def cuDeviceGet(self, out, ordinal):
        out._obj.value = ordinal
        return self._rc("cuDeviceGet", ordinal)

    def cuDevicePrimaryCtxRetain(self, out, dev):
        out._obj.value = 0x7000 + dev.value
        return self._rc("cuDevicePrimaryCtxRetain", dev.value)

    def cuCtxSetCurrent(self, ctx):
        self.ctx = ctx.value
        return self._rc("cuCtxSetCurrent", ctx.value)

    def cuModuleLoadData(self, out, image):
        out._obj.value = 0x2000
        return self._rc("cuModuleLoadData", image)

    def cuModuleGetFunction(self, out, mod, name):
        out._obj.value = 0x3000
        return self._rc("cuModuleGetFunction", mod.value, name)

    def cuFuncSetAttribute(self, f, attr, v):
        return self._rc("cuFuncSetAttribute", f.value, attr, v)

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        self.params = list(params)
        return self._rc("cuLaunchKernel", f.value, (gx, gy, gz), (bx, by, bz), smem, stream.value, extra)

    def _encode_tiled(self, tmap, dtype, rank, address, dims, strides, box, element_strides, interleave, swizzle,
                      l2, oob):
        """cuTensorMapEncodeTiled: records its arguments as plain values
        (encodes) and writes map_bytes into the map it is given."""
        n = rank.value
        enc = dict(aligned=tmap.value % 64 == 0, dtype=dtype.value, rank=n, address=address.value,
                   dims=tuple(dims[:n]), strides=tuple(strides[:n - 1]), box=tuple(box[:n]),
                   element_strides=tuple(element_strides[:n]), interleave=interleave.value, swizzle=swizzle.value,
                   l2_promotion=l2.value, oob_fill=oob.value)
        self.encodes.append(enc)
        rc = self._rc("cuTensorMapEncodeTiled", enc["address"]) or self.fail_addresses.get(enc["address"], 0)
        if rc == 0:
            ctypes.memmove(tmap.value, map_bytes(enc["address"], enc["box"][1]), 128)
        return rc


def test_success_path_records_arguments():
    lib = FakeCuda()
    d = Driver(lib)
    assert d.current_context() == 0x1000
    mod = d.load_module(b"cubin")
    f = d.function(mod, "maskc_attn_fwd")
    d.set_max_dynamic_smem(f, 98304)
    args = [ctypes.c_void_p(7), ctypes.c_int(3), ctypes.c_float(0.5)]
    d.launch(f, (4, 16, 2), (256, 1, 1), 98304, 0xabc, args)
    assert ("cuModuleGetFunction", (0x2000, b"maskc_attn_fwd")) in lib.calls
    assert ("cuFuncSetAttribute", (0x3000, ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES, 98304)) in lib.calls
    assert lib.calls[-1] == ("cuLaunchKernel", (0x3000, (4, 16, 2), (256, 1, 1), 98304, 0xabc, None))
    assert lib.params == [ctypes.addressof(a) for a in args]


@pytest.mark.parametrize("call, run", [
    ("cuModuleLoadData", lambda d: d.load_module(b"x")),
    ("cuModuleGetFunction", lambda d: d.function(1, "maskc_attn_fwd")),
    ("cuFuncSetAttribute", lambda d: d.set_max_dynamic_smem(1, 1 << 20)),
    ("cuLaunchKernel", lambda d: d.launch(1, (1, 1, 1), (1, 1, 1), 0, 0, [ctypes.c_int(0)])),
    ("cuCtxGetCurrent", lambda d: d.current_context()),
    ("cuTensorMapEncodeTiled", lambda d: d.encode_tensor_map(9, 1 << 20, (128, 300, 8, 2), (256, 76800, 614400),
                                                             (64, 128, 1, 1))),
])
def test_every_failure_raises(call, run):
    d = Driver(FakeCuda(fail={call: 200}))
    with pytest.raises(CudaError, match=r"%s.* failed: error 200 \(CUDA_ERROR_INVALID_IMAGE: device kernel image" % call):
        run(d)


def test_no_context_raises():
    with pytest.raises(CudaError, match="no current context"):
        Driver(FakeCuda(ctx=0)).current_context()


class FakeNVRTC:
    def __init__(self, compile_rc=0):
        self.compile_rc, self.destroyed = compile_rc, 0

    def nvrtcGetErrorString(self, rc):
        return b"NVRTC_ERROR_COMPILATION"

    def nvrtcCreateProgram(self, out, src, name, n, a, b):
        out._obj.value = 0x10
        return 0

    def nvrtcCompileProgram(self, prog, n, opts):
        self.opts = [opts[i] for i in range(n)]
        return self.compile_rc

    def nvrtcGetProgramLogSize(self, prog, out):
        out._obj.value = 25
        return 0

    def nvrtcGetProgramLog(self, prog, buf):
        ctypes.memmove(buf, b"x.flex(3): error: bad\n", 22)
        return 0

    def nvrtcGetCUBINSize(self, prog, out):
        out._obj.value = 4
        return 0

    def nvrtcGetCUBIN(self, prog, buf):
        ctypes.memmove(buf, b"\x7fELF", 4)
        return 0

    def nvrtcDestroyProgram(self, prog):
        self.destroyed += 1
        return 0


def test_nvrtc_compile():
    lib = FakeNVRTC()
    cubin, log = NVRTC(lib).compile("src", "k.cu", ["--gpu-architecture=sm_90a"])
    assert cubin == b"\x7fELF" and "bad" in log and lib.opts == [b"--gpu-architecture=sm_90a"]
    assert lib.destroyed == 1


def test_nvrtc_failure_carries_log():
    lib = FakeNVRTC(compile_rc=6)
    with pytest.raises(CudaError) as ei:
        NVRTC(lib).compile("src", "k.cu", [])
    assert "nvrtcCompileProgram(k.cu) failed: error 6" in str(ei.value) and "x.flex(3): error: bad" in ei.value.output
    assert lib.destroyed == 1, "the program is destroyed on failure too"


@pytest.mark.parametrize("ctx, ctx_dev, ordinal, want, retained", [
    (0x1000, 0, 0, 0x1000, False),  # torch's context already current
    (0, 0, 0, 0x7000, True),  # a fresh thread: bind the primary context
    (0x1000, 0, 1, 0x7001, True),  # current context of another device
])
def test_ensure_context(ctx, ctx_dev, ordinal, want, retained):
    lib = FakeCuda(ctx=ctx)
    lib.ctx_dev = ctx_dev
    assert Driver(lib).ensure_context(ordinal) == want
    assert any(c[0] == "cuDevicePrimaryCtxRetain" for c in lib.calls) == retained


def test_ensure_context_failure_raises():
    with pytest.raises(CudaError, match="cuDevicePrimaryCtxRetain failed: error 201"):
        Driver(FakeCuda(ctx=0, fail={"cuDevicePrimaryCtxRetain": 201})).ensure_context(0)


def test_encode_tensor_map_passes_every_argument_and_returns_the_map():
    """The map is encoded into a 64-byte-aligned scratch with exactly the
    arguments given (element strides 1 by default), and its 128 bytes come
    back."""
    lib = FakeCuda()
    d = Driver(lib)
    got = d.encode_tensor_map(6, 0x7000000, (128, 300, 4, 2), (256, 76800, 307200), (64, 128, 1, 1), swizzle=3)
    assert got == map_bytes(0x7000000, 128) and len(got) == 128
    assert lib.encodes == [dict(aligned=True, dtype=6, rank=4, address=0x7000000, dims=(128, 300, 4, 2),
                                strides=(256, 76800, 307200), box=(64, 128, 1, 1), element_strides=(1, 1, 1, 1),
                                interleave=0, swizzle=3, l2_promotion=0, oob_fill=0)]
    d.encode_tensor_map(9, 0x8000000, (64, 5, 1, 1), (128, 640, 640), (64, 64, 1, 1), (1, 1, 1, 1), 0, 1, 2, 1)
    assert lib.encodes[-1] == dict(aligned=True, dtype=9, rank=4, address=0x8000000, dims=(64, 5, 1, 1),
                                   strides=(128, 640, 640), box=(64, 64, 1, 1), element_strides=(1, 1, 1, 1),
                                   interleave=0, swizzle=1, l2_promotion=2, oob_fill=1)


def test_encode_tensor_map_without_the_symbol_cannot_encode():
    """A driver before CUDA 12 has no cuTensorMapEncodeTiled: None, no call."""
    lib = FakeCuda(tensor_maps=False)
    assert not hasattr(lib, "cuTensorMapEncodeTiled")
    assert Driver(lib).encode_tensor_map(9, 1 << 20, (128, 300, 8, 2), (256, 76800, 614400), (64, 128, 1, 1)) is None
    assert lib.calls == []


@pytest.mark.parametrize("dims, strides, box, element_strides", [
    ((128, 300, 8, 2), (256, 76800), (64, 128, 1, 1), None),  # one stride short
    ((128, 300, 8, 2), (256, 76800, 614400), (64, 128, 1), None),
    ((128, 300, 8, 2), (256, 76800, 614400), (64, 128, 1, 1), (1, 1)),
    ((), (), (), None),
])
def test_encode_tensor_map_refuses_a_rank_mismatch(dims, strides, box, element_strides):
    lib = FakeCuda()
    with pytest.raises(MaskcError, match="a tensor map of rank"):
        Driver(lib).encode_tensor_map(9, 1 << 20, dims, strides, box, element_strides)
    assert lib.encodes == []
