"""The content-addressed compile cache and the maskc subprocess, with the real binary."""
import hashlib
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

    def spy(b, args, timeout=600, stdin=None):
        seen.append(args[0])
        return real(b, args, timeout, stdin)
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
    # The code generator refuses a 9-D buffer (the ABI carries 8 extents);
    # `maskc check` reports its diagnostics too, so the refusal comes from
    # check, with positions.
    p = tmp_path / "nine.flex"
    p.write_text("buffer t: f32[H, 2, 2, 2, 2, 2, 2, Q, KV]\nscore s9(s, b, h, q, kv) = s + t[h, 0, 1, 0, 1, 0, 1, q, kv]\n"
                 "attention a {\n    score = s9\n}\n")
    with pytest.raises(MaskcError, match=r"has \d+ error") as ei:
        cache.compile_flex(str(p), binary=maskc_bin)
    d = ei.value.diagnostics[0]
    assert (d.file, d.line, d.column, d.code) == (str(p), 1, 1, "E304")
    assert "0 to 8 dimensions" in d.message and d.hint.startswith("flatten some dimensions")
    assert not [n for _, _, ns in os.walk(cache_dir) for n in ns], "a failed build leaves no files"


# Issue 31: the Python cache held to the Go cache's rule, on the same cases.
TRUST_CASES = os.path.join(os.path.dirname(EXAMPLES), "runtime", "kcache", "testdata", "trust_cases.json")
_UIDS = {None: None, "me": None, "root": 0, "other": 65534}


def _trust_cases():
    with open(TRUST_CASES) as f:
        cases = json.load(f)["cases"]
    assert len(cases) >= 10
    return cases


@pytest.mark.parametrize("case", _trust_cases(), ids=lambda c: c["name"])
def test_trust_cases(case, tmp_path):
    """runtime/kcache/testdata/trust_cases.json, as TestTrustCases runs it in Go."""
    owners = [d.get("owner") for d in case.get("dirs", [])] + [l.get("owner") for l in case.get("links", [])]
    if any(o not in (None, "me") for o in owners) and os.geteuid() != 0:
        return  # chown needs root; CI runs as root
    base = tmp_path / "base"
    base.mkdir(mode=0o700)
    try:
        for d in case.get("dirs", []):
            os.mkdir(base / d["path"], 0o700)
        for f in case.get("files", []):
            (base / f).write_bytes(b"")
        for l in case.get("links", []):
            os.symlink(l["target"], base / l["path"])
            if _UIDS[l.get("owner")] is not None:
                os.lchown(base / l["path"], _UIDS[l["owner"]], _UIDS[l["owner"]])
        for d in reversed(case.get("dirs", [])):
            os.chmod(base / d["path"], int(d["mode"], 8))
            if _UIDS[d.get("owner")] is not None:
                os.chown(base / d["path"], _UIDS[d["owner"]], _UIDS[d["owner"]])
        target = str(base) + "/" + case["cache"]
        if case["want"] == "":
            cache.open_root(target)
            assert os.path.isdir(target)
        else:
            with pytest.raises(MaskcError, match=case["want"]):
                cache.open_root(target)
    finally:
        for dirpath, dirnames, _ in os.walk(base):
            for n in dirnames:
                os.chmod(os.path.join(dirpath, n), 0o700)


def test_foreign_cache_is_not_used(maskc_bin, tmp_path, flex, calls):
    """A cache another user may write is refused before anything in it is
    read (before: a replaced entry with recomputed digests was loaded)."""
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o777)
    with pytest.raises(MaskcError, match="chmod go-w"):
        cache.compile_flex(flex, binary=maskc_bin, root=str(d))
    assert calls == []


def test_unwritable_cache_is_a_maskc_error(maskc_bin, tmp_path, flex):
    """A cache directory that cannot be created is a MaskcError naming the
    fix (before: a raw PermissionError)."""
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(MaskcError, match="cannot create .*MASKC_CACHE_DIR"):
        cache.compile_flex(flex, binary=maskc_bin, root=str(f / "cache"))


def _only_entry(cache_dir):
    for dirpath, dirnames, files in os.walk(cache_dir):
        if cache.ENTRY_FILE in files:
            return dirpath
    raise AssertionError("no entry")


