"""The case ids of the GPU suites: FLEX:ATTENTION, the .flex file's base
name and the attention block's, by which bench_ext.py, bwd_bench.py,
ncu_step.py, the benchmark's buffer contents (bench_ext_buffers.py's file)
and gpu/ab.sh name a generated kernel of a manifest. Free of torch, so that
host-side scripts (gpu/ab.sh gen, gpu/bench_ext.sh gen) read it too."""
import json
import os


def case_id(entry):
    """The case id of a manifest's kernel entry."""
    return os.path.basename(entry["flex"]).rsplit(".", 1)[0] + ":" + entry["attention"]


def manifest_case_ids(path):
    """The case ids of every kernel of the manifest at path, in its order."""
    return [case_id(k) for k in json.load(open(path))["kernels"]]
