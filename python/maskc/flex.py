"""FlexAttention's API on maskc: the user's own mask_mod and score_mod.

    from maskc.torch import flex_attention, create_block_mask   # was: torch.nn.attention.flex_attention

    block_mask = create_block_mask(causal, B, H, S, S, device="cuda")
    out = flex_attention(q, k, v, score_mod=alibi, block_mask=block_mask)

maskc reads each function's source (inspect finds its file and line; the
function's `def`, or the `lambda` at that line, is found with ast) and what it
refers to: closure cells and globals. A captured tensor becomes a `buffer`
(its dtype and shape; a dim equal to exactly one of the call's B, H, Q, KV is
written with that name), an int, float or bool a `param`, a captured or global
mod is emitted too and called by name, torch's and_masks/or_masks results
become and_masks(...)/or_masks(...), and the modules torch and math are
recognised under any alias; a parameter with a default value is replaced by
that value. The result is one .flex text with one attention block (`emit`,
`Emitted.text`), compiled through maskc.cache (once per text, with
--all-kernels, so that a block planned as a Turbo call has its generated
kernel too) and run by maskc.torch's Attention, with its custom ops,
autograd, GQA and LSE. A head dim below a kernel's is zero-padded (exact).
Resolutions are memoised per function code, closure values' types, shapes
and numbers, and the call's dtype, head dim, scale and sizes, so a training
step reads no source.

A function maskc cannot read, or a mask maskc refuses, raises MaskcError at the
function's file, line and column (maskc's own diagnostics and warnings are
moved there from the emitted text). fallback="torch" runs torch's own
flex_attention for such a call instead, with a warning naming the reason
(once per reason).
"""
import ast
import builtins
import functools
import hashlib
import linecache
import math
import numbers
import os
import sys
import threading
import types
import warnings

from . import cache as _cache
from . import dtypes as _dtypes
from .diagnostics import Diagnostic, MaskcError, parse_text

__all__ = ["flex_attention", "create_block_mask", "BlockMask", "and_masks", "or_masks", "noop_mask", "emit",
           "Emitted", "AuxRequest", "AuxOutput"]

#: The attention block every emitted file declares.
BLOCK = "flex"
#: The module torch's FlexAttention lives in (its combinators and noop_mask are recognised).
_TORCH_FLEX = "torch.nn.attention.flex_attention"
#: Modules whose and_masks/or_masks are recognised: {module: the inner function's captured tuple of mods}.
#: Each one's and_mask / or_mask is the intersection / union of the mods, as written there.
_COMBINATORS = {_TORCH_FLEX: "mask_mods", "transformers.masking_utils": "mask_functions"}
#: Modules recognised under any alias, by their name in the emitted text.
_MODULES = ("torch", "math")
#: Names emitted declarations never take (sizes, language keywords).
_RESERVED = {"B", "H", "Q", "KV", "HKV", "D", "mask", "score", "param", "buffer", "attention", "let", "def",
             "return", "and_masks", "or_masks", "torch", "math", "true", "false", "int", "float", "abs", "min",
             "max", "where"}
#: maskc's dtype names of captured tensors (buffer element types). Not the
#: narrow ints (u8, i8, i16): the user's torch mod computes in the tensor's
#: type (uint8 + 200 wraps) where maskc's ints are 64-bit, so such a capture
#: is refused rather than run with other values.
_BUFFER_DTYPES = {"torch." + t: n for n, t in _dtypes.TORCH.items()
                  if not (_dtypes.KIND[n] == "int" and _dtypes.SIZE[n] < 4)}
#: The head dims maskc's generated kernels are built for (hipsrc.HeadDimList; `maskc compile` refuses
#: others with E300, whose hint test_flex.py reads to keep the two equal). A call with a smaller head dim
#: is zero-padded to the next one: q.k and the first E output columns are unchanged, exactly.
KERNEL_HEAD_DIMS = (64, 128, 256)
#: maskc's dtype setting for q, k, v.
_QKV_DTYPES = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}


class _Where:
    """A source position: file, 1-based line, 1-based column."""

    __slots__ = ("file", "line", "col")

    def __init__(self, file, line, col=1):
        self.file, self.line, self.col = file, line, col

    def __str__(self):
        return "%s:%d:%d" % (self.file, self.line, self.col)


def _refuse(where, what, hint=""):
    """A MaskcError at where (a _Where or None) saying what maskc cannot read."""
    if where is None:
        return MaskcError("maskc cannot read %s%s" % (what, ("\n  = hint: " + hint) if hint else ""))
    d = Diagnostic(where.file, where.line, where.col, "P001", "error", what, hint)
    return MaskcError("maskc cannot read the function at %s" % where, [d])


def _fn_where(f):
    code = getattr(f, "__code__", None)
    if code is None:
        return None
    return _Where(code.co_filename, code.co_firstlineno)


# --------------------------------------------------------------------------- combinators

def noop_mask(b, h, q_idx, kv_idx):
    """The mask that keeps every pair (FlexAttention's noop_mask)."""
    return q_idx >= 0


def _combine(kind, mods):
    if not all(callable(m) for m in mods):
        raise MaskcError("%s takes mask_mods; got %s" % (kind, ", ".join(type(m).__name__ for m in mods)))

    def combined(b, h, q_idx, kv_idx):
        out = None
        for m in mods:
            r = m(b, h, q_idx, kv_idx)
            out = r if out is None else (out & r if kind == "and_masks" else out | r)
        return out if out is not None else (q_idx >= 0 if kind == "and_masks" else q_idx < 0)
    combined._maskc_combine = (kind, tuple(mods))
    combined.__name__ = kind
    return combined


def and_masks(*mask_mods):
    """The mask keeping a pair that every one of mask_mods keeps
    (FlexAttention's and_masks)."""
    return _combine("and_masks", mask_mods)


