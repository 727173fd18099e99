package format

import (
	"strings"

	"github.com/maskc/maskc/dsl"
)

// Binding strength of each expression form, following Python; a child
// printed in a context that needs more gets parentheses.
const (
	precLambda  = iota // lambda params: x
	precCond           // x if c else y
	precOr             // or
	precAnd            // and
	precNot            // not x
	precCmp            // == != < <= > >=
	precBitOr          // |
	precBitXor         // ^
	precBitAnd         // &
	precShift          // << >>
	precAdd            // + -
	precMul            // * / // %
	precUnary          // -x +x ~x
	precPow            // **
	precPostfix        // calls, indexing, names, literals, brackets
)

// Expr prints one expression canonically on one line, e.g. "q - kv <= 1024".
// Parentheses the user wrote (*dsl.ParenExpr) are kept; for trees without
// them, such as lowered expressions, the parentheses precedence requires
// are inserted. A *dsl.VarRef prints as its variable's name.
func Expr(e dsl.Expr) string {
	var b strings.Builder
	writeExpr(&b, e, precLambda)
	return b.String()
}

// prec returns the binding strength of e.
func prec(e dsl.Expr) int {
	switch x := e.(type) {
	case *dsl.Ident:
		if x.Lambda != nil {
			return precLambda
		}
	case *dsl.CondExpr:
		return precCond
	case *dsl.GeneratorExpr:
		return precLambda
	case *dsl.BinaryExpr:
		switch x.Op {
		case dsl.OpOr:
			return precOr
		case dsl.OpAnd:
			return precAnd
		case dsl.OpBitOr:
			return precBitOr
		case dsl.OpBitXor:
			return precBitXor
		case dsl.OpBitAnd:
			return precBitAnd
		case dsl.OpShl, dsl.OpShr:
			return precShift
		case dsl.OpAdd, dsl.OpSub:
			return precAdd
		case dsl.OpPow:
			return precPow
		}
		return precMul
	case *dsl.CompareExpr:
		return precCmp
	case *dsl.UnaryExpr:
		if x.Op == dsl.OpNot {
			return precNot
		}
		return precUnary
	case *dsl.IntLit:
		if x.Raw == "" && x.Value < 0 {
			return precUnary // printed with a leading minus
		}
	case *dsl.FloatLit:
		if x.Raw == "" && (x.Value < 0 || x.Value == 0 && 1/x.Value < 0) {
			return precUnary
		}
	}
	return precPostfix
}

// writeExpr prints e, in parentheses when it binds less tightly than min.
func writeExpr(b *strings.Builder, e dsl.Expr, min int) {
	if e == nil {
		b.WriteString("<nil>")
		return
	}
	if prec(e) < min {
		b.WriteByte('(')
		defer b.WriteByte(')')
	}
	switch x := e.(type) {
	case *dsl.Ident:
		if x.Lambda != nil {
			b.WriteString(lambdaText(x.Lambda))
		} else {
			b.WriteString(x.Name)
		}
	case *dsl.VarRef:
		b.WriteString(x.Var.String())
	case *dsl.IntLit:
		if x.Raw != "" {
			b.WriteString(x.Raw)
		} else {
			b.WriteString(dsl.Int(x.Value).String())
		}
	case *dsl.FloatLit:
		if x.Raw != "" {
			b.WriteString(x.Raw)
		} else {
			b.WriteString(dsl.Float(x.Value).String())
		}
	case *dsl.BoolLit:
		if x.Raw != "" {
			b.WriteString(x.Raw)
		} else {
			b.WriteString(dsl.Bool(x.Value).String())
		}
	case *dsl.UnaryExpr:
		b.WriteString(x.Op.String())
		if x.Op == dsl.OpNot {
			b.WriteByte(' ')
			writeExpr(b, x.X, precNot)
		} else {
			writeExpr(b, x.X, precUnary)
		}
	case *dsl.BinaryExpr:
		p := prec(x)
		left, right := p, p+1 // left associative
		if x.Op == dsl.OpPow {
			left, right = precPostfix, precUnary // right associative; `2 ** -1`
		}
		writeExpr(b, x.X, left)
		b.WriteByte(' ')
		b.WriteString(x.Op.String())
		b.WriteByte(' ')
		writeExpr(b, x.Y, right)
	case *dsl.CompareExpr:
		for i, o := range x.Operands {
			if i > 0 {
				b.WriteByte(' ')
				if i-1 < len(x.Ops) {
					b.WriteString(x.Ops[i-1].String())
				}
				b.WriteByte(' ')
			}
			writeExpr(b, o, precBitOr)
		}
	case *dsl.CondExpr:
		writeExpr(b, x.Then, precOr)
		b.WriteString(" if ")
		writeExpr(b, x.Cond, precOr)
		b.WriteString(" else ")
		writeExpr(b, x.Else, precLambda)
	case *dsl.CallExpr:
		writeExpr(b, x.Fun, precPostfix)
		writeList(b, "(", x.Args, ")", false)
	case *dsl.IndexExpr:
		writeExpr(b, x.X, precPostfix)
		if len(x.Indices) > 0 { // none: a lowered read of a 0-d buffer, its bare name
			writeList(b, "[", x.Indices, "]", false)
		}
	case *dsl.ParenExpr:
		b.WriteByte('(')
		writeExpr(b, x.X, precLambda)
		b.WriteByte(')')
	case *dsl.TupleExpr:
		writeList(b, "(", x.Elems, ")", len(x.Elems) == 1)
	case *dsl.StringLit:
		b.WriteString(x.Raw)
	case *dsl.SelectorExpr:
		switch x.X.(type) {
		case *dsl.IntLit, *dsl.FloatLit: // `(1).abs()`: `1.abs` would read as a number
			b.WriteByte('(')
			writeExpr(b, x.X, precCond)
			b.WriteByte(')')
		default:
			writeExpr(b, x.X, precPostfix)
		}
		b.WriteByte('.')
		b.WriteString(name(x.Sel))
	case *dsl.KeywordArg:
		b.WriteString(name(x.Name))
		b.WriteByte('=')
		writeExpr(b, x.Value, precLambda)
	case *dsl.GeneratorExpr:
		// `ELT for VAR in ITER`, ITER an or_test as Python's grammar has it.
		writeExpr(b, x.Elt, precLambda)
		b.WriteString(" for " + name(x.Var) + " in ")
		writeExpr(b, x.Iter, precOr)
	default:
		b.WriteString("<?>")
	}
}

// writeList prints elements separated by ", " between open and close; a
// one-element tuple keeps its trailing comma.
func writeList(b *strings.Builder, open string, elems []dsl.Expr, close string, trailingComma bool) {
	b.WriteString(open)
	for i, el := range elems {
		if i > 0 {
			b.WriteString(", ")
		}
		writeExpr(b, el, precLambda)
	}
	if trailingComma {
		b.WriteByte(',')
	}
	b.WriteString(close)
}
