"""Argument checks for one attention call, run before anything is launched.

The checks read tensors through a small protocol (shape, stride(), device,
data_ptr(), element_size()) and a dtype_name function mapping a tensor to
maskc's element type names (bf16, f16, f32, i32, ...), so they are the same
code for torch tensors and for the test suite's fakes. Every failure is a
MaskcError naming the argument and what was expected.
"""
import ast
import os

from .diagnostics import MaskcError
from .dtypes import SEGMENTS as SEGMENT_DTYPES

__all__ = ["LAYOUTS", "MAX_SEQ_LEN", "MAX_GRID_YZ", "Sizes", "eval_dims", "check_qkv", "check_buffers",
           "bhsd_strides", "SEGMENTS_CHECK_ENV", "segments_check_enabled", "first_decrease", "check_segments",
           "eval_bound", "bound_env", "check_reads", "varlen_documents"]

#: Memory orders of q, k, v and the output: [batch, seq, head, dim] or [batch, head, seq, dim].
LAYOUTS = ("bshd", "bhsd")
#: The longest Sq and Skv a generated kernel accepts (codegen.MaxSeqLen: its
#: index arithmetic is 32-bit under this bound).
MAX_SEQ_LEN = 2 ** 31 - 257
#: B and H are grid dimensions y and z of the forward launch.
MAX_GRID_YZ = 65535
#: Setting this environment variable to 1 makes every generated-kernel
#: forward run check_segments on its buffers (one host synchronisation per
#: segments buffer); unset, buffer contents are not read.
SEGMENTS_CHECK_ENV = "MASKC_CHECK_SEGMENTS"
# Rows are read in 16-byte chunks (hipsrc/attn_fwd.h: 16-byte aligned rows).
_ROW_ALIGN_BYTES = 16


class Sizes:
    """The size symbols of one call: B, H, HKV, Q (= Sq), KV (= Skv), D."""

    __slots__ = ("B", "H", "HKV", "Q", "KV", "D")

    def __init__(self, B, H, HKV, Q, KV, D):
        self.B, self.H, self.HKV, self.Q, self.KV, self.D = B, H, HKV, Q, KV, D

    def launch_sizes(self):
        """The sizes as the kernel's launch rules and the manifest name them:
        {B, H, HKV, Sq, Skv}."""
        return dict(B=self.B, H=self.H, HKV=self.HKV, Sq=self.Q, Skv=self.KV)

    def symbols(self):
        """The names a buffer's declared extents may use."""
        return {"B": self.B, "H": self.H, "HKV": self.HKV, "Q": self.Q, "KV": self.KV}

    def __eq__(self, other):
        return isinstance(other, Sizes) and all(getattr(self, a) == getattr(other, a) for a in self.__slots__)

    def __repr__(self):
        return "Sizes(%s)" % ", ".join("%s=%d" % (a, getattr(self, a)) for a in self.__slots__)


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b}


def _eval_dim(node, env, text):
    if isinstance(node, ast.Expression):
        return _eval_dim(node.body, env, text)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise MaskcError("buffer extent %r names %s; extents may use only B, H, HKV, Q, KV and integers" %
                             (text, node.id))
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval_dim(node.operand, env, text)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _eval_dim(node.left, env, text), _eval_dim(node.right, env, text)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and b == 0:
            raise MaskcError("buffer extent %r divides by zero for %s" % (text, env))
        return _BINOPS[type(node.op)](a, b)
    raise MaskcError("buffer extent %r is not an integer expression of B, H, HKV, Q, KV" % text)


def eval_dims(dims, sizes):
    """The extents of a buffer declared with dims (.flex integer expressions,
    Python semantics: // and % floor) for these sizes."""
    env = sizes.symbols()
    out = []
    for text in dims:
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError:
            raise MaskcError("buffer extent %r is not an expression" % text)
        out.append(_eval_dim(tree, env, text))
    return out


def _dev(t):
    return str(t.device)


def bhsd_strides(t, layout):
    """The element strides of a 4-D tensor in the order (batch, head, seq, dim)."""
    s = tuple(t.stride())
    return (s[0], s[2], s[1], s[3]) if layout == "bshd" else s