def or_masks(*mask_mods):
    """The mask keeping a pair that any one of mask_mods keeps
    (FlexAttention's or_masks)."""
    return _combine("or_masks", mask_mods)


def _combination(f):
    """("and_masks" | "or_masks", mods) when f is a combination made by this
    module's, torch's or transformers' and_masks/or_masks, else None."""
    got = getattr(f, "_maskc_combine", None)
    if got is not None:
        return got
    code = getattr(f, "__code__", None)
    cell = _COMBINATORS.get(getattr(f, "__module__", None))
    if code is not None and cell is not None and code.co_name in ("and_mask", "or_mask") \
            and cell in code.co_freevars and f.__closure__:
        mods = f.__closure__[code.co_freevars.index(cell)].cell_contents
        if isinstance(mods, (tuple, list)) and all(callable(m) for m in mods):
            return ("and_masks" if code.co_name == "and_mask" else "or_masks", tuple(mods))
    return None


def _is_noop(f, kind):
    """Whether f is FlexAttention's (or this module's) identity for its kind."""
    if f is None:
        return True
    if f is noop_mask:
        return kind == "mask"
    name = {"mask": "noop_mask", "score": "_identity"}[kind]
    return getattr(f, "__module__", None) == _TORCH_FLEX and getattr(f, "__name__", None) == name


# --------------------------------------------------------------------------- reading source

_parsed = {}
_parsed_lock = threading.Lock()


def _file_ast(filename, where):
    """(lines, tree) of a source file, parsed once per file contents."""
    lines = linecache.getlines(filename)
    if not lines:
        raise _refuse(where, "the source of this function is not available (defined in %s, which has no source "
                             "file)" % filename, "define mods in a .py file, or pass the .flex text to maskc.torch.load")
    text = "".join(lines)
    key = (filename, hashlib.sha256(text.encode()).hexdigest())
    with _parsed_lock:
        got = _parsed.get(key)
    if got is None:
        try:
            tree = ast.parse(text, filename)
        except SyntaxError as e:
            raise _refuse(_Where(filename, e.lineno or 1, e.offset or 1), "the file does not parse: %s" % e.msg)
        got = (lines, tree)
        with _parsed_lock:
            _parsed[key] = got
    return got


def _find_node(f):
    """(node, lines) of f's `def` or `lambda` in its file's AST."""
    code = f.__code__
    where = _fn_where(f)
    lines, tree = _file_ast(code.co_filename, where)
    params = list(code.co_varnames[:code.co_argcount])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if code.co_firstlineno in (node.lineno, first):
                found.append(node)
        elif isinstance(node, ast.Lambda) and code.co_name == "<lambda>" and node.lineno == code.co_firstlineno:
            if [a.arg for a in node.args.posonlyargs + node.args.args] == params:
                found.append(node)
    if not found:
        raise _refuse(where, "no `def %s` or lambda at this line in the file as it is now (was the file edited after "
                             "the function was defined?)" % code.co_name)
    if len(found) > 1:
        raise _refuse(where, "%d lambdas with parameters (%s) on this line; maskc cannot tell which one this is" %
                      (len(found), ", ".join(params)), "write one of them as a def")
    return found[0], lines


def _defaulted(node):
    """{parameter name: ("default", i) | ("kwdefault", name)} of a def or
    lambda node's parameters that have default values (where the function's
    __defaults__ / __kwdefaults__ hold them)."""
    a = node.args
    pos = a.posonlyargs + a.args
    out = {}
    if a.defaults:
        for i, x in enumerate(pos[len(pos) - len(a.defaults):]):
            out[x.arg] = ("default", i)
    for x, d in zip(a.kwonlyargs, a.kw_defaults):
        if d is not None:
            out[x.arg] = ("kwdefault", x.arg)
    return out


def _partial_bound(node, part, where):
    """{parameter name: ("parg", i) | ("pkw", name)} of the parameters of
    def node that functools.partial part binds (positional arguments to the
    leading parameters, keywords by name), as Python binds them. One bound
    by name before a parameter FlexAttention's positional arguments fill
    would get two values, which Python refuses: so does this."""
    a = node.args
    pos = [x.arg for x in a.posonlyargs + a.args]
    kwonly = [x.arg for x in a.kwonlyargs]
    fname = getattr(node, "name", "the lambda")
    if len(part.args) > len(pos):
        raise _refuse(where, "functools.partial binds %d arguments by position; `%s` takes %d" % (
            len(part.args), fname, len(pos)))
    out = {p: ("parg", i) for i, p in enumerate(pos[:len(part.args)])}
    for k in part.keywords:
        if k not in pos and k not in kwonly:
            raise _refuse(where, "functools.partial binds %s, which `%s` has no parameter of" % (k, fname))
        if k in out:
            raise _refuse(where, "functools.partial binds %s twice" % k)
        out[k] = ("pkw", k)
    free = [p for p in pos if p not in out]
    for p in pos[len(part.args):]:
        if p in out and free and pos.index(p) < pos.index(free[-1]):
            raise _refuse(where, "functools.partial binds %s by name, but FlexAttention's arguments fill it by "
                                 "position" % p, "bind by name only the parameters after (b, h, q_idx, kv_idx)")
    return out


def _names(node, defaulted=()):
    """(free names in first-use order with each use's (line, col), locally
    bound names) of a def or lambda node; parameters named in defaulted
    (their default values stand for them) count as free."""
    bound = set()
    args = node.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None and a.arg not in defaulted:
            bound.add(a.arg)
    body = node.body if isinstance(node.body, list) else [node.body]
    uses = []
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name):
                if isinstance(n.ctx, ast.Load):
                    uses.append(n)
                else:
                    bound.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if not isinstance(n, ast.Lambda):
                    bound.add(n.name)
                a = n.args
                for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
                    if x is not None:
                        bound.add(x.arg)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for al in n.names:
                    bound.add((al.asname or al.name).split(".")[0])
    free = {}
    for n in uses:
        if n.id not in bound:
            free.setdefault(n.id, []).append((n.lineno, n.col_offset, n.end_col_offset))
    return free, bound


