package format_test

import (
	"math"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/parser"
)

// TestExprParsed prints parsed expressions: canonical spacing, parentheses
// exactly as written, literals as written.
func TestExprParsed(t *testing.T) {
	tests := []struct{ src, want string }{
		{"q-kv<=1024", "q - kv <= 1024"},
		{"0<=q-kv<=W", "0 <= q - kv <= W"},
		{"a if c else b", "a if c else b"},
		{"not(a)", "not (a)"},
		{"not  a", "not a"},
		{"- x", "-x"},
		{"- -x", "--x"},
		{"~ m", "~m"},
		{"2**-1", "2 ** -1"},
		{"-2**2", "-2 ** 2"},
		{"(-2)**2", "(-2) ** 2"},
		{"((q))", "((q))"},
		{"f( a ,b, )", "f(a, b)"},
		{"sliding(1024)(b,h,q,kv)", "sliding(1024)(b, h, q, kv)"},
		{"bias[h,q-kv+4095]", "bias[h, q - kv + 4095]"},
		{"(1023,0)", "(1023, 0)"},
		{"( x , )", "(x,)"},
		{"1_000 + 0x7f + 1e-4 + .5 + 1.", "1_000 + 0x7f + 1e-4 + .5 + 1."},
		{"True and false", "True and false"},
		{"torch.tanh(score/CAP)", "torch.tanh(score / CAP)"},
		{"a//b%c", "a // b % c"},
		{"a|b&c", "a | b & c"},
		{"any(q==kv+d for d in (1,2))", "any(q == kv + d for d in (1, 2))"},
		{"all(m(b,h,q,kv) for m in (a or b))", "all(m(b, h, q, kv) for m in (a or b))"},
		{"x[0 for i in y]", "x[0 for i in y]"},
	}
	for _, tt := range tests {
		e, diags := parser.ParseExpr("e", tt.src)
		if len(diags) > 0 {
			t.Fatalf("%q: %s", tt.src, diags.Render())
		}
		if got := format.Expr(e); got != tt.want {
			t.Errorf("Expr(%q) = %q, want %q", tt.src, got, tt.want)
		}
	}
}

func v(x dsl.Var) dsl.Expr  { return &dsl.VarRef{Sp: dsl.NoSpan, Var: x} }
func i(n int64) dsl.Expr    { return &dsl.IntLit{Sp: dsl.NoSpan, Value: n} }
func fl(x float64) dsl.Expr { return &dsl.FloatLit{Sp: dsl.NoSpan, Value: x} }
func bin(op dsl.Op, x, y dsl.Expr) dsl.Expr {
	return &dsl.BinaryExpr{Sp: dsl.NoSpan, OpSp: dsl.NoSpan, Op: op, X: x, Y: y}
}
func cmp(x dsl.Expr, op dsl.Op, y dsl.Expr) dsl.Expr {
	return &dsl.CompareExpr{Sp: dsl.NoSpan, Operands: []dsl.Expr{x, y}, Ops: []dsl.Op{op}}
}
func un(op dsl.Op, x dsl.Expr) dsl.Expr { return &dsl.UnaryExpr{Sp: dsl.NoSpan, Op: op, X: x} }

