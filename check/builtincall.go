package check

// Calls of built-in functions (dsl.Builtins): arity, types, Python's
// int/float semantics.

import (
	"strings"

	"github.com/maskc/maskc/dsl"
)

// builtin lowers a call to a built-in function.
func (l *lowering) builtin(f *frame, x *dsl.CallExpr, b *dsl.Builtin) result {
	for _, a := range x.Args {
		if kw, ok := a.(*dsl.KeywordArg); ok {
			l.errorf(f, kw.Name.Sp, CodeKeywordArg, "%s takes no keyword argument %s=", sourceText(f, x.Fun), kw.Name.Name).
				WithHint("%s", b.Doc)
			return result{}
		}
	}
	args := make([]result, len(x.Args))
	for i, a := range x.Args {
		args[i] = l.value(f, a)
	}
	l.pythonBuiltin(f, x, b, args)
	return l.builtinOf(f, x, b, x.Args, args)
}

// pythonBuiltin warns, in a def body, about a built-in called by its bare
// name where Python would not run it on tensors: a name Python lacks
// (`tanh`, `where`, `clamp`, NameError under torch), and Python's min, max,
// int and float on run-time values (which need one truth value or one
// element of a tensor).
func (l *lowering) pythonBuiltin(f *frame, x *dsl.CallExpr, b *dsl.Builtin, args []result) {
	id, ok := x.Fun.(*dsl.Ident)
	if !ok || strings.Contains(id.Name, ".") || b.Name == "abs" {
		return
	}
	runtime := false
	for _, a := range args {
		runtime = runtime || a.ok() && !a.isConst()
	}
	switch b.Name {
	case "min", "max":
		if runtime {
			l.torchWarning(f, id.Sp, "Python's "+b.Name+"() on tensors", "torch."+b.Name+"imum(x, y)", "x.clamp("+map[string]string{"min": "max", "max": "min"}[b.Name]+"=c)")
		}
	case "int", "float":
		if runtime {
			l.torchWarningNeeds(f, id.Sp, "Python's "+b.Name+"() of a tensor", "a tensor of one element", map[string]string{"int": "x.long()", "float": "x.float()"}[b.Name], "")
		}
	default:
		if f.python && f.record && f.site == nil {
			l.warnf(f, id.Sp, CodeTorchBool, "%s is not a Python built-in: under torch this def raises NameError", id.Name).
				WithHint("write torch.%s", id.Name)
		}
	}
}

// builtinOf lowers built-in b applied to the lowered arguments args, whose
// source expressions are argExprs; x is the call as written, for spans and
// messages (a method call such as `d.abs()` passes its receiver as the
// first argument).
func (l *lowering) builtinOf(f *frame, x *dsl.CallExpr, b *dsl.Builtin, argExprs []dsl.Expr, args []result) result {
	okAll := true
	for _, a := range args {
		okAll = okAll && a.ok()
	}
	if len(args) < b.MinArgs || len(args) > b.MaxArgs {
		l.errorf(f, x.Sp, CodeArgCount, "%s takes %d %s, got %d", b.Name, b.MinArgs,
			plural(b.MinArgs, "argument", "arguments"), len(args)).WithHint("%s", b.Doc)
		return result{}
	}
	if !okAll {
		return result{}
	}
	var typ dsl.Type
	switch b.Name {
	case "where":
		if args[0].typ != dsl.TypeBool {
			l.errorf(f, argExprs[0].Span(), CodeConditionNotBool, "the condition of where must be bool, got %s", args[0].typ).
				WithHint("compare it to get a bool, e.g. where(%s != 0, ...)", sourceText(f, argExprs[0]))
			return result{}
		}
		typ = branchType(args[1].typ, args[2].typ)
	case "min", "max", "clamp":
		typ = dsl.TypeBool
		for _, a := range args {
			if a.typ != dsl.TypeBool {
				typ = dsl.Promote(typ, a.typ)
			}
		}
		if typ == dsl.TypeBool {
			for _, a := range args {
				if a.typ != dsl.TypeBool {
					typ = dsl.TypeInt
				}
			}
		}
	case "abs", "floor", "ceil":
		typ = dsl.Promote(args[0].typ, dsl.TypeInt)
	case "int":
		typ = dsl.TypeInt
	default:
		typ = dsl.TypeFloat
	}
	allConst := true
	vals := make([]dsl.Value, len(args))
	for i, a := range args {
		allConst = allConst && a.isConst()
		vals[i] = a.val
	}
	if allConst {
		v, err := dsl.CallBuiltin(b.Name, vals)
		if err != nil {
			l.errorf(f, x.Sp, CodeFoldError, "constant %s: %v", sourceText(f, x), err)
			return result{}
		}
		return l.constant(f, v, x.Sp)
	}
	nodes := make([]dsl.Expr, len(args))
	size := 2
	for i, a := range args {
		nodes[i] = a.node
		size += a.size
	}
	fun := &dsl.Ident{Sp: l.span(f, x.Fun.Span()), Name: b.Name}
	node := &dsl.CallExpr{Sp: l.span(f, x.Sp), Fun: fun, Args: nodes}
	l.setType(fun, typ)
	return l.add(f, node, typ, size)
}