def _lookup(f, name):
    """(found, value) of a free name of f: its closure cell, else its
    globals, else builtins."""
    code = f.__code__
    if name in code.co_freevars:
        cell = f.__closure__[code.co_freevars.index(name)]
        try:
            return True, cell.cell_contents
        except ValueError:
            return False, None
    g = f.__globals__
    if name in g:
        return True, g[name]
    b = g.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else vars(b)
    if name in b:
        return True, _BUILTIN
    return False, None


_BUILTIN = object()


def _torch():
    return sys.modules.get("torch")


def _is_tensor(v):
    t = _torch()
    return t is not None and isinstance(v, t.Tensor)


def _qualified(v):
    """"torch.NAME" or "math.NAME" when v is that module attribute, else None."""
    name = getattr(v, "__name__", None)
    if not isinstance(name, str):
        return None
    for mod in _MODULES:
        m = sys.modules.get(mod)
        if m is not None and getattr(m, name, None) is v:
            return "%s.%s" % (mod, name)
    return None


# --------------------------------------------------------------------------- emitting

class Emitted:
    """A .flex text for one call: text, the attention block's name, the
    buffers ([(name, path)]: where each tensor is found, _walk)
    and, per line of text, the user's (file, line, column shift) it came from
    (None for lines maskc wrote)."""

    def __init__(self, text, buffers, lines):
        self.text, self.buffers, self.lines = text, buffers, lines
        self.block = BLOCK

    def map_diagnostic(self, d, path):
        """d with its position moved from the emitted file at path to the
        user's source where the line came from."""
        if os.path.abspath(d.file) != os.path.abspath(path) or not 1 <= d.line <= len(self.lines):
            return d
        origin = self.lines[d.line - 1]
        if origin is None:
            return d
        file, line, shift = origin
        col = max(1, d.column + shift(d.column))
        return Diagnostic(file, line, col, d.code, d.severity, d.message, d.hint)


