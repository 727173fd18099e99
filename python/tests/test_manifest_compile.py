"""maskc compile's own manifest.json, read by maskc.abi for every example."""
import os

import pytest

from conftest import EXAMPLES
from maskc import abi, cache
from maskc.plan import Plan

FILES = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".flex"))
# the descriptor keys KernelSpec reads into its own types (tuples, BufferSpec, f16 for fp16)
_TYPED = {"buffers", "launch", "bwd_launch", "dtype", "sink", "reads"}


@pytest.mark.parametrize("name", FILES)
def test_every_generated_block_has_a_launchable_kernel(maskc_bin, cache_dir, name):
    e = cache.compile_flex(os.path.join(EXAMPLES, name), binary=maskc_bin)
    man = abi.read_manifest(e.directory)
    assert man is not None, "maskc compile writes manifest.json"
    plan = Plan(e.plan_json, man.descriptors)
    for dec in plan.attentions.values():
        if not dec.has_generated:
            assert dec.name not in man.kernels
            continue
        spec = man.kernel(dec.name)
        assert e.has(spec.source)
        # plan.json names the kernel's descriptor; the plan's kernel is the manifest's entry itself
        assert dec.kernel_name == spec.name and dec.kernel is spec.desc
        assert [b.name for b in spec.buffers] == [b["name"] for b in dec.kernel["buffers"]]
        assert spec.head_dim == dec.kernel["head_dim"] and spec.layout == dec.kernel["layout"]
        # every fact of the descriptor is an attribute of the spec under its JSON name
        for key, value in dec.kernel.items():
            got = getattr(spec, key)
            assert got == value or key in _TYPED, (key, got, value)
        for p in man.platforms:
            assert p.name in spec.launch
        sizes = dict(B=2, H=8, HKV=2, Sq=1000, Skv=1000)
        plat = abi.pick_platform(man.platforms, "cuda", "sm_90")
        block_n = spec.launch[plat.name][0]
        assert man.entries[spec.entry].grid_dims(sizes, man.block_m, block_n) == (8, 8, 2)
        if spec.flags_entry:
            assert spec.flag_bytes(sizes, block_n) > 0
