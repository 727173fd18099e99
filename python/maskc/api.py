"""maskc's torch API: load a .flex file (through the on-disk cache) into a
Program, whose attention blocks are Attention callables. A call's arguments
are checked here; maskc.dispatch picks the kernel that runs it. maskc.torch
re-exports these names (the public import path).
"""
import concurrent.futures
import os

import torch

from . import abi as _abi
from . import cache as _cache
from . import checks as _checks
from . import dispatch as _dispatch
from . import launcher as _launch
from . import ops as _ops  # noqa: F401  (registers maskc::attn_fwd / attn_bwd)
from . import plan as _plan
from .diagnostics import MaskcError
from .launcher import _frame_values

def load(path, defines=None, target=None):
    """Compiles path (with -D defines, for a Turbo target profile) through
    the on-disk cache and returns its Program. Errors in the file raise
    MaskcError carrying maskc's positioned diagnostics."""
    return Program(_cache.compile_flex(os.fspath(path), defines, target))


class Program:
    """A compiled .flex file: its plan and its attention blocks."""

    def __init__(self, entry):
        self.entry = entry
        # plan.json names each generated kernel's descriptor in manifest.json (read here, so that an
        # older maskc's cache entry is refused when loaded)
        man = _abi.read_manifest(entry.directory) if entry.has(_abi.MANIFEST_FILE) else None
        self.plan = _plan.Plan(entry.plan_json, man.descriptors if man is not None else None)
        self._attns = {}

    def attention(self, name):
        """The callable for attention block name."""
        if name not in self._attns:
            self._attns[name] = Attention(self, self.plan.attention(name))
        return self._attns[name]

    def prepare(self, device=None, threads=8):
        """Builds every generated kernel of the program, forward and backward,
        for a CUDA device (default: the current one), compiling in parallel
        threads, and
        loads them into torch's context: model-build work that the first
        training step would otherwise do."""
        dev = torch.device(device if device is not None else "cuda")
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        gens = [a.generated() for a in (self.attention(n) for n in self.names) if a.decision.has_generated]
        _launch._libs()
        jobs = [(g.compile_for, g) for g in gens] + [(g.compile_bwd_for, g) for g in gens if g.spec.bwd_source]
        with concurrent.futures.ThreadPoolExecutor(max(1, min(threads, len(jobs)))) as ex:
            for f in [ex.submit(fn, idx) for fn, _ in jobs]:
                f.result()
        for g in gens:
            g._module(torch.device("cuda", idx))
            if g.spec.bwd_source:
                g._bwd_module(torch.device("cuda", idx))
        return self

    @property
    def names(self):
        """The attention blocks, in file order."""
        return list(self.plan.attentions)


