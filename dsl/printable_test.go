package dsl

import (
	"strings"
	"testing"
)

// TestRenderEscapesUnsafeText: control characters and bidirectional
// overrides in the snippet, the message and the file name are escaped, and
// the carets stay under the span.
func TestRenderEscapesUnsafeText(t *testing.T) {
	text := "mask m(b, h, q, kv) = q # \x1b[31mred\u202e evil\nx = \x1b y\n"
	src := NewSource("we\x1bird\u202e.flex", []byte(text))
	var ds Diagnostics
	off := strings.Index(text, "x = ") + 4
	ds.Add(src, Span{Start: off, End: off + 1}, "E001", "invalid character `%c`", '\x1b')
	ds.Add(src, Span{Start: 0, End: 4}, "E002", "first")
	got := ds.Render()
	for _, bad := range []string{"\x1b", "\u202e"} {
		if strings.Contains(got, bad) {
			t.Errorf("rendered text holds %q:\n%s", bad, got)
		}
	}
	want := "we\\x1bird\\u202e.flex:2:5: error[E001]: invalid character `\\x1b`\n" +
		" 2 | x = \\x1b y\n" +
		"   |     ^^^^\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("got\n%s\nwant prefix\n%s", got, want)
	}
	if !strings.Contains(got, " 1 | mask m(b, h, q, kv) = q # \\x1b[31mred\\u202e evil\n") {
		t.Errorf("snippet of line 1 not escaped:\n%s", got)
	}
}

// TestRenderCutsLongLines: a snippet of a very long line is a window of
// at most MaxSnippet columns around the span, the caret under it.
func TestRenderCutsLongLines(t *testing.T) {
	line := "mask m(b, h, q, kv) = " + strings.Repeat("q >= kv and ", 20000) + "oops"
	src := NewSource("long.flex", []byte(line+"\n"))
	at := strings.Index(line, "oops")
	var ds Diagnostics
	ds.Add(src, Span{Start: at, End: at + 4}, "E011", "bad")
	lines := strings.Split(ds.Render(), "\n")
	if len(lines[1]) > MaxSnippet+20 {
		t.Fatalf("snippet line of %d bytes:\n%.200s", len(lines[1]), lines[1])
	}
	bar := strings.Index(lines[2], "| ") + 2
	caret := strings.Index(lines[2], "^")
	if !strings.HasPrefix(lines[1][caret:], "oops") || lines[2][caret:] != "^^^^" || !strings.HasPrefix(lines[1][bar:], "...") {
		t.Errorf("caret not under the span:\n%s\n%s", lines[1], lines[2])
	}
	// Near the start, only the end is cut.
	ds = nil
	ds.Add(src, Span{Start: 0, End: 4}, "E011", "bad")
	lines = strings.Split(ds.Render(), "\n")
	if !strings.HasPrefix(lines[1], " 1 | mask m(") || !strings.HasSuffix(lines[1], "...") || lines[2] != "   | ^^^^" {
		t.Errorf("start of a long line:\n%s\n%s", lines[1], lines[2])
	}
}

// TestSourceLineEnds: lines end at "\n", "\r\n" and a lone "\r", as the
// Language Server Protocol counts them.
func TestSourceLineEnds(t *testing.T) {
	src := NewSource("t", []byte("a\r\nb\rc\nd\r"))
	var lines []string
	for n := 1; n <= src.LineCount(); n++ {
		lines = append(lines, src.Line(n))
	}
	if got := strings.Join(lines, "|"); got != "a|b|c|d|" {
		t.Errorf("lines %q, want a|b|c|d|", got)
	}
	if p := src.Position(strings.Index(string(src.Text), "c")); p.Line != 3 || p.Column != 1 {
		t.Errorf("c at %d:%d, want 3:1", p.Line, p.Column)
	}
}
