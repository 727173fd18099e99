package check

import (
	"github.com/maskc/maskc/dsl"
)

// run executes the statements of a def body that is not straight-line
// (dsl.Body.Stmts) as Python would, deciding every `if` and `assert` at
// compile time: a condition must be a constant (a param, a factory
// argument, `x is None`, ...). It returns the value of the `return`
// reached, its expression, and whether one was reached. While a factory's
// declaration is checked its arguments are unknown: a condition on them
// runs both branches, each in a copy of the frame, for their diagnostics,
// and ends the run with an unknown value.
func (l *lowering) run(f *frame, m *Mod, stmts []dsl.Stmt, lets *[]*binding) (result, dsl.Expr, bool) {
	for _, st := range stmts {
		if l.aborted || l.c.exhausted {
			return result{}, nil, true
		}
		switch st := st.(type) {
		case *dsl.LetStmt:
			l.assign(f, m, st, lets)
		case *dsl.PassStmt:
		case *dsl.ReturnStmt:
			return l.value(f, st.Value), st.Value, true
		case *dsl.AssertStmt:
			c, known := l.decide(f, st.Cond, "assert")
			if known && !c {
				// The arguments are at fault: point at the use that passed
				// them, and say where the assert is.
				line := f.src.Position(st.Sp.Start).Line
				if l.declPass || !l.rootSpan.IsValid() {
					l.errorf(f, st.Cond.Span(), CodeStatement, "assertion %s fails", sourceText(f, st.Cond)).
						WithHint("the assert is decided at compile time; fix its condition")
				} else {
					l.c.diags.Add(l.c.src, l.rootSpan, CodeStatement, "assertion %s in def %s (line %d) fails for %s", sourceText(f, st.Cond), defName(m), line, l.root()).
						WithHint("pass arguments that the assert accepts")
				}
				return result{}, nil, true
			}
		case *dsl.IfStmt:
			c, known := l.decide(f, st.Cond, "if")
			if !known {
				for _, block := range [][]dsl.Stmt{st.Then, st.Else} {
					g := *f
					g.names = make(map[string]*binding, len(f.names))
					for k, v := range f.names {
						g.names[k] = v
					}
					var scratch []*binding
					l.run(&g, m, block, &scratch)
				}
				return result{}, nil, true
			}
			block := st.Else
			if c {
				block = st.Then
			}
			if r, e, returned := l.run(f, m, block, lets); returned {
				return r, e, true
			}
		}
	}
	return result{}, nil, false
}

// decide evaluates the condition of an `if` or `assert` (what) at compile
// time, with Python's truth: None and zero are false. It reports whether
// the value is known; a run-time condition is an error (known, false), an
// unknown one (a factory's parameter while its declaration is checked, or
// an error already reported) is not known.
func (l *lowering) decide(f *frame, cond dsl.Expr, what string) (value, known bool) {
	r := l.expr(f, cond)
	switch {
	case r.typ == dsl.TypeNone:
		return false, true
	case !r.ok():
		return false, false
	case r.scalar() && r.isConst():
		return r.val.I != 0 || r.val.F != 0, true
	case r.scalar():
		d := l.errorf(f, cond.Span(), CodeStatement, "`%s %s` depends on a run-time value: maskc decides `%s` at compile time", what, sourceText(f, cond), what)
		if what == "if" {
			d.WithHint("choose between tensor values with torch.where(%s, x, y)", sourceText(f, cond))
		} else {
			d.WithHint("remove the assert, or assert on factory arguments and params only")
		}
		return false, false
	}
	l.value(f, cond) // reports what cond is
	return false, false
}

// isNone lowers `x is None` and `x is not None`, decided at compile time:
// only None is None, every other value (a tensor included) is not.
func (l *lowering) isNone(f *frame, x *dsl.CompareExpr) result {
	if len(x.Ops) != 1 {
		l.errorf(f, x.Sp, CodeStatement, "`is` in a chain of comparisons").
			WithHint("compare with None alone: x is None")
		return result{}
	}
	a, b := l.expr(f, x.Operands[0]), l.expr(f, x.Operands[1])
	if !a.ok() && a.typ != dsl.TypeNone || !b.ok() && b.typ != dsl.TypeNone {
		return result{}
	}
	if a.typ != dsl.TypeNone && b.typ != dsl.TypeNone {
		l.errorf(f, x.Sp, CodeStatement, "`%s` compares identities, which maskc knows only against None", x.Ops[0]).
			WithHint("compare values with == or !=")
		return result{}
	}
	same := a.typ == b.typ
	if x.Ops[0] == dsl.OpIsNot {
		same = !same
	}
	return l.constant(f, dsl.Bool(same), x.Sp)
}

// defName is the name of the Python function that computes m's value.
func defName(m *Mod) string {
	if m.Decl.Inner != nil {
		return m.Decl.Inner.Name
	}
	return m.Name
}