class _Emitter:
    def __init__(self, sizes, avoid=()):
        self.sizes = sizes  # {"B": .., "H": .., "Q": .., "KV": ..}
        self.decls = []     # [(text line, origin)]
        self.defs = []      # [(text line, origin)]
        self.used = set(_RESERVED) | set(avoid)
        self.decl_names = set()  # params and buffers declared
        self.arg_names = set()   # parameters of the emitted functions (a param of the same name would be shadowed)
        self.funcs = {}     # id(function) -> emitted name
        self.tensors = {}   # id(tensor) -> buffer name
        self.scalars = {}   # (name, type, value) -> param name
        self.buffers = []   # [(name, path)]
        self.keep = []      # objects whose ids are keys above

    def fresh(self, name):
        base = name if name.isidentifier() and not name.startswith("<") else "mod"
        n, i = base, 1
        while n in self.used:
            n, i = "%s_%d" % (base, i), i + 1
        self.used.add(n)
        return n

    # ---- values

    def dims(self, shape):
        out = []
        for d in shape:
            hits = [n for n in ("B", "H", "Q", "KV") if self.sizes.get(n) == d]
            if hits == ["Q", "KV"]:
                hits = ["KV"]
            out.append(hits[0] if len(hits) == 1 else str(int(d)))
        return out

    def buffer(self, name, t, path, where):
        key = id(t)
        if key in self.tensors:
            return self.tensors[key]
        dt = _BUFFER_DTYPES.get(str(t.dtype))
        if dt is None:
            raise _refuse(where, "captured tensor `%s` is %s; a maskc buffer is one of %s" %
                          (name, t.dtype, ", ".join(sorted(_BUFFER_DTYPES))))
        shape = tuple(t.shape)
        n = self.fresh(name)
        self.decl_names.add(n)
        # A 0-d tensor (torch.tensor(5)) is a 0-d buffer, read by its name.
        self.decls.append(("buffer %s: %s[%s]" % (n, dt, ", ".join(self.dims(shape))), None))
        self.tensors[key] = n
        self.keep.append(t)
        self.buffers.append((n, path))
        return n

    def scalar(self, name, v, where):
        if isinstance(v, float) and not math.isfinite(v):
            if v != v:
                raise _refuse(where, "captured `%s` is NaN" % name)
            return '(float("inf"))' if v > 0 else '(-float("inf"))'
        key = (name, type(v), v)
        if key not in self.scalars:
            n = self.fresh(name)
            self.decl_names.add(n)
            text = ("true" if v else "false") if isinstance(v, bool) else repr(v)
            self.decls.append(("param %s = %s" % (n, text), None))
            self.scalars[key] = n
        return self.scalars[key]

    def value(self, f, name, v, where, path, step=None):
        """The text a free name of f is replaced with (step: where f holds
        it, for _walk; default its closure cell or global)."""
        if v is _BUILTIN:
            return name
        if isinstance(v, types.ModuleType):
            if v.__name__ in _MODULES:
                return v.__name__
            raise _refuse(where, "`%s` is the module %s; a mod may use torch and math" % (name, v.__name__))
        if isinstance(v, (bool, int, float)):
            return self.scalar(name, v, where)
        if type(v).__name__ in ("bool_", "bool8") and hasattr(v, "item"):  # numpy's bool
            return self.scalar(name, bool(v), where)
        if isinstance(v, numbers.Integral):  # numpy ints and the like
            return self.scalar(name, int(v), where)
        if isinstance(v, numbers.Real):
            return self.scalar(name, float(v), where)
        if type(v).__name__.lower() == "dtype" and str(v).startswith("torch."):  # a captured torch.float32, say
            return str(v)
        if v is None:
            return "None"
        if isinstance(v, str):
            return repr(v)
        if isinstance(v, tuple) and all(isinstance(x, (bool, int, float)) for x in v):
            return "(%s)" % "".join(repr(x) + ", " for x in v)
        code = f.__code__
        if step is None:
            step = ("cell", code.co_freevars.index(name)) if name in code.co_freevars else ("global", name)
        if _is_tensor(v):
            return self.buffer(name, v, path + (step,), where)
        q = _qualified(v)
        if q is not None:
            return q
        if callable(v):
            return self.mod(v, None, where, path + (step,))
        raise _refuse(where, "`%s` is a %s; a mod may capture tensors, ints, floats, bools, mods and the torch and "
                             "math modules" % (name, type(v).__name__))

    # ---- functions

    def mod(self, f, kind, where=None, path=None):
        """The expression naming mod f (emitting its declaration first); path:
        how f is reached from the call's mods (_walk)."""
        path = path if path is not None else (kind,)
        comb = _combination(f)
        if comb is not None:
            kind_name, mods = comb
            parts = [self.mod(m, "mask", where, path + (("comb", i),)) for i, m in enumerate(mods)]
            if not parts:
                raise _refuse(where, "%s() of no mask_mods" % kind_name)
            if kind is not None:
                return "%s(%s)" % (kind_name, ", ".join(parts))
            # called from inside another function: an ordinary mask of the parts
            n = self.fresh(kind_name.rstrip("s"))
            op = " & " if kind_name == "and_masks" else " | "
            self.defs.append(("def %s(b, h, q_idx, kv_idx):" % n, None))
            self.defs.append(("    return " + op.join("%s(b, h, q_idx, kv_idx)" % p for p in parts), None))
            self.defs.append(("", None))
            return n
        if id(f) in self.funcs:
            return self.funcs[id(f)]
        # functools.partial(fn, *args, **kwargs) of a def: its bound
        # parameters stand in its body like defaults (_partial_bound).
        part, ppath = None, None
        if isinstance(f, functools.partial) and isinstance(f.func, types.FunctionType):
            part, ppath, f, path = f, path, f.func, path + (("pfunc", 0),)
        if not isinstance(f, types.FunctionType):
            if isinstance(f, types.MethodType) or hasattr(f, "func"):
                what = "a bound method" if isinstance(f, types.MethodType) else "a functools.partial of a %s" % type(
                    f.func).__name__
            else:
                what = "a %s object" % type(f).__name__
            raise _refuse(where or _fn_where(f), "%s: maskc reads mods written as a def or a lambda" % what,
                          "pass a plain function (a factory's inner def is fine), or functools.partial of one")
        node, lines = _find_node(f)
        fw = _fn_where(f)
        name = self.fresh(f.__name__ if f.__name__ != "<lambda>" else "lambda_mod")
        self.funcs[id(part if part is not None else f)] = name
        self.keep.append(part if part is not None else f)
        a = node.args
        defaulted = _defaulted(node)
        if part is not None:
            defaulted.update(_partial_bound(node, part, where or fw))
        if a.vararg or a.kwarg or any(d is None and x.arg not in defaulted for x, d in zip(a.kwonlyargs, a.kw_defaults)):
            raise _refuse(fw, "`%s` takes *args, **kwargs or a keyword-only parameter without a default; a mod takes "
                              "(b, h, q_idx, kv_idx) or (score, b, h, q_idx, kv_idx)" % f.__name__)
        self.arg_names.update(x.arg for x in a.posonlyargs + a.args if x.arg not in defaulted)
        free, _ = _names(node, defaulted)
        subs = {}  # (line, col) -> (end col, text)
        for n, uses in free.items():
            w = _Where(f.__code__.co_filename, uses[0][0], uses[0][1] + 1)
            step = defaulted.get(n)
            vpath = path
            if step is not None and step[0] in ("parg", "pkw"):  # bound by the partial: a step from it
                found, v, vpath = True, _step(part, step), ppath
            elif step is not None:  # a parameter with a default value: FlexAttention never passes it
                found, v = True, _step(f, step)
            else:
                found, v = _lookup(f, n)
            if not found:
                raise _refuse(w, "`%s` is not defined where this function runs (no closure cell, global or builtin "
                                 "of that name)" % n)
            text = self.value(f, n, v, w, vpath, step)
            for line, col, end in uses:
                if text != n:
                    subs[(line, col)] = (end, text)
        self.defs.extend(self.render(node, lines, name, subs, fw, defaulted))
        self.defs.append(("", None))
        return name

    def render(self, node, lines, name, subs, fw, defaulted=()):
        """The emitted lines of a def or lambda node, renamed to name, with
        the substitutions applied; each with its origin. Parameters with
        defaults (defaulted) leave the signature: their values stand in the
        body."""
        file = fw.file
        out = []
        if defaulted and not isinstance(node, ast.Lambda):
            return self.render_body(node, lines, name, subs, file, defaulted)
        if isinstance(node, ast.Lambda):
            args = [a.arg for a in node.args.posonlyargs + node.args.args if a.arg not in defaulted]
            out.append(("def %s(%s):" % (name, ", ".join(args)), (file, node.lineno, lambda c: 0)))
            body = node.body
            first, last = body.lineno, body.end_lineno
            for ln in range(first, last + 1):
                src = lines[ln - 1].rstrip("\n")
                start = body.col_offset if ln == first else 0
                stop = body.end_col_offset if ln == last else len(src.encode())
                text, shift = self.line(src, ln, start, stop, subs)
                if ln == first:
                    text, lead = "    return (" + text, len("    return (") - start
                else:
                    lead = 0
                if ln == last:
                    text += ")"
                out.append((text, (file, ln, _shifter(shift, lead))))
            return out
        first = node.lineno
        for ln, text, shift, cut in self.copied_lines(node, lines, first, subs):
            if ln == first:  # rename the def itself
                pre = "async def " if text.startswith("async def ") else "def "
                rest = text[len(pre):]
                old = node.name
                if rest.startswith(old):
                    text = pre + name + rest[len(old):]
                    shift = [(len(pre), len(name) - len(old))] + shift
            out.append((text, (file, ln, _shifter(shift, -cut))))
        return out

    def render_body(self, node, lines, name, subs, file, defaulted):
        """A def whose signature is rewritten without its defaulted
        parameters: a new header, then the body's lines as they are."""
        args = [a.arg for a in node.args.posonlyargs + node.args.args if a.arg not in defaulted]
        out = [("def %s(%s):" % (name, ", ".join(args)), (file, node.lineno, lambda c: 0))]
        first = node.body[0]
        start_line = first.lineno
        if first.lineno == node.lineno:  # def f(...): return x
            src = lines[first.lineno - 1].rstrip("\n")
            stop = node.end_col_offset if node.end_lineno == first.lineno else len(src.encode())
            text, shift = self.line(src, first.lineno, first.col_offset, stop, subs)
            out.append(("    " + text, (file, first.lineno, _shifter(shift, 4 - first.col_offset))))
            start_line += 1
        else:  # comments between the signature and the first statement are dropped with the signature
            start_line = min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])])
        for ln, text, shift, cut in self.copied_lines(node, lines, start_line, subs):
            out.append((text, (file, ln, _shifter(shift, -cut))))
        return out

    def copied_lines(self, node, lines, start_line, subs):
        """(line number, text, shifts, cut) of the def node's lines from
        start_line to its last: each dedented by the def's indent, the last
        cut where the def ends, substitutions made (self.line)."""
        for ln in range(start_line, node.end_lineno + 1):
            src = lines[ln - 1].rstrip("\n")
            raw = src.encode()
            cut = min(node.col_offset, len(raw) - len(raw.lstrip(b" \t")))
            stop = node.end_col_offset if ln == node.end_lineno else len(raw)
            text, shift = self.line(src, ln, cut, stop, subs)
            yield ln, text, shift, cut

    def line(self, src, ln, start, stop, subs):
        """(text of src's bytes start..stop with substitutions on line ln,
        [(emitted column where a substitution starts, growth)])."""
        raw = src.encode()
        cols = sorted((c, e, t) for (l, c), (e, t) in subs.items() if l == ln and start <= c < stop)
        parts, pos, shift = [], start, []
        width = 0
        for c, e, t in cols:
            seg = raw[pos:c].decode()
            parts.append(seg)
            width += len(seg)
            parts.append(t)
            shift.append((width, len(t) - (e - c)))
            width += len(t)
            pos = e
        parts.append(raw[pos:stop].decode())
        return "".join(parts), shift

    def text(self, mask_expr, score_expr, settings):
        lines = ["# written by maskc.torch.flex_attention from Python mods; the source lines name their origin"]
        origins = [None]
        for t, o in self.decls:
            lines.append(t)
            origins.append(o)
        if self.decls:
            lines.append("")
            origins.append(None)
        for t, o in self.defs:
            lines.append(t)
            origins.append(o)
        lines.append("attention %s {" % BLOCK)
        origins.append(None)
        for k, v in ([("mask", mask_expr)] if mask_expr else []) + ([("score", score_expr)] if score_expr else []) \
                + settings:
            lines.append("    %s = %s" % (k, v))
            origins.append(None)
        lines.append("}")
        origins.append(None)
        return "\n".join(lines) + "\n", origins


