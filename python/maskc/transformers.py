"""Hugging Face transformers models on maskc: attn_implementation="maskc".

    import maskc.transformers
    maskc.transformers.register()                   # once, before building the model
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="maskc")

register() adds "maskc" to transformers' AttentionInterface (the attention
call of every layer) and AttentionMaskInterface (the mask builder). The mask
builder does not build a mask: it returns a MaskInfo, the mask transformers
asked for read off its mask function (transformers.masking_utils composes
causal_mask_function, bidirectional_mask_function, sliding_window_overlay,
sliding_window_bidirectional_overlay, chunked_overlay, padding_mask_function,
packed_sequence_mask_function and blockwise_overlay with and_masks/or_masks),
written as a .flex mask expression, with the tensors it reads (the 2-D
padding mask, packed-sequence document ids, Gemma 3's image block ids,
chunked attention's left padding) as buffers, and the query and key offsets
of a call with a cache (generate()). The attention function adds what each
layer passes: scaling, softcap (Gemma 2), sinks (s_aux, gpt-oss), GQA (k, v
with fewer heads), and runs the block through maskc.torch, with the position
frame (q_offset = past length) when the call has a cache. Each distinct
block is compiled once (text -> content-addressed .flex file ->
maskc.torch.load).

A mask function this module does not know, a 4-D or BlockMask attention
mask, attention dropout, and head dims maskc cannot run raise MaskcError
naming the layer and the setting, before that layer's attention runs; mask
functions are read when transformers builds the mask, before any layer runs.

Where the installed transformers' ModernBERT still calls its own table of
attention functions (MODERNBERT_ATTENTION_FUNCTION) instead of
AttentionInterface, register() adds "maskc" there too: the window comes
from the layer's local_attention, the padding from its 4-D additive mask,
which must be a 2-D padding mask expanded over the queries (checked, else
refused).

With register(flex=PATH, blocks={layer type: block name}) every layer runs
the user's block instead, picked by its layer type (config.layer_types, or
"sliding_attention"/"full_attention" from the module's sliding_window); a
mask that needs buffers the block does not get (padding, packed documents)
is refused unless buffers= supplies them.

Importing this module imports neither torch nor transformers; register()
and the first attention call do.
"""
import hashlib
import os

from .diagnostics import MaskcError

__all__ = ["register", "MaskInfo", "MaskNotATensor", "attention_forward", "mask_interface", "plan_call", "lower_mask",
           "block_text", "NAME"]

#: The attention implementation name register() uses by default.
NAME = "maskc"

_MU = "transformers.masking_utils"

# Buffer kinds: (name prefix, declaration, fill value when padded to the
# global key length). The mask reads [B, KV] buffers at q as well as kv, so
# they are sized to the call's global key length, which covers every query.
_BUF = {
    "pad": ("pad", "i32[B, KV]", 0),       # padding_mask[b, kv]: 1 keep, 0 padding
    "doc": ("doc", "i32[B, KV]", -1),      # packed sequence id of each token
    "blk": ("blk", "i32[B, KV]", -1),      # blockwise (image) group, -1 text
    "lp": ("lp", "i32[B]", None),          # chunked attention's left padding
}


class MaskNotATensor(MaskcError, AttributeError):
    """Model code read a tensor attribute of the MaskInfo maskc's mask
    builder returned (an AttributeError too, so hasattr() says False)."""


