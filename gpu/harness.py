"""The GPU test harness of maskc's generated kernels (NVIDIA), on the package's launcher.

GPU-script tooling, not part of the wheel: gpu/check.py, bench.py,
bwd_check.py, bwd_bench.py, bwd_sanitize.py, dense_bench.py and
ported_check.py import it as `harness` (their directory), with python/ on
sys.path for the maskc package it launches through. It reads a directory
written by `go run ./cmd/genkernels -o DIR ...` or `maskc compile FILE -o
DIR`: DIR/manifest.json (hipsrc/MANIFEST.md), parsed by maskc.abi (the same
reader maskc.torch launches through), and the kernel sources it lists.
Struct layouts, grids, platforms, launch geometry and the launch sequences
(maskc.launcher.fwd_launches, maskc.abi.Manifest.bwd_launches) come from the
manifest; code objects load and kernels launch through maskc.launcher
(load_functions, launch_all) with the package's NVRTC and CUDA driver
(maskc.cuda, every call checked), into PyTorch's context, on torch tensors.
What is harness-only here: kernels compiled from a source text (tuning
variants), launches packed once and replayed, random cases from the
manifest's mask_torch / score_torch expressions (read by a small
interpreter of the expressions maskc's codegen.TorchExpr prints: no eval),
their buffers drawn by gpu/buffers.py, and the float64 references.
"""
import ast
import inspect
import json
import operator
import os
import re
import sys
import time

import torch

import buffers as _buffers
from maskc import abi as _abi
from maskc import checks as _checks
from maskc import cuda as _cuda_mod
from maskc import launcher as _launcher

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# --------------------------------------------------------------------------- libraries
def libs():
    """(maskc.cuda.NVRTC, maskc.cuda.Driver) of this process: the package
    launcher's (maskc.launcher._libs), loaded once."""
    drv, nvrtc = _launcher._libs()
    return nvrtc, drv


# --------------------------------------------------------------------------- ABI (from the manifest)
MANIFEST_VERSION = _abi.MANIFEST_VERSION  # hipsrc.ManifestVersion: the manifest schema this harness reads


class ABI:
    """The manifest's "abi" section, read by maskc.abi.Manifest: structs,
    entries (forward and backward), platforms by name."""

    def __init__(self, abi):
        self.raw = abi
        self.man = _abi.Manifest({"version": MANIFEST_VERSION, "abi": abi, "kernels": []})
        self.Shape, self.Buffers = self.man.Shape, self.man.Buffers
        self.entries = dict(self.man.entries, **self.man.bwd_entries)
        self.platforms = {p.name: p for p in self.man.platforms}
        self.block_m = self.man.block_m
        self.max_buffers = self.man.max_buffers
        self.max_seq_len = abi["max_seq_len"]

    def grid(self, entry, sizes, block_n):
        """The launch grid of a forward entry point."""
        return self.entries[entry].grid_dims(dict({"HKV": 1}, **sizes), self.block_m, block_n)

    def spec(self, entry):
        """maskc.abi.KernelSpec of one manifest kernel entry (a dict)."""
        return _abi.KernelSpec(entry, self.man)


def load_manifest(directory):
    """(ABI, [kernel entries]) of DIR/manifest.json."""
    man = json.load(open(os.path.join(directory, "manifest.json")))
    if man.get("version") != MANIFEST_VERSION:
        raise ValueError("%s: manifest version %s, this harness reads %d" % (directory, man.get("version"),
                                                                           MANIFEST_VERSION))
    return ABI(man["abi"]), man["kernels"]


def read(path):
    with open(path) as f:
        return f.read()


def device_platform():
    """The platform maskc's runtime builds for this GPU (Go's
    hipsrc.ForDevice, maskc.abi.pick_platform): the sm_90a warpgroup-MMA
    kernel on sm_90, mma.sync elsewhere; MASKC_PLATFORM=nvidia asks for
    mma.sync on sm_90 too."""
    if os.environ.get("MASKC_PLATFORM") == "nvidia":
        return "nvidia"
    return "nvidia-sm90a" if torch.cuda.get_device_capability() == (9, 0) else "nvidia"


