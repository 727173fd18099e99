"""python/gpu_tests/flexcheck.py's runner, which the GPU checks of .flex
texts (check_reads.py, check_buffer_forms.py) share, on the host with the
stand-in torch: every check runs, in order, and one that raises is a
failure whose traceback is logged, not the end of the run."""
import os
import sys

import pytest

import fake_torch as ft

GPU_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu_tests")


@pytest.fixture
def flexcheck(monkeypatch):
    ft.install(monkeypatch)
    monkeypatch.syspath_prepend(GPU_TESTS)
    monkeypatch.delitem(sys.modules, "flexcheck", raising=False)
    import flexcheck
    return flexcheck


def test_run_checks_runs_each_and_counts_a_raise_as_failed(flexcheck):
    ran, lines = [], []

    def passes(prog, gen, log):
        ran.append(("passes", prog, gen))
        log("inside passes")
        return 1  # truthy: a pass

    def raises(prog, gen, log):
        ran.append(("raises", prog, gen))
        raise ValueError("broken check")

    def fails(prog, gen, log):
        ran.append(("fails", prog, gen))
        return False

    got = flexcheck.run_checks((("a", passes), ("b", raises), ("c", fails)), "PROG", "GEN", lines.append)
    assert list(got.items()) == [("a", True), ("b", False), ("c", False)]
    assert ran == [("passes", "PROG", "GEN"), ("raises", "PROG", "GEN"), ("fails", "PROG", "GEN")]
    assert lines[0] == "inside passes"
    assert lines[1].startswith("a: ok (")
    assert "ValueError: broken check" in lines[2]
    assert lines[3].startswith("b: FAILED (") and lines[4].startswith("c: FAILED (")