class MaskInfo:
    """The mask transformers asked for, as maskc reads it: expr (a .flex
    mask expression over b, h, q, kv; None for every pair), buffers (a
    list of (name, kind, tensor)), and the call geometry the mask builder
    got: batch_size, q_length, kv_length, q_offset (the cache's length: the
    first query's position; an int or a 0-d tensor with StaticCache),
    kv_offset (the first key's position). The model passes the same
    MaskInfo to every layer of one forward: what the layers can share is
    made once and kept in it (shared: the buffers as the kernels read them,
    and the blocks' tile maps, so a mask with a pre-pass runs it once per
    forward, not once per layer)."""

    __slots__ = ("expr", "buffers", "batch_size", "q_length", "kv_length", "q_offset", "kv_offset", "source",
                 "shared")

    def __init__(self, expr, buffers, batch_size, q_length, kv_length, q_offset=0, kv_offset=0, source=""):
        self.expr, self.buffers = expr, list(buffers)
        self.batch_size, self.q_length, self.kv_length = batch_size, q_length, kv_length
        self.q_offset, self.kv_offset, self.source = q_offset, kv_offset, source
        self.shared = {}

    def __getattr__(self, name):
        raise MaskNotATensor("the model's code reads attention_mask.%s, as if the mask were a tensor; under "
                             "attn_implementation=\"maskc\" the mask is a maskc.transformers.MaskInfo (%r), which "
                             "only maskc's attention function reads: this model edits or inspects its mask itself, "
                             "which maskc.transformers does not support" % (name, self))

    def __repr__(self):
        return "MaskInfo(%s; buffers %s; q %d+%s, kv %d+%s)" % (
            self.expr or "every pair", [n for n, _, _ in self.buffers] or "none", self.q_length, self.q_offset,
            self.kv_length, self.kv_offset)