def parse_defines(items):
    """{NAME: VALUE} from "NAME=VALUE" strings (a command line's -D list)."""
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"MASKC_\w+", name):
            raise ValueError("%r: want MASKC_NAME=VALUE" % item)
        out[name] = value
    return out


def switch_options(src, defines):
    """The -D options that set tuning switches of a kernel source: the one
    way the GPU scripts build a variant. Each NAME must be a switch a -D can
    set in src (its default under `#ifndef NAME`, or a `defined(NAME)`
    test), else ValueError: a misspelt or retired switch would otherwise
    change nothing without a word."""
    opts = []
    for name, value in sorted((defines or {}).items()):
        if not re.search(r"#ifndef %s\b|defined\(%s\)" % (name, name), src):
            raise ValueError("%s is not a tuning switch of this source (no #ifndef %s)" % (name, name))
        opts.append("-D%s=%s" % (name, value))
    return opts


def compile_source(src, name="kernel", platform=None, abi=None, defines=None):
    """NVRTC-compiles a full kernel source for this GPU as the manifest's
    platform (default device_platform()) says, with ptxas's verbose report
    and the tuning switches in defines ({NAME: VALUE}, switch_options):
    returns (cubin bytes, compile log). Needs no CUDA context (thread-safe)."""
    nvrtc, _ = libs()
    plat = abi.platforms[platform or device_platform()]
    major, minor = torch.cuda.get_device_capability()
    opts = plat.nvrtc_options("sm_%d%d" % (major, minor),
                              ["--ptxas-options=--verbose", "-lineinfo"] + switch_options(src, defines))
    return nvrtc.compile(src, name + ".cu", opts)