def check_qkv(q, k, v, layout, head_dim, dtype, dtype_name, device_type="cuda"):
    """Checks q, k, v for a block of element type dtype and head dimension
    head_dim in layout; returns the call's Sizes. Raises MaskcError."""
    if layout not in LAYOUTS:
        raise MaskcError("layout=%r: want %s" % (layout, " or ".join(LAYOUTS)))
    named = (("q", q), ("k", k), ("v", v))
    for name, t in named:
        if len(t.shape) != 4:
            raise MaskcError("%s has %d dimensions, shape %s; want 4 (%s)" % (name, len(t.shape), tuple(t.shape),
                                                                             layout))
        if dtype_name(t) != dtype:
            raise MaskcError("%s is %s; the block computes in %s (set dtype in the .flex file to change it)" %
                             (name, dtype_name(t), dtype))
        if not _dev(t).startswith(device_type):
            raise MaskcError("%s is on %s; want a %s device" % (name, _dev(t), device_type))
    if not (_dev(q) == _dev(k) == _dev(v)):
        raise MaskcError("q, k, v are on different devices: %s, %s, %s" % (_dev(q), _dev(k), _dev(v)))

    def dims(t):
        b, x, y, d = tuple(t.shape)
        return (b, y, x, d) if layout == "bshd" else (b, x, y, d)  # (B, heads, seq, D)

    B, H, Sq, D = dims(q)
    Bk, HKV, Skv, Dk = dims(k)
    if tuple(k.shape) != tuple(v.shape):
        raise MaskcError("k has shape %s and v %s; they must be equal" % (tuple(k.shape), tuple(v.shape)))
    if D != head_dim or Dk != head_dim:
        raise MaskcError("head dimension of q is %d and of k %d; the block is built for head_dim = %d" %
                         (D, Dk, head_dim))
    if Bk != B:
        raise MaskcError("q has batch %d and k %d" % (B, Bk))
    if H < 1 or HKV < 1 or H % HKV != 0:
        raise MaskcError("q has %d heads and k %d; the query heads must be a positive multiple of the kv heads" %
                         (H, HKV))
    if B > MAX_GRID_YZ or H > MAX_GRID_YZ:
        raise MaskcError("B = %d, H = %d: a launch takes at most %d of each" % (B, H, MAX_GRID_YZ))
    if Sq > MAX_SEQ_LEN or Skv > MAX_SEQ_LEN:
        raise MaskcError("Sq = %d, Skv = %d: a generated kernel takes at most %d" % (Sq, Skv, MAX_SEQ_LEN))
    for name, t in named:
        check_rows(name, t, layout)
    return Sizes(B, H, HKV, Sq, Skv, D)


def check_rows(name, t, layout):
    """Checks that t's rows can be read as the kernels read them: last
    dimension contiguous, 16-byte aligned start, every other stride a
    multiple of 16 bytes and not negative."""
    st = bhsd_strides(t, layout)
    es = t.element_size()
    per = _ROW_ALIGN_BYTES // es
    if st[3] != 1:
        raise MaskcError("%s has stride %d along the head dimension; it must be contiguous there (call "
                         ".contiguous())" % (name, st[3]))
    if any(s < 0 or s % per for s in st[:3]):
        raise MaskcError("%s has strides %s (batch, head, seq); each must be a non-negative multiple of %d elements "
                         "(16-byte rows)" % (name, st[:3], per))
    if t.data_ptr() % _ROW_ALIGN_BYTES:
        raise MaskcError("%s starts at an address that is not 16-byte aligned (a view at an odd offset?)" % name)


def check_buffers(specs, buffers, sizes, device, dtype_name):
    """Checks the captured tensors passed as buffers ({name: tensor})
    against specs (abi.BufferSpec, in slot order) for this call's sizes:
    none missing, none unknown, exact dtypes, extents and device,
    contiguous. Returns the tensors in slot order with their extents."""
    buffers = dict(buffers or {})
    want = {s.name for s in specs}
    unknown = sorted(set(buffers) - want)
    if unknown:
        raise MaskcError("buffers %s are not read by this block (it reads: %s)" %
                         (", ".join(unknown), ", ".join(sorted(want)) or "none"))
    out = []
    for s in specs:
        if s.name not in buffers:
            raise MaskcError("buffer %s (%s%s) is missing: pass buffers={%r: tensor}" %
                             (s.name, s.dtype, list(s.dims), s.name))
        t = buffers[s.name]
        ext = eval_dims(s.dims, sizes)
        if any(e < 1 for e in ext):
            raise MaskcError("buffer %s: declared [%s] is %s for %s; extents must be positive" %
                             (s.name, ", ".join(s.dims), ext, sizes))
        if dtype_name(t) != s.dtype:
            raise MaskcError("buffer %s is %s; it is declared %s" % (s.name, dtype_name(t), s.dtype))
        if not ext and list(t.shape) != ext:
            # A 0-d declaration takes a 0-d tensor only, as every buffer
            # takes exactly its declared extents.
            raise MaskcError("buffer %s has shape %s; it is declared 0-d, a scalar tensor (%s[]): pass "
                             "torch.tensor(v) or t.reshape(()), or declare it [1] and read %s[0]" %
                             (s.name, list(t.shape), s.dtype, s.name))
        if list(t.shape) != ext:
            raise MaskcError("buffer %s has shape %s; declared [%s] is %s for %s" %
                             (s.name, list(t.shape), ", ".join(s.dims), ext, sizes))
        if str(t.device) != str(device):
            raise MaskcError("buffer %s is on %s; q is on %s" % (s.name, t.device, device))
        if not t.is_contiguous():
            raise MaskcError("buffer %s is not contiguous (call .contiguous())" % s.name)
        out.append((t, ext))
    return out