def _cells(fn):
    """fn's closure as {free variable: value}."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return {}
    return dict(zip(code.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))


class _Lowering:
    def __init__(self):
        self.buffers = []  # (name, kind, tensor)

    def buffer(self, kind, tensor):
        for name, k, t in self.buffers:
            if k == kind and t is tensor:
                return name
        name = "%s%d" % (_BUF[kind][0], sum(k == kind for _, k, _ in self.buffers))
        self.buffers.append((name, kind, tensor))
        return name

    def lower(self, fn):
        """fn as a .flex expression, or None for 'every pair'."""
        mod, qn = getattr(fn, "__module__", None), getattr(fn, "__qualname__", repr(fn))
        if mod != _MU:
            raise _unknown(fn)
        c = _cells(fn)
        if qn == "causal_mask_function":
            return "(kv <= q)"
        if qn == "bidirectional_mask_function":
            return None
        if qn in ("and_masks.<locals>.and_mask", "or_masks.<locals>.or_mask"):
            parts = [self.lower(f) for f in c["mask_functions"]]
            if qn.startswith("and"):
                parts = [p for p in parts if p is not None]
                return None if not parts else parts[0] if len(parts) == 1 else "(%s)" % " & ".join(parts)
            if not parts or any(p is None for p in parts):
                return None
            return parts[0] if len(parts) == 1 else "(%s)" % " | ".join(parts)
        if qn == "sliding_window_overlay.<locals>.inner_mask":
            return "(kv > q - %d)" % _int(c["sliding_window"], "sliding_window")
        if qn == "sliding_window_bidirectional_overlay.<locals>.inner_mask":
            return "(abs(q - kv) <= %d)" % _int(c["sliding_window"], "sliding_window")
        if qn == "chunked_overlay.<locals>.inner_mask":
            n, size = self.buffer("lp", c["left_padding"]), _int(c["chunk_size"], "chunk_size")
            return "((kv - {n}[b]) // {c} == (q - {n}[b]) // {c})".format(n=n, c=size)
        if qn == "padding_mask_function.<locals>.inner_mask":
            return "(%s[b, kv] != 0)" % self.buffer("pad", c["padding_mask"])
        if qn == "packed_sequence_mask_function.<locals>.inner_mask":
            n = self.buffer("doc", c["packed_sequence_mask"])
            return "(%s[b, q] == %s[b, kv])" % (n, n)
        if qn == "blockwise_overlay.<locals>.inner_mask":
            n = self.buffer("blk", c["block_sequence_ids"])
            return "((%s[b, q] == %s[b, kv]) & (%s[b, q] >= 0))" % (n, n, n)
        raise _unknown(fn)


def _int(v, what):
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise MaskcError("transformers mask: %s = %r, want an int >= 0" % (what, v))
    return v


def _unknown(fn):
    return MaskcError("transformers built its mask from %s.%s, which maskc.transformers does not know how to run "
                      "exactly (it reads the mask functions of transformers.masking_utils); write the mask as a "
                      ".flex block and register(flex=..., blocks=...)" %
                      (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", repr(fn))))


def lower_mask(mask_function, padding_mask=None):
    """(expr, buffers) of a transformers mask function and the 2-D padding
    mask its mask builder adds: expr a .flex mask expression over b, h, q,
    kv (None: every pair), buffers [(name, kind, tensor)]. Raises
    MaskcError for a function it does not know."""
    lw = _Lowering()
    expr = lw.lower(mask_function)
    if padding_mask is not None:
        p = "(%s[b, kv] != 0)" % lw.buffer("pad", padding_mask)
        expr = p if expr is None else "(%s & %s)" % (expr, p)
    return expr, lw.buffers


def _tracing():
    import sys
    torch = sys.modules.get("torch")
    comp = getattr(torch, "compiler", None)
    return bool(comp is not None and getattr(comp, "is_compiling", lambda: False)())


def mask_interface(batch_size, q_length, kv_length, q_offset=0, kv_offset=0, mask_function=None,
                   attention_mask=None, **kwargs):
    """transformers' mask builder for "maskc" (AttentionMaskInterface): the
    MaskInfo of the mask it asks for, instead of a materialised mask. A 2-D
    padding mask with no padding is dropped, as transformers' SDPA mask
    does (one device sync, skipped under torch.compile)."""
    if mask_function is None:
        raise MaskcError("transformers called the maskc mask builder without a mask_function")
    pad = attention_mask
    if pad is not None and len(pad.shape) != 2:
        raise MaskcError("a %d-D attention mask: maskc reads a 2-D padding mask [batch, keys] (1 keep, 0 padding) "
                         "and builds the rest from the model's mask functions" % len(pad.shape))
    if pad is not None and not _tracing() and bool(pad.all()):
        pad = None
    expr, bufs = lower_mask(mask_function, pad)
    # StaticCache gives its length as a 0-d tensor: read it once per mask
    # here, not once per layer (a device sync either way: no CUDA-graph
    # capture of decode steps yet).
    q_offset = q_offset.item() if hasattr(q_offset, "item") else q_offset
    kv_offset = kv_offset.item() if hasattr(kv_offset, "item") else kv_offset
    return MaskInfo(expr, bufs, batch_size, q_length, kv_length, q_offset, kv_offset,
                    getattr(mask_function, "__qualname__", ""))


def _dtype_word(t, layer):
    name = str(t.dtype).replace("torch.", "")
    if name == "bfloat16":
        return "bf16"
    if name == "float16":
        return "fp16"
    if name in ("float32", "float64"):
        return "bf16"  # run in bf16 (the model's autocast precision); the output is cast back
    raise MaskcError("%s: query dtype %s; maskc runs bf16 or fp16 attention" % (layer, name))


def _float(v):
    r = repr(float(v))
    return r if ("." in r or "e" in r) else r + ".0"


def block_text(expr, buffers, head_dim, dtype="bf16", scale=None, softcap=None, sink=False, comment=""):
    """The .flex text of one attention block "layer": the mask expr over
    buffers [(name, kind, ...)], an optional tanh soft-cap of the scaled
    logits, an optional per-head sink buffer "sinks" (f32[H]), the softmax
    scale (None: 1/sqrt(head_dim)), bhsd layout."""
    lines = ["# generated by maskc.transformers" + (": " + comment if comment else "")]
    for name, kind, *_ in buffers:
        lines.append("buffer %s: %s" % (name, _BUF[kind][1]))
    if sink:
        lines.append("buffer sinks: f32[H]")
    if expr is not None:
        lines.append("mask m(b, h, q, kv) = %s" % expr)
    if softcap:
        c = _float(softcap)
        lines.append("score cap(score, b, h, q, kv) = %s * tanh(score / %s)" % (c, c))
    lines.append("attention layer {")
    if expr is not None:
        lines.append("    mask = m")
    if softcap:
        lines.append("    score = cap")
    if sink:
        lines.append("    sink = sinks")
    if scale is not None:
        lines.append("    scale = %s" % _float(scale))
    lines += ["    layout = bhsd", "    dtype = %s" % dtype, "    head_dim = %d" % head_dim, "}", ""]
    return "\n".join(lines)


def _layer_name(module):
    idx = getattr(module, "layer_idx", getattr(module, "layer_id", None))
    return "%s (layer %s)" % (type(module).__name__, "?" if idx is None else idx)


def _layer_type(module):
    cfg, idx = getattr(module, "config", None), getattr(module, "layer_idx", getattr(module, "layer_id", None))
    types = getattr(cfg, "layer_types", None)
    if types is not None and idx is not None and 0 <= idx < len(types):
        return types[idx]
    return "sliding_attention" if getattr(module, "sliding_window", None) else "full_attention"


class _State:
    """What register() configured: the user's .flex and block map, or None
    (derive each layer's block)."""

    def __init__(self, flex=None, blocks=None, defines=None, buffers=None):
        self.flex, self.blocks, self.defines, self.buffers = flex, dict(blocks or {}), defines, buffers
        self.program = None
        self.derived = {}  # block text -> maskc.torch Attention


_STATE = _State()


def _derived_attention(text):
    """The maskc.torch Attention of a generated block text (compiled once:
    a content-addressed file under the maskc cache, then maskc.torch.load)."""
    attn = _STATE.derived.get(text)
    if attn is None:
        from . import cache as _cache
        import maskc.torch as mt
        d = os.path.join(_cache.cache_root(), "transformers")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, hashlib.sha256(text.encode()).hexdigest()[:24] + ".flex")
        if not os.path.exists(path):
            tmp = "%s.%d.tmp" % (path, os.getpid())
            with open(tmp, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        attn = mt.load(path).attention("layer")
        _STATE.derived[text] = attn
    return attn


class Call:
    """One layer's attention call as maskc will run it (everything checked,
    nothing launched): the block text (derived mode) or block name (user
    .flex), buffers [(name, kind, tensor)], the sink tensor or None, the
    frame (six ints or None), the global key length buffers are sized to."""

    __slots__ = ("layer", "text", "block", "buffers", "sink", "frame", "kv_total", "cast")

    def __init__(self, **kw):
        for k in self.__slots__:
            setattr(self, k, kw.get(k))


def _as_int(v, what, layer):
    if hasattr(v, "item"):
        v = v.item()  # StaticCache's length is a 0-d tensor: one sync (no CUDA graph capture here yet)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise MaskcError("%s: %s = %r, want an int >= 0" % (layer, what, v))
    return v


def plan_call(module, query, key, value, attention_mask, scaling=None, dropout=0.0, softcap=None, s_aux=None,
              state=None, **kwargs):
    """Checks one attention call and returns its Call; raises MaskcError
    naming the layer and the setting maskc cannot run exactly. Reads only
    shapes, dtypes and module attributes (no torch needed)."""
    state = state or _STATE
    layer = _layer_name(module)
    if dropout and float(dropout) > 0:
        raise MaskcError("%s: attention dropout %g while training; maskc's kernels have no attention dropout "
                         "(set the config's attention_dropout to 0, or train this model on another "
                         "attn_implementation)" % (layer, float(dropout)))
    for name, t in (("query", query), ("key", key), ("value", value)):
        if len(t.shape) != 4:
            raise MaskcError("%s: %s has shape %s; want [batch, heads, seq, head_dim]" % (layer, name,
                                                                                           tuple(t.shape)))
    B, H, Sq, D = query.shape
    Hkv, Skv = key.shape[1], key.shape[2]
    if value.shape[-1] != D or key.shape[-1] != D:
        raise MaskcError("%s: head dims q %d, k %d, v %d; maskc runs one head dim for q, k and v" %
                         (layer, D, key.shape[-1], value.shape[-1]))
    if D % 8 or D > 256:
        raise MaskcError("%s: head_dim %d; maskc's kernels take a multiple of 8, at most 256" % (layer, D))
    if Hkv == 0 or H % Hkv:
        raise MaskcError("%s: %d query heads over %d key/value heads; GQA needs a whole group per KV head" %
                         (layer, H, Hkv))
    info = attention_mask
    if info is None:  # no mask built: the module says causal or not
        causal = kwargs.get("is_causal", getattr(module, "is_causal", True))
        info = MaskInfo("(kv <= q)" if causal else None, [], B, Sq, Skv)
    elif not isinstance(info, MaskInfo):
        shape = tuple(getattr(info, "shape", ()))
        raise MaskcError("%s: attention_mask is a %s%s, not the mask maskc's mask builder returns: a custom 4-D "
                         "(additive float or bool) mask cannot be run exactly; pass a 2-D padding mask, or write "
                         "the mask as a .flex block" % (layer, type(info).__name__, " of shape %s" % (shape,)
                                                        if shape else ""))
    # Fewer keys than the mask spans: the keys are its first Skv positions,
    # as transformers' eager attention slices its mask to the keys it gets.
    if Sq != info.q_length or Skv > info.kv_length or B != info.batch_size:
        raise MaskcError("%s: q, k have batch %d, %d queries, %d keys, but the mask was built for batch %d, %d "
                         "queries, %d keys" % (layer, B, Sq, Skv, info.batch_size, info.q_length, info.kv_length))
    q0 = _as_int(info.q_offset, "q_offset", layer)
    kv0 = _as_int(info.kv_offset, "kv_offset", layer)
    q_total, kv_total = q0 + Sq, kv0 + Skv
    if info.buffers and q_total > kv_total:
        raise MaskcError("%s: queries reach position %d beyond the keys' %d; the mask's [batch, keys] buffers "
                         "cannot be read there" % (layer, q_total, kv_total))
    frame = [q0, kv0, 0, q_total, kv_total, 0] if (q0 or kv0) else None
    sink = s_aux
    if sink is None:
        ms = getattr(module, "sinks", None)
        sink = ms if hasattr(ms, "shape") else None
    if sink is not None and tuple(sink.shape) != (H,):
        raise MaskcError("%s: sinks of shape %s; want one logit per query head, [%d]" % (layer, tuple(sink.shape),
                                                                                        H))
    dtype = _dtype_word(query, layer)
    cast = dtype == "bf16" and str(query.dtype) != "torch.bfloat16"
    if state.flex is None:
        # The text names nothing model-specific, so that equal blocks of
        # different layers and models are compiled once.
        text = block_text(info.expr, info.buffers, D, dtype, scaling, softcap, sink is not None)
        return Call(layer=layer, text=text, buffers=info.buffers, sink=sink, frame=frame, kv_total=kv_total,
                    cast=cast)
    ltype = _layer_type(module)
    block = state.blocks.get(ltype)
    if block is None:
        raise MaskcError("%s: layer type %r has no block in blocks=%r" % (layer, ltype, state.blocks))
    if info.buffers and state.buffers is None:
        raise MaskcError("%s: the model's mask reads %s (%s), which block %s is not given; pass "
                         "buffers=fn(module, mask_info) -> {name: tensor}" % (
                             layer, ", ".join(k for _, k, _ in info.buffers), info.expr, block))
    return Call(layer=layer, block=block, buffers=info.buffers, sink=sink, frame=frame, kv_total=kv_total,
                cast=cast)


def _fit(t, n, fill):
    """t as int32 [B, n]: cut or padded with fill along its last dim."""
    import torch
    t = t.to(torch.int32)
    w = t.shape[-1]
    if w > n:
        t = t[..., :n]
    elif w < n:
        t = torch.nn.functional.pad(t, (0, n - w), value=fill)
    return t.contiguous()


def _buffer_tensors(call, shared=None):
    """The call's buffers as the kernel reads them, {name: tensor}; made
    once per (name, key length) in shared (a MaskInfo's) when given, so
    that every layer passes the same tensors (which its tile map needs)."""
    import torch
    out = {}
    for name, kind, t in call.buffers:
        key = ("buffer", name, kind, call.kv_total)
        got = shared.get(key) if shared is not None else None
        if got is None:
            if kind == "lp":
                got = t.to(torch.int32).reshape(-1).contiguous()
            else:
                got = _fit(t, call.kv_total, _BUF[kind][2])
            if shared is not None:
                shared[key] = got
        out[name] = got
    return out


def attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, softcap=None,
                      s_aux=None, **kwargs):
    """transformers' attention function for "maskc" (AttentionInterface):
    query, key, value [batch, heads, seq, head_dim], attention_mask the
    MaskInfo of mask_interface; returns ([batch, seq, heads, head_dim],
    None)."""
    kwargs.pop("sliding_window", None)  # the mask carries the window (eager and SDPA read the mask, too)
    call = plan_call(module, query, key, value, attention_mask, scaling, dropout, softcap, s_aux, **kwargs)
    import torch
    out_dtype = query.dtype
    if call.cast:
        query, key, value = query.to(torch.bfloat16), key.to(torch.bfloat16), value.to(torch.bfloat16)
    # Buffers made here from the mask are shared by the layers of one
    # forward, with the tile map over them.
    shared = attention_mask.shared if isinstance(attention_mask, MaskInfo) else None
    bufs = _buffer_tensors(call, shared)
    if call.text is not None:
        attn = _derived_attention(call.text)
        if call.sink is not None:
            bufs["sinks"] = call.sink
    else:
        attn = _user_program().attention(call.block)
        if _STATE.buffers is not None:
            bufs = dict(_STATE.buffers(module, attention_mask) if callable(_STATE.buffers) else _STATE.buffers)
            shared = None  # the user's function gives its own tensors: a map per call would gain nothing
        sink_name = attn.decision.kwargs.get("sink") or (attn.decision.kernel or {}).get("sink")
        if call.sink is not None:
            if not sink_name:
                raise MaskcError("%s: the model passes sinks, but block %s has no sink setting" % (call.layer,
                                                                                               call.block))
            bufs[sink_name] = call.sink
    tm = attn._cached_tile_map(shared, query, key, "bhsd", bufs, call.frame) if shared is not None else None
    out = attn(query, key, value, layout="bhsd", buffers=bufs, frame=call.frame, tile_map=tm)
    return out.transpose(1, 2).to(out_dtype), None


