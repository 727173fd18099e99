package parser_test

import (
	"strings"
	"testing"
	"time"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// TestLimits feeds hostile input and checks that each ends with a clean
// result or one diagnostic. The times are logged as figures; only a parse
// that has not ended after hangGuard (a hang or a quadratic path, not a slow
// machine) fails.
func TestLimits(t *testing.T) {
	const hangGuard = 60 * time.Second
	nested := "param A = " + strings.Repeat("(", 10000) + "1" + strings.Repeat(")", 10000) + "\n"
	tenMB := strings.Repeat("mask m(b, h, q, kv) = q >= kv\n", 10<<20/30)
	tests := []struct {
		name     string
		src      string
		wantCode dsl.Code // "" for a clean parse
	}{
		{"empty file", "", ""},
		{"binary file", "\x7fELF\x02\x01\x01\x00\x00\x00" + strings.Repeat("\x00\xff", 4096), parser.CodeBinaryInput},
		{"10 MB file", tenMB, parser.CodeFileTooLarge},
		{"10 000 nested parentheses", nested, parser.CodeNestingTooDeep},
		{"10 000 unclosed parentheses", "param A = " + strings.Repeat("(", 10000), parser.CodeNestingTooDeep},
		{"10 000 nested indexings", "param A = " + strings.Repeat("a[", 10000) + "1" + strings.Repeat("]", 10000), parser.CodeNestingTooDeep},
		{"100 000 minus signs", "param A = " + strings.Repeat("-", 100000) + "1", parser.CodeOperatorChain},
		{"256 nested parentheses", "param A = " + strings.Repeat("(", 256) + "1" + strings.Repeat(")", 256), ""},
	}
	for _, tt := range tests {
		start := time.Now()
		f, diags := parser.ParseFile(tt.name, []byte(tt.src))
		elapsed := time.Since(start)
		t.Logf("%-28s %8d bytes  %v", tt.name, len(tt.src), elapsed)
		if f == nil {
			t.Errorf("%s: nil file", tt.name)
		}
		if elapsed > hangGuard {
			t.Errorf("%s: took %v: a hang or a quadratic path", tt.name, elapsed)
		}
		if tt.wantCode == "" && len(diags) > 0 {
			t.Errorf("%s: unexpected diagnostics: %s", tt.name, diags.Error())
		}
		if tt.wantCode != "" && (len(diags) != 1 || diags[0].Code != tt.wantCode) {
			t.Errorf("%s: diagnostics %v, want one %s", tt.name, diags, tt.wantCode)
		}
	}
}

// TestLongChains parses long operator chains, which build deep trees
// without brackets, and checks their shape at the far end.
func TestLongChains(t *testing.T) {
	const n = 5000
	tests := []struct {
		name, src string
		check     func(dsl.Expr) bool
	}{
		{"sum", "1" + strings.Repeat(" + 1", n), func(e dsl.Expr) bool {
			return depth(e, func(x dsl.Expr) dsl.Expr { return x.(*dsl.BinaryExpr).X }) == n // left associative
		}},
		{"power", "1" + strings.Repeat(" ** 1", n), func(e dsl.Expr) bool {
			return depth(e, func(x dsl.Expr) dsl.Expr { return x.(*dsl.BinaryExpr).Y }) == n // right associative
		}},
		{"conditional", "1" + strings.Repeat(" if c else 1", n), func(e dsl.Expr) bool {
			return depth(e, func(x dsl.Expr) dsl.Expr { return x.(*dsl.CondExpr).Else }) == n
		}},
		{"comparison", "1" + strings.Repeat(" < 1", n), func(e dsl.Expr) bool {
			return len(e.(*dsl.CompareExpr).Ops) == n
		}},
	}
	for _, tt := range tests {
		start := time.Now()
		e, diags := parser.ParseExpr(tt.name, tt.src)
		t.Logf("%-12s %6d bytes  %v", tt.name, len(tt.src), time.Since(start))
		if len(diags) > 0 || !tt.check(e) {
			t.Errorf("%s: wrong tree or diagnostics %v", tt.name, diags)
		}
	}
	src := strings.Repeat("param A = 1\n", n) + strings.Repeat("param B =\n", n)
	f, diags := parser.ParseFile("many.flex", []byte(src))
	if len(f.Decls) != n || len(diags) != parser.MaxErrors+1 || diags[parser.MaxErrors].Code != parser.CodeTooManyErrors {
		t.Errorf("many declarations: %d parsed, %d diagnostics; want %d and %d ending in %s",
			len(f.Decls), len(diags), n, parser.MaxErrors+1, parser.CodeTooManyErrors)
	}
}

// depth counts how many times next can be applied until a leaf.
func depth(e dsl.Expr, next func(dsl.Expr) dsl.Expr) int {
	d := 0
	for {
		switch e.(type) {
		case *dsl.IntLit, *dsl.Ident:
			return d
		}
		e = next(e)
		d++
	}
}