class Attention:
    """One attention block of a Program, called like a function."""

    def __init__(self, program, decision):
        self.program, self.decision = program, decision
        self.name = decision.name
        k = decision.kernel or {}
        self.layout = k.get("layout", "bshd")
        self.dtype = {"fp16": "f16"}.get(k.get("dtype"), k.get("dtype"))  # maskc's tensor dtype names
        self.head_dim = k.get("head_dim")
        # Everything that reads files or imports runs here, eagerly, so that
        # a call traced by torch.compile(fullgraph=True) meets none of it.
        _dispatch._turbo()
        self._generated = None
        if decision.has_generated and program.entry.has(_abi.MANIFEST_FILE):
            self._generated = _launch._Generated(program.entry, decision)
        self.buffer_names = _plan_buffers(decision)
        if self._generated is not None:
            spec = self._generated.spec
            self.buffer_names |= self._generated.known

    def __repr__(self):
        return "<maskc attention %s: %s via %s>" % (self.name, self.decision.pattern, self.decision.entry)

    def choose(self, q, k, layout=None, return_lse=False, backend="auto"):
        """The plan.Choice a call with these q and k would take."""
        return _dispatch.choose(self.decision, q, k, layout or self.layout, return_lse, backend)

    def __call__(self, q, k, v, layout=None, buffers=None, return_lse=False, deterministic=False, backend="auto",
                 frame=None, tile_map=None):
        """Attention of q over k, v (4-D, layout "bshd" or "bhsd"; default the
        block's) with the block's captured tensors in buffers ({name:
        tensor}). Returns the output in q's layout, and with return_lse also
        the log-sum-exp [B, H, Sq] (float32, natural log).

        frame (a maskc.cp.Frame, or None for the whole attention) places
        this call in a larger attention: q and k, v are its rows q_offset..
        and keys kv_offset.. (and heads h_offset..), the mask and score see
        those global positions and sizes, and buffers are the global ones
        (python/maskc/README_CP.md). Only the generated kernel runs a
        framed call; backend="turbo" or "sdpa" with a frame is refused.

        tile_map (from tile_map() with the same shapes, buffers and frame)
        spares the generated kernel its pre-pass in this call and its
        backward; under torch.compile it is not read (the compiled call runs
        its pre-pass)."""
        layout = layout or self.layout
        frame = _frame_values(frame)
        if frame is not None:
            if backend not in ("auto", "generated"):
                raise MaskcError("block %s: backend=%r cannot run a slice of an attention (frame=%s); only the "
                                 "generated kernel applies the mask at global positions" % (self.name, backend,
                                                                                            frame))
            backend = "generated"
        if layout not in _checks.LAYOUTS:
            raise MaskcError("layout=%r: want %s" % (layout, " or ".join(_checks.LAYOUTS)))
        for name, t in (("q", q), ("k", k), ("v", v)):
            if t.dim() != 4:
                raise MaskcError("%s has %d dimensions, shape %s; want 4 (%s)" % (name, t.dim(), tuple(t.shape),
                                                                                 layout))
        buffers = dict(buffers or {})
        unknown = sorted(set(buffers) - self.buffer_names)
        if unknown:
            raise MaskcError("block %s does not read %s (it reads: %s)" % (
                self.name, ", ".join(unknown), ", ".join(sorted(self.buffer_names)) or "no buffers"))
        return _dispatch.run(self, q, k, v, layout, buffers, return_lse, deterministic, backend, frame, tile_map)

    def tile_map(self, q, k, layout=None, buffers=None, frame=None):
        """The block's tile map for calls on tensors shaped like q and k (on
        their device; their values are not read) with these buffers and
        frame: the generated kernel's pre-pass, run once now, whose flags
        every call given tile_map= reads instead of running it again, as a
        FlexAttention BlockMask is made once per batch and shared by the
        layers. A block whose generated kernel has no pre-pass (or that has
        no generated kernel) gets None, which changes nothing. A call
        refuses the map when its sizes, device, frame or buffers differ, or a
        buffer was written since (its version counter): make a new map then."""
        layout = layout or self.layout
        if layout not in _checks.LAYOUTS:
            raise MaskcError("layout=%r: want %s" % (layout, " or ".join(_checks.LAYOUTS)))
        buffers = dict(buffers or {})
        gen = self._generated
        if gen is None or not gen.spec.flags_entry:
            return None
        names = {b.name for b in gen.spec.buffers}  # the sink is not the mask's
        if names - set(buffers) or set(buffers) - gen.known:
            raise MaskcError("block %s: tile_map needs the buffers %s; got %s" % (
                self.name, ", ".join(sorted(names)) or "(none)", ", ".join(sorted(buffers)) or "none"))
        return gen.tile_map(q, k, [buffers[b.name] for b in gen.spec.buffers], layout, frame)

    def _cached_tile_map(self, cache, q, k, layout=None, buffers=None, frame=None):
        """The tile map for this call kept in cache, a dict its caller owns
        for calls that share one (a forward's MaskInfo, a BlockMask): made by
        the first call that needs it, and again when it no longer fits (other
        buffer tensors, or buffers written since: TileMap.flags_for). None for
        a block without a pre-pass, and under torch.compile, where the map's
        launch cannot be traced (the compiled call runs its own pre-pass)."""
        gen = self._generated
        if gen is None or not gen.spec.flags_entry or torch.compiler.is_compiling():
            return None
        layout = layout or self.layout
        frame = _frame_values(frame)
        buffers = dict(buffers or {})
        key = ("tile map", gen.key, tuple(q.shape), tuple(k.shape), str(q.device), tuple(frame or ()))
        tm = cache.get(key)
        if tm is not None:
            try:
                tm.flags_for(gen, q, k, layout, [buffers.get(b.name) for b in gen.spec.buffers], frame)
                return tm
            except MaskcError:
                pass  # no longer these buffers: a new map for them
        tm = self.tile_map(q, k, layout, buffers, frame)
        cache[key] = tm
        return tm

    def status(self, device=None):
        """The sticky status bits the block's generated kernel recorded
        (_Generated.status: segments_unsorted 1, read_out_of_range 2); 0
        when the block has no generated kernel here. Synchronises: never
        call it in the hot path."""
        return self._generated.status(device) if self._generated is not None else 0

    def reset_status(self, device=None):
        """Clears the generated kernel's status words (_Generated.reset_status)."""
        if self._generated is not None:
            self._generated.reset_status(device)

    def generated(self):
        """The block's generated-kernel launcher."""
        if self._generated is None:
            if not self.decision.has_generated:
                raise MaskcError("block %s has no generated kernel" % self.name)
            raise _abi.manifest_missing(self.program.entry.directory)
        return self._generated



def _plan_buffers(dec):
    """The buffer names a block's calls may pass: those the plan's kwargs
    name, its segments buffer, and its generated kernel's buffers."""
    names = {v for v in dec.kwargs.values() if isinstance(v, str)} - {dec.kwargs.get("kernel")}
    if dec.segments:
        names.add(dec.segments)
    names.update(b["name"] for b in (dec.kernel or {}).get("buffers") or [])
    names.update(b for b in dec.kwargs.get("buffers") or [] if isinstance(b, str))
    if (dec.kernel or {}).get("sink"):
        names.add(dec.kernel["sink"])
    return names
