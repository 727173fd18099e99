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

The cache is trusted only as the Go kernel cache (runtime/kcache) is, by
one rule (SECURITY.md, "The kernel cache directory"; check_trusted, whose
cases runtime/kcache/testdata/trust_cases.json shares with the Go tests):
every directory on the way to it belongs to you or root and only they may
write it (or it is sticky, as /tmp), every link on the way belongs to you
or root, and the cache directory itself belongs to you and only you may
write it. Entry files are read without following links, only when regular
and at most MAX_FILE bytes, so a planted FIFO or device cannot hang a build.
The bytes keyed are the bytes compiled: maskc reads them from stdin
(--stdin-name names them as the file).
"""
import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
import warnings

from . import binary as _binary
from .diagnostics import MaskcError, parse_json, parse_text

__all__ = ["CACHE_ENV", "CACHE_FORMAT", "ENTRY_FILE", "MAX_FILE", "Entry", "cache_root", "cache_key",
           "check_trusted", "compile_flex", "write_atomic"]

#: The environment variable naming the cache directory.
CACHE_ENV = "MASKC_CACHE_DIR"
#: Versions how keys and entries are built; bump it to invalidate old entries.
CACHE_FORMAT = "maskc-python-cache-v1"
#: The file that completes an entry: its inputs and its files' SHA-256.
ENTRY_FILE = "maskc-cache-entry.json"
#: The most bytes read of one entry file (runtime/kcache.MaxEntrySize).
MAX_FILE = 256 << 20
#: Links followed resolving the cache directory (Linux's limit, as kcache).
_MAX_LINKS = 40


def cache_root():
    """$MASKC_CACHE_DIR, else $XDG_CACHE_HOME/maskc, else ~/.cache/maskc."""
    d = os.environ.get(CACHE_ENV)
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "maskc")


def _read_regular(path, limit=MAX_FILE, follow=False):
    """The bytes of the regular file at path: a link is not followed (unless
    follow), a FIFO or device not read (OSError), more than limit bytes not
    read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        if st.st_size > limit:
            raise OSError(errno.EFBIG, "larger than %d bytes" % limit, path)
        chunks, n = [], 0
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b"".join(chunks)
            n += len(b)
            if n > limit:
                raise OSError(errno.EFBIG, "larger than %d bytes" % limit, path)
            chunks.append(b)
    finally:
        os.close(fd)


#: The most bytes read of a .flex file (the binary's own bound, cmd/maskc maxInput).
MAX_SOURCE = 64 << 20


def _read_source(flex_path):
    """The bytes of a .flex file (links followed); a FIFO or device is
    refused, not read, so it cannot hang the caller."""
    try:
        return _read_regular(flex_path, MAX_SOURCE, follow=True)
    except OSError as e:
        raise MaskcError("cannot read %s: %s" % (flex_path, e.strerror or e))


def _sha256_file(path):
    return hashlib.sha256(_read_regular(path)).hexdigest()


def _owner_ok(st, me, allow_root):
    return st.st_uid == me or (allow_root and st.st_uid == 0)


def _parent_trusted(directory, parent):
    st = os.stat(parent)
    me = os.geteuid()
    if not _owner_ok(st, me, True):
        raise MaskcError("maskc cache: refusing %s: the directory %s above it belongs to uid %d, neither you nor root, "
                         "who could replace the cache; set %s to a directory of yours" % (directory, parent, st.st_uid, CACHE_ENV))
    perm = stat.S_IMODE(st.st_mode)
    if perm & 0o022 and not perm & stat.S_ISVTX:
        raise MaskcError("maskc cache: refusing %s: the directory %s above it has mode %#o, so other users could replace "
                         "the cache; run chmod go-w %s" % (directory, parent, perm & 0o777, parent))


