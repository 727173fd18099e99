#!/usr/bin/env python3
"""Builds maskc's platform wheel: the Python package plus a static maskc binary.

    python3 python/build_wheel.py [-o dist] [--goarch amd64|arm64] [--binary PATH]

The binary is `CGO_ENABLED=0 go build -trimpath ./cmd/maskc` for linux/GOARCH
(or PATH, already built), so the wheel runs on any Linux of that
architecture with no Go toolchain and no C library requirements; it lands at
maskc/bin/maskc, where maskc.binary.find_binary looks first. The wheel is
written with the standard library only (zipfile), with fixed timestamps and
sorted entries, so the same inputs give the same bytes. Install it with
`pip install --no-index --no-deps dist/maskc-*.whl`.
"""
import argparse
import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PKG = os.path.join(HERE, "maskc")
# Platform tags per GOARCH: a static binary needs nothing from the C library,
# so the oldest manylinux baseline is honest.
PLATFORMS = {"amd64": "manylinux_2_17_x86_64", "arm64": "manylinux_2_17_aarch64"}
_EPOCH = (1980, 1, 1, 0, 0, 0)


def version():
    """The package version, read from maskc/__init__.py without importing it."""
    with open(os.path.join(PKG, "__init__.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise SystemExit("maskc/__init__.py has no __version__")
    return m.group(1)


def build_binary(goarch, out):
    """CGO_ENABLED=0 go build of ./cmd/maskc for linux/goarch into out."""
    env = dict(os.environ, CGO_ENABLED="0", GOOS="linux", GOARCH=goarch)
    subprocess.run(["go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/maskc"], cwd=REPO, env=env,
                   check=True)


def _record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def package_files():
    """(archive name, bytes) of the package's Python files, sorted."""
    out = []
    for dirpath, dirs, names in os.walk(PKG):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "bin"))
        for n in sorted(names):
            if n.endswith(".py"):
                p = os.path.join(dirpath, n)
                with open(p, "rb") as f:
                    out.append((os.path.relpath(p, HERE).replace(os.sep, "/"), f.read()))
    return out


def write_wheel(outdir, binary_bytes, goarch):
    """Writes the wheel into outdir and returns its path."""
    ver = version()
    tag = "py3-none-" + PLATFORMS[goarch]
    dist = "maskc-%s.dist-info" % ver
    files = package_files() + [("maskc/bin/maskc", binary_bytes)]
    meta = "\n".join([
        "Metadata-Version: 2.1", "Name: maskc", "Version: " + ver,
        "Summary: maskc: attention masks compiled to exact Primus-Turbo calls or generated kernels, for PyTorch",
        "Requires-Python: >=3.9", "Provides-Extra: torch", "Requires-Dist: torch>=2.6; extra == \"torch\"", "", ""])
    wheel = "Wheel-Version: 1.0\nGenerator: maskc python/build_wheel.py\nRoot-Is-Purelib: false\nTag: %s\n" % tag
    files += [(dist + "/METADATA", meta.encode()), (dist + "/WHEEL", wheel.encode()),
              (dist + "/top_level.txt", b"maskc\n")]
    record = "".join("%s,%s,%d\n" % (name, _record_hash(data), len(data)) for name, data in files)
    record += dist + "/RECORD,,\n"
    files.append((dist + "/RECORD", record.encode()))
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, "maskc-%s-%s.whl" % (ver, tag))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            zi = zipfile.ZipInfo(name, _EPOCH)
            mode = 0o755 if name == "maskc/bin/maskc" else 0o644
            zi.external_attr = (0o100000 | mode) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--outdir", default=os.path.join(REPO, "dist"))
    ap.add_argument("--goarch", default="amd64", choices=sorted(PLATFORMS))
    ap.add_argument("--binary", help="a maskc binary already built for linux/GOARCH (static)")
    a = ap.parse_args(argv)
    if a.binary:
        with open(a.binary, "rb") as f:
            data = f.read()
    else:
        with tempfile.TemporaryDirectory() as d:
            build_binary(a.goarch, os.path.join(d, "maskc"))
            with open(os.path.join(d, "maskc"), "rb") as f:
                data = f.read()
    print(write_wheel(a.outdir, data, a.goarch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