def _shifter(shift, lead):
    """The function from an emitted column (1-based) to the change that gives
    the original column: minus the growth of substitutions before it, minus
    the emitted prefix (lead)."""
    def back(col):
        c0 = col - 1
        delta = 0
        for at, grow in shift:
            if at < c0:
                delta += grow
        return -delta - lead
    return back


def emit(mask_mod=None, score_mod=None, sizes=None, dtype="bf16", head_dim=None, scale=None, layout="bhsd"):
    """The Emitted .flex text of one attention with these mods (Python
    functions, or None) for a call of sizes {"B", "H", "Q", "KV"}, q's
    dtype setting (bf16 or fp16), head_dim and scale (None for
    1/sqrt(head_dim)). Raises MaskcError at the function's source where
    maskc cannot read a function or what it captures."""
    avoid = set()
    for _ in range(4):  # a param named like a later function's parameter: declared again under another name
        em = _Emitter(dict(sizes or {}), avoid)
        mask_expr = None if _is_noop(mask_mod, "mask") else em.mod(mask_mod, "mask")
        score_expr = None if _is_noop(score_mod, "score") else em.mod(score_mod, "score")
        clash = em.decl_names & em.arg_names
        if not clash:
            break
        avoid |= clash
    settings = [("layout", layout), ("dtype", dtype)]
    if head_dim is not None:
        settings.append(("head_dim", str(int(head_dim))))
    if scale is not None:
        s = float(scale)
        if not (s > 0 and math.isfinite(s)):
            raise MaskcError("scale=%r: maskc takes a positive finite softmax scale" % (scale,))
        settings.append(("scale", repr(s)))
    text, origins = em.text(mask_expr, score_expr, settings)
    return Emitted(text, em.buffers, origins)


# --------------------------------------------------------------------------- fingerprints

