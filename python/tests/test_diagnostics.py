"""Diagnostics read from maskc's JSON and text output, and MaskcError."""
import pytest

from maskc.diagnostics import Diagnostic, MaskcError, parse_json, parse_text


def test_parse_json_fields():
    text = ('[{"file": "a.flex", "line": 3, "column": 7, "end_line": 3, "end_column": 10, "code": "E020", '
            '"severity": "error", "message": "unknown name kvv", "hint": "did you mean kv?"}]')
    (d,) = parse_json(text)
    assert (d.file, d.line, d.column, d.end_column, d.code, d.is_error) == ("a.flex", 3, 7, 10, "E020", True)
    assert str(d) == "a.flex:3:7: error[E020]: unknown name kvv\n  = hint: did you mean kv?"


@pytest.mark.parametrize("text, want", [
    ("not json", "not JSON"),
    ('{"file": 1}', "not an array"),
    ('[{"file": "a", "line": 1}]', "without"),
])
def test_parse_json_rejects(text, want):
    with pytest.raises(MaskcError, match=want):
        parse_json(text)


def test_parse_text_heads_and_hints():
    text = """dir:with:colons/x.flex:12:5: error[E101]: buffer b has 3 dimensions
 12 | buffer b: f32[H, Q, KV]
    |     ^
    = hint: flatten the buffer
x.flex:1:1: warning[W002]: unused param
some other line
"""
    a, b = parse_text(text)
    assert (a.file, a.line, a.column, a.code, a.hint) == ("dir:with:colons/x.flex", 12, 5, "E101", "flatten the buffer")
    assert (b.severity, b.code, b.hint, b.is_error) == ("warning", "W002", "", False)


def test_error_message_keeps_everything():
    d = Diagnostic("x.flex", 2, 3, "E020", "error", "unknown name q2", "did you mean q?")
    e = MaskcError("x.flex has 1 error(s)", [d], "raw output")
    assert "x.flex:2:3: error[E020]: unknown name q2" in str(e) and "did you mean q?" in str(e)
    assert e.diagnostics == [d] and e.output == "raw output"
    # Without diagnostics the raw output is the message.
    assert "raw output" in str(MaskcError("failed", [], "raw output"))