class Kernel:
    """One compiled generated kernel: maskc_attn_fwd (+ maskc_tile_flags),
    loaded into the calling thread's current (PyTorch's) CUDA context, with
    its launch geometry from the manifest entry for the chosen platform."""

    def __init__(self, src, entry, abi, name="kernel", compiled=None, platform=None):
        _, drv = libs()
        torch.empty(1, device="cuda")  # make torch's primary context current on this thread
        drv.ensure_context(torch.cuda.current_device())
        self.entry, self.abi, self.name = entry, abi, name
        self.spec = abi.spec(entry)
        self.platform = platform or device_platform()
        self.plat = abi.platforms[self.platform]
        launch = entry["launch"][self.platform]
        self.block_m, self.block_n = abi.block_m, launch["block_n"]
        self.threads, self.smem = launch["threads"], launch["shared_mem_bytes"]
        self.head_dim, self.dtype = entry["head_dim"], entry["dtype"]
        self.prepass = bool(entry.get("flags_entry"))
        # for reports only: the prelude's wgmma, mma.sync and (above head dim 128) wide mma.sync shapes
        mts = re.findall(r"#define MASKC_NV_MTILES (\d+)", src)
        self.mtiles = (1 if self.platform == "nvidia-sm90a" or self.head_dim > 128 else
                       int(mts[1]) if len(mts) > 1 else None)
        self.cubin, self.log = compiled if compiled is not None else compile_source(src, name, self.platform, abi)
        self.module, self.fns = _launcher.load_functions(
            self.cubin, (entry["entry"], entry.get("flags_entry"), self.spec.seg_check_entry), self.smem,
            (entry["entry"],))
        self.fwd = self.fns[entry["entry"]]
        self.flags_fn = self.fns[entry["flags_entry"]] if self.prepass else None
        self.seg_fn = self.fns.get(self.spec.seg_check_entry)
        # the kernel's status words (MANIFEST.md "Status words"), zeroed once, passed in every launch
        self.status_words = torch.zeros(abi.man.status_words, dtype=torch.int32, device="cuda")
        self.regs = drv.attribute(self.fwd, _cuda_mod.ATTR_NUM_REGS)
        self.local_bytes = drv.attribute(self.fwd, _cuda_mod.ATTR_LOCAL_SIZE_BYTES)

    def status(self):
        """Word 0's sticky bits (abi.man.status_bits) since creation or
        reset_status; synchronises."""
        return int(self.status_words[0].item()) & 0xFFFFFFFF

    def reset_status(self):
        """Zeroes the status words on the current stream."""
        self.status_words.zero_()

    def _func(self, name):
        return libs()[1].function(self.module, name)

    def _attr(self, f, attr):
        return libs()[1].attribute(f, attr)

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
        sizes = {"B": B, "H": H, "HKV": HKV, "Sq": Sq, "Skv": Skv}
        _refuse_outside_reads(self.spec, B, H, HKV, Sq, Skv, D, buffers)
        man = self.abi.man
        flags = None
        if self.prepass:
            flags = torch.empty(max(1, self.spec.flag_bytes(sizes, self.block_n)), dtype=torch.uint8, device=q.device)
        assert len(buffers) <= self.abi.max_buffers
        for t in buffers:
            assert t.is_contiguous() and 1 <= t.dim() <= self.abi.man.max_rank
        strides = {n: t.stride()[:3] for n, t in (("q", q), ("k", k), ("v", v), ("o", o))}
        sh, bufs = man.pack(self.spec, sizes, strides, scale, sink.data_ptr() if sink is not None else 0,
                            flags.data_ptr() if flags is not None else 0,
                            [(t.data_ptr(), list(t.shape)) for t in buffers], status=self.status_words.data_ptr())
        keep = [q, k, v, o, lse, sink, flags] + list(buffers)
        launches = _launcher.fwd_launches(man, self.spec, self.plat, sizes,
                                          dict(Q=q.data_ptr(), K=k.data_ptr(), V=v.data_ptr(), O=o.data_ptr(),
                                               LSE=lse.data_ptr()),
                                          sh, bufs, flags.data_ptr() if flags is not None else 0,
                                          (self.block_n, self.threads, self.smem))
        without_prepass = [ln for ln in launches if ln[0] != self.entry.get("flags_entry")]

        def run(prepass=True):
            if Sq == 0:
                return
            _launcher.launch_all(self.fns, launches if prepass else without_prepass,
                                 torch.cuda.current_stream().cuda_stream)
        run.keep = keep
        run.flags = flags
        run.shape, run.bufs = sh, bufs
        return run


# --------------------------------------------------------------------------- cases
def _refuse_outside_reads(spec, B, H, HKV, Sq, Skv, D, buffers):
    """checks.check_reads for a whole-attention launch with these buffers
    (their shapes are the extents): MaskcError before anything is launched
    when a read would fall outside its buffer."""
    sz = _checks.Sizes(B, H, HKV, Sq, Skv, D)
    _checks.check_reads(spec.reads, _checks.bound_env(sz, sz, None), [list(t.shape) for t in buffers])


class Case:
    """A mask/score with its torch definition (the reference) and its
    captured buffers."""

    def __init__(self, name, make, sink=False):
        self.name, self.make, self.sink = name, make, sink

    def build(self, B, H, HKV, Sq, Skv, device, gen):
        """Returns (buffers in MaskcBuffers order, mask_mod or None, score_mod or None)."""
        return self.make(B, H, HKV, Sq, Skv, device, gen)


TORCH_DTYPES = _buffers.DTYPES


# --------------------------------------------------------------------------- manifest expressions
# mask_torch / score_torch are PyTorch expressions that codegen.TorchExpr
# prints: names (the call's index tensors, the sizes, the buffers, torch),
# numbers and strings, arithmetic, comparisons, `x if c else y`, and/or/not,
# calls of torch functions and tensor methods, subscripts. TorchExpr reads
# them with Python's semantics, as eval would, but nothing else: no name
# outside the call's, no attribute beginning with "_", no other syntax.
_EXPR_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
                ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
                ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
                ast.LShift: operator.lshift, ast.RShift: operator.rshift}
_EXPR_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}
_EXPR_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
                 ast.Gt: operator.gt, ast.GtE: operator.ge}