def _fingerprint(v, memo=None, depth=0):
    """A hashable description of what emit reads of v: a function's code and
    the fingerprints of its closure cells and of the globals its code names,
    tensors' dtype and shape, scalars' type and value. A function or tensor
    met again is ("ref", n), so equal fingerprints mean the same sharing
    (emit declares a shared function or tensor once)."""
    memo = memo if memo is not None else {}
    if v is None or isinstance(v, (bool, int, float, str, numbers.Number)):
        return (type(v).__name__, v)
    if type(v).__name__.lower() == "dtype":
        return ("dtype", str(v))
    if isinstance(v, types.ModuleType):
        return ("module", v.__name__)
    if isinstance(v, tuple):
        return ("tuple",) + tuple(_fingerprint(x, memo, depth + 1) for x in v)
    if id(v) in memo:
        return ("ref", memo[id(v)][0])
    memo[id(v)] = (len(memo), v)  # v is kept alive while memo is
    if _is_tensor(v):
        return ("tensor", str(v.dtype), tuple(v.shape))
    comb = _combination(v) if callable(v) else None
    if comb is not None:
        return ("comb", comb[0]) + tuple(_fingerprint(m, memo, depth + 1) for m in comb[1])
    if isinstance(v, functools.partial):
        return ("partial", _fingerprint(v.func, memo, depth + 1), _fingerprint(tuple(v.args), memo, depth + 1),
                tuple((k, _fingerprint(x, memo, depth + 1)) for k, x in sorted(v.keywords.items())))
    if isinstance(v, types.FunctionType) and depth < 64:
        code = v.__code__
        cells = []
        for c in v.__closure__ or ():
            try:
                cells.append(_fingerprint(c.cell_contents, memo, depth + 1))
            except ValueError:
                cells.append(("empty",))
        g = v.__globals__
        globs = tuple((n, _fingerprint(g[n], memo, depth + 1)) for n in _code_names(code) if n in g)
        defaults = _fingerprint(tuple(v.__defaults__ or ()), memo, depth + 1)
        kw = tuple((n, _fingerprint(x, memo, depth + 1)) for n, x in sorted((v.__kwdefaults__ or {}).items()))
        return ("fn", code, tuple(cells), globs, defaults, kw)
    q = _qualified(v)
    if q is not None:
        return ("qualified", q)
    return ("obj", type(v).__name__, id(v))


def _walk(roots, path):
    """The object at path (Emitter paths: a root name, then closure cells,
    globals and combination members) from roots {"mask": .., "score": ..}."""
    v = roots[path[0]]
    for step in path[1:]:
        v = _step(v, step)
    return v


def _step(v, step):
    """The object one Emitter path step (kind, x) from v: a closure cell, a
    global, a default (of a parameter, by position or keyword-only), what a
    functools.partial binds or wraps, or a combination member."""
    kind, x = step
    if kind == "cell":
        return v.__closure__[x].cell_contents
    if kind == "global":
        return v.__globals__[x]
    if kind == "default":
        return v.__defaults__[x]
    if kind == "kwdefault":
        return v.__kwdefaults__[x]
    if kind == "pfunc":
        return v.func
    if kind == "parg":
        return v.args[x]
    if kind == "pkw":
        return v.keywords[x]
    return _combination(v)[1][x]


def _code_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return sorted(names)


# --------------------------------------------------------------------------- BlockMask

class _NotBuilt(MaskcError, AttributeError):
    """Raised for the parts of torch's BlockMask that maskc never builds."""


class BlockMask:
    """What maskc.torch.create_block_mask returns: the mask_mod and the sizes,
    no block tensors (maskc's kernels derive block sparsity from the mask's
    expression). Reads like torch's BlockMask for seq_lengths, shape,
    mask_mod, BLOCK_SIZE and repr; kv_num_blocks and the other block tensors
    raise (to_torch() builds torch's own BlockMask when one is needed)."""

    _BLOCK_TENSORS = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks",
                      "q_indices", "full_q_num_blocks", "full_q_indices")

    def __init__(self, mask_mod, B, H, Q_LEN, KV_LEN, device="cuda", BLOCK_SIZE=128):
        self.mask_mod = mask_mod if mask_mod is not None else noop_mask
        self.B, self.H = B, H
        self.seq_lengths = (int(Q_LEN), int(KV_LEN))
        self.device = device
        self.BLOCK_SIZE = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
        self._torch_mask = None
        self._tile_maps = {}  # the pre-pass's tile maps of the calls given this mask (Attention._cached_tile_map)

    @property
    def shape(self):
        """(B, H, Q_LEN, KV_LEN), with 1 for a B or H of None (broadcast)."""
        return (self.B if self.B is not None else 1, self.H if self.H is not None else 1) + self.seq_lengths

    def __getattr__(self, name):
        if name in BlockMask._BLOCK_TENSORS or name in ("sparsity", "to_dense", "as_tuple"):
            raise _NotBuilt("BlockMask.%s: maskc.torch.create_block_mask builds no block tensors (its kernels derive "
                            "block sparsity from the mask's expression); call .to_torch() for torch's BlockMask, "
                            "or `maskc classify --json --shape B,H,S,D` for maskc's tile counts" % name)
        raise AttributeError(name)

    def to(self, device):
        """The same BlockMask for device (it holds no tensors to move)."""
        bm = BlockMask(self.mask_mod, self.B, self.H, self.seq_lengths[0], self.seq_lengths[1], device,
                       self.BLOCK_SIZE)
        return bm

    def to_string(self, *args, **kwargs):
        """A one-line description (torch's draws the blocks; maskc builds none)."""
        return repr(self)

    def __repr__(self):
        name = getattr(self.mask_mod, "__name__", type(self.mask_mod).__name__)
        return "BlockMask(shape=%s, mask_mod=%s, maskc: block sparsity from the mask's expression)" % (self.shape, name)

    __str__ = __repr__

    def to_torch(self):
        """torch's own BlockMask for the same mask_mod and sizes (built once)."""
        if self._torch_mask is None:
            from torch.nn.attention import flex_attention as tfa
            self._torch_mask = tfa.create_block_mask(self.mask_mod, self.B, self.H, self.seq_lengths[0],
                                                     self.seq_lengths[1], device=self.device,
                                                     BLOCK_SIZE=self.BLOCK_SIZE)
        return self._torch_mask


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device="cuda", BLOCK_SIZE=128, _compile=False):
    """FlexAttention's create_block_mask for maskc: a BlockMask carrying
    mask_mod and the sizes, built in O(1) (maskc reads mask_mod when
    flex_attention first runs with it)."""
    if mask_mod is not None and not callable(mask_mod):
        raise MaskcError("create_block_mask: mask_mod is a %s, not a function" % type(mask_mod).__name__)
    return BlockMask(mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE)


