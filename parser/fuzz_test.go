package parser_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/parser"
)

// addSeeds gives the fuzzers every example, the sample and every
// diagnostic case to start from.
func addSeeds(f *testing.F) {
	for _, path := range examplePaths(f) {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte(sample))
	if ported, err := filepath.Glob("../testdata/ported/*.flex"); err == nil {
		for _, path := range ported {
			if src, err := os.ReadFile(path); err == nil {
				f.Add(src)
			}
		}
	}
	for _, tt := range diagnosticCases {
		f.Add([]byte(tt.src))
	}
}

// FuzzParseFile checks that ParseFile never panics, that every span it
// returns lies within the text, and that a file that parses cleanly prints
// to text that parses cleanly and prints the same again.
func FuzzParseFile(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		file, diags := parseWithin(t, src, 10*time.Second)
		if file == nil || file.Source == nil || !bytes.Equal(file.Source.Text, src) {
			t.Fatal("ParseFile must return a file holding the source")
		}
		inText := func(what string, sp dsl.Span) {
			if sp.Start < 0 || sp.End < sp.Start || sp.End > len(src) {
				t.Fatalf("%s span %+v outside the %d-byte text", what, sp, len(src))
			}
		}
		for _, d := range diags {
			if d.Code != parser.CodeFileTooLarge {
				inText("diagnostic "+string(d.Code), d.Span)
			}
			if _, ok := parser.Codes[d.Code]; !ok || d.Message == "" {
				t.Fatalf("diagnostic %s not in the code table or without message", d.Code)
			}
		}
		for _, c := range file.Comments {
			inText("comment", c.Sp)
		}
		for _, d := range file.Decls {
			inText("declaration", d.Span())
			inText("declaration name", d.DeclName().Sp)
		}
		forEachExpr(file, func(e dsl.Expr) { inText("expression", e.Span()) })
		if len(diags) > 0 {
			return
		}
		out := format.Source(file)
		again, diags := parser.ParseFile("printed.flex", out)
		if len(diags) > 0 {
			t.Fatalf("printed file does not parse:\n%s\n%s", out, diags.Render())
		}
		if out2 := format.Source(again); !bytes.Equal(out, out2) {
			t.Fatalf("printing is not a fixed point:\n%s\n---\n%s", out, out2)
		}
	})
}

// FuzzParseExpr checks that ParseExpr never panics and that a parsed
// expression prints to text that parses to the same printed form.
func FuzzParseExpr(f *testing.F) {
	for _, s := range []string{"q - kv <= 1024", "-2 ** 2", "a if b else c", "f(x)(y)[z]", "(1, 2)", "not a == b", "0 <= q - kv <= W"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, diags := parser.ParseExpr("fuzz", src)
		if len(diags) > 0 {
			if e != nil {
				t.Fatal("an expression with errors must be nil")
			}
			return
		}
		printed := format.Expr(e)
		back, diags := parser.ParseExpr("printed", printed)
		if len(diags) > 0 {
			t.Fatalf("%q printed as %q, which does not parse: %s", src, printed, diags.Render())
		}
		if format.Expr(back) != printed || sexpr(back) != sexpr(e) {
			t.Fatalf("%q printed as %q reparses as %s, want %s", src, printed, sexpr(back), sexpr(e))
		}
	})
}

// parseWithin parses src and fails the test if that takes longer than
// limit, so that the fuzzer records an input that makes the parser hang.
func parseWithin(t *testing.T, src []byte, limit time.Duration) (*dsl.File, dsl.Diagnostics) {
	type result struct {
		file  *dsl.File
		diags dsl.Diagnostics
	}
	done := make(chan result, 1)
	go func() {
		f, d := parser.ParseFile("fuzz.flex", src)
		done <- result{f, d}
	}()
	select {
	case r := <-done:
		return r.file, r.diags
	case <-time.After(limit):
		t.Fatalf("ParseFile did not finish within %v on %q", limit, src)
		return nil, nil
	}
}