# the Python builtins a tensor-free part may call (codegen's pyScalar: min(Q, KV), float('inf'), ...)
_EXPR_INDEX = (ast.Index,) if sys.version_info < (3, 9) else ()
_EXPR_BUILTINS = {f.__name__: f for f in (min, max, abs, int, float, bool, round, pow)}


class TorchExpr:
    """A manifest's mask_torch or score_torch text over params (the mod's
    arguments), parsed once; calling it with the params' values evaluates it
    in ns (the sizes, torch and the buffers by name). ValueError, with the
    column, for text outside that language."""

    def __init__(self, text, params, ns):
        self.text, self.params, self.ns = text, tuple(params), dict(_EXPR_BUILTINS, **ns)
        try:
            self.tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as e:
            raise ValueError("manifest expression %r: %s (column %s)" % (text, e.msg, e.offset))
        for node in ast.walk(self.tree):
            self._allowed(node)

    def _allowed(self, node):
        ok = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.keyword, ast.Constant,
              ast.Name, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Call, ast.Attribute,
              ast.Subscript, ast.Tuple, ast.List, ast.Slice) + _EXPR_INDEX
        bad = None
        if not isinstance(node, ok):
            bad = type(node).__name__
        elif isinstance(node, ast.operator) and type(node) not in _EXPR_BINOPS:
            bad = type(node).__name__
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            bad = "attribute " + node.attr
        elif isinstance(node, ast.keyword) and node.arg is None:
            bad = "**"
        elif isinstance(node, ast.Name) and node.id not in self.ns and node.id not in self.params:
            bad = "name " + node.id
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, type(None))):
            bad = "constant %r" % (node.value,)
        if bad:
            raise ValueError("manifest expression %r, column %d: %s is not part of a TorchExpr" %
                             (self.text, getattr(node, "col_offset", 0) + 1, bad))

    @property
    def __signature__(self):
        # FlexAttention (torch >= 2.11) counts a mod's positional parameters
        # with inspect.signature and refuses a bare *args: the expression's
        # own parameters are its signature.
        return inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                  for p in self.params])

    def __call__(self, *args):
        return self._eval(self.tree, dict(self.ns, **dict(zip(self.params, args))))

    def _eval(self, n, env):
        ev = lambda x: self._eval(x, env)  # noqa: E731
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return env[n.id]
        if isinstance(n, ast.BinOp):
            return _EXPR_BINOPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp):
            return _EXPR_UNARY[type(n.op)](ev(n.operand))
        if isinstance(n, ast.Compare):  # chained as Python chains them: a < b < c is (a < b) and (b < c)
            left = ev(n.left)
            for op, right in zip(n.ops, n.comparators):
                right = ev(right)
                res = _EXPR_COMPARE[type(op)](left, right)
                if len(n.ops) == 1 or not res:
                    return res
                left = right
            return res
        if isinstance(n, ast.BoolOp):  # Python's and/or: the deciding operand
            val = None
            for x in n.values:
                val = ev(x)
                if bool(val) == isinstance(n.op, ast.Or):
                    return val
            return val
        if isinstance(n, ast.IfExp):
            return ev(n.body) if ev(n.test) else ev(n.orelse)
        if isinstance(n, ast.Call):
            return ev(n.func)(*[ev(a) for a in n.args], **{k.arg: ev(k.value) for k in n.keywords})
        if isinstance(n, ast.Attribute):
            return getattr(ev(n.value), n.attr)
        if isinstance(n, ast.Subscript):
            return ev(n.value)[ev(n.slice)]
        if isinstance(n, ast.Tuple):
            return tuple(ev(x) for x in n.elts)
        if isinstance(n, ast.List):
            return [ev(x) for x in n.elts]
        if _EXPR_INDEX and isinstance(n, _EXPR_INDEX):  # Python 3.8 wraps a subscript's index
            return ev(n.value)
        if isinstance(n, ast.Slice):
            return slice(*(ev(x) if x is not None else None for x in (n.lower, n.upper, n.step)))
        raise ValueError("manifest expression %r: cannot evaluate %s" % (self.text, type(n).__name__))


