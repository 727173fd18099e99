"""Finding and running the maskc binary.

The platform wheel carries a static maskc binary at maskc/bin/maskc, so a
trainer needs no Go toolchain. MASKC_BIN overrides it (a development build);
without either, `maskc` on PATH is used.
"""
import os
import re
import shutil
import subprocess

from .diagnostics import MaskcError

__all__ = ["find_binary", "run_binary", "define_args", "BINARY_ENV"]

#: The environment variable naming a maskc binary to use instead of the wheel's.
BINARY_ENV = "MASKC_BIN"

_PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "maskc")


def find_binary():
    """The path of the maskc binary: $MASKC_BIN, else the one in this
    package (the wheel's), else `maskc` on PATH. Raises MaskcError when none
    is executable."""
    env = os.environ.get(BINARY_ENV)
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise MaskcError("%s=%s is not an executable file" % (BINARY_ENV, env))
        return env
    if os.path.isfile(_PACKAGED) and os.access(_PACKAGED, os.X_OK):
        return _PACKAGED
    found = shutil.which("maskc")
    if found:
        return found
    raise MaskcError("no maskc binary: install the platform wheel (it carries one), put maskc on PATH, "
                     "or set %s" % BINARY_ENV)


def run_binary(binary, args, timeout=600, stdin=None):
    """Runs `binary args...` with stdin (bytes) on its standard input, else
    none; returns (exit code, stdout, stderr) as text. A binary that cannot
    start or that runs past timeout seconds raises MaskcError."""
    try:
        if stdin is None:
            p = subprocess.run([binary] + list(args), capture_output=True, text=True, timeout=timeout,
                               stdin=subprocess.DEVNULL)
        else:
            p = subprocess.run([binary] + list(args), capture_output=True, timeout=timeout, input=stdin)
            p.stdout, p.stderr = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        raise MaskcError("maskc %s ran longer than %d s" % (" ".join(args[:1]), timeout))
    except OSError as e:
        raise MaskcError("cannot run %s: %s" % (binary, e))
    return p.returncode, p.stdout, p.stderr


def _define_value(name, value):
    # bool before int: bool is a subclass of int.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise MaskcError("define %s=%r: a param takes a finite number" % (name, value))
        return repr(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise MaskcError("define %s=%r: want an int, float, bool or the value's text" % (name, value))


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def define_args(defines):
    """The -D arguments for a {name: value} mapping, sorted by name (so the
    same defines always give the same command line and cache key)."""
    args = []
    for name in sorted(defines or {}):
        if not (isinstance(name, str) and _IDENT.match(name)):
            raise MaskcError("define %r: a param name is letters, digits and _, not starting with a digit" % (name,))
        args += ["-D", "%s=%s" % (name, _define_value(name, defines[name]))]
    return args