def check_trusted(directory):
    """Raises MaskcError unless directory may hold a cache: the rule of
    runtime/kcache's trusted, component by component (".." after a link as
    the kernel resolves it). Returns the resolved path."""
    me = os.geteuid()
    path = directory if os.path.isabs(directory) else os.getcwd() + "/" + directory
    todo = path.split("/")
    cur, links, checked = "/", 0, set()
    try:
        while todo:
            c = todo.pop(0)
            if c in ("", "."):
                continue
            if c == "..":
                cur = os.path.dirname(cur)
                continue
            if cur not in checked:
                _parent_trusted(directory, cur)
                checked.add(cur)
            nxt = os.path.join(cur, c)
            st = os.lstat(nxt)
            if not stat.S_ISLNK(st.st_mode):
                cur = nxt
                continue
            links += 1
            if links > _MAX_LINKS:
                raise MaskcError("maskc cache: %s: too many links" % directory)
            if not _owner_ok(st, me, True):
                raise MaskcError("maskc cache: refusing %s: the link %s on its path belongs to uid %d, neither you nor root, "
                                 "who could point it elsewhere; set %s to a directory of yours" % (directory, nxt, st.st_uid, CACHE_ENV))
            target = os.readlink(nxt)
            if target.startswith("/"):
                cur = "/"
            todo = target.split("/") + todo
        st = os.stat(cur)
    except OSError as e:
        raise MaskcError("maskc cache: %s: %s" % (directory, e.strerror or e))
    if not stat.S_ISDIR(st.st_mode):
        raise MaskcError("maskc cache: %s is not a directory" % directory)
    if st.st_uid != me:
        raise MaskcError("maskc cache: refusing %s: it belongs to uid %d, not to you (uid %d), who could plant kernels in it; "
                         "set %s to a directory of yours" % (directory, st.st_uid, me, CACHE_ENV))
    perm = stat.S_IMODE(st.st_mode)
    if perm & 0o022:
        raise MaskcError("maskc cache: refusing %s: mode %#o lets other users plant kernels in it; run chmod go-w %s"
                         % (directory, perm & 0o777, directory))
    return cur


def open_root(root=None):
    """The cache directory (root, else cache_root()), created 0700 if
    missing and checked by check_trusted; MaskcError if it cannot be."""
    root = root or cache_root()
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
    except FileExistsError:
        pass  # not a directory: check_trusted says so
    except OSError as e:
        raise MaskcError("maskc cache: cannot create %s: %s; set %s to a directory of yours"
                         % (root, e.strerror or e, CACHE_ENV))
    check_trusted(root)
    return root


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
        self.plan_json = _plan_json(directory)

    def path(self, name):
        """The path of a file of the entry by its name in plan.json/manifest."""
        if os.path.isabs(name) or ".." in name.replace("\\", "/").split("/"):
            raise MaskcError("cache entry %s names a file outside itself: %r" % (self.directory, name))
        return os.path.join(self.directory, name)

    def has(self, name):
        """Whether the entry holds a file of that name."""
        return os.path.isfile(self.path(name))


def _plan_json(directory):
    """The entry's parsed plan.json; ValueError (or OSError) when it is not
    a JSON object."""
    plan = json.loads(_read_regular(os.path.join(directory, "plan.json")))
    if not isinstance(plan, dict):
        raise ValueError("plan.json is not a JSON object")
    return plan


def _verify(directory):
    """The entry's info when ENTRY_FILE exists, lists plan.json, every file
    it lists has its recorded SHA-256 (read as _read_regular does) and
    plan.json parses; None otherwise."""
    try:
        info = json.loads(_read_regular(os.path.join(directory, ENTRY_FILE)))
        if "plan.json" not in info["files"]:
            return None
        for name, digest in info["files"].items():
            if os.path.isabs(name) or ".." in name.split("/") or _sha256_file(os.path.join(directory, name)) != digest:
                return None
        _plan_json(directory)
        return info
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _stdin_args(flex_path):
    """The arguments that name src, sent on stdin, as flex_path (after "--",
    so a path starting with "-" is not read as a flag)."""
    return ["--stdin-name", flex_path, "--", "-"]


def _check(binary, flex_path, dargs, src):
    """Runs `maskc check --json` on src (flex_path's bytes); raises
    MaskcError with the diagnostics on errors, and turns warnings into
    Python warnings."""
    rc, out, err = _binary.run_binary(binary, ["check", "--json"] + dargs + _stdin_args(flex_path), stdin=src)
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
    src = _read_source(flex_path)
    dargs = _binary.define_args(defines)
    bhash = _binary_hash(binary)
    key = cache_key(bhash, flex_path, src, dargs + (["--all-kernels"] if all_kernels else []), target)
    root = open_root(root)
    final = os.path.join(root, key[:2], key)
    info = _verify(final)
    if info is not None:
        return Entry(final, key, info)
    if os.path.isdir(final):
        shutil.rmtree(final, ignore_errors=True)  # corrupt or incomplete: rebuild

    _check(binary, flex_path, dargs, src)
    try:
        os.makedirs(os.path.dirname(final), mode=0o700, exist_ok=True)
        tmp = tempfile.mkdtemp(dir=os.path.dirname(final), prefix=".build-")
    except OSError as e:
        raise MaskcError("maskc cache: cannot write in %s: %s" % (root, e.strerror or e))
    try:
        args = ["compile", "-o", tmp] + (["--target", target] if target else []) + \
            (["--all-kernels"] if all_kernels else []) + dargs + _stdin_args(flex_path)
        rc, out, err = _binary.run_binary(binary, args, stdin=src)
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