def eval_bound(b, env):
    """The value of a read's index bound (the manifest's {op, value, sym,
    args}, hipsrc.Bound) with the symbol values env: integer arithmetic,
    Python's floor division, nothing evaluated from strings."""
    op = b["op"]
    if op == "const":
        return int(b.get("value", 0))
    if op == "sym":
        return env[b["sym"]]
    vals = [eval_bound(a, env) for a in b["args"]]
    if op == "add":
        return sum(vals)
    if op == "mul":
        r = 1
        for v in vals:
            r *= v
        return r
    if op == "min":
        return min(vals)
    if op == "max":
        return max(vals)
    if op == "floordiv":
        if len(vals) != 2 or vals[1] == 0:
            raise MaskcError("read bound %r divides by zero" % (b,))
        return vals[0] // vals[1]
    raise MaskcError("read bound operation %r is unknown" % op)


def bound_env(sz, glob, frame):
    """The symbols of the read bounds for a call of local sizes sz in the
    attention of sizes glob (the mask's; = sz without a frame) and frame
    (six ints or None): B, H, HKV, Q, KV of glob, the slice's offsets q0,
    kv0, h0 and counts Sq, Skv, Sh."""
    q0, kv0, h0 = (frame[0], frame[1], frame[2]) if frame is not None else (0, 0, 0)
    return {"B": glob.B, "H": glob.H, "HKV": glob.HKV, "Q": glob.Q, "KV": glob.KV,
            "q0": q0, "kv0": kv0, "h0": h0, "Sq": sz.Q, "Skv": sz.KV, "Sh": sz.H}


def _sizes_text(env):
    s = "B=%d H=%d HKV=%d Q=%d KV=%d" % (env["B"], env["H"], env["HKV"], env["Q"], env["KV"])
    if env["q0"] or env["kv0"] or env["h0"] or env["Sq"] != env["Q"] or env["Skv"] != env["KV"] or env["Sh"] != env["H"]:
        s += " (rows %d..%d, keys %d..%d, heads %d..%d)" % (env["q0"], env["q0"] + env["Sq"] - 1, env["kv0"],
                                                         env["kv0"] + env["Skv"] - 1, env["h0"], env["h0"] + env["Sh"] - 1)
    return s


def check_reads(reads, env, extents):
    """Refuses, with a MaskcError naming the .flex read (file:line:col),
    its index range at these sizes and the declared extent, a call at
    whose sizes one of reads (the manifest's kernel reads) falls outside
    its buffer; extents: the evaluated extents per slot. Host arithmetic
    on sizes only (hipsrc.CheckRead is the same rule): a read with lo > hi
    is made by no pair that counts; an index computed from buffer values
    (value_dependent) that the bounds do not keep inside is left to the
    kernel, which returns the documented value and sets
    MASKC_STATUS_READ_OUT_OF_RANGE (status())."""
    for r in reads:
        rng = []
        skip = False
        for ix in r["index"]:
            if ix.get("lo") is None or ix.get("hi") is None:
                rng.append(None)
                continue
            lo, hi = eval_bound(ix["lo"], env), eval_bound(ix["hi"], env)
            rng.append((lo, hi))
            skip = skip or lo > hi
        if skip:
            continue
        ext = extents[r["slot"]]
        for d, ix in enumerate(r["index"]):
            n = ext[d]
            if rng[d] is not None and rng[d][0] >= 0 and rng[d][1] < n:
                continue
            if ix.get("value_dependent"):
                continue
            dim = " in dimension %d" % d if len(r["dims"]) > 1 else ""
            decl = ", ".join(r["dims"])
            if rng[d] is None:
                raise MaskcError("%s: %s reads %s outside its extents: its index%s has no bound at %s; %s is declared "
                                 "[%s] = %d" % (r["at"], r["text"], r["buffer"], dim, _sizes_text(env), r["buffer"],
                                                decl, n))
            raise MaskcError("%s: %s reads %s outside its extents: index%s %d..%d at %s, but %s is declared [%s] = %d "
                             "there (valid 0..%d)" % (r["at"], r["text"], r["buffer"], dim, rng[d][0], rng[d][1],
                                                      _sizes_text(env), r["buffer"], decl, n, n - 1))