def _user_program():
    if _STATE.program is None:
        import maskc.torch as mt
        _STATE.program = mt.load(_STATE.flex, defines=_STATE.defines)
        missing = sorted(set(_STATE.blocks.values()) - set(_STATE.program.names))
        if missing:
            raise MaskcError("%s has no attention block %s (it has: %s)" % (_STATE.flex, ", ".join(missing),
                                                                          ", ".join(_STATE.program.names)))
    return _STATE.program


def modernbert_window_expr(local_attention):
    """The mask expression of ModernBERT's own attention functions for a
    layer's local_attention (left, right): None (every pair) for (-1, -1),
    else |q - kv| <= left (its sliding_window_mask keeps distance <=
    config.local_attention // 2, which is both halves)."""
    left, right = local_attention
    if (left, right) == (-1, -1):
        return None
    if left != right or left < 0:
        raise MaskcError("ModernBERT local_attention %r: maskc reads a symmetric window (w, w)" % (local_attention,))
    return "(abs(q - kv) <= %d)" % left


def _padding_from_additive(mask, layer):
    """The [B, S] keep mask of a 4-D additive mask that is a 2-D padding mask
    expanded over the queries (0 keep, the dtype's minimum drop), as
    transformers' _prepare_4d_attention_mask makes it; MaskcError when the
    mask is anything else (one device sync)."""
    import torch
    if mask is None:
        return None
    if mask.dim() != 4 or mask.shape[1] != 1:
        raise MaskcError("%s: attention mask of shape %s; want [batch, 1, queries, keys]" % (layer,
                                                                                          tuple(mask.shape)))
    keep = mask[:, 0, 0, :] == 0
    rebuilt = torch.where(keep, torch.zeros((), dtype=mask.dtype, device=mask.device),
                          torch.full((), torch.finfo(mask.dtype).min, dtype=mask.dtype, device=mask.device))
    if not bool((mask == rebuilt[:, None, None, :]).all()):
        raise MaskcError("%s: the 4-D additive attention mask is not a padding mask expanded over the queries; "
                         "maskc cannot run an arbitrary additive mask exactly" % layer)
    return None if bool(keep.all()) else keep


