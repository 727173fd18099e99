package parser_test

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// sexpr writes an expression as a fully bracketed S-expression, so that
// tests pin the tree shape (precedence, associativity) without spans.
func sexpr(e dsl.Expr) string {
	switch x := e.(type) {
	case nil:
		return "nil"
	case *dsl.Ident:
		return x.Name
	case *dsl.IntLit:
		return fmt.Sprintf("%s=%d", x.Raw, x.Value)
	case *dsl.FloatLit:
		return fmt.Sprintf("%s=%g", x.Raw, x.Value)
	case *dsl.BoolLit:
		return fmt.Sprintf("%s=%t", x.Raw, x.Value)
	case *dsl.UnaryExpr:
		return fmt.Sprintf("(%s %s)", x.Op, sexpr(x.X))
	case *dsl.BinaryExpr:
		return fmt.Sprintf("(%s %s %s)", x.Op, sexpr(x.X), sexpr(x.Y))
	case *dsl.CompareExpr:
		var b strings.Builder
		b.WriteString("(cmp")
		for i, o := range x.Operands {
			if i > 0 {
				b.WriteString(" " + x.Ops[i-1].String())
			}
			b.WriteString(" " + sexpr(o))
		}
		return b.String() + ")"
	case *dsl.CondExpr:
		return fmt.Sprintf("(if %s then %s else %s)", sexpr(x.Cond), sexpr(x.Then), sexpr(x.Else))
	case *dsl.CallExpr:
		return "(call " + sexpr(x.Fun) + list(x.Args) + ")"
	case *dsl.IndexExpr:
		return "(index " + sexpr(x.X) + list(x.Indices) + ")"
	case *dsl.ParenExpr:
		return "(paren " + sexpr(x.X) + ")"
	case *dsl.TupleExpr:
		return "(tuple" + list(x.Elems) + ")"
	case *dsl.StringLit:
		return fmt.Sprintf("%s=%q", x.Raw, x.Value)
	case *dsl.SelectorExpr:
		return "(. " + sexpr(x.X) + " " + x.Sel.Name + ")"
	case *dsl.KeywordArg:
		return "(kw " + x.Name.Name + " " + sexpr(x.Value) + ")"
	}
	return fmt.Sprintf("<%T>", e)
}

func list(es []dsl.Expr) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(" " + sexpr(e))
	}
	return b.String()
}

func names(ids []*dsl.Ident) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = id.Name
	}
	return strings.Join(s, " ")
}

// declDump writes a declaration compactly, expressions as S-expressions.
func declDump(d dsl.Decl) string {
	switch d := d.(type) {
	case *dsl.ParamDecl:
		return fmt.Sprintf("param %s = %s", d.Name.Name, sexpr(d.Value))
	case *dsl.BufferDecl:
		s := fmt.Sprintf("buffer %s: %s[%s]", d.Name.Name, d.DType.Name, strings.TrimSpace(list(d.Dims)))
		if d.Property != nil {
			s += " " + d.Property.Name
		}
		return s
	case *dsl.ModDecl:
		s := d.Kind.String() + " " + d.Name.Name
		if d.FactoryParams != nil {
			s += "(" + names(d.FactoryParams) + ")"
		}
		s += "(" + names(d.Params) + ")"
		if d.Def {
			s = "def " + s
			if d.Inner != nil {
				s += " inner " + d.Inner.Name
			}
			s += ":"
			for _, l := range d.Body.Lets {
				s += " " + l.Name.Name + " = " + sexpr(l.Value) + ";"
			}
			return s + " return " + sexpr(d.Body.Result)
		}
		if !d.Body.Block {
			return s + " = " + sexpr(d.Body.Result)
		}
		s += " {"
		for _, l := range d.Body.Lets {
			s += " let " + l.Name.Name + " = " + sexpr(l.Value) + ";"
		}
		return s + " " + sexpr(d.Body.Result) + " }"
	case *dsl.AttentionDecl:
		s := "attention " + d.Name.Name + " {"
		for _, st := range d.Settings {
			s += " " + st.Key.Name + " = " + sexpr(st.Value) + ";"
		}
		return s + " }"
	}
	return fmt.Sprintf("<%T>", d)
}

// forEachExpr calls f on every expression node of every declaration.
func forEachExpr(f *dsl.File, fn func(dsl.Expr)) {
	visit := func(e dsl.Expr) {
		dsl.Inspect(e, func(x dsl.Expr) bool { fn(x); return true })
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *dsl.ParamDecl:
			visit(d.Value)
		case *dsl.BufferDecl:
			for _, e := range d.Dims {
				visit(e)
			}
		case *dsl.ModDecl:
			for _, l := range d.Body.Lets {
				visit(l.Value)
			}
			visit(d.Body.Result)
		case *dsl.AttentionDecl:
			for _, s := range d.Settings {
				visit(s.Value)
			}
		}
	}
}