class GeneratedCase(Case):
    """A kernel from a genkernels manifest entry: the reference is the
    manifest's mask_torch / score_torch expressions (over tensors b, h, q,
    kv, score, ints B H HKV Q KV and the buffers by name), evaluated on
    random buffer contents."""

    def __init__(self, entry):
        super().__init__(entry["name"], self._make, sink=bool(entry.get("has_sink")))
        self.entry = entry

    def _make(self, B, H, HKV, Sq, Skv, dev, gen):
        sz = _checks.Sizes(B, H, HKV, Sq, Skv, self.entry["head_dim"])
        specs = sorted(self.entry.get("buffers") or [], key=lambda b: b["slot"])
        bufs = [_buffers.random_buffer(b["dtype"], _checks.eval_dims(b["dims"], sz), bool(b.get("segments")), Skv,
                                       gen)[0].to(dev) for b in specs]
        ns = dict(sz.symbols(), torch=torch)
        ns.update({b["name"]: t for b, t in zip(specs, bufs)})
        mask = score = None
        if self.entry.get("mask_torch"):
            mask = TorchExpr(self.entry["mask_torch"], ("b", "h", "q", "kv"), ns)
        if self.entry.get("score_torch"):
            score = TorchExpr(self.entry["score_torch"], ("score", "b", "h", "q", "kv"), ns)
        return bufs, mask, score

    def covers(self, Sq, Skv):
        """Whether every buffer's declared extents reach the positions a
        mask may read at this shape (maskc.abi.BufferSpec.covers): a
        `doc: i32[KV]` read as doc[q] does not when Sq > Skv, and the
        float64 reference refuses the read as the .flex file's semantics
        do, so the shape is no valid input for that file."""
        return all(_abi.BufferSpec(b["name"], b["slot"], b["dtype"], b["dims"]).covers(Sq, Skv)
                   for b in self.entry.get("buffers") or [])


def generated_cases(directory):
    """(ABI, [(GeneratedCase, source)]) from a genkernels or maskc compile
    output directory: DIR/manifest.json and the sources it lists."""
    abi, kernels = load_manifest(directory)
    return abi, [(GeneratedCase(k), read(os.path.join(directory, k["source"]))) for k in kernels]


# --------------------------------------------------------------------------- reference
def given_case(entry, given, device, B, H, S):
    """A manifest entry's buffers at the contents `given` holds (name ->
    {"data", "dims"}, as bench_ext_buffers.py writes them), in slot order on
    device, with its mask and score as torch functions over them at B x H x
    S x S (TorchExpr of the manifest's mask_torch / score_torch; None where
    the entry has none): (buffers, mask, score)."""
    specs = sorted(entry.get("buffers") or [], key=lambda b: b["slot"])
    bufs = [torch.tensor(given[b["name"]]["data"], dtype=TORCH_DTYPES[b["dtype"]]).reshape(
        given[b["name"]]["dims"]).contiguous().to(device) for b in specs]
    ns = dict(B=B, H=H, HKV=H, Q=S, KV=S, torch=torch)
    ns.update({b["name"]: t for b, t in zip(specs, bufs)})
    mask = TorchExpr(entry["mask_torch"], ("b", "h", "q", "kv"), ns) if entry.get("mask_torch") else None
    score = TorchExpr(entry["score_torch"], ("score", "b", "h", "q", "kv"), ns) if entry.get("score_torch") else None
    return bufs, mask, score


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


def time_rounds(timed, rounds, iters=20):
    """The least median milliseconds (time_ms) of each (key, fn) of timed
    over rounds rounds, round i starting at entry i of the list (rotated),
    as {key: ms}: in a fixed order the H100 timed the same kernel up to 10%
    faster first in a case than after five other timings (run 30b), so a
    comparison in one order would measure the order."""
    best = {}
    for rd in range(max(1, rounds)):
        k = rd % len(timed) if timed else 0
        for key, fn in timed[k:] + timed[:k]:
            ms = time_ms(fn, iters=iters)
            best[key] = min(best.get(key, ms), ms)
    return best