def _modernbert_attention(apply_rotary):
    """An attention function in the form of ModernBERT's own table
    (MODERNBERT_ATTENTION_FUNCTION), for transformers versions whose
    ModernBERT does not go through AttentionInterface."""
    def forward(module, qkv, attention_mask=None, sliding_window_mask=None, position_ids=None,
                local_attention=(-1, -1), bs=None, dim=None, position_embeddings=None, **_kwargs):
        layer = _layer_name(module)
        cos, sin = position_embeddings
        query, key, value = qkv.transpose(3, 1).unbind(dim=2)
        query, key = apply_rotary(query, key, cos, sin)
        expr = modernbert_window_expr(local_attention)
        keep = _padding_from_additive(attention_mask, layer)
        B, _, S, _ = query.shape
        buffers = []
        if keep is not None:
            lw = _Lowering()
            p = "(%s[b, kv] != 0)" % lw.buffer("pad", keep)
            expr = p if expr is None else "(%s & %s)" % (expr, p)
            buffers = lw.buffers
        info = MaskInfo(expr, buffers, B, S, S, source="ModernBERT local_attention %r" % (local_attention,))
        dropout = module.attention_dropout if module.training else 0.0
        out, _ = attention_forward(module, query, key, value, info, scaling=module.head_dim ** -0.5,
                                   dropout=dropout)
        return (out.reshape(bs, -1, dim),)
    return forward


