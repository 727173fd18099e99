#!/usr/bin/env python3
"""Builds maskc's platform wheel: the Python package plus a static maskc binary.

    python3 python/build_wheel.py [-o dist] [--goarch amd64|arm64] [--binary PATH]

It is also python/pyproject.toml's build backend (PEP 517, in-tree, standard
library only, no build requirements), so `pip install ./python` and
`pip wheel --no-build-isolation --no-index ./python` build the same wheel
offline with nothing but pip; `pip wheel -C binary=PATH ./python` packages a
binary already built (no Go needed). GOARCH in the environment picks the
architecture, else the running machine's.

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
import platform
import re
import shutil
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
    """The package version, read from maskc/__init__.py without importing it:
    that line is its one definition, and the binary gets it too
    (-X main.version, so `maskc --version` agrees)."""
    with open(os.path.join(PKG, "__init__.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise SystemExit("maskc/__init__.py has no __version__")
    return m.group(1)


def build_binary(goarch, out):
    """CGO_ENABLED=0 go build of ./cmd/maskc for linux/goarch into out."""
    if not os.path.isfile(os.path.join(REPO, "cmd", "maskc", "main.go")):
        raise SystemExit("maskc wheel: %s is not a maskc checkout (no cmd/maskc); build from the repository's "
                         "python/ directory, or pass a built binary (--binary PATH, pip -C binary=PATH)" % REPO)
    go = shutil.which("go")
    if not go:
        raise SystemExit("maskc wheel: building the maskc binary needs Go (https://go.dev/dl) on PATH; "
                         "or pass one already built: build_wheel.py --binary PATH, pip wheel -C binary=PATH")
    env = dict(os.environ, CGO_ENABLED="0", GOOS="linux", GOARCH=goarch)
    subprocess.run([go, "build", "-trimpath", "-ldflags=-s -w -X main.version=" + version(), "-o", out,
                    "./cmd/maskc"], cwd=REPO, env=env, check=True)


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


def dist_info(goarch):
    """The wheel's .dist-info directory name and its (file name, bytes)
    besides RECORD: METADATA, WHEEL, top_level.txt."""
    ver = version()
    dist = "maskc-%s.dist-info" % ver
    meta = "\n".join([
        "Metadata-Version: 2.1", "Name: maskc", "Version: " + ver,
        "Summary: maskc: attention masks compiled to exact Primus-Turbo calls or generated kernels, for PyTorch",
        "Requires-Python: >=3.9", "Provides-Extra: torch", "Requires-Dist: torch>=2.6; extra == \"torch\"",
        "Provides-Extra: transformers", "Requires-Dist: torch>=2.6; extra == \"transformers\"",
        "Requires-Dist: transformers; extra == \"transformers\"", "", ""])
    wheel = ("Wheel-Version: 1.0\nGenerator: maskc python/build_wheel.py\nRoot-Is-Purelib: false\nTag: %s\n" %
             tag(goarch))
    return dist, [("METADATA", meta.encode()), ("WHEEL", wheel.encode()), ("top_level.txt", b"maskc\n")]


def tag(goarch):
    """The wheel tag for a static linux/goarch binary."""
    return "py3-none-" + PLATFORMS[goarch]


def wheel_name(goarch):
    """The wheel's file name."""
    return "maskc-%s-%s.whl" % (version(), tag(goarch))


def write_wheel(outdir, binary_bytes, goarch):
    """Writes the wheel into outdir and returns its path."""
    dist, meta = dist_info(goarch)
    files = package_files() + [("maskc/bin/maskc", binary_bytes)]
    files += [(dist + "/" + name, data) for name, data in meta]
    record = "".join("%s,%s,%d\n" % (name, _record_hash(data), len(data)) for name, data in files)
    record += dist + "/RECORD,,\n"
    files.append((dist + "/RECORD", record.encode()))
    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, wheel_name(goarch))
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


def host_goarch():
    """$GOARCH, else the running machine's architecture as Go names it."""
    env = os.environ.get("GOARCH")
    if env:
        if env not in PLATFORMS:
            raise SystemExit("maskc wheel: GOARCH=%s; a wheel is built for %s" % (env, " or ".join(sorted(PLATFORMS))))
        return env
    m = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(m)
    if arch is None:
        raise SystemExit("maskc wheel: no wheel tag for machine %r; set GOARCH to one of %s" % (m, sorted(PLATFORMS)))
    return arch


def binary_bytes(goarch, binary=None):
    """The bytes of binary (a path), else of a fresh build for goarch."""
    if binary:
        with open(binary, "rb") as f:
            return f.read()
    with tempfile.TemporaryDirectory() as d:
        build_binary(goarch, os.path.join(d, "maskc"))
        with open(os.path.join(d, "maskc"), "rb") as f:
            return f.read()


# PEP 517 hooks: pyproject.toml names this module as its in-tree backend.

def get_requires_for_build_wheel(config_settings=None):
    """Nothing beyond the standard library (and Go, which pip cannot install)."""
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """Writes the .dist-info pip reads before building; returns its name."""
    dist, meta = dist_info(host_goarch())
    os.makedirs(os.path.join(metadata_directory, dist), exist_ok=True)
    for name, data in meta:
        with open(os.path.join(metadata_directory, dist, name), "wb") as f:
            f.write(data)
    return dist


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Builds the platform wheel into wheel_directory; config setting binary=PATH
    packages that binary instead of building one."""
    goarch = host_goarch()
    binary = (config_settings or {}).get("binary")
    return os.path.basename(write_wheel(wheel_directory, binary_bytes(goarch, binary), goarch))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--outdir", default=os.path.join(REPO, "dist"))
    ap.add_argument("--goarch", default="amd64", choices=sorted(PLATFORMS))
    ap.add_argument("--binary", help="a maskc binary already built for linux/GOARCH (static)")
    a = ap.parse_args(argv)
    data = binary_bytes(a.goarch, a.binary)
    print(write_wheel(a.outdir, data, a.goarch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
