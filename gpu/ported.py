"""Runs the Python text of a .flex file's `def` declarations as Python.

A mod written in maskc's def form is Python: this module cuts a .flex file
into its params, buffers, defs and attention blocks, executes the defs with
torch and math in scope (buffers and params bound by name, as the globals a
FlexAttention mod captures), and evaluates an attention block's `mask =` /
`score =` setting to the Python callable it denotes. Used by
gpu/ported_torch.py (golden files for the evaluator) and gpu/ported_check.py
(a generated kernel against FlexAttention running the original score_mod).
"""
import math
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import buffers  # noqa: E402  (gpu/buffers.py: the GPU scripts' one random-buffer generator)
from maskc import checks  # noqa: E402  (buffer extents without eval; no torch needed)

DTYPES = buffers.DTYPES

_BUFFER = re.compile(r"^buffer\s+(\w+)\s*:\s*(\w+)\[([^\]]*)\]\s*(\w+)?")
_PARAM = re.compile(r"^param\s+(\w+)\s*=\s*(.+?)\s*(#.*)?$")
# a Python module constant, `SLIDING_WINDOW = 1024` from the first column: a param
_GLOBAL = re.compile(r"^(?!(?:param|buffer|mask|score|attention)\b)([A-Za-z_]\w*)\s*=(?!=)\s*(.+?)\s*(#.*)?$")
_SETTING = re.compile(r"^\s*(\w+)\s*=\s*(.+?)\s*(#.*)?$")


class FlexFile:
    """The pieces of one .flex file: params {name: text}, buffers [(name,
    dtype, [dim texts], property)], defs (Python source) and attention
    blocks [(name, {setting: text})]."""

    def __init__(self, text):
        self.params, self.buffers, self.attentions = {}, [], []
        defs, lines, i = [], text.split("\n"), 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("def ") or line.startswith("@"):
                # A def with its decorators; a header over several lines
                # (black's style) closes with `)` at the start of a line.
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or lines[j][0] in " \t)" or lines[j - 1].startswith("@")):
                    j += 1
                defs.append("\n".join(lines[i:j]))
                i = j
                continue
            m = _BUFFER.match(line)
            if m:
                self.buffers.append((m.group(1), m.group(2), [d.strip() for d in m.group(3).split(",")], m.group(4)))
            m = _PARAM.match(line) or _GLOBAL.match(line)
            if m:
                self.params[m.group(1)] = m.group(2)
            if line.startswith("attention "):
                name, settings = line.split()[1], {}
                i += 1
                while i < len(lines) and lines[i].strip() != "}":
                    m = _SETTING.match(lines[i])
                    if m:
                        settings[m.group(1)] = m.group(2)
                    i += 1
                self.attentions.append((name, settings))
            i += 1
        self.defs = "\n\n".join(defs) + "\n"


def draw_buffer(dtype, dims, prop, sizes, gen):
    """Random contents for a captured buffer of element type dtype with
    extents dims (.flex texts over B H HKV Q KV, sizes their values),
    `segments` when prop says so: gpu/buffers.py's random_buffer, the
    distribution Go's harness.Buffer draws from."""
    sz = checks.Sizes(sizes["B"], sizes["H"], sizes["HKV"], sizes["Q"], sizes["KV"], 0)
    return buffers.random_buffer(dtype, checks.eval_dims(dims, sz), prop == "segments", sizes["KV"], gen)[0]


def namespace(ff, buffers):
    """Executes the file's defs with torch, math, FlexAttention's and_masks /
    or_masks, its params and the given buffer tensors in scope."""
    import functools
    import typing
    ns = {"torch": torch, "math": math, "functools": functools, "lru_cache": functools.lru_cache, "partial": functools.partial,
          "__builtins__": __builtins__}
    # the typing names pasted annotations use (transformers' `-> Callable`)
    ns.update({n: getattr(typing, n) for n in ("Callable", "Optional", "Union", "Any")})
    try:
        from torch.nn.attention.flex_attention import and_masks, or_masks
    except ImportError:  # older torch: the same combinators
        def and_masks(*ms):
            return lambda b, h, q, kv: _fold(ms, b, h, q, kv, torch.logical_and)

        def or_masks(*ms):
            return lambda b, h, q, kv: _fold(ms, b, h, q, kv, torch.logical_or)
    ns.update(and_masks=and_masks, or_masks=or_masks)
    later = []
    for name, text in ff.params.items():
        try:
            ns[name] = eval(text.replace("true", "True").replace("false", "False"), dict(ns))
        except NameError:
            later.append((name, text))  # a mod bound to a name (`m = partial(f, n=4)`): after the defs
    ns.update(buffers)
    # Annotations stay text, as maskc keeps them (jaxtyping's Int['b m 3']
    # names a module the pasted file imports elsewhere).
    exec(compile("from __future__ import annotations\n" + ff.defs, "<defs>", "exec"), ns)
    for name, text in later:
        ns[name] = eval(text, ns)
    return ns


def _fold(ms, b, h, q, kv, op):
    out = ms[0](b, h, q, kv)
    for m in ms[1:]:
        out = op(out, m(b, h, q, kv))
    return out


def mods(ff, ns, settings):
    """The (mask_mod, score_mod) an attention block's settings denote, each
    None when absent."""
    mask = eval(settings["mask"], ns) if "mask" in settings else None
    score = eval(settings["score"], ns) if "score" in settings else None
    return mask, score
