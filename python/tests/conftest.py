"""Fixtures for the package's pure-Python tests (no torch, no GPU).

The tests run the real maskc binary: $MASKC_BIN (the Go test in python/
builds it and sets it), else one built here with `go build`. Neither being
possible is a test failure, not a skip.
"""
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)
EXAMPLES = os.path.join(REPO, "examples")

sys.path.insert(0, PYTHON_DIR)


@pytest.fixture(scope="session")
def maskc_bin(tmp_path_factory):
    """The path of a maskc binary built from this checkout."""
    env = os.environ.get("MASKC_BIN")
    if env:
        return env
    go = shutil.which("go")
    assert go, "set MASKC_BIN or put go on PATH: the tests run the real maskc binary"
    out = str(tmp_path_factory.mktemp("bin") / "maskc")
    subprocess.run([go, "build", "-o", out, "./cmd/maskc"], cwd=REPO, check=True,
                   env=dict(os.environ, CGO_ENABLED="0"))
    return out


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty cache directory, also set as $MASKC_CACHE_DIR."""
    d = tmp_path / "cache"
    monkeypatch.setenv("MASKC_CACHE_DIR", str(d))
    return str(d)


class FakeTensor:
    """The tensor protocol checks.py reads: shape, stride(), device,
    data_ptr(), element_size(), is_contiguous(), and a dtype name."""

    _sizes = {"bf16": 2, "f16": 2, "f32": 4, "f64": 8, "i32": 4, "i64": 8, "bool": 1}

    def __init__(self, shape, dtype="bf16", device="cuda:0", strides=None, ptr=4096):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        if strides is None:
            strides, acc = [], 1
            for n in reversed(self.shape):
                strides.insert(0, acc)
                acc *= max(n, 1)
        self._strides = tuple(strides)
        self._ptr = ptr

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._ptr

    def element_size(self):
        return self._sizes[self.dtype]

    def is_contiguous(self):
        return self._strides == FakeTensor(self.shape, self.dtype)._strides

    def transpose12(self):
        """The view with dims 1 and 2 swapped (bshd <-> bhsd), same memory."""
        s = self.shape
        st = self._strides
        return FakeTensor((s[0], s[2], s[1], s[3]), self.dtype, self.device, (st[0], st[2], st[1], st[3]), self._ptr)


@pytest.fixture
def fake():
    """FakeTensor, the class."""
    return FakeTensor


def dtype_name(t):
    """checks.py's dtype_name for FakeTensor."""
    return t.dtype