// TestExprLowered prints trees the checker builds: no ParenExpr, VarRefs,
// literals without Raw. The printer inserts exactly the parentheses that
// precedence requires.
func TestExprLowered(t *testing.T) {
	q, kv, h := v(dsl.VarQ), v(dsl.VarKV), v(dsl.VarH)
	tests := []struct {
		name string
		e    dsl.Expr
		want string
	}{
		{"vars", cmp(bin(dsl.OpSub, q, kv), dsl.OpLE, i(1024)), "q - kv <= 1024"},
		{"left assoc", bin(dsl.OpSub, q, bin(dsl.OpSub, kv, h)), "q - (kv - h)"},
		{"left assoc no parens", bin(dsl.OpSub, bin(dsl.OpSub, q, kv), h), "q - kv - h"},
		{"mul over add", bin(dsl.OpMul, bin(dsl.OpAdd, q, kv), h), "(q + kv) * h"},
		{"shift of sum", bin(dsl.OpShl, bin(dsl.OpAdd, q, kv), h), "q + kv << h"},
		{"sum of shift", bin(dsl.OpAdd, bin(dsl.OpShr, q, kv), h), "(q >> kv) + h"},
		{"xor of and", bin(dsl.OpBitXor, bin(dsl.OpBitAnd, q, kv), h), "q & kv ^ h"},
		{"and of xor", bin(dsl.OpBitAnd, bin(dsl.OpBitXor, q, kv), h), "(q ^ kv) & h"},
		{"or of xor", bin(dsl.OpBitOr, q, bin(dsl.OpBitXor, kv, h)), "q | kv ^ h"},
		{"xor of or", bin(dsl.OpBitXor, q, bin(dsl.OpBitOr, kv, h)), "q ^ (kv | h)"},
		{"and of ors", bin(dsl.OpAnd, bin(dsl.OpOr, q, kv), h), "(q or kv) and h"},
		{"compare in compare", cmp(cmp(q, dsl.OpLT, kv), dsl.OpEQ, h), "(q < kv) == h"},
		{"not operand", cmp(un(dsl.OpNot, q), dsl.OpEQ, kv), "(not q) == kv"},
		{"not of compare", un(dsl.OpNot, cmp(q, dsl.OpGE, kv)), "not q >= kv"},
		{"not of and", un(dsl.OpNot, bin(dsl.OpAnd, q, kv)), "not (q and kv)"},
		{"neg of sum", un(dsl.OpNeg, bin(dsl.OpAdd, q, kv)), "-(q + kv)"},
		{"neg of pow", un(dsl.OpNeg, bin(dsl.OpPow, q, i(2))), "-q ** 2"},
		{"pow of neg", bin(dsl.OpPow, un(dsl.OpNeg, q), i(2)), "(-q) ** 2"},
		{"pow right assoc", bin(dsl.OpPow, q, bin(dsl.OpPow, kv, h)), "q ** kv ** h"},
		{"pow left nested", bin(dsl.OpPow, bin(dsl.OpPow, q, kv), h), "(q ** kv) ** h"},
		{"pow negative exponent", bin(dsl.OpPow, i(2), i(-1)), "2 ** -1"},
		{"negative base", bin(dsl.OpPow, i(-2), i(2)), "(-2) ** 2"},
		{"negative float", bin(dsl.OpMul, q, fl(-0.5)), "q * -0.5"},
		{"infinity", &dsl.CondExpr{Sp: dsl.NoSpan, Then: v(dsl.VarScore), Cond: cmp(q, dsl.OpGE, kv), Else: fl(math.Inf(-1))}, "score if q >= kv else -inf"},
		{"cond in cond test", &dsl.CondExpr{Then: q, Cond: &dsl.CondExpr{Then: q, Cond: kv, Else: h}, Else: h}, "q if (q if kv else h) else h"},
		{"cond as operand", bin(dsl.OpAdd, &dsl.CondExpr{Then: q, Cond: kv, Else: h}, i(1)), "(q if kv else h) + 1"},
		{"call", &dsl.CallExpr{Fun: &dsl.Ident{Name: "abs"}, Args: []dsl.Expr{bin(dsl.OpSub, q, kv)}}, "abs(q - kv)"},
		{"index", &dsl.IndexExpr{X: &dsl.Ident{Name: "doc"}, Indices: []dsl.Expr{q}}, "doc[q]"},
		{"bool", &dsl.BoolLit{Value: true}, "True"},
		{"sizes", bin(dsl.OpSub, v(dsl.SizeKV), i(1)), "KV - 1"},
		{"float", fl(30), "30.0"},
	}
	for _, tt := range tests {
		got := format.Expr(tt.e)
		if got != tt.want {
			t.Errorf("%s: Expr = %q, want %q", tt.name, got, tt.want)
		}
		// The printed form must mean the same tree: reparse with the
		// variable names as identifiers and compare shapes.
		back, diags := parser.ParseExpr(tt.name, got)
		if len(diags) > 0 {
			t.Errorf("%s: %q does not parse: %s", tt.name, got, diags.Render())
			continue
		}
		if shape(dsl.Unparen(back)) != shape(tt.e) {
			t.Errorf("%s: %q reparses as %s, want %s", tt.name, got, shape(back), shape(tt.e))
		}
	}
}

// shape writes a tree's structure, ignoring parentheses and literal
// spelling, so that printed and built trees can be compared.
func shape(e dsl.Expr) string {
	var b strings.Builder
	var walk func(dsl.Expr)
	walk = func(e dsl.Expr) {
		switch x := e.(type) {
		case *dsl.ParenExpr:
			walk(x.X)
		case *dsl.UnaryExpr:
			if lit, ok := x.X.(*dsl.IntLit); ok && x.Op == dsl.OpNeg {
				b.WriteString(format.Expr(&dsl.IntLit{Value: -lit.Value}))
				return
			}
			if lit, ok := x.X.(*dsl.FloatLit); ok && x.Op == dsl.OpNeg {
				b.WriteString(format.Expr(&dsl.FloatLit{Value: -lit.Value}))
				return
			}
			if id, ok := x.X.(*dsl.Ident); ok && x.Op == dsl.OpNeg && id.Name == "inf" {
				b.WriteString("-inf")
				return
			}
			b.WriteString("(" + x.Op.String() + " ")
			walk(x.X)
			b.WriteString(")")
		case *dsl.BinaryExpr:
			b.WriteString("(" + x.Op.String() + " ")
			walk(x.X)
			b.WriteString(" ")
			walk(x.Y)
			b.WriteString(")")
		case *dsl.CompareExpr:
			b.WriteString("(cmp")
			for k, o := range x.Operands {
				if k > 0 {
					b.WriteString(" " + x.Ops[k-1].String())
				}
				b.WriteString(" ")
				walk(o)
			}
			b.WriteString(")")
		case *dsl.CondExpr:
			b.WriteString("(if ")
			walk(x.Cond)
			b.WriteString(" ")
			walk(x.Then)
			b.WriteString(" ")
			walk(x.Else)
			b.WriteString(")")
		case *dsl.CallExpr:
			b.WriteString("(call ")
			walk(x.Fun)
			for _, a := range x.Args {
				b.WriteString(" ")
				walk(a)
			}
			b.WriteString(")")
		case *dsl.IndexExpr:
			b.WriteString("(index ")
			walk(x.X)
			for _, a := range x.Indices {
				b.WriteString(" ")
				walk(a)
			}
			b.WriteString(")")
		default:
			b.WriteString(format.Expr(e))
		}
	}
	walk(e)
	return b.String()
}
