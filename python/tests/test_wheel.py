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
