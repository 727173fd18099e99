"""maskc's positioned diagnostics as Python values, and the exception that carries them.

The maskc binary reports problems in a .flex file as diagnostics with a file, a
line and column span, a code (E020, ...), a severity, a message and an optional
hint. `maskc check --json` prints them as a JSON array; the other commands print
them as text (`FILE:LINE:COL: error[CODE]: message`, a snippet, `= hint: ...`).
Both forms are read here into Diagnostic values, and MaskcError carries them to
the caller unchanged, so a trainer sees the same positioned message a user of
the command line does.
"""
import json
import re

__all__ = ["Diagnostic", "MaskcError", "parse_json", "parse_text"]


class Diagnostic:
    """One diagnostic: where (file, 1-based line and column, end), what (code,
    severity, message) and the hint, if any."""

    __slots__ = ("file", "line", "column", "end_line", "end_column", "code", "severity", "message", "hint")

    def __init__(self, file, line, column, code, severity, message, hint="", end_line=None, end_column=None):
        self.file, self.line, self.column = file, int(line), int(column)
        self.end_line = int(end_line) if end_line is not None else self.line
        self.end_column = int(end_column) if end_column is not None else self.column
        self.code, self.severity, self.message, self.hint = code, severity, message, hint or ""

    @property
    def is_error(self):
        """Whether the diagnostic is an error (not a warning or note)."""
        return self.severity == "error"

    def __str__(self):
        s = "%s:%d:%d: %s[%s]: %s" % (self.file, self.line, self.column, self.severity, self.code, self.message)
        if self.hint:
            s += "\n  = hint: " + self.hint
        return s

    def __repr__(self):
        return "Diagnostic(%r)" % str(self)

    def __eq__(self, other):
        return isinstance(other, Diagnostic) and all(getattr(self, a) == getattr(other, a) for a in self.__slots__)


class MaskcError(Exception):
    """An error reported by maskc, or by this package about a call.

    diagnostics holds the positioned diagnostics (possibly empty, e.g. for a
    wrong tensor shape); output is maskc's full text output where there was
    one, kept so nothing it said is lost."""

    def __init__(self, summary, diagnostics=(), output=""):
        self.summary = summary
        self.diagnostics = list(diagnostics)
        self.output = output
        lines = [summary] + [str(d) for d in self.diagnostics]
        if not self.diagnostics and output.strip():
            lines.append(output.rstrip())
        super().__init__("\n".join(lines))


def parse_json(text):
    """Diagnostics from `maskc check --json` output (a JSON array of objects)."""
    try:
        items = json.loads(text)
    except ValueError as e:
        raise MaskcError("maskc check --json printed something that is not JSON (%s)" % e, output=text)
    if not isinstance(items, list):
        raise MaskcError("maskc check --json printed %s, not an array" % type(items).__name__, output=text)
    out = []
    for it in items:
        try:
            out.append(Diagnostic(it["file"], it["line"], it["column"], it["code"], it["severity"], it["message"],
                                  it.get("hint", ""), it.get("end_line"), it.get("end_column")))
        except (KeyError, TypeError, ValueError) as e:
            raise MaskcError("maskc check --json printed a diagnostic without %s" % e, output=text)
    return out


# FILE:LINE:COL: severity[CODE]: message  (FILE may contain colons; the
# numbers and the bracketed code anchor the match at the end).
_HEAD = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning|note)\[(?P<code>[A-Z]\d+)\]: "
                   r"(?P<msg>.*)$")
_HINT = re.compile(r"^\s*= hint: (?P<hint>.*)$")


def parse_text(text):
    """Diagnostics from maskc's text output (compile, classify): every
    `FILE:LINE:COL: severity[CODE]: message` line with the `= hint:` line
    that follows its snippet. Lines that are neither are ignored here; the
    caller keeps the full text."""
    out = []
    for line in text.splitlines():
        m = _HEAD.match(line)
        if m:
            out.append(Diagnostic(m["file"], m["line"], m["col"], m["code"], m["sev"], m["msg"]))
            continue
        h = _HINT.match(line)
        if h and out and not out[-1].hint:
            out[-1].hint = h["hint"]
    return out