def raise_recompile_limits(per_code, accumulated=None):
    """Raises dynamo's recompile limit to per_code (and, given, its
    accumulated limit): a benchmark compiles flex_attention once per case,
    and past the default limit (8) torch.compile silently falls back to the
    unfused eager flex_attention, which materialises the scores and times
    many times slower (run 17b's D = 256 figures, its out-of-memory at
    D = 64, S = 32768). Both spellings of each limit are set where torch
    has them."""
    cfg = torch._dynamo.config
    for k in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, k):
            setattr(cfg, k, per_code)
    if accumulated is not None:
        for k in ("accumulated_recompile_limit", "accumulated_cache_size_limit"):
            if hasattr(cfg, k):
                setattr(cfg, k, accumulated)


def time_flex(row, fwd, flops):
    """Runs fwd (a compiled FlexAttention forward) once, then times it:
    row gains flex_compile_s (the first call, compilation included), flex_ms
    (time_ms) and flex_tflops (flops / ms / 1e9). Returns the first call's
    output, the reference the benchmarks compare maskc's with."""
    t0 = time.time()
    ref = fwd()
    torch.cuda.synchronize()
    row["flex_compile_s"] = round(time.time() - t0, 1)
    row["flex_ms"] = time_ms(fwd)
    row["flex_tflops"] = round(flops / row["flex_ms"] / 1e9, 1)
    return ref


