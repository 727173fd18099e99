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