@pytest.mark.parametrize("plant", ["fifo", "devzero"])
def test_planted_entry_files_do_not_hang(maskc_bin, cache_dir, flex, calls, plant):
    """An entry file that is a FIFO or a link to /dev/zero is not read: the
    entry is rebuilt (before: compile_flex hung)."""
    e = cache.compile_flex(flex, binary=maskc_bin)
    p = os.path.join(e.directory, "packed_layer.hip")
    os.unlink(p)
    if plant == "fifo":
        os.mkfifo(p)
    else:
        os.symlink("/dev/zero", p)
    again = cache.compile_flex(flex, binary=maskc_bin)
    assert calls == ["check", "compile", "check", "compile"]
    assert os.path.isfile(again.path("packed_layer.hip")) and not os.path.islink(again.path("packed_layer.hip"))


def test_entry_without_files_and_garbage_plan_is_rebuilt(maskc_bin, cache_dir, flex, calls):
    """An entry listing no files with a garbage plan.json is rebuilt (before:
    a raw JSONDecodeError)."""
    e = cache.compile_flex(flex, binary=maskc_bin)
    with open(os.path.join(e.directory, "plan.json"), "w") as f:
        f.write("{garbage")
    info = dict(e.info, files={})
    with open(os.path.join(e.directory, cache.ENTRY_FILE), "w") as f:
        json.dump(info, f)
    again = cache.compile_flex(flex, binary=maskc_bin)
    assert calls == ["check", "compile", "check", "compile"]
    assert again.plan_json["attentions"][0]["name"] == "packed_layer"


def test_edit_during_compile_keys_what_was_compiled(maskc_bin, cache_dir, flex, monkeypatch):
    """The file is edited between the cache reading it and maskc compiling:
    the entry holds the kernels of the text it is keyed by (before: maskc
    re-read the file, storing the edited text's kernels under the old key,
    which a later revert then served)."""
    with open(flex) as f:
        original = f.read()
    edited = original.replace("packed_layer", "edited_layer")
    assert edited != original
    real = binary.run_binary

    def edit_then_run(b, args, timeout=600, stdin=None):
        if args[0] == "compile":
            with open(flex, "w") as f:
                f.write(edited)
        return real(b, args, timeout, stdin)
    monkeypatch.setattr(binary, "run_binary", edit_then_run)
    e = cache.compile_flex(flex, binary=maskc_bin)
    assert e.info["flex_sha256"] == hashlib.sha256(original.encode()).hexdigest()
    assert [a["name"] for a in e.plan_json["attentions"]] == ["packed_layer"]
    assert e.has("packed_layer.hip") and not e.has("edited_layer.hip")
    with open(e.path("packed_layer.hip")) as f:
        assert '"%s"' % flex in f.read(), "the kernel names the file, not <stdin>"


def test_path_starting_with_dash(maskc_bin, cache_dir, tmp_path, monkeypatch):
    """A .flex path starting with "-" is a file, not a flag (before: the
    binary read it as one)."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(os.path.join(EXAMPLES, "causal.flex"), tmp_path / "-D.flex")
    e = cache.compile_flex("-D.flex", binary=maskc_bin)
    assert e.plan_json["attentions"]


def test_fifo_source_is_refused(maskc_bin, cache_dir, tmp_path):
    """A .flex path that is a FIFO is refused, not read (it would block)."""
    p = tmp_path / "pipe.flex"
    os.mkfifo(p)
    with pytest.raises(MaskcError, match="not a regular file"):
        cache.compile_flex(str(p), binary=maskc_bin)


def test_flex_py_files_follow_the_cache_rule(cache_dir, tmp_path):
    """The drop-in's emitted .flex files live under the cache root: the root
    is held to the cache rule before anything is written there, and a file
    found under the text's name is used only when it holds that text (a
    planted one is replaced)."""
    from maskc import flex
    text = "mask m(b, h, q, kv) = q >= kv\n"
    p = flex._flex_path(text)
    assert p.startswith(cache_dir) and open(p).read() == text
    with open(p, "w") as f:
        f.write("mask m(b, h, q, kv) = q < kv\n")
    assert flex._flex_path(text) == p and open(p).read() == text
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    os.environ[cache.CACHE_ENV] = str(shared)
    with pytest.raises(MaskcError, match="chmod go-w"):
        flex._flex_path(text)
    assert not (shared / "flex-py").exists()
