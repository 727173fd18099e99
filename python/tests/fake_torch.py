"""A small stand-in for the parts of torch that maskc.torch touches, so its
dispatch, argument handling and launch packing run here without torch.

Tensors are metadata only (shape, strides, dtype, device, address); SDPA,
the custom ops and the driver record their calls instead of computing.
"""
import contextlib
import enum
import sys
import types


class DType:
    def __init__(self, name, size, floating):
        self.name, self.itemsize, self.is_floating_point = name, size, floating

    def __repr__(self):
        return "torch." + self.name


bfloat16, float16, float32, float64 = (DType("bfloat16", 2, True), DType("float16", 2, True),
                                       DType("float32", 4, True), DType("float64", 8, True))
int32, int64, bool_, uint8 = DType("int32", 4, False), DType("int64", 8, False), DType("bool", 1, False), \
    DType("uint8", 1, False)
int8, int16 = DType("int8", 1, False), DType("int16", 2, False)


class Device:
    def __init__(self, s, index=None):
        self.type, _, idx = str(s).partition(":")
        self.index = index if index is not None else int(idx) if idx else (0 if self.type == "cuda" else None)

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)

    def __eq__(self, o):
        return str(self) == str(o)

    def __hash__(self):
        return hash(str(self))


_next_ptr = [1 << 20]


