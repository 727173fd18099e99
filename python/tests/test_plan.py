"""Dispatch by the plan: which kernel runs a call, on the real plans of the examples."""
import json
import os
import subprocess

import pytest

from conftest import EXAMPLES
from maskc.diagnostics import MaskcError
from maskc.plan import CallFacts, Decision, Plan, choose, precondition_holds


@pytest.fixture(scope="module")
def plans(maskc_bin):
    """{block name: Decision} over every example, from `maskc compile` (so
    generated blocks carry their kernel object)."""
    out = {}
    for f in sorted(os.listdir(EXAMPLES)):
        if f.endswith(".flex"):
            raw = subprocess.run([maskc_bin, "classify", "--json", os.path.join(EXAMPLES, f)], check=True,
                                 capture_output=True, text=True).stdout
            for name, d in Plan(json.loads(raw)).attentions.items():
                out[f[:-5] + "/" + name] = d
    return out


def with_kernel(d):
    """The decision as compile writes it: a kernel object where one is generated."""
    if d.entry == "maskc_generated" or d.fallback == "generated":
        d.kernel = {"entry": "maskc_attn_fwd"}
    return d


@pytest.mark.parametrize("block, facts, want", [
    # full attention: SDPA on CUDA, at any lengths; Turbo where it imports.
    ("full/encoder", CallFacts(128, 128), "sdpa"),
    ("full/encoder", CallFacts(100, 300), "sdpa"),
    ("full/encoder", CallFacts(128, 128, turbo_available=True), "turbo"),
    ("full/encoder", CallFacts(128, 128, platform="hip", turbo_available=True), "turbo"),
    # causal written top-left (q >= kv): SDPA or Turbo only when Sq == Skv.
    ("causal/decoder", CallFacts(128, 128), "sdpa"),
    ("causal/decoder", CallFacts(100, 300), "generated"),
    ("causal/decoder", CallFacts(300, 100, turbo_available=True), "generated"),
    ("causal/decoder", CallFacts(128, 128, return_lse=True), "generated"),
    ("causal/decoder", CallFacts(128, 128, platform="hip"), "generated"),
    # a score, a sink, ALiBi or a window: never SDPA.
    ("alibi/alibi_layer", CallFacts(128, 128), "generated"),
    ("alibi/alibi_layer", CallFacts(128, 128, turbo_available=True), "turbo"),
    ("gpt_oss/layer_1", CallFacts(64, 64), "generated"),
    ("sliding_window/local_layer", CallFacts(64, 64), "generated"),
    ("document_causal/packed_layer", CallFacts(64, 64), "generated"),
    ("document_causal/packed_layer", CallFacts(64, 64, turbo_available=True), "turbo"),
    ("softcap/capped_layer", CallFacts(64, 64, turbo_available=True), "generated"),
    ("relative_bias/biased_layer", CallFacts(64, 64), "generated"),
])
def test_choose(plans, block, facts, want):
    assert choose(with_kernel(plans[block]), facts).kind == want


def test_sdpa_arguments(plans):
    c = choose(plans["causal/decoder"], CallFacts(128, 128))
    assert (c.kind, c.is_causal, c.scale) == ("sdpa", True, None)
    assert choose(plans["full/encoder"], CallFacts(128, 128)).is_causal is False


def test_failed_precondition_says_why(plans):
    c = choose(with_kernel(plans["causal/decoder"]), CallFacts(100, 300, turbo_available=True))
    assert c.kind == "generated" and "Sq=100 != Skv=300" in c.note and "sq == skv" in c.note


@pytest.mark.parametrize("block, facts, backend, msg", [
    ("causal/decoder", CallFacts(100, 300, turbo_available=True), "turbo", "Sq=100 != Skv=300"),
    ("causal/decoder", CallFacts(128, 128), "turbo", "primus_turbo is not importable"),
    ("causal/decoder", CallFacts(128, 128, True, turbo_available=True), "turbo", "LSE is requested"),
    ("dilated_window/dilated_layer", CallFacts(128, 128, turbo_available=True), "turbo", "plan for block"),
    ("alibi/alibi_layer", CallFacts(128, 128), "sdpa", "alibi"),
    ("causal/decoder", CallFacts(100, 300), "sdpa", "preconditions fail"),
    ("causal/decoder", CallFacts(128, 128, platform="hip"), "sdpa", "CUDA only"),
    ("causal/decoder", CallFacts(128, 128), "fast", "want one of"),
])
def test_forced_backend_refuses(plans, block, facts, backend, msg):
    with pytest.raises(MaskcError, match=msg):
        choose(with_kernel(plans[block]), facts, backend=backend)


def test_no_kernel_for_call_raises(plans):
    # The full block has no generated kernel (no fallback); asking for the LSE
    # leaves nothing exact.
    with pytest.raises(MaskcError, match="no generated kernel"):
        choose(plans["full/encoder"], CallFacts(128, 128, return_lse=True))


def test_forced_generated_skips_sdpa(plans):
    assert choose(with_kernel(plans["causal/decoder"]), CallFacts(128, 128), backend="generated").kind == "generated"


@pytest.mark.parametrize("cond, sq, skv, ok", [
    ("sq == skv", 5, 5, True), ("sq==skv", 5, 6, False), ("sq <= skv", 5, 6, False),
])
def test_precondition_holds(cond, sq, skv, ok):
    assert precondition_holds(cond, CallFacts(sq, skv))[0] is ok


@pytest.mark.parametrize("doc, msg", [
    ({"version": 2, "attentions": []}, "schema version 2"),
    ([], "not an object"),
    ({"version": 1, "attentions": [{"name": "a"}]}, "lacks"),
    ({"version": 1, "attentions": [{"name": "a", "pattern": "x", "entry": "other_func", "kwargs": {}}]}, "other_func"),
])
def test_bad_plans(doc, msg):
    with pytest.raises(MaskcError, match=msg):
        Plan(doc)


def test_unknown_block_lists_names():
    p = Plan({"version": 1, "attentions": [{"name": "a", "pattern": "full", "entry": "flash_attn_func"}]})
    with pytest.raises(MaskcError, match="no attention block 'b'; the file declares: a"):
        p.attention("b")
