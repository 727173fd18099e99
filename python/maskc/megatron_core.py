"""maskc's core attention for Megatron-core (imports torch and megatron.core;
the configuration and its rules are maskc.megatron).

MaskcDotProductAttention has DotProductAttention's constructor and forward
(sbhd query [sq, b, np, hn], key/value [sk, b, ng, hn], returning
[sq, b, np * hn]) and computes the attention block that a
MaskcAttentionConfig names for its layer with maskc's generated kernel,
forward and backward. Buffers the block reads (document ids, a slope table)
come from attention_buffers(...), a context around the model's forward:

    with attention_buffers(doc=doc_ids):        # global [S] ids, int32, on the GPU
        loss = model(tokens, position_ids, None, labels=labels)

Context parallelism: with cp_simulate = N each call splits its sequence over N
simulated ranks (cp_layout) and runs maskc.cp's ring, merging through the
LSEs; with Megatron's context_parallel_size > 1 the layer holds its rank's
chunks (Megatron's zigzag batch split) and runs maskc.cp.ring_attention (p2p)
or maskc.cp.ulysses_attention (a2a) over the context-parallel group (checked
on the CPU with gloo, not yet on several GPUs).
"""
import contextlib
import functools
import math
import threading

import torch

from megatron.core.transformer.module import MegatronModule

from . import cp as _cp
from . import torch as _mt
from .diagnostics import MaskcError
from .megatron import LayerFacts, check_layer, cp_comm_type_of

__all__ = ["MaskcDotProductAttention", "attention_buffers", "maskc_core_attention", "maskc_gpt_layer_local_spec"]

_state = threading.local()


@contextlib.contextmanager
def attention_buffers(**buffers):
    """The captured tensors ({name: tensor}, global) every maskc core
    attention called inside the block reads."""
    prev = getattr(_state, "buffers", None)
    _state.buffers = dict(buffers)
    try:
        yield
    finally:
        _state.buffers = prev


_programs = {}
_programs_lock = threading.Lock()


def _program(cfg):
    key = (cfg.flex, tuple(sorted(cfg.defines.items())))
    with _programs_lock:
        if key not in _programs:
            _programs[key] = _mt.load(cfg.flex, defines=cfg.defines or None)
        return _programs[key]


_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}