# --------------------------------------------------------------------------- flex_attention

class AuxRequest:
    """FlexAttention's AuxRequest: which auxiliary outputs to return (maskc
    gives lse; max_scores is refused)."""

    def __init__(self, lse=False, max_scores=False):
        self.lse, self.max_scores = lse, max_scores


class AuxOutput:
    """FlexAttention's AuxOutput: lse (float32 [B, H, L], natural log) and
    max_scores (always None from maskc)."""

    def __init__(self, lse=None, max_scores=None):
        self.lse, self.max_scores = lse, max_scores


class _Resolved:
    """A compiled call shape: the Attention and how to collect its buffers."""

    def __init__(self, attn, emitted, path):
        self.attn, self.emitted, self.path = attn, emitted, path

    def buffer_values(self, mask_mod, score_mod):
        """{buffer name: tensor} read from these mods now (a closure of the
        same code and layout captures its own tensors)."""
        roots = {"mask": mask_mod, "score": score_mod}
        out = {}
        for name, path in self.emitted.buffers:
            t = _walk(roots, path)
            out[name] = t.contiguous()  # a copy (differentiable) only when strided
        return out


_resolved = {}
_programs = {}
_resolve_lock = threading.Lock()


def _flex_path(text):
    """The emitted text's file under the cache root (written atomically),
    the root held to the cache directory rule first (cache.open_root), and
    a file already there used only when it holds exactly this text."""
    h = hashlib.sha256(text.encode()).hexdigest()
    d = os.path.join(_cache.open_root(), "flex-py")
    os.makedirs(d, mode=0o700, exist_ok=True)
    path = os.path.join(d, h[:32] + ".flex")
    try:
        same = _cache._read_source(path) == text.encode()
    except MaskcError:
        same = False
    if not same:
        _cache.write_atomic(path, text.encode())
    return path


def _compile(em):
    from . import torch as _mt
    path = _flex_path(em.text)
    with _resolve_lock:
        prog = _programs.get(em.text)
    if prog is None:
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                entry = _cache.compile_flex(path, all_kernels=True)
            for w in seen:  # maskc's warnings, at the user's source lines
                ds = parse_text(str(w.message))
                msg = "\n".join(str(em.map_diagnostic(d, path)) for d in ds) if ds else str(w.message)
                warnings.warn(msg, w.category, stacklevel=5)
            prog = _mt.Program(entry)
        except MaskcError as e:
            diags = [em.map_diagnostic(d, path) for d in e.diagnostics]
            where = next((d for d in diags if d.is_error), None)
            if where is not None and os.path.abspath(where.file) != os.path.abspath(path):
                what = "the mod at %s:%d:%d" % (where.file, where.line, where.column)
            else:  # a line maskc wrote: the call's head dim, dtype or scale, or the block as a whole
                what = "this call"
            raise MaskcError("maskc refuses %s (emitted as %s)" % (what, path), diags, e.output)
        with _resolve_lock:
            _programs[em.text] = prog
    return _Resolved(prog.attention(BLOCK), em, path)


def resolve(mask_mod, score_mod, sizes, dtype, head_dim, scale):
    """The _Resolved call for these mods and call facts, memoised by the
    mods' fingerprints (no source is read on a hit)."""
    key = (_fingerprint(mask_mod), _fingerprint(score_mod), tuple(sorted(sizes.items())), dtype, head_dim, scale)
    try:
        hit = _resolved.get(key)
    except TypeError:  # an unhashable captured value: no memo
        hit, key = None, None
    if hit is not None:
        return hit
    r = _compile(emit(mask_mod, score_mod, sizes, dtype, head_dim, scale))
    if key is not None:
        with _resolve_lock:
            _resolved[key] = r
    return r


_warned = set()


def _fallback_warning(msg):
    if msg not in _warned:
        _warned.add(msg)
        warnings.warn(msg, stacklevel=4)


def _torch_flex(query, key, value, score_mod, block_mask, scale, enable_gqa, return_lse, kernel_options, return_aux):
    """torch's own flex_attention with the same arguments (a maskc BlockMask
    becomes torch's)."""
    from torch.nn.attention import flex_attention as tfa
    if isinstance(block_mask, BlockMask):
        block_mask = block_mask.to_torch()
    kw = dict(score_mod=score_mod, block_mask=block_mask, scale=scale, enable_gqa=enable_gqa,
              kernel_options=kernel_options)
    if return_aux is not None:
        kw["return_aux"] = return_aux
    if return_lse:
        kw["return_lse"] = True
    return tfa.flex_attention(query, key, value, **kw)


def _operand(t):
    """t, or a contiguous copy when a kernel could not read it through its
    strides (maskc.checks.check_rows: 16-byte rows at 16-byte aligned
    strides), as FlexAttention takes any strides."""
    st = t.stride()
    per = 16 // t.element_size()
    if st[-1] == 1 and t.data_ptr() % 16 == 0 and all(x > 0 and x % per == 0 for x in st[:-1]):
        return t
    return t.contiguous()