# --------------------------------------------------------------------------- backward
class BwdKernel(Kernel):
    """A kernel compiled from a backward source (NAME.bwd.cu / .bwd.hip): the
    forward's entry points plus the manifest's bwd_entries, launched in the
    order maskc.abi.Manifest.bwd_launches gives (the package's own)."""

    def __init__(self, src, entry, abi, name="kernel", compiled=None, platform=None):
        super().__init__(src, entry, abi, name, compiled, platform)
        self.bwd_fns = {e: self._func(e) for e in self.spec.bwd_entries}
        if self.spec.seg_check_entry:
            self.bwd_fns[self.spec.seg_check_entry] = self._func(self.spec.seg_check_entry)
        for e in self.spec.bwd_entries:
            setattr(self, e[len("maskc_attn_"):], self.bwd_fns[e])
        self.bwd_launch = self.spec.bwd_launch[self.plat.name]
        drv = libs()[1]
        for e in self.spec.bwd_entries:
            if abi.man.bwd_entries[e].shared_mem:
                drv.set_max_dynamic_smem(self.bwd_fns[e], self.bwd_launch.entry(e)[1])
        self.bwd_regs = self._attr(self.bwd, _cuda_mod.ATTR_NUM_REGS)
        self.bwd_local_bytes = self._attr(self.bwd, _cuda_mod.ATTR_LOCAL_SIZE_BYTES)
        # maskc_attn_bwd_ordered's, where the kernel has one (-1 where not)
        ordered = self.bwd_fns.get("maskc_attn_bwd_ordered")
        self.bwd_ordered_regs = self._attr(ordered, _cuda_mod.ATTR_NUM_REGS) if ordered else -1
        self.bwd_ordered_local_bytes = self._attr(ordered, _cuda_mod.ATTR_LOCAL_SIZE_BYTES) if ordered else -1
        self.bwd_dq_regs = self._attr(self.bwd_dq, _cuda_mod.ATTR_NUM_REGS)

    def prepare_bwd(self, q, k, v, o, lse, do, dq, dk, dv, scale, buffers=(), grad_slots=(), sink=None,
                    dlse=None, flags=None, deterministic=False, ordered=True):
        """A callable running the backward on [B, H, S, D] views: dq, dk, dv
        written; returns (dbufs {slot: fp32 tensor}, dsink or None) tensors
        that each call refills. flags: the forward's tile flags (prepass).
        ordered False: deterministic mode through maskc_attn_bwd_dq even
        where the kernel adds dQ in order (bwd_launch dq_ordered)."""
        B, H, Sq, D = q.shape
        HKV, Skv = k.shape[1], k.shape[2]
        for t in (q, k, v, o, do, dq, dk, dv):
            assert t.stride(3) == 1 and t.data_ptr() % 16 == 0 and all(s % 8 == 0 for s in t.stride()[:3])
        man = self.abi.man
        dev = q.device
        sizes = {"B": B, "H": H, "HKV": HKV, "Sq": Sq, "Skv": Skv}
        _refuse_outside_reads(self.spec, B, H, HKV, Sq, Skv, D, buffers)
        delta = torch.empty(B, H, Sq, device=dev, dtype=torch.float32)
        bl = self.bwd_launch if ordered else self.bwd_launch._replace(dq_ordered=False)  # as bwd_launches does
        acc_dims, sem_dims = bl.dq_scratch(deterministic, B, H, Sq, D)
        dq_acc = torch.empty(acc_dims, device=dev, dtype=torch.float32) if acc_dims else None
        dq_sem = torch.empty(sem_dims, device=dev, dtype=torch.int32) if sem_dims else None
        dsink = torch.empty(H, device=dev, dtype=torch.float32) if sink is not None else None
        accs, dbufs = {}, {}
        for s in grad_slots:
            accs[s] = torch.empty(buffers[s].numel(), device=dev, dtype=torch.int64)
            dbufs[s] = torch.empty(buffers[s].shape, device=dev, dtype=torch.float32)
        ptr = lambda t: t.data_ptr() if t is not None else 0
        strides = {n: t.stride()[:3] for n, t in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do), ("dq", dq),
                                                   ("dk", dk), ("dv", dv))}
        sh = man.pack_bwd(sizes, strides, scale, dict(sink=ptr(sink), tile_flags=ptr(flags), lse=ptr(lse),
                                                        dlse=ptr(dlse), delta=ptr(delta), dq_acc=ptr(dq_acc),
                                                        dq_sem=ptr(dq_sem), dsink=ptr(dsink)),
                          {s: a.data_ptr() for s, a in accs.items()})
        _, bufs = man.pack(self.spec, sizes, {n: (0, 0, 0) for n in "qkvo"}, scale, 0, 0,
                           [(t.data_ptr(), list(t.shape)) for t in buffers], status=self.status_words.data_ptr())
        ptrs = dict(O=o.data_ptr(), dO=do.data_ptr(), Q=q.data_ptr(), K=k.data_ptr(), V=v.data_ptr(),
                    dQ=dq.data_ptr(), dK=dk.data_ptr(), dV=dv.data_ptr())
        launches = man.bwd_launches(self.spec, self.plat, sizes, ptrs, sh, bufs, deterministic, dsink is not None,
                                    {s: (accs[s].data_ptr(), dbufs[s].data_ptr(), accs[s].numel()) for s in accs},
                                    ordered=ordered,
                                    maps=_launcher.tensor_maps(man, self.spec, self.plat, sh, ptrs, bwd=True))
        keep = [q, k, v, o, lse, do, dq, dk, dv, sink, dlse, flags, delta, dq_acc, dq_sem, dsink, accs, dbufs,
                list(buffers)]

        def run():
            if Sq == 0 or Skv == 0:  # nothing attends: every gradient is zero
                for t in [dq, dk, dv] + list(dbufs.values()) + ([dsink] if dsink is not None else []):
                    t.zero_()
                return dbufs, dsink
            for a in accs.values():
                a.zero_()
            _launcher.launch_all(self.bwd_fns, launches, torch.cuda.current_stream().cuda_stream)
            return dbufs, dsink
        run.keep = keep
        run.dsink, run.dbufs = dsink, dbufs

        def part(ln):
            return lambda: _launcher.launch_all(self.bwd_fns, [ln], torch.cuda.current_stream().cuda_stream)
        # each launch alone, for timing the backward's kernels one by one
        # (run() in between: a part alone leaves the scratch as the whole does not)
        run.parts = [(ln[0], part(ln)) for ln in launches]
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
