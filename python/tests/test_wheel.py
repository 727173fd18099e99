"""The platform wheel: contents, RECORD, and the packaged binary found after install."""
import base64
import hashlib
import os
import subprocess
import sys
import zipfile

import pytest

from conftest import PYTHON_DIR

sys.path.insert(0, PYTHON_DIR)
import build_wheel  # noqa: E402


@pytest.fixture(scope="module")
def wheel(maskc_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    assert build_wheel.main(["-o", str(out), "--binary", maskc_bin]) == 0
    (name,) = os.listdir(out)
    return str(out / name)


def test_name_and_tags(wheel):
    ver = build_wheel.version()
    assert os.path.basename(wheel) == "maskc-%s-py3-none-manylinux_2_17_x86_64.whl" % ver
    with zipfile.ZipFile(wheel) as z:
        w = z.read("maskc-%s.dist-info/WHEEL" % ver).decode()
    assert "Root-Is-Purelib: false" in w and "Tag: py3-none-manylinux_2_17_x86_64" in w


def test_record_matches_every_file(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        record = [line.split(",") for line in z.read([n for n in names if n.endswith("RECORD")][0]).decode().split()]
        listed = {r[0] for r in record}
        assert listed == set(names)
        for name, digest, size in record:
            if name.endswith("RECORD"):
                continue
            data = z.read(name)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (want, len(data)), name
    assert "maskc/torch.py" in names and "maskc/cache.py" in names
    assert not any("__pycache__" in n or n.startswith("tests/") for n in names)


# The wheel's files: what users call (maskc.torch's modules and the
# integrations) and their build-time parts, no more. The GPU scripts'
# tooling (gpu/harness.py, buffers.py, runlog.py) is not among them.
PACKAGE = ["__init__", "abi", "api", "binary", "cache", "checks", "cp", "cuda", "decode", "diagnostics", "dispatch",
           "dtypes", "flex", "launcher", "megatron", "megatron_core", "ops", "plan", "torch", "transformers"]


def test_file_list(wheel):
    ver = build_wheel.version()
    with zipfile.ZipFile(wheel) as z:
        names = sorted(z.namelist())
    info = "maskc-%s.dist-info/" % ver
    assert names == sorted(["maskc/%s.py" % m for m in PACKAGE] + ["maskc/bin/maskc"] +
                           [info + n for n in ("METADATA", "WHEEL", "top_level.txt", "RECORD")])


def test_binary_is_executable_and_found(wheel, tmp_path, maskc_bin):
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        info = z.getinfo("maskc/bin/maskc")
        assert (info.external_attr >> 16) & 0o777 == 0o755
        z.extractall(target)
        os.chmod(target / "maskc/bin/maskc", (info.external_attr >> 16) & 0o777)  # as pip does
    env = {k: v for k, v in os.environ.items() if k != "MASKC_BIN"}
    env.update(PYTHONPATH=str(target), PATH="/usr/bin:/bin")
    code = ("import subprocess, maskc.binary as b; p = b.find_binary(); print(p); "
            "print(subprocess.run([p, 'targets'], capture_output=True, text=True, check=True).stdout)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=str(tmp_path)).stdout
    assert out.splitlines()[0] == str(target / "maskc/bin/maskc")
    assert "turbo-2026.10" in out


def test_same_inputs_same_bytes(maskc_bin, tmp_path, wheel):
    build_wheel.main(["-o", str(tmp_path), "--binary", maskc_bin])
    (again,) = os.listdir(tmp_path)
    assert open(tmp_path / again, "rb").read() == open(wheel, "rb").read()


@pytest.fixture(scope="module")
def pip_wheel(tmp_path_factory):
    """The wheel `pip wheel --no-build-isolation --no-index ./python` builds
    (pyproject.toml's in-tree backend, Go building the binary)."""
    out = tmp_path_factory.mktemp("pipdist")
    have_pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True)
    assert have_pip.returncode == 0, "%s has no pip (Debian: apt-get install python3-pip)" % sys.executable
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-index", "--no-deps",
                        "-w", str(out), PYTHON_DIR], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    (name,) = os.listdir(out)
    return str(out / name)


def test_pip_wheel_holds_binary_of_package_version(pip_wheel, tmp_path):
    ver = build_wheel.version()
    assert os.path.basename(pip_wheel) == build_wheel.wheel_name(build_wheel.host_goarch())
    with zipfile.ZipFile(pip_wheel) as z:
        names = z.namelist()
        meta = z.read("maskc-%s.dist-info/METADATA" % ver).decode()
        info = z.getinfo("maskc/bin/maskc")
        z.extractall(tmp_path)
    assert "Version: %s\n" % ver in meta
    assert "maskc/__init__.py" in names and "maskc/transformers.py" in names
    assert (info.external_attr >> 16) & 0o777 == 0o755
    binary = str(tmp_path / "maskc/bin/maskc")
    os.chmod(binary, 0o755)
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout
    # The binary's version and the package's are the one definition in maskc/__init__.py.
    code = "import maskc; print(maskc.__version__)"
    pkg = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(tmp_path)),
                         capture_output=True, text=True, check=True, cwd=str(tmp_path)).stdout.strip()
    assert (out, pkg) == ("maskc %s\n" % ver, ver)


def test_pip_wheel_is_build_wheels_wheel(pip_wheel, tmp_path):
    """pip's wheel and build_wheel.py's from the same binary are the same bytes."""
    with zipfile.ZipFile(pip_wheel) as z:
        (tmp_path / "maskc").write_bytes(z.read("maskc/bin/maskc"))
    out = tmp_path / "dist"
    build_wheel.main(["-o", str(out), "--goarch", build_wheel.host_goarch(), "--binary", str(tmp_path / "maskc")])
    (again,) = os.listdir(out)
    assert open(out / again, "rb").read() == open(pip_wheel, "rb").read()


def test_backend_without_go_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit, match="needs Go"):
        build_wheel.build_wheel(str(tmp_path))
    monkeypatch.setenv("GOARCH", "riscv64")
    with pytest.raises(SystemExit, match="GOARCH=riscv64"):
        build_wheel.build_wheel(str(tmp_path))


def test_backend_packages_a_given_binary(maskc_bin, tmp_path):
    name = build_wheel.build_wheel(str(tmp_path), {"binary": maskc_bin})
    with zipfile.ZipFile(tmp_path / name) as z:
        assert z.read("maskc/bin/maskc") == open(maskc_bin, "rb").read()
    meta = tmp_path / "meta"
    dist = build_wheel.prepare_metadata_for_build_wheel(str(meta))
    with zipfile.ZipFile(tmp_path / name) as z:
        for f in ("METADATA", "WHEEL"):
            assert (meta / dist / f).read_bytes() == z.read(dist + "/" + f)
