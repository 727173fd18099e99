"""The scripts in gpu/ run with gpu/ first on sys.path, so a module there
named as one of the standard library's replaces it for every import in the
process: gpu/profile.py did so for `profile`, which torch's dynamo imports
through cProfile, and every torch.compile in gpu/ failed at import (run 35)."""
import os
import sys

from conftest import REPO


def test_no_gpu_module_shadows_the_standard_library():
    gpu = os.path.join(REPO, "gpu")
    mods = {f[:-3] for f in os.listdir(gpu) if f.endswith(".py")}
    mods |= {d for d in os.listdir(gpu) if os.path.isfile(os.path.join(gpu, d, "__init__.py"))}
    assert sorted(mods & set(sys.stdlib_module_names)) == []
