"""maskc as Megatron-core's core attention: the configuration and its rules.

A Megatron-core transformer layer spec names its core-attention module
(SelfAttentionSubmodules.core_attention, e.g. the local spec's
DotProductAttention); maskc.megatron_core.MaskcDotProductAttention takes its
place, built per layer with the same arguments, and computes the attention
block of a .flex file that this configuration names for that layer:

    from maskc.megatron import MaskcAttentionConfig
    from maskc.megatron_core import maskc_gpt_layer_local_spec
    cfg = MaskcAttentionConfig("model.flex", blocks={1: "swa", 2: "global"}, cp_simulate=1)
    spec = maskc_gpt_layer_local_spec(cfg)          # Megatron's local spec, core attention replaced

This module holds what needs neither torch nor Megatron: the configuration
and check_layer, which refuses (MaskcError, never a silent substitute) every
Megatron setting the block cannot compute exactly: a layer with no block,
dropout on the attention probabilities, a softmax variant, Megatron's own
sliding window, a softmax scale other than the block's, a head dimension or
dtype other than the block's, a context-parallel communication other than
the p2p ring (maskc.cp.ring_attention) or the all-to-all over heads (a2a,
maskc.cp.ulysses_attention). The .flex block is the attention's definition: Megatron's
attn_mask_type is not consulted, and an attention_mask tensor passed at run
time is refused (it would be ignored otherwise).
"""
from .diagnostics import MaskcError

__all__ = ["MaskcAttentionConfig", "LayerFacts", "check_layer", "cp_comm_type_of", "CP_LAYOUTS"]

#: Layouts of a context-parallel rank's sequence chunks (maskc.cp.LAYOUTS):
#: Megatron's get_batch_on_this_cp_rank gives rank r chunks r and 2cp-1-r,
#: which is "zigzag".
CP_LAYOUTS = ("zigzag", "contiguous")


class MaskcAttentionConfig:
    """Which .flex block each layer computes.

    flex: path of the .flex file; defines: its -D values; blocks: one block
    name for every layer, or {layer_number: name} / a list indexed by
    layer_number - 1 (Megatron numbers layers from 1); cp_simulate: run the
    ring of context parallelism over that many simulated ranks inside each
    call (1: one call; for checking CP on one GPU); cp_layout: how the
    sequence is cut over ranks, for simulated and real CP; deterministic:
    bitwise-reproducible backward."""

    def __init__(self, flex, blocks, defines=None, cp_simulate=1, cp_layout="zigzag", deterministic=False):
        if not isinstance(flex, str) or not flex:
            raise MaskcError("MaskcAttentionConfig: flex must name a .flex file; got %r" % (flex,))
        if isinstance(blocks, str):
            pass
        elif isinstance(blocks, (list, tuple)):
            blocks = {i + 1: b for i, b in enumerate(blocks)}
        elif isinstance(blocks, dict):
            blocks = dict(blocks)
        else:
            raise MaskcError("MaskcAttentionConfig: blocks must be a block name, a list or a {layer: block} "
                             "dict; got %r" % (blocks,))
        if isinstance(blocks, dict):
            for k, v in blocks.items():
                if not isinstance(k, int) or isinstance(k, bool) or k < 1 or not isinstance(v, str):
                    raise MaskcError("MaskcAttentionConfig: blocks[%r] = %r: want layer numbers >= 1 mapped to "
                                     "block names" % (k, v))
        if not isinstance(cp_simulate, int) or isinstance(cp_simulate, bool) or cp_simulate < 1:
            raise MaskcError("MaskcAttentionConfig: cp_simulate = %r: want an int >= 1" % (cp_simulate,))
        if cp_layout not in CP_LAYOUTS:
            raise MaskcError("MaskcAttentionConfig: cp_layout = %r: want one of %s" %
                             (cp_layout, ", ".join(CP_LAYOUTS)))
        self.flex, self.blocks, self.defines = flex, blocks, dict(defines or {})
        self.cp_simulate, self.cp_layout, self.deterministic = cp_simulate, cp_layout, deterministic

    def block_for(self, layer_number):
        """The block name of a layer; MaskcError when the config names none."""
        if isinstance(self.blocks, str):
            return self.blocks
        if layer_number not in self.blocks:
            raise MaskcError("%s: no attention block is configured for layer %d (configured: %s); maskc does not "
                             "pick one" % (self.flex, layer_number,
                                           ", ".join("%d: %s" % kv for kv in sorted(self.blocks.items()))))
        return self.blocks[layer_number]


