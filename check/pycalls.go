package check

import "github.com/maskc/maskc/dsl"

// This file lowers the Python built-ins that mods and factories call on
// compile-time values: all() and any() over a generator or a tuple, and
// callable() (torch's and transformers' and_masks guard their arguments
// with `if not all(callable(arg) for arg in mask_mods): raise ...`);
// functools.partial is partial.go's.

// pythonCall lowers x when it calls all, any or callable (not rebound by
// the file), and reports whether it did.
func (l *lowering) pythonCall(f *frame, x *dsl.CallExpr) (result, bool) {
	id, ok := dsl.Unparen(x.Fun).(*dsl.Ident)
	if !ok || f.names[id.Name] != nil {
		return result{}, false
	}
	switch id.Name {
	case "all", "any", "callable":
	default:
		return result{}, false
	}
	if _, declared := l.c.lookup(f, id.Name); declared {
		return result{}, false
	}
	if len(x.Args) != 1 {
		l.errorf(f, x.Sp, CodeArgCount, "%s takes 1 argument, got %d", id.Name, len(x.Args)).
			WithHint("%s", pythonCallUsage[id.Name])
		return result{}, true
	}
	arg := x.Args[0]
	if k, isKw := arg.(*dsl.KeywordArg); isKw {
		l.expr(f, k.Value)
		l.errorf(f, k.Name.Sp, CodeKeywordArg, "%s takes no keyword argument %s=", id.Name, k.Name.Name).
			WithHint("%s", pythonCallUsage[id.Name])
		return result{}, true
	}
	if id.Name == "callable" {
		return l.callableOf(f, x, arg), true
	}
	return l.allAny(f, x, arg, id.Name), true
}

var pythonCallUsage = map[string]string{
	"all":      "all(c for x in xs) or all(tuple): true when every element is",
	"any":      "any(c for x in xs) or any(tuple): true when some element is",
	"callable": "callable(x): whether x is a mod or a function",
}

// callableOf lowers callable(arg): true for a mod, a factory, a helper or
// a built-in function, false for a value, a tuple or a buffer (a tensor).
func (l *lowering) callableOf(f *frame, x *dsl.CallExpr, arg dsl.Expr) result {
	if _, isGen := arg.(*dsl.GeneratorExpr); isGen {
		l.errorf(f, arg.Span(), CodeNotAValue, "a generator is read only by all() and any()").
			WithHint("%s", pythonCallUsage["callable"])
		return result{}
	}
	r := l.expr(f, arg)
	if !r.ok() && r.fn == "" {
		return result{}
	}
	return l.constant(f, dsl.Bool(r.mod != nil || r.fn != "" || r.typ == dsl.TypeFunc), x.Sp)
}

// allAny lowers all(arg) (every true) or any(arg), as name says: arg a
// generator, `ELT for VAR in ITER` unrolled over ITER's compile-time values,
// or a tuple. Each element is read as Python's bool() reads it; the result
// is a constant where every element is, else the and (or) of them.
func (l *lowering) allAny(f *frame, x *dsl.CallExpr, arg dsl.Expr, name string) result {
	all := name == "all"
	var elts []result
	var exprs []dsl.Expr
	if g, isGen := arg.(*dsl.GeneratorExpr); isGen {
		vals, known := l.iterValues(f, g.Iter, "a generator over")
		if !known {
			return result{}
		}
		for _, v := range vals {
			inner := f.child() // the generator's variable is its own
			bindName(inner, g.Var, v)
			r := l.value(inner, g.Elt)
			if !r.ok() {
				return result{}
			}
			elts, exprs = append(elts, l.truth(inner, x, g.Elt, r)), append(exprs, g.Elt)
		}
	} else {
		r := l.expr(f, arg)
		switch {
		case !r.ok() && r.fn == "":
			return result{}
		case r.typ != dsl.TypeTuple:
			l.errorf(f, arg.Span(), CodeNotAValue, "%s of %s, which is not a tuple or a generator", name, sourceText(f, arg)).
				WithHint("%s", pythonCallUsage[name])
			return result{}
		}
		for _, e := range r.elems {
			if !e.scalar() {
				l.errorf(f, arg.Span(), CodeNotAValue, "%s of a tuple holding %s, which has no truth value here", name, describeResult(e)).
					WithHint("give it numbers or bools")
				return result{}
			}
			elts, exprs = append(elts, l.truth(f, x, arg, e)), append(exprs, arg)
		}
	}
	op := dsl.OpOr
	acc := l.constant(f, dsl.Bool(all), x.Sp)
	if all {
		op = dsl.OpAnd
	}
	for i, e := range elts {
		if !e.ok() {
			return result{}
		}
		if i == 0 {
			acc = e
			continue
		}
		acc = l.binop(f, x, op, exprs[i-1], exprs[i], acc, e)
	}
	return acc
}