def kernel_head_dim(E, scale):
    """(the head dim the kernel is built for, the scale it is given) for a
    call of head dim E and scale (None: FlexAttention's 1/sqrt(E), written
    out when E is padded)."""
    Ep = next((d for d in KERNEL_HEAD_DIMS if d >= E), E)  # E beyond them: maskc's E300 says so
    if Ep != E and scale is None:
        scale = 1 / math.sqrt(E)
    return Ep, None if scale is None else float(scale)


def _disable(fn):
    """fn kept out of torch.compile's graphs (it reads source and files)."""
    t = _torch()
    dis = getattr(getattr(t, "compiler", None), "disable", None)
    return dis(fn) if dis is not None else fn


@_disable
def _prepare(query, key, value, score_mod, block_mask, scale, enable_gqa):
    """(_Resolved, buffers) for a call: argument checks as FlexAttention
    makes them, then the memoised resolution of the call's mods."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() != 4:
            raise ValueError("flex_attention: %s has %d dimensions, shape %s; want 4 (B, H, L, E)" %
                             (name, t.dim(), tuple(t.shape)))
    B, Hq, L, E = query.shape
    Bk, Hkv, S, Ek = key.shape
    if tuple(value.shape[:3]) != (Bk, Hkv, S) or Bk != B or Ek != E:
        raise ValueError("flex_attention: query %s, key %s and value %s do not fit together" %
                         (tuple(query.shape), tuple(key.shape), tuple(value.shape)))
    if value.shape[3] != E:
        raise MaskcError("flex_attention: value's head dim %d differs from query's %d; maskc's kernels take one "
                         "head dim" % (value.shape[3], E))
    if Hq != Hkv and not enable_gqa:
        raise ValueError("Expect query and key/value to have the same number of heads but got Hq=%d and Hkv=%d. "
                         "Try setting enable_gqa=True for GQA." % (Hq, Hkv))
    if Hq % Hkv:
        raise ValueError("flex_attention: Hq=%d is not a multiple of Hkv=%d" % (Hq, Hkv))
    dtype = _QKV_DTYPES.get(str(query.dtype))
    if dtype is None:
        raise MaskcError("flex_attention: query is %s; maskc's kernels take torch.bfloat16 or torch.float16 (pass "
                         "fallback=\"torch\" to run torch's flex_attention for other dtypes)" % query.dtype)
    mask_mod = None
    if block_mask is not None:
        mask_mod = getattr(block_mask, "mask_mod", None)
        lens = tuple(getattr(block_mask, "seq_lengths", (L, S)))
        if lens != (L, S):
            raise ValueError("block_mask was created for block_mask.shape=%s but got q_len=%d and kv_len=%d" %
                             (getattr(block_mask, "shape", lens), L, S))
        if not isinstance(block_mask, BlockMask) and _is_noop(mask_mod, "mask"):
            raise MaskcError("flex_attention: block_mask is torch's BlockMask with no mask_mod (built from block "
                             "tensors, e.g. BlockMask.from_kv_blocks); maskc runs a mask from its mask_mod only",)
    Ep, scale = kernel_head_dim(E, scale)
    sizes = {"B": B, "H": Hq, "Q": L, "KV": S}
    r = resolve(mask_mod, score_mod, sizes, dtype, Ep, scale)
    return r, r.buffer_values(mask_mod, score_mod), Ep


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, enable_gqa=False,
                   return_lse=False, kernel_options=None, *, return_aux=None, fallback=None):
    """FlexAttention on maskc: query [B, Hq, L, E], key and value [B, Hkv, S,
    E] (bf16 or fp16), score_mod and block_mask's mask_mod the user's Python
    functions (read and compiled by maskc once per function layout). Returns
    the output [B, Hq, L, E]; with return_lse=True also the log-sum-exp
    [B, Hq, L] (float32, natural log); with return_aux=AuxRequest(lse=True)
    (out, AuxOutput). Gradients flow to query, key, value and to the float
    tensors the score_mod captures. kernel_options is accepted and unused
    (maskc picks its own tiles).

    A function maskc cannot read, or a mask it refuses, raises MaskcError at
    the function's source; fallback="torch" runs torch's flex_attention for
    such a call instead, warning once per reason. Never silently."""
    if fallback not in (None, "torch"):
        raise ValueError("fallback=%r: want None or \"torch\"" % (fallback,))
    if return_aux is not None and getattr(return_aux, "max_scores", False):
        raise MaskcError("flex_attention: return_aux asks for max_scores, which maskc's kernels do not compute")
    want_lse = bool(return_lse) or bool(getattr(return_aux, "lse", False))
    try:
        r, buffers, Ep = _prepare(query, key, value, score_mod, block_mask, scale, enable_gqa)
        E = query.shape[-1]
        q, k, v = (_operand(t) for t in (query, key, value))
        if Ep != E:  # zero columns: the same scores, the same first E output columns, differentiably
            pad = _torch().nn.functional.pad
            q, k, v = (pad(t, (0, Ep - E)) for t in (query, key, value))
        # the pre-pass's tile map kept on the block mask for every call given it
        tm = (r.attn._cached_tile_map(block_mask._tile_maps, q, k, "bhsd", buffers)
              if isinstance(block_mask, BlockMask) else None)
        # checks raise before launch
        got = r.attn(q, k, v, layout="bhsd", buffers=buffers, return_lse=want_lse, tile_map=tm)
    except MaskcError as e:
        if fallback != "torch":
            raise
        _fallback_warning("maskc.torch.flex_attention runs torch's flex_attention (fallback=\"torch\"): %s" % e)
        return _torch_flex(query, key, value, score_mod, block_mask, scale, enable_gqa, return_lse, kernel_options,
                           return_aux)
    if Ep != E:
        got = (got[0][..., :E].contiguous(), got[1]) if want_lse else got[..., :E].contiguous()
    if return_aux is not None:
        out, lse = got if want_lse else (got, None)
        return out, AuxOutput(lse=lse if getattr(return_aux, "lse", False) else None)
    return got
