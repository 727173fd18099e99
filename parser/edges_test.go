package parser_test

import (
	"testing"

	"github.com/maskc/maskc/parser"
)

// TestByteOrderMark: a UTF-8 byte order mark at the start of a file is
// skipped, not an invisible "invalid character"; anywhere else it still is
// one.
func TestByteOrderMark(t *testing.T) {
	f, diags := parser.ParseFile("bom.flex", []byte("\uFEFFmask m(b, h, q, kv) = q >= kv\n"))
	if len(diags) != 0 || len(f.Decls) != 1 {
		t.Fatalf("%d declarations, diagnostics:\n%s", len(f.Decls), diags.Render())
	}
	if sp := f.Decls[0].Span(); sp.Start != 3 {
		t.Errorf("declaration starts at byte %d, want 3 (after the mark)", sp.Start)
	}
	_, diags = parser.ParseFile("mid.flex", []byte("mask m(b, h, q, kv) = q >= \uFEFFkv\n"))
	if len(diags) != 1 || diags[0].Code != parser.CodeInvalidChar {
		t.Errorf("a mark inside the text: %s", diags.Render())
	}
}

// TestFloatUnderflowIsRefused: a non-zero literal that float64 rounds to 0
// is an error, like one that rounds to infinity; 0e-400 is zero.
func TestFloatUnderflowIsRefused(t *testing.T) {
	_, diags := parser.ParseFile("u.flex", []byte("param C = 1e-400\n"))
	if len(diags) != 1 || diags[0].Code != parser.CodeNumberRange || diags[0].Message != "float `1e-400` is too small for 64 bits: it would be 0" {
		t.Errorf("1e-400: %s", diags.Render())
	}
	if _, diags := parser.ParseFile("z.flex", []byte("param C = 0.0e-400\nparam D = 5e-324\n")); len(diags) != 0 {
		t.Errorf("0.0e-400, 5e-324: %s", diags.Render())
	}
}

// TestLineEndRule: "\n" and "\r\n" end lines; a lone "\r" (which the C
// preprocessor and editors take for a line end) and any control character
// or bidirectional mark in a comment (comments are copied into generated
// code) are errors at their position, counted with the same line rule.
func TestLineEndRule(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"crlf", "# c\r\nmask m(b, h, q, kv) = q >= kv\r\n", ""},
		{"lone cr in a comment", "# c\r#define x 0\nmask m(b, h, q, kv) = q >= kv\n",
			"t.flex:1:4: error[E001]: carriage return (U+000D) without a newline"},
		{"lone cr in code", "mask m(b, h, q, kv) = q >= kv\r\n\rparam A = 1\n",
			"t.flex:2:1: error[E001]: carriage return (U+000D) without a newline"},
		{"esc in a comment", "# \x1b[2J\nmask m(b, h, q, kv) = q >= kv\n",
			"t.flex:1:3: error[E001]: invalid character \\x1b in a comment"},
		{"bidi override in a comment", "# a \u202e b\nmask m(b, h, q, kv) = q >= kv\n",
			"t.flex:1:5: error[E001]: invalid character \\u202e in a comment"},
		{"form feed in a comment", "# a \f b\n", "t.flex:1:5: error[E001]: invalid character \\x0c in a comment"},
		{"after a lone cr, lines count it", "# a\r\rmask m(b, h, q, kv) = q >= kv\n",
			"t.flex:1:4: error[E001]: carriage return (U+000D) without a newline"},
	} {
		_, diags := parser.ParseFile("t.flex", []byte(tc.src))
		got := ""
		if len(diags) > 0 {
			got = diags[0].Error()
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
