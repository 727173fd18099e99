"""Fixtures for the tests of the GPU scripts' tooling (gpu/harness.py,
gpu/buffers.py, gpu/runlog.py): pure Python on the CPU, under real torch
(Debian's python3-torch; .ci/run installs it) or python/tests' stand-in.

gpu/ (the tooling, imported as the scripts import it: `import harness`),
python/ (the maskc package it launches through) and python/tests (the
stand-in torch and driver) go on sys.path; the package tests' fixtures
(maskc_bin, cache_dir) are theirs, loaded from python/tests/conftest.py.
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = os.path.dirname(HERE)
REPO = os.path.dirname(GPU)
PY_TESTS = os.path.join(REPO, "python", "tests")

for p in (PY_TESTS, os.path.join(REPO, "python"), GPU):
    if p not in sys.path:
        sys.path.insert(0, p)


def _package_fixtures():
    spec = importlib.util.spec_from_file_location("maskc_package_conftest", os.path.join(PY_TESTS, "conftest.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_pkg = _package_fixtures()
maskc_bin, cache_dir = _pkg.maskc_bin, _pkg.cache_dir
EXAMPLES = _pkg.EXAMPLES