class Tensor:
    def __init__(self, shape, dtype=bfloat16, device="cuda:0", strides=None, ptr=None, requires_grad=False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device if isinstance(device, Device) else Device(device)
        if strides is None:
            strides, acc = [], 1
            for n in reversed(self.shape):
                strides.insert(0, acc)
                acc *= max(n, 1)
        self._strides = tuple(strides)
        if ptr is None:
            ptr = _next_ptr[0]
            _next_ptr[0] += 1 << 20
        self._ptr = ptr
        self.requires_grad = requires_grad
        self._version = 0  # torch's version counter: in-place writes bump it

    def dim(self):
        return len(self.shape)

    def stride(self, i=None):
        return self._strides if i is None else self._strides[i]

    def data_ptr(self):
        return self._ptr

    def element_size(self):
        return self.dtype.itemsize

    def is_contiguous(self):
        return self._strides == Tensor(self.shape, self.dtype, ptr=0)._strides

    def contiguous(self):
        return self if self.is_contiguous() else Tensor(self.shape, self.dtype, self.device)

    def new_empty(self, shape, dtype=None):
        return Tensor(shape, dtype or self.dtype, self.device)

    def float(self):
        return Tensor(self.shape, float32, self.device, requires_grad=self.requires_grad)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def to(self, dtype):
        return self if dtype is self.dtype else Tensor(self.shape, dtype, self.device)

    def zero_(self):
        rec.calls.append(("zero", self._ptr))
        self.value = 0
        self._version += 1
        return self

    def __getitem__(self, idx):
        """t[..., :n] (maskc.flex's slice of a padded output): a view; any
        other index is metadata only: an element reads the tensor's value."""
        if isinstance(idx, tuple) and len(idx) == 2 and idx[0] is Ellipsis and isinstance(idx[1], slice) \
                and idx[1].start is None:
            n = idx[1].stop
            rec.calls.append(("slice", self.shape, n))
            return Tensor(self.shape[:-1] + (n,), self.dtype, self.device, self._strides, self._ptr, self.requires_grad)
        return self

    def item(self):
        rec.calls.append(("item", self._ptr))
        return getattr(self, "value", 0)

    def reshape(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return Tensor(shape, self.dtype, self.device, ptr=self._ptr, requires_grad=self.requires_grad)

    def transpose(self, a, b):
        s, st = list(self.shape), list(self._strides)
        s[a], s[b], st[a], st[b] = s[b], s[a], st[b], st[a]
        return Tensor(s, self.dtype, self.device, st, self._ptr, self.requires_grad)


def pad(t, p):
    """torch.nn.functional.pad of the last dimension by (0, n) only."""
    assert len(p) == 2 and p[0] == 0, p
    rec.calls.append(("pad", t.shape, p[1]))
    return Tensor(t.shape[:-1] + (t.shape[-1] + p[1],), t.dtype, t.device, requires_grad=t.requires_grad)


def empty(n, dtype=float32, device="cuda:0"):
    return Tensor((n,) if isinstance(n, int) else n, dtype, device)


def zeros(n, dtype=float32, device="cuda:0"):
    rec.calls.append(("zeros", n))
    return empty(n, dtype, device)


def zeros_like(t):
    rec.calls.append(("zeros", t.shape))
    return Tensor(t.shape, t.dtype, t.device)


class Recorder:
    """Calls made to the fakes, in order."""

    def __init__(self):
        self.calls = []


rec = Recorder()


class CustomOp:
    def __init__(self, name, fn):
        self.name, self.fn, self.fake, self.backward = name, fn, None, None

    def register_fake(self, fn):
        self.fake = fn
        return fn

    def register_autograd(self, backward, setup_context=None):
        self.backward, self.setup = backward, setup_context

    def __call__(self, *args):
        rec.calls.append(("op", self.name, args))
        self.last = self.fn(*args)  # what the last call returned (its outputs, for setup_context)
        return self.last


def custom_op(name, mutates_args=()):
    def deco(fn):
        op = CustomOp(name, fn)
        ns, _, short = name.partition("::")
        setattr(getattr(ops, ns), short, op)
        return op
    return deco


class SDPBackend(enum.Enum):
    CUDNN_ATTENTION = 1
    FLASH_ATTENTION = 2
    EFFICIENT_ATTENTION = 3


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    rec.calls.append(("sdpa_kernel", list(backends), set_priority))
    yield


def scaled_dot_product_attention(q, k, v, is_causal=False, scale=None, enable_gqa=False):
    rec.calls.append(("sdpa", q.shape, k.shape, is_causal, scale, enable_gqa))
    return Tensor(q.shape, q.dtype, q.device)


class Stream:
    cuda_stream = 0x5eed


#: maskc's modules that import torch at the top (maskc.torch and the modules it re-exports).
TORCH_MODULES = ("torch", "api", "dispatch", "launcher", "ops")


def install(monkeypatch):
    """Puts the fake torch (and its submodules) into sys.modules."""
    rec.calls.clear()
    torch = types.ModuleType("torch")
    for n in ("bfloat16", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "Tensor", "empty", "zeros",
              "zeros_like"):
        setattr(torch, n, globals()[n])
    torch.bool = bool_
    torch.device = Device
    torch.version = types.SimpleNamespace(hip=None, cuda="13.0")
    torch.compiler = types.SimpleNamespace(is_compiling=lambda: False)
    torch.is_grad_enabled = lambda: True
    torch.library = types.SimpleNamespace(custom_op=custom_op)
    global ops
    ops = types.SimpleNamespace(maskc=types.SimpleNamespace())
    torch.ops = ops
    cuda = types.SimpleNamespace(current_device=lambda: 0, device=lambda i: contextlib.nullcontext(),
                                 get_device_capability=lambda i=0: (9, 0), current_stream=lambda d=None: Stream(),
                                 get_device_properties=lambda i=0: types.SimpleNamespace(multi_processor_count=132))
    torch.cuda = cuda
    nn = types.ModuleType("torch.nn")
    attention = types.ModuleType("torch.nn.attention")
    attention.SDPBackend, attention.sdpa_kernel = SDPBackend, sdpa_kernel
    nn.attention = attention
    nn.functional = types.SimpleNamespace(scaled_dot_product_attention=scaled_dot_product_attention, pad=pad)
    torch.nn = nn
    for name, mod in (("torch", torch), ("torch.nn", nn), ("torch.nn.attention", attention)):
        monkeypatch.setitem(sys.modules, name, mod)
    # The modules that import torch are imported afresh over this one: out of
    # sys.modules, and off the maskc package (whose attribute a later
    # `from . import NAME` would otherwise return).
    import maskc
    for name in TORCH_MODULES:
        monkeypatch.delitem(sys.modules, "maskc." + name, raising=False)
        monkeypatch.delattr(maskc, name, raising=False)
    return torch