def _register_modernbert(name):
    """Adds name to ModernBERT's own attention table where the installed
    transformers has one; returns whether it did."""
    try:
        from transformers.models.modernbert import modeling_modernbert as mb
    except ImportError:
        return False
    table = getattr(mb, "MODERNBERT_ATTENTION_FUNCTION", None)
    if not isinstance(table, dict):
        return False
    table[name] = _modernbert_attention(mb.apply_rotary_pos_emb)
    return True


def register(name=NAME, flex=None, blocks=None, defines=None, buffers=None):
    """Registers attn_implementation=name (default "maskc") with
    transformers: attention_forward as its attention function and
    mask_interface as its mask builder. flex and blocks ({layer type:
    block name}, e.g. {"full_attention": "global", "sliding_attention":
    "local"}) run the user's .flex blocks instead of derived ones; buffers
    ({name: tensor} or fn(module, mask_info) -> {name: tensor}) feeds them.
    Returns name."""
    if (flex is None) != (blocks is None):
        raise MaskcError("register: flex= and blocks= go together (a .flex file and {layer type: block name})")
    global _STATE
    _STATE = _State(os.fspath(flex) if flex is not None else None, blocks, defines, buffers)
    if flex is not None:
        _user_program()  # compile now: errors in the file surface at registration
    from transformers import AttentionInterface
    try:
        from transformers import AttentionMaskInterface
    except ImportError:
        from transformers.masking_utils import AttentionMaskInterface
    AttentionInterface.register(name, attention_forward)
    AttentionMaskInterface.register(name, mask_interface)
    _register_modernbert(name)
    import transformers.masking_utils as mu
    _pass_prepared_masks(mu)
    return name


