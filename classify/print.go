package classify

import (
	"strings"

	"github.com/maskc/maskc/dsl"
)

// exprString prints a lowered expression as .flex source, with the
// parentheses its operator precedence needs. It is used for canonical forms
// and messages, never re-parsed by the classifier itself.
func exprString(e dsl.Expr) string {
	var b strings.Builder
	writeExpr(&b, e, 0)
	return b.String()
}

// precedence of an expression node as an operand (higher binds tighter).
func precedence(e dsl.Expr) int {
	switch x := e.(type) {
	case *dsl.CondExpr:
		return 0
	case *dsl.BinaryExpr:
		return x.Op.Precedence()
	case *dsl.CompareExpr:
		return 4
	case *dsl.UnaryExpr:
		if x.Op == dsl.OpNot {
			return 3
		}
		return 9
	}
	return 11
}

func writeExpr(b *strings.Builder, e dsl.Expr, min int) {
	p := precedence(e)
	if p < min {
		b.WriteByte('(')
		defer b.WriteByte(')')
	}
	switch x := e.(type) {
	case *dsl.VarRef:
		b.WriteString(x.Var.String())
	case *dsl.Ident:
		b.WriteString(x.Name)
	case *dsl.IntLit:
		b.WriteString(dsl.Int(x.Value).String())
	case *dsl.FloatLit:
		b.WriteString(dsl.Float(x.Value).String())
	case *dsl.BoolLit:
		b.WriteString(dsl.Bool(x.Value).String())
	case *dsl.ParenExpr:
		writeExpr(b, x.X, min)
	case *dsl.UnaryExpr:
		b.WriteString(x.Op.String())
		if x.Op == dsl.OpNot {
			b.WriteByte(' ')
		}
		writeExpr(b, x.X, p)
	case *dsl.BinaryExpr:
		left, right := p, p+1
		if x.Op == dsl.OpPow {
			left, right = p+1, p
		}
		writeExpr(b, x.X, left)
		b.WriteString(" " + x.Op.String() + " ")
		writeExpr(b, x.Y, right)
	case *dsl.CompareExpr:
		for i, o := range x.Operands {
			if i > 0 {
				b.WriteString(" " + x.Ops[i-1].String() + " ")
			}
			writeExpr(b, o, 5)
		}
	case *dsl.CondExpr:
		writeExpr(b, x.Then, 1)
		b.WriteString(" if ")
		writeExpr(b, x.Cond, 1)
		b.WriteString(" else ")
		writeExpr(b, x.Else, 0)
	case *dsl.CallExpr:
		writeExpr(b, x.Fun, 11)
		writeList(b, "(", x.Args, ")")
	case *dsl.IndexExpr:
		writeExpr(b, x.X, 11)
		writeList(b, "[", x.Indices, "]")
	case *dsl.TupleExpr:
		writeList(b, "(", x.Elems, ")")
	default:
		b.WriteString("?")
	}
}

func writeList(b *strings.Builder, open string, es []dsl.Expr, close string) {
	b.WriteString(open)
	for i, a := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		writeExpr(b, a, 0)
	}
	b.WriteString(close)
}
