"""gpu/runlog.py: every emitted object is one JSON line on stdout and in the file."""
import json

import pytest

from runlog import JsonLog


def test_lines_on_stdout_and_in_file(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    emit = JsonLog(str(path))
    emit(kind="env", gpu="H200")
    emit(kind="case", case="causal", ratio=1.058)
    emit.close()
    want = [{"kind": "env", "gpu": "H200"}, {"kind": "case", "case": "causal", "ratio": 1.058}]
    assert [json.loads(l) for l in path.read_text().splitlines()] == want
    assert [json.loads(l) for l in capsys.readouterr().out.splitlines()] == want


def test_append_keeps_earlier_lines(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    path.write_text('{"kind": "earlier"}\n')
    emit = JsonLog(str(path), "a")
    emit(kind="later")
    emit.close()
    assert [json.loads(l)["kind"] for l in path.read_text().splitlines()] == ["earlier", "later"]


def test_bad_mode(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        JsonLog(str(tmp_path / "x"), "r")
