"""The content-addressed compile cache.

`maskc compile` runs once per distinct input, when a model is built: the key
is a SHA-256 over the maskc binary's bytes, the .flex file's path and bytes,
the defines and the target profile, so a new binary, an edited file or a
different -D gives a new entry and nothing stale is ever reused. An entry is
a directory holding what `maskc compile` wrote (plan.json, kernel sources,
code objects, the ABI manifest) and ENTRY_FILE, written last, listing every
file with its SHA-256. Entries are built in a temporary directory beside the
final one and renamed into place, so concurrent builders never see a half
written entry; an entry whose files do not match ENTRY_FILE is discarded and
rebuilt. Files added later (JIT-compiled code objects) are written with
write_atomic.
"""
import hashlib
import json
import os
import shutil
import tempfile
import warnings

from . import binary as _binary
from .diagnostics import MaskcError, parse_json, parse_text

__all__ = ["CACHE_ENV", "CACHE_FORMAT", "ENTRY_FILE", "Entry", "cache_root", "cache_key", "compile_flex",
           "write_atomic"]

#: The environment variable naming the cache directory.
CACHE_ENV = "MASKC_CACHE_DIR"
#: Versions how keys and entries are built; bump it to invalidate old entries.
CACHE_FORMAT = "maskc-python-cache-v1"
#: The file that completes an entry: its inputs and its files' SHA-256.
ENTRY_FILE = "maskc-cache-entry.json"


def cache_root():
    """$MASKC_CACHE_DIR, else $XDG_CACHE_HOME/maskc, else ~/.cache/maskc."""
    d = os.environ.get(CACHE_ENV)
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "maskc")


def _sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_binary_hashes = {}


def _binary_hash(path):
    st = os.stat(path)
    memo = (os.path.realpath(path), st.st_mtime_ns, st.st_size)
    if memo not in _binary_hashes:
        _binary_hashes[memo] = _sha256_file(path)
    return _binary_hashes[memo]


def cache_key(binary_sha256, flex_path, flex_bytes, define_args, target):
    """The entry key (hex SHA-256) for these inputs. Every part is length
    prefixed so no two different input lists hash the same text."""
    h = hashlib.sha256()
    for part in [CACHE_FORMAT, binary_sha256, os.path.abspath(flex_path), flex_bytes, target or ""] + list(define_args):
        b = part if isinstance(part, bytes) else part.encode()
        h.update(b"%d:" % len(b))
        h.update(b)
    return h.hexdigest()


def write_atomic(path, data):
    """Writes bytes to path through a temporary file in the same directory and
    a rename: readers see the old file or the whole new one."""
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class Entry:
    """A complete cache entry: directory, key, the inputs it was built from
    and the parsed plan.json."""

    def __init__(self, directory, key, info):
        self.directory, self.key, self.info = directory, key, info
        with open(os.path.join(directory, "plan.json")) as f:
            self.plan_json = json.load(f)

    def path(self, name):
        """The path of a file of the entry by its name in plan.json/manifest."""
        if os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
            raise MaskcError("cache entry %s names a file outside itself: %r" % (self.directory, name))
        return os.path.join(self.directory, name)

    def has(self, name):
        """Whether the entry holds a file of that name."""
        return os.path.isfile(self.path(name))


def _verify(directory):
    """The entry's info when ENTRY_FILE exists and every file it lists has its
    recorded SHA-256; None otherwise."""
    try:
        with open(os.path.join(directory, ENTRY_FILE)) as f:
            info = json.load(f)
        for name, digest in info["files"].items():
            if _sha256_file(os.path.join(directory, name)) != digest:
                return None
        return info
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _check(binary, flex_path, dargs):
    """Runs `maskc check --json`; raises MaskcError with the diagnostics on
    errors, and turns warnings into Python warnings."""
    rc, out, err = _binary.run_binary(binary, ["check", "--json"] + dargs + [flex_path])
    if rc == 2:
        raise MaskcError("maskc check could not read its input", parse_text(err), err)
    diags = parse_json(out) if out.strip() else []
    if rc != 0:
        errs = [d for d in diags if d.is_error]
        raise MaskcError("%s has %d error(s)" % (flex_path, len(errs)) if errs else "maskc check failed",
                         diags, err or out)
    for d in diags:
        warnings.warn(str(d), stacklevel=4)


def compile_flex(flex_path, defines=None, target=None, binary=None, root=None, all_kernels=False):
    """The cache entry for compiling flex_path with defines ({name: value})
    and target: reused when a valid one exists, else built by running
    `maskc check --json` (positioned diagnostics as MaskcError) and
    `maskc compile` (with --all-kernels when all_kernels: a generated
    kernel for every block, Turbo-planned ones too)."""
    if binary is None:
        binary = _binary.find_binary()
    try:
        with open(flex_path, "rb") as f:
            src = f.read()
    except OSError as e:
        raise MaskcError("cannot read %s: %s" % (flex_path, e.strerror or e))
    dargs = _binary.define_args(defines)
    bhash = _binary_hash(binary)
    key = cache_key(bhash, flex_path, src, dargs + (["--all-kernels"] if all_kernels else []), target)
    root = root or cache_root()
    final = os.path.join(root, key[:2], key)
    info = _verify(final)
    if info is not None:
        return Entry(final, key, info)
    if os.path.isdir(final):
        shutil.rmtree(final, ignore_errors=True)  # corrupt or incomplete: rebuild

    _check(binary, flex_path, dargs)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(final), prefix=".build-")
    try:
        args = ["compile", "-o", tmp] + (["--target", target] if target else []) + \
            (["--all-kernels"] if all_kernels else []) + dargs + [flex_path]
        rc, out, err = _binary.run_binary(binary, args)
        if rc != 0:
            raise MaskcError("maskc compile %s failed (exit %d)" % (flex_path, rc), parse_text(err), err or out)
        if not os.path.isfile(os.path.join(tmp, "plan.json")):
            raise MaskcError("maskc compile %s wrote no plan.json" % flex_path, output=out + err)
        files = {}
        for dirpath, _, names in os.walk(tmp):
            for n in names:
                p = os.path.join(dirpath, n)
                files[os.path.relpath(p, tmp)] = _sha256_file(p)
        info = {"format": CACHE_FORMAT, "flex": os.path.abspath(flex_path), "flex_sha256": hashlib.sha256(src).hexdigest(),
                "binary_sha256": bhash, "defines": dargs[1::2], "target": target or "", "all_kernels": bool(all_kernels),
                "files": files}
        write_atomic(os.path.join(tmp, ENTRY_FILE), json.dumps(info, indent=1, sort_keys=True).encode())
        try:
            os.rename(tmp, final)
        except OSError:
            # Another process finished the same entry first; use theirs if valid.
            if _verify(final) is None:
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Entry(final, key, _verify(final) or info)