def segments_check_enabled(environ=None):
    """Whether $MASKC_CHECK_SEGMENTS asks for check_segments on every call."""
    return (os.environ if environ is None else environ).get(SEGMENTS_CHECK_ENV, "") == "1"


def first_decrease(t):
    """The index of the first element of t (flattened) that is smaller than
    the one before it, or None. Computed on t's device; reads one scalar
    back (a host synchronisation)."""
    flat = t.reshape(-1)
    if flat.numel() < 2:
        return None
    bad = (flat[1:] < flat[:-1]).nonzero()
    if bad.numel() == 0:
        return None
    return int(bad[0]) + 1


def varlen_documents(doc, B, S):
    """(cu_seqlens int32 [n + 1], max_seqlen, contiguous) of a segments
    buffer doc ([S], shared by every batch element, or [B, S]) for a Turbo
    varlen call, as classify/PLAN.md defines them: every run of equal ids is
    one document, batches concatenated. contiguous says whether that is the
    mask as written: in every row each id occupies one run (sorted ids,
    documents in shuffled order with distinct ids); an id that recurs after
    another (padding between documents, ids reused, restarting within a
    row) makes the runs different documents where `doc[q] == doc[kv]` joins
    them, so the varlen call would compute another mask. Computed on doc's
    device; max_seqlen and contiguous are read back together (one host
    synchronisation, besides the one nonzero makes)."""
    import torch
    d = doc.reshape(1, S).expand(B, S) if doc.dim() == 1 else doc
    start = torch.ones((B, S), dtype=torch.bool, device=d.device)
    start[:, 1:] = d[:, 1:] != d[:, :-1]
    runs = start.sum(dim=1)
    srt = torch.sort(d, dim=1).values
    distinct = 1 + (srt[:, 1:] != srt[:, :-1]).sum(dim=1)
    starts = torch.nonzero(start.reshape(-1)).reshape(-1)
    cu = torch.cat([starts, torch.full((1,), B * S, dtype=starts.dtype, device=d.device)])
    maxlen, contiguous = torch.stack([(cu[1:] - cu[:-1]).max(), (runs == distinct).all().to(cu.dtype)]).tolist()
    return cu.to(torch.int32), int(maxlen), bool(contiguous)


def check_segments(specs, checked):
    """Checks the contents of every `segments` buffer among checked (what
    check_buffers returned for specs) with the rule of dsl.CheckSegments,
    which the Go runtime applies on request (AttentionKernel.CheckSegments)
    and the reference evaluator on every bind: document ids non-decreasing.
    (The other half of that rule, ids the dtype holds, check_buffers already
    ensures: the tensor's dtype is the declared i32 or i64.) This is the
    property's promise, for callers who want it kept: a generated kernel
    computes the mask as written for any ids (its segments check runs on
    the device before every launch, and status() reports segments_unsorted
    without a synchronisation in the call), binary-searching sorted ones.
    Call this once per new buffer content, or set MASKC_CHECK_SEGMENTS=1 to
    have every generated-kernel call do it (a synchronisation per call).
    Raises MaskcError naming the element."""
    for s, (t, _) in zip(specs, checked):
        if not s.segments:
            continue
        if s.dtype not in SEGMENT_DTYPES:
            raise MaskcError("segments buffer %s is %s; document ids need %s" % (s.name, s.dtype, " or ".join(SEGMENT_DTYPES)))
        i = first_decrease(t)
        if i is not None:
            flat = t.reshape(-1)
            raise MaskcError("segments buffer %s: element %d (%d) is smaller than element %d (%d): document ids "
                             "must not decrease" % (s.name, i, int(flat[i]), i - 1, int(flat[i - 1])))
