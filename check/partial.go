package check

import (
	"slices"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// This file lowers functools.partial(f, *args, **kwargs), as FlexAttention
// code binds the extra parameters of a mod: partial(causal_mask_mod,
// context_len=n), functools.partial(causal_mask, rank),
// partial(causal_mask_mode, max_seq_length, block_lengths). f is a def; the
// arguments bind its leading parameters by position and others by name,
// as Python binds them, and the parameters left unbound, in order, take
// what FlexAttention passes: four for a mask_mod (b, h, q_idx, kv_idx),
// five for a score_mod (score first); a parameter after a bare `*` takes
// an argument only by name, or its default. A def that some partial(...)
// of the file names is a helper function (partialTargets): its parameters
// are known only where it is applied, whatever their number.

// isPartial reports whether name is functools.partial.
func isPartial(name string) bool { return name == "partial" || name == "functools.partial" }

// partialFun returns how fun names functools.partial (`partial` or
// `functools.partial`), and whether it does.
func partialFun(fun dsl.Expr) (string, bool) {
	switch e := dsl.Unparen(fun).(type) {
	case *dsl.Ident:
		return e.Name, isPartial(e.Name)
	case *dsl.SelectorExpr:
		if id, ok := dsl.Unparen(e.X).(*dsl.Ident); ok && id.Name == "functools" && e.Sel.Name == "partial" {
			return "functools.partial", true
		}
	}
	return "", false
}

// partialOf reports whether x calls functools.partial (neither name
// rebound by the file), and how.
func (l *lowering) partialOf(f *frame, x *dsl.CallExpr) (string, bool) {
	name, ok := partialFun(x.Fun)
	if !ok {
		return "", false
	}
	root := partialRoot(name)
	if _, declared := l.c.lookup(f, root); declared || f.names[root] != nil {
		return "", false
	}
	return name, true
}

// partialRoot is the name a file would rebind to shadow partial name:
// `partial`, or the module of `functools.partial`.
func partialRoot(name string) string {
	root, _, _ := strings.Cut(name, ".")
	return root
}

// partialTargets returns the names of the top-level defs that a
// partial(...) call of the file names as its function (not where the file
// declares a `partial` or `functools` of its own, as partialOf).
func partialTargets(file *dsl.File) map[string]bool {
	targets := map[string]bool{}
	declared := map[string]bool{}
	for _, d := range file.Decls {
		if id := d.DeclName(); id != nil {
			declared[id.Name] = true
		}
	}
	visit := func(e dsl.Expr) {
		dsl.Inspect(e, func(e dsl.Expr) bool {
			call, ok := e.(*dsl.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			if name, ok := partialFun(call.Fun); ok && !declared[partialRoot(name)] {
				if id, ok := dsl.Unparen(call.Args[0]).(*dsl.Ident); ok {
					targets[id.Name] = true
				}
			}
			return true
		})
	}
	walkFileExprs(file, visit)
	return targets
}

// partialHelper reports whether d, declared at the top of a file whose
// partial(...) calls name targets, is a def that they bind: a plain def
// (not a factory, whose parameters are its own), which is then checked
// and applied as a helper function.
func partialHelper(d *dsl.ModDecl, targets map[string]bool) bool {
	return targets[d.Name.Name] && d.Def && d.FactoryParams == nil && d.Inner == nil
}

// partialApp is a partial application of a helper def: the parameters
// bound by the partial(...) call, the others taken from the mod's
// arguments in order.
type partialApp struct {
	fn    *modValue // the helper def (with a factory's arguments when it is an inner def)
	bound []*result // per parameter of fn: its bound value, or nil
}

// partialCall lowers partial(f, args...) (x) to a mod value.
func (l *lowering) partialCall(f *frame, x *dsl.CallExpr, name string) result {
	if len(x.Args) == 0 {
		l.errorf(f, x.Sp, CodeArgCount, "%s needs the function it binds", name).WithHint("%s", partialUsage)
		return result{}
	}
	fnExpr := x.Args[0]
	rest := &dsl.CallExpr{Sp: x.Sp, Fun: x.Fun, Args: x.Args[1:]}
	if _, kw := fnExpr.(*dsl.KeywordArg); kw {
		l.lowerArgs(f, x)
		l.errorf(f, fnExpr.Span(), CodeArgCount, "%s takes the function it binds first, by position", name).WithHint("%s", partialUsage)
		return result{}
	}
	fn := l.expr(f, fnExpr)
	if !fn.ok() && fn.mod == nil {
		l.lowerArgs(f, rest)
		return result{}
	}
	if fn.mod == nil || fn.mod.mod == nil || !fn.mod.mod.Helper || fn.mod.unapplied {
		l.lowerArgs(f, rest)
		l.errorf(f, fnExpr.Span(), CodeNotAMod, "%s binds the parameters of a def, got %s", name, sourceText(f, fnExpr)).
			WithHint("name a def declared in this file; mods, factories and combinators are passed as they are")
		return result{}
	}
	texts := []string{fn.mod.mod.Name}
	for _, a := range rest.Args {
		texts = append(texts, sourceText(f, a))
	}
	mv := l.bindPartial(f, x.Sp, name, fn.mod, rest.Args)
	if mv == nil {
		return result{}
	}
	mv.name = "partial(" + strings.Join(texts, ", ") + ")"
	return result{typ: kindType(mv.kind), mod: mv}
}

// partialUsage is the hint of a partial(...) that binds nothing usable.
const partialUsage = "bind a def's own parameters, e.g. partial(causal_mask_mod, context_len=16) of def causal_mask_mod(b, h, q_idx, kv_idx, context_len)"

// bindPartial binds args (positional, then by name, as Python binds them)
// to the parameters of helper def fn, where site (what, e.g. "partial")
// applies it: the mod value of the partial application, of the kind the
// positional parameters left unbound make; nil after an error. A parameter
// after a bare `*` takes an argument only by name, or its default.
func (l *lowering) bindPartial(f *frame, site dsl.Span, what string, fn *modValue, args []dsl.Expr) *modValue {
	m := fn.mod
	params := m.Decl.Params
	npos := len(params) - m.Decl.KwOnly // those a position reaches
	bound := make([]*result, len(params))
	pos := 0
	okAll := true
	for _, a := range args {
		kw, isKw := a.(*dsl.KeywordArg)
		i := pos
		value := a
		if isKw {
			value = kw.Value
			i = slices.IndexFunc(params, func(p *dsl.Ident) bool { return p.Name == kw.Name.Name })
			switch {
			case i < 0:
				l.expr(f, value)
				l.noParameter(f, kw, m, params)
				okAll = false
				continue
			case bound[i] != nil:
				l.expr(f, value)
				l.errorf(f, kw.Name.Sp, CodeKeywordArg, "%s binds %s twice", what, kw.Name.Name).
					WithHint("bind %s once, by position or as %s=", kw.Name.Name, kw.Name.Name)
				okAll = false
				continue
			}
		} else {
			if pos >= npos {
				l.expr(f, value)
				l.errorf(f, a.Span(), CodeArgCount, "%s binds more arguments by position than %s takes (%d)", what, m.Name, npos).
					WithHint("its parameters are %s(%s)", m.Name, strings.Join(paramNames(params), ", "))
				okAll = false
				continue
			}
			pos++
		}
		r := l.expr(f, value)
		if !r.ok() && r.typ != dsl.TypeNone {
			okAll = false
			continue
		}
		bound[i] = &r
	}
	if !okAll {
		return nil
	}
	// Python passes the mod's arguments by position to the parameters after
	// those bound by position: one of them bound by name before a free one
	// would take two values (a TypeError).
	var free []*dsl.Ident
	for i := pos; i < npos; i++ {
		if bound[i] != nil {
			continue
		}
		if len(free) < i-pos {
			named := params[pos+len(free)]
			l.errorf(f, site, CodeArgCount, "%s binds %s by name, but %s comes after it: FlexAttention's arguments would fill %s by position too",
				what, named.Name, params[i].Name, named.Name).
				WithHint("bind by name only parameters after the mod's (b, h, q_idx, kv_idx), or bind %s by position", named.Name)
			return nil
		}
		free = append(free, params[i])
	}
	// A parameter taken only by name and not bound takes its default.
	for i := npos; i < len(params); i++ {
		if bound[i] != nil {
			continue
		}
		if i >= len(m.Decl.Defaults) || m.Decl.Defaults[i] == nil {
			l.errorf(f, site, CodeArgCount, "%s leaves %s of %s unbound, which is taken only by name and has no default", what, params[i].Name, m.Name).
				WithHint("bind it: partial(%s, %s=...)", m.Name, params[i].Name)
			return nil
		}
		r := l.expr(defaultFrame(f, m), m.Decl.Defaults[i])
		if !r.ok() {
			return nil
		}
		bound[i] = &r
	}
	var kind dsl.ModKind
	switch len(free) {
	case dsl.MaskMod.Arity():
		kind = dsl.MaskMod
	case dsl.ScoreMod.Arity():
		kind = dsl.ScoreMod
	default:
		l.errorf(f, site, CodeArgCount, "%s leaves %d parameters of %s unbound (%s); a mask_mod takes 4 and a score_mod 5", what,
			len(free), m.Name, strings.Join(paramNames(free), ", ")).
			WithHint("bind the parameters that are not the mod's by position or by name: %s", partialUsage)
		return nil
	}
	return &modValue{kind: kind, name: m.Name, partial: &partialApp{fn: fn, bound: bound}}
}

// applyPartial inlines partial application mv applied to the lowered mod
// arguments args: the def's body with its bound parameters bound and the
// others taking args in order, checked as a mod of mv's kind (a mask's
// bool, a score's number).
func (l *lowering) applyPartial(f *frame, mv *modValue, args []result, site dsl.Span) result {
	p := mv.partial
	asMod := *p.fn.mod
	asMod.Kind, asMod.Helper = mv.kind, false
	next := 0
	return l.inlineHelper(f, site, p.fn, &asMod, func(i int) (result, bool) {
		if r := p.bound[i]; r != nil {
			return *r, true
		}
		next++
		return args[next-1], true
	})
}

// functionDefs returns the names of the plain top-level defs of a mod's
// arity (4 or 5 parameters) that the file, when it has attention blocks,
// never names as a value: not in a setting, an and_masks/or_masks or
// create_block_mask argument, a factory's return, a default or an
// assignment, only ever as the function of a call (`bucket(q_idx - kv_idx,
// 32, 128, True)`) or nowhere. Python calls such a def as a function, so
// its value need not be a mask's bool or a score's number (checkMods).
// In a file without attention blocks, a library whose mods are its output,
// only the defs that it calls and never names as a value are functions.
func functionDefs(file *dsl.File) map[string]bool {
	values, called := map[string]bool{}, map[string]bool{}
	attention := false
	visit := func(e dsl.Expr) {
		callee := map[*dsl.Ident]bool{}
		dsl.Inspect(e, func(e dsl.Expr) bool {
			switch x := e.(type) {
			case *dsl.CallExpr:
				if id, ok := x.Fun.(*dsl.Ident); ok {
					callee[id], called[id.Name] = true, true
				}
			case *dsl.Ident:
				if !callee[x] {
					values[x.Name] = true
				}
			}
			return true
		})
	}
	walkFileExprs(file, visit)
	for _, d := range file.Decls {
		if _, ok := d.(*dsl.AttentionDecl); ok {
			attention = true
		}
	}
	out := map[string]bool{}
	for _, d := range file.Decls {
		if d, ok := d.(*dsl.ModDecl); ok && d.Def && !d.Helper && !d.InPlace && d.FactoryParams == nil && d.Inner == nil &&
			(len(d.Params) == 4 || len(d.Params) == 5) && !values[d.Name.Name] && (attention || called[d.Name.Name]) {
			out[d.Name.Name] = true
		}
	}
	return out
}

// walkFileExprs calls visit on every top-level expression of file: the
// attention blocks' settings, the params' values, and each mod's body,
// factory statements (stmtExprs), factory lets, result and defaults, and
// its local defs' the same way.
func walkFileExprs(file *dsl.File, visit func(dsl.Expr)) {
	var visitMod func(d *dsl.ModDecl)
	visitMod = func(d *dsl.ModDecl) {
		if d.Body != nil {
			for _, e := range d.Body.Exprs() {
				visit(e)
			}
		}
		for _, e := range stmtExprs(d.FactoryPre) {
			visit(e)
		}
		for _, let := range d.FactoryLets {
			visit(let.Value)
		}
		if d.FactoryResult != nil {
			visit(d.FactoryResult)
		}
		for _, e := range d.Defaults {
			if e != nil {
				visit(e)
			}
		}
		for _, ld := range d.Locals {
			visitMod(ld)
		}
	}
	for _, d := range file.Decls {
		switch d := d.(type) {
		case *dsl.AttentionDecl:
			for _, s := range d.Settings {
				visit(s.Value)
			}
		case *dsl.ModDecl:
			visitMod(d)
		case *dsl.ParamDecl:
			visit(d.Value)
		}
	}
}

// stmtExprs lists the expressions of statements, blocks included: the
// assignments' values too (dsl.Body.Exprs lists those of Body.Lets only).
func stmtExprs(stmts []dsl.Stmt) []dsl.Expr {
	out := (&dsl.Body{Stmts: stmts}).Exprs()
	dsl.EachStmt(stmts, func(st dsl.Stmt) {
		if let, ok := st.(*dsl.LetStmt); ok {
			out = append(out, let.Value)
		}
	})
	return out
}