def _pass_prepared_masks(mu):
    """Makes transformers' mask creation return a MaskInfo it is handed as
    it is, as it does for a prepared 4-D tensor or BlockMask: generate()
    with a StaticCache builds each step's mask ahead of the forward
    (create_masks_for_generate, through mask_interface) and passes it in
    as attention_mask, and create_causal_mask's preprocessing would read it
    as a 2-D padding mask (run 23a: MaskNotATensor on attention_mask.ndim
    in Llama's static-cache generate). Wraps
    masking_utils._preprocess_mask_arguments once; other masks go through
    unchanged."""
    orig = getattr(mu, "_preprocess_mask_arguments", None)
    if orig is None or getattr(orig, "_maskc_passes_mask_info", False):
        return

    def preprocess(*args, **kwargs):
        args = list(args)
        if "attention_mask" in kwargs:
            mask = kwargs["attention_mask"]
        elif len(args) > 2:
            mask = args[2]
        else:
            mask = None
        if not isinstance(mask, MaskInfo):
            return orig(*args, **kwargs)
        # The early exit: (True, the prepared mask, then None for every
        # further item of this transformers version's tuple).
        if "attention_mask" in kwargs:
            kwargs["attention_mask"] = None
        else:
            args[2] = None
        rest = orig(*args, **kwargs)
        return (True, mask) + (None,) * (len(rest) - 2)

    preprocess._maskc_passes_mask_info = True
    preprocess.__wrapped__ = orig
    mu._preprocess_mask_arguments = preprocess
