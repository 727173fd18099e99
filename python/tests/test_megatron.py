"""The Megatron-core adapter's configuration rules (maskc.megatron): which
block a layer computes, and every Megatron setting the block cannot compute
exactly refused with the reason."""
import pytest

from maskc.diagnostics import MaskcError
from maskc.megatron import LayerFacts, MaskcAttentionConfig, check_layer

SCALE = 0.125


def facts(**kw):
    base = dict(layer_number=1, head_dim=64, dtype="bf16", softmax_scale=SCALE, block_head_dim=64,
                block_dtype="bf16", block_scale=SCALE)
    base.update(kw)
    return LayerFacts(**base)


def test_blocks_per_layer():
    cfg = MaskcAttentionConfig("m.flex", blocks=["swa", "global", "swa"])
    assert [check_layer(cfg, facts(layer_number=n)) for n in (1, 2, 3)] == ["swa", "global", "swa"]
    assert check_layer(MaskcAttentionConfig("m.flex", "doc"), facts(layer_number=7)) == "doc"
    cfg = MaskcAttentionConfig("m.flex", {2: "global"})
    with pytest.raises(MaskcError, match="no attention block is configured for layer 1"):
        check_layer(cfg, facts())


@pytest.mark.parametrize("kw, msg", [
    (dict(attention_dropout=0.1), "attention_dropout = 0.1"),
    (dict(softmax_type="learnable"), "softmax_type = 'learnable'"),
    (dict(window_size=(128, 0)), "Megatron's own sliding window"),
    (dict(apply_query_key_layer_scaling=True), "apply_query_key_layer_scaling"),
    (dict(head_dim=128), "head dimension 128; the block is built for head_dim = 64"),
    (dict(dtype="f16"), "computes in f16; the block in bf16"),
    (dict(softmax_scale=0.1), "softmax scale 0.1; the block's is 0.125"),
    (dict(context_parallel_size=2, cp_comm_type="a2a+p2p"), r"cp_comm_type 'a2a\+p2p'"),
    (dict(context_parallel_size=2, cp_comm_type=["p2p", "all_gather"], layer_number=2), "'all_gather'"),
    (dict(block_generated=False), "no generated kernel"),
])
def test_inexact_settings_are_refused(kw, msg):
    with pytest.raises(MaskcError, match=msg):
        check_layer(MaskcAttentionConfig("m.flex", "doc"), facts(**kw))


def test_exact_settings_pass_and_cp_rules():
    cfg = MaskcAttentionConfig("m.flex", "doc")
    assert check_layer(cfg, facts(context_parallel_size=4, cp_comm_type="p2p")) == "doc"
    assert check_layer(cfg, facts(context_parallel_size=2, cp_comm_type=["p2p"])) == "doc"
    assert check_layer(cfg, facts(context_parallel_size=2, cp_comm_type="a2a")) == "doc"
    sim = MaskcAttentionConfig("m.flex", "doc", cp_simulate=2)
    with pytest.raises(MaskcError, match="simulate on one rank, or run the real ring"):
        check_layer(sim, facts(context_parallel_size=2))
    with pytest.raises(MaskcError, match="sink"):
        check_layer(sim, facts(block_has_sink=True))


@pytest.mark.parametrize("kw, msg", [
    (dict(flex="", blocks="a"), "must name a .flex file"),
    (dict(flex="m.flex", blocks=3), "blocks must be"),
    (dict(flex="m.flex", blocks={0: "a"}), "want layer numbers >= 1"),
    (dict(flex="m.flex", blocks="a", cp_simulate=0), "cp_simulate = 0"),
    (dict(flex="m.flex", blocks="a", cp_layout="striped"), "cp_layout = 'striped'"),
])
def test_bad_configs(kw, msg):
    with pytest.raises(MaskcError, match=msg):
        MaskcAttentionConfig(**kw)