class MaskcDotProductAttention(MegatronModule):
    """Megatron-core core attention computed by a maskc .flex block."""

    def __init__(self, config, layer_number, attn_mask_type, attention_type, attention_dropout=None,
                 softmax_scale=None, cp_comm_type=None, pg_collection=None, *, maskc_config):
        super().__init__(config=config)
        self.config, self.maskc_config = config, maskc_config
        self.layer_number = max(1, layer_number)
        tp = 1
        if pg_collection is not None and getattr(pg_collection, "tp", None) is not None:
            tp = pg_collection.tp.size()
        self.pg_collection = pg_collection
        self.heads = config.num_attention_heads // tp
        self.groups = config.num_query_groups // tp if config.num_query_groups else self.heads
        self.h_offset = 0
        if tp > 1:  # heads sharded by tensor parallelism: this rank's heads in the global head table
            self.h_offset = pg_collection.tp.rank() * self.heads
        self.h_total = config.num_attention_heads if tp > 1 else 0
        head_dim = config.kv_channels
        scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(head_dim)
        dtype = "bf16" if config.bf16 else "f16" if config.fp16 else "f32"
        prog = _program(maskc_config)
        block = maskc_config.block_for(self.layer_number)
        if block not in prog.names:
            raise MaskcError("%s has no attention block %s (it has: %s)" % (maskc_config.flex, block,
                                                                          ", ".join(prog.names)))
        attn = prog.attention(block)
        k = attn.decision.kernel or {}
        facts = LayerFacts(
            self.layer_number, head_dim, dtype, scale,
            attention_dropout=config.attention_dropout if attention_dropout is None else attention_dropout,
            softmax_type=getattr(config, "softmax_type", "vanilla"), window_size=getattr(config, "window_size", None),
            apply_query_key_layer_scaling=getattr(config, "apply_query_key_layer_scaling", False),
            context_parallel_size=getattr(config, "context_parallel_size", 1), cp_comm_type=cp_comm_type,
            block_head_dim=k.get("head_dim"), block_dtype={"fp16": "f16"}.get(k.get("dtype"), k.get("dtype")),
            block_scale=k.get("scale"), block_has_sink=bool(k.get("sink")),
            block_generated=attn.decision.has_generated)
        self.block = check_layer(maskc_config, facts)
        self.attn = attn
        self.cp_size = getattr(config, "context_parallel_size", 1)
        self.cp_kind = cp_comm_type_of(cp_comm_type, self.layer_number) or "p2p"
        if self.cp_size > 1 and self.cp_kind == "a2a" and tp > 1:
            raise MaskcError("layer %d: cp_comm_type a2a with tensor parallelism %d: the head frame of both is not "
                             "composed yet; use p2p" % (self.layer_number, tp))

    def forward(self, query, key, value, attention_mask, attn_mask_type=None, attention_bias=None,
                packed_seq_params=None, **extra):
        """sbhd attention of the layer's block: [sq, b, np * hn]."""
        if attention_mask is not None:
            raise MaskcError("layer %d: an attention_mask tensor was passed; the .flex block %s is the mask (pass "
                             "attention_mask=None, and document ids through attention_buffers)" %
                             (self.layer_number, self.block))
        if attention_bias is not None:
            raise MaskcError("layer %d: attention_bias is not supported: write the bias as the block's score" %
                             self.layer_number)
        if packed_seq_params is not None:
            raise MaskcError("layer %d: packed_seq_params (thd) is not supported yet: pass sbhd batches and the "
                             "document ids through attention_buffers" % self.layer_number)
        if extra:
            raise MaskcError("layer %d: unsupported core-attention arguments %s" % (self.layer_number,
                                                                                   ", ".join(sorted(extra))))
        buffers = dict(getattr(_state, "buffers", None) or {})
        # sbhd -> bshd, contiguous rows for the kernel
        q, k, v = (t.transpose(0, 1).contiguous() for t in (query, key, value))
        cfg = self.maskc_config
        heads = (self.h_offset, self.h_total)
        if self.cp_size > 1 and self.cp_kind == "a2a":
            out, _ = _cp.ulysses_attention(self.attn, q, k, v, group=self.pg_collection.cp, layout=cfg.cp_layout,
                                           buffers=buffers, tensor_layout="bshd", deterministic=cfg.deterministic)
        elif self.cp_size > 1:
            out, _ = _cp.ring_attention(self.attn, q, k, v, group=self.pg_collection.cp, layout=cfg.cp_layout,
                                        buffers=buffers, tensor_layout="bshd", deterministic=cfg.deterministic,
                                        heads=heads)
        elif cfg.cp_simulate > 1:
            n = cfg.cp_simulate
            qs, ks, vs = (_cp.split_sequence(t, n, cfg.cp_layout, "bshd") for t in (q, k, v))
            outs, _ = _cp.ring_attention_simulated(self.attn, qs, ks, vs, cfg.cp_layout, buffers, "bshd",
                                                   cfg.deterministic, heads)
            out = _cp.gather_sequence(outs, cfg.cp_layout, "bshd")
        else:
            frame = _cp.Frame(h_offset=self.h_offset, h_total=self.h_total) if self.h_total else None
            out = self.attn(q, k, v, layout="bshd", buffers=buffers, deterministic=cfg.deterministic,
                            backend="generated", frame=frame)
        sq, b = query.shape[0], query.shape[1]
        return out.transpose(0, 1).reshape(sq, b, -1)


def maskc_core_attention(cfg):
    """The core_attention builder of a layer spec: MaskcDotProductAttention
    with this configuration."""
    return functools.partial(MaskcDotProductAttention, maskc_config=cfg)


def maskc_gpt_layer_local_spec(cfg, **kwargs):
    """Megatron-core's local GPT layer spec (get_gpt_layer_local_spec(**kwargs))
    with its core attention replaced by maskc's for cfg."""
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    spec = get_gpt_layer_local_spec(**kwargs)
    attn = spec.submodules.self_attention
    attn.submodules.core_attention = maskc_core_attention(cfg)
    return spec