class LayerFacts:
    """What check_layer compares: the Megatron layer's settings (from its
    TransformerConfig and constructor arguments) and the block's (from
    maskc's plan). Plain values, so the rules run without torch."""

    def __init__(self, layer_number, head_dim, dtype, softmax_scale, attention_dropout=0.0, softmax_type="vanilla",
                 window_size=None, apply_query_key_layer_scaling=False, context_parallel_size=1, cp_comm_type=None,
                 block_head_dim=None, block_dtype=None, block_scale=None, block_has_sink=False, block_generated=True):
        self.layer_number, self.head_dim, self.dtype, self.softmax_scale = layer_number, head_dim, dtype, softmax_scale
        self.attention_dropout, self.softmax_type, self.window_size = attention_dropout, softmax_type, window_size
        self.apply_query_key_layer_scaling = apply_query_key_layer_scaling
        self.context_parallel_size, self.cp_comm_type = context_parallel_size, cp_comm_type
        self.block_head_dim, self.block_dtype, self.block_scale = block_head_dim, block_dtype, block_scale
        self.block_has_sink, self.block_generated = block_has_sink, block_generated


def cp_comm_type_of(kind, layer_number):
    """The layer's cp_comm_type (Megatron's setting is one string or one per layer)."""
    return _cp_comm_type(kind, layer_number)


def _cp_comm_type(kind, layer_number):
    if isinstance(kind, (list, tuple)):
        return kind[layer_number - 1] if 0 < layer_number <= len(kind) else None
    return kind


def check_layer(cfg, facts):
    """The block name for this layer, or MaskcError naming every setting of
    the layer that the block cannot compute exactly."""
    block = cfg.block_for(facts.layer_number)
    where = "layer %d (block %s of %s)" % (facts.layer_number, block, cfg.flex)
    why = []
    if not facts.block_generated:
        why.append("maskc wrote no generated kernel for the block, which the adapter runs")
    if facts.attention_dropout:
        why.append("attention_dropout = %g: maskc's kernels have no dropout on the attention probabilities "
                   "(set it to 0)" % facts.attention_dropout)
    if facts.softmax_type != "vanilla":
        why.append("softmax_type = %r: write the sink into the .flex block instead" % (facts.softmax_type,))
    if facts.window_size is not None:
        why.append("window_size = %r: Megatron's own sliding window would be ignored; write it into the .flex "
                   "block's mask" % (facts.window_size,))
    if facts.apply_query_key_layer_scaling:
        why.append("apply_query_key_layer_scaling changes the softmax scale per layer")
    if facts.block_head_dim is not None and facts.head_dim != facts.block_head_dim:
        why.append("head dimension %d; the block is built for head_dim = %d" % (facts.head_dim, facts.block_head_dim))
    if facts.block_dtype is not None and facts.dtype != facts.block_dtype:
        why.append("the layer computes in %s; the block in %s" % (facts.dtype, facts.block_dtype))
    if facts.block_scale is not None and facts.softmax_scale is not None and \
            abs(facts.softmax_scale - facts.block_scale) > 1e-12 * max(1.0, abs(facts.block_scale)):
        why.append("softmax scale %.9g; the block's is %.9g (set scale in the .flex block)" %
                   (facts.softmax_scale, facts.block_scale))
    if facts.block_has_sink and (facts.context_parallel_size > 1 or cfg.cp_simulate > 1):
        why.append("the block has a sink, which the context-parallel ring does not merge yet")
    if facts.context_parallel_size > 1:
        kind = _cp_comm_type(facts.cp_comm_type, facts.layer_number)
        if kind not in (None, "p2p", "a2a"):
            why.append("cp_comm_type %r: maskc runs context parallelism as the p2p ring or the a2a exchange over "
                       "heads" % (kind,))
        if cfg.cp_simulate > 1:
            why.append("cp_simulate = %d with context_parallel_size = %d: simulate on one rank, or run the "
                       "real ring, not both" % (cfg.cp_simulate, facts.context_parallel_size))
    if why:
        raise MaskcError("%s cannot run this Megatron layer exactly: %s" % (where, "; ".join(why)))
    return block
