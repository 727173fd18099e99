"""The content-addressed compile cache and the maskc subprocess, with the real binary."""
import json
import os
import shutil

import pytest

from conftest import EXAMPLES
from maskc import binary, cache
from maskc.diagnostics import MaskcError


@pytest.fixture
def flex(tmp_path):
    """A copy of examples/document_causal.flex that a test may edit."""
    p = tmp_path / "doc.flex"
    shutil.copy(os.path.join(EXAMPLES, "document_causal.flex"), p)
    return str(p)


@pytest.fixture
def calls(monkeypatch):
    """The maskc subcommands run, in order."""
    seen = []
    real = binary.run_binary

    def spy(b, args, timeout=600):
        seen.append(args[0])
        return real(b, args, timeout)
    monkeypatch.setattr(binary, "run_binary", spy)
    return seen


def test_compile_then_hit(maskc_bin, cache_dir, flex, calls):
    e = cache.compile_flex(flex, binary=maskc_bin)
    assert calls == ["check", "compile"]
    assert e.directory.startswith(cache_dir) and os.path.basename(e.directory) == e.key
    assert e.plan_json["attentions"][0]["name"] == "packed_layer" and e.has("packed_layer.hip")
    assert set(e.info["files"]) >= {"plan.json", "packed_layer.hip"}
    again = cache.compile_flex(flex, binary=maskc_bin)
    assert calls == ["check", "compile"], "a valid entry is reused without running maskc"
    assert again.directory == e.directory


def test_key_covers_every_input(maskc_bin, cache_dir, flex, calls, tmp_path):
    keys = {cache.compile_flex(flex, binary=maskc_bin).key}
    keys.add(cache.compile_flex(flex, binary=maskc_bin, target="turbo-2026.10").key)
    with open(flex, "a") as f:
        f.write("\n# an edit\n")
    keys.add(cache.compile_flex(flex, binary=maskc_bin).key)
    other = tmp_path / "same.flex"
    shutil.copy(flex, other)
    keys.add(cache.compile_flex(str(other), binary=maskc_bin).key)
    assert len(keys) == 4 and calls.count("compile") == 4


def test_defines_reach_maskc(maskc_bin, cache_dir):
    path = os.path.join(EXAMPLES, "gpt_oss.flex")
    a = cache.compile_flex(path, {"WINDOW": 64}, binary=maskc_bin)
    b = cache.compile_flex(path, {"WINDOW": 256}, binary=maskc_bin)
    assert a.key != b.key
    assert a.plan_json["attentions"][0]["kwargs"]["window_size"] == [63, 0]
    assert b.plan_json["attentions"][0]["kwargs"]["window_size"] == [255, 0]
    assert a.info["defines"] == ["WINDOW=64"]


def test_corrupt_entry_is_rebuilt(maskc_bin, cache_dir, flex, calls):
    e = cache.compile_flex(flex, binary=maskc_bin)
    with open(e.path("packed_layer.hip"), "a") as f:
        f.write("// tampered\n")
    again = cache.compile_flex(flex, binary=maskc_bin)
    assert calls.count("compile") == 2
    assert "tampered" not in open(again.path("packed_layer.hip")).read()


def test_incomplete_entry_is_rebuilt(maskc_bin, cache_dir, flex, calls):
    e = cache.compile_flex(flex, binary=maskc_bin)
    os.unlink(os.path.join(e.directory, cache.ENTRY_FILE))
    cache.compile_flex(flex, binary=maskc_bin)
    assert calls.count("compile") == 2 and os.path.isfile(os.path.join(e.directory, cache.ENTRY_FILE))


def test_errors_carry_positions(maskc_bin, cache_dir, tmp_path, calls):
    p = tmp_path / "bad.flex"
    p.write_text("mask m(b, h, q, kv) = q >= kvv\nattention a {\n    mask = m\n}\n")
    with pytest.raises(MaskcError) as ei:
        cache.compile_flex(str(p), binary=maskc_bin)
    (d,) = ei.value.diagnostics
    assert (d.line, d.column, d.code, d.hint) == (1, 28, "E020", "did you mean kv?")
    assert calls == ["check"], "nothing is compiled after check fails"
    assert not os.path.isdir(cache_dir) or not any(
        n for _, _, ns in os.walk(cache_dir) for n in ns), "a failed build leaves no files"


def test_bad_define_is_refused_by_maskc(maskc_bin, cache_dir):
    with pytest.raises(MaskcError) as ei:
        cache.compile_flex(os.path.join(EXAMPLES, "gpt_oss.flex"), {"WINDOW": "wide"}, binary=maskc_bin)
    assert "WINDOW" in str(ei.value)


def test_unreadable_file(maskc_bin, cache_dir, tmp_path):
    with pytest.raises(MaskcError, match="cannot read"):
        cache.compile_flex(str(tmp_path / "missing.flex"), binary=maskc_bin)


@pytest.mark.parametrize("defines, want", [
    ({}, []),
    ({"W": 3, "A": True, "C": 2.5}, ["-D", "A=true", "-D", "C=2.5", "-D", "W=3"]),
    ({"F": False, "T": " 7 "}, ["-D", "F=false", "-D", "T=7"]),
])
def test_define_args(defines, want):
    assert binary.define_args(defines) == want


@pytest.mark.parametrize("defines, msg", [
    ({"1W": 3}, "param name"), ({"W x": 3}, "param name"), ({"Wé": 3}, "param name"),
    ({"W": float("nan")}, "finite"), ({"W": None}, "want an int"), ({"W": ""}, "want an int"),
])
def test_define_args_rejects(defines, msg):
    with pytest.raises(MaskcError, match=msg):
        binary.define_args(defines)


def test_find_binary_env(monkeypatch, tmp_path, maskc_bin):
    monkeypatch.setenv(binary.BINARY_ENV, maskc_bin)
    assert binary.find_binary() == maskc_bin
    monkeypatch.setenv(binary.BINARY_ENV, str(tmp_path / "nope"))
    with pytest.raises(MaskcError, match="not an executable"):
        binary.find_binary()


def test_write_atomic(tmp_path):
    p = str(tmp_path / "f")
    cache.write_atomic(p, b"one")
    cache.write_atomic(p, b"two")
    assert open(p, "rb").read() == b"two" and os.listdir(tmp_path) == ["f"]


def test_entry_refuses_paths_outside(maskc_bin, cache_dir, flex):
    e = cache.compile_flex(flex, binary=maskc_bin)
    for name in ("../x", "/etc/passwd"):
        with pytest.raises(MaskcError, match="outside"):
            e.path(name)


def test_compile_errors_carry_positions(maskc_bin, cache_dir, tmp_path):
    # The code generator refuses a 3-D buffer; `maskc check` reports its
    # diagnostics too, so the refusal comes from check, with positions.
    p = tmp_path / "three.flex"
    p.write_text("buffer t: f32[H, Q, KV]\nscore s3(s, b, h, q, kv) = s + t[h, q, kv]\nattention a {\n"
                 "    score = s3\n}\n")
    with pytest.raises(MaskcError, match=r"has \d+ error") as ei:
        cache.compile_flex(str(p), binary=maskc_bin)
    d = ei.value.diagnostics[0]
    assert (d.file, d.line, d.column, d.code) == (str(p), 1, 1, "E304")
    assert d.hint.startswith("flatten the buffer")
    assert not [n for _, _, ns in os.walk(cache_dir) for n in ns], "a failed build leaves no files"
