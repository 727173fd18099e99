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
		case *dsl.RaiseStmt:
			// Reached: Python raises here (a guard's condition held). It is
			// reported where the mod is used (once, with what uses it), not
			// while a declaration is checked nor while both branches of an
			// unknown condition are explored.
			switch {
			case l.exploring > 0 || l.declPass:
				l.partial = true
			case !l.rootSpan.IsValid():
				l.errorf(f, st.Sp, CodeStatement, "%s is reached", raiseText(f, st)).
					WithHint("the conditions before it are decided at compile time and hold here")
			default:
				line := f.src.Position(st.Sp.Start).Line
				l.c.diags.Add(l.c.src, l.rootSpan, CodeStatement, "%s in def %s (line %d) is reached for %s", raiseText(f, st), defName(m), line, l.root()).
					WithHint("pass arguments for which Python does not raise")
			}
			return result{}, nil, true
		case *dsl.ReturnStmt:
			return l.result(f, m, st.Value), st.Value, true
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
		case *dsl.ForStmt:
			vals, known := l.iterValues(f, st.Iter, "`for` over")
			if !known {
				l.partial = true
				return result{}, nil, true
			}
			for _, v := range vals {
				if !l.bindLoopVar(f, st, v) {
					return result{}, nil, true
				}
				if r, e, returned := l.run(f, m, st.Body, lets); returned {
					return r, e, true
				}
			}
		case *dsl.IfStmt:
			c, known := l.decide(f, st.Cond, "if")
			if !known {
				for _, block := range [][]dsl.Stmt{st.Then, st.Else} {
					var scratch []*binding
					l.exploring++
					l.run(f.child(), m, block, &scratch)
					l.exploring--
				}
				l.partial = true
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
	if v, known, handled := l.sameDevice(f, cond); handled {
		return v, known
	}
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
		switch {
		case what == "if" && l.defChoice:
			d.WithHint("the factory chooses its mask_mod by this `if` when it is called: decide on its arguments and params (`x is None`, a flag), or write one mask_mod that chooses with torch.where(%s, x, y)", sourceText(f, cond))
		case what == "if":
			d.WithHint("choose between tensor values with torch.where(%s, x, y)", sourceText(f, cond))
		default:
			d.WithHint("remove the assert, or assert on factory arguments and params only")
		}
		return false, false
	}
	l.value(f, cond) // reports what cond is
	return false, false
}

// sameDevice decides `a.device == b.device` (or `!=`), as asserts and
// conditions in pasted mods write it, where a and b are tensors of the
// call: buffers, the index parameters, the score. A call runs with every
// tensor on q's device (the launcher checks it before any launch), so the
// devices are equal. handled is false for any other condition; known is
// false when an operand failed (reported).
func (l *lowering) sameDevice(f *frame, cond dsl.Expr) (value, known, handled bool) {
	x, ok := cond.(*dsl.CompareExpr)
	if !ok || len(x.Ops) != 1 || x.Ops[0] != dsl.OpEQ && x.Ops[0] != dsl.OpNE {
		return false, false, false
	}
	var tensors [2]dsl.Expr
	for i, o := range x.Operands {
		sel, ok := o.(*dsl.SelectorExpr)
		if !ok || sel.Sel.Name != "device" {
			return false, false, false
		}
		tensors[i] = sel.X
	}
	for _, t := range tensors {
		r := l.expr(f, t)
		switch {
		case !r.ok():
			return false, false, true
		case r.typ == dsl.TypeBuffer || r.scalar() && !r.isConst():
		default:
			l.errorf(f, t.Span(), CodeMethod, "%s is not a tensor of the call: it has no .device", sourceText(f, t)).
				WithHint("compare the devices of buffers, q_idx, kv_idx, b, h or the score")
			return false, false, true
		}
	}
	return x.Ops[0] == dsl.OpEQ, true, true
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

// assignedNames lists the names that stmts assign, blocks included, each
// once, in order.
func assignedNames(stmts []dsl.Stmt) []*dsl.Ident {
	var out []*dsl.Ident
	seen := map[string]bool{}
	var walk func([]dsl.Stmt)
	walk = func(stmts []dsl.Stmt) {
		for _, st := range stmts {
			switch st := st.(type) {
			case *dsl.LetStmt:
				if st.Name != nil && !seen[st.Name.Name] {
					seen[st.Name.Name] = true
					out = append(out, st.Name)
				}
			case *dsl.InPlaceStmt:
				if st.Built == "" {
					break
				}
				for _, v := range append([]*dsl.Ident{st.Target}, st.Also...) {
					if !seen[v.Name] {
						seen[v.Name] = true
						out = append(out, v)
					}
				}
			case *dsl.IfStmt:
				walk(st.Then)
				walk(st.Else)
			case *dsl.ForStmt:
				for _, v := range append([]*dsl.Ident{st.Var}, st.Targets[min(1, len(st.Targets)):]...) {
					if !seen[v.Name] {
						seen[v.Name] = true
						out = append(out, v)
					}
				}
				walk(st.Body)
			}
		}
	}
	walk(stmts)
	return out
}

// factoryPre runs a factory's statements before its inner def, at a call
// whose arguments mv binds: assignments of compile-time values (constants,
// None, buffers, mods), `if` and `assert` decided as in run. A parameter
// they rebind takes its new value; the other names they bind become
// mv.locals, which the inner function sees. It reports whether they ran
// without error.
//
// keys bind the names (dsl.DefKey) standing for the inner defs of a factory
// with dsl.ModDecl.DefStmts, whose statements bind each def's name; nil
// for another factory. There, as in Python, a name the statements assign
// is the factory's local everywhere in it: read before a statement binds
// it (a def in a branch not taken), it is unbound (E077).
func (l *lowering) factoryPre(f *frame, m *Mod, mv *modValue, keys map[string]*binding) bool {
	d := m.Decl
	fr := &frame{src: m.src, names: map[string]*binding{}, std: m.std, stdName: f.stdName, site: f.site}
	for _, b := range mv.args {
		fr.names[b.ident.Name] = b
	}
	for k, b := range keys {
		fr.names[k] = b
	}
	if keys != nil {
		for _, id := range assignedNames(d.FactoryPre) {
			if fr.names[id.Name] == nil {
				fr.names[id.Name] = &binding{kind: bindUnbound, ident: id, sym: Symbol{Kind: SymLet, Name: id.Name, Decl: id}}
			}
		}
	}
	if !l.runPre(fr, m, mv.name, d.FactoryPre) {
		return false
	}
	for i, p := range d.FactoryParams {
		if b := fr.names[p.Name]; b != nil && i < len(mv.args) {
			mv.args[i] = b
		}
	}
	params := map[string]bool{}
	for _, p := range d.FactoryParams {
		params[p.Name] = true
	}
	for _, id := range assignedNames(d.FactoryPre) {
		if b := fr.names[id.Name]; b != nil && !params[id.Name] {
			mv.locals = append(mv.locals, b)
		}
	}
	return true
}

// runPre runs statements of a factory body (see factoryPre) at the call
// named call.
func (l *lowering) runPre(fr *frame, m *Mod, call string, stmts []dsl.Stmt) bool {
	for _, st := range stmts {
		if l.preReturn != nil && l.preReturn.typ != dsl.TypeInvalid {
			return true // a `return` was reached
		}
		if l.setupWork(fr, m, st) {
			// Tensor work (reported once): the tensor it builds is unknown,
			// and the factory's instance fails without further errors.
			if let, ok := st.(*dsl.LetStmt); ok {
				fr.names[let.Name.Name] = &binding{kind: bindUnknown, ident: let.Name,
					sym: Symbol{Kind: SymLet, Name: let.Name.Name, Decl: let}}
			}
			return false
		}
		switch st := st.(type) {
		case *dsl.ReturnStmt:
			// Only in a factory with dsl.ModDecl.DefStmts (the parser refuses
			// a return before the inner def elsewhere).
			r := l.expr(fr, st.Value)
			if !r.ok() || l.preReturn == nil {
				return false
			}
			*l.preReturn = r
			return true
		case *dsl.LetStmt:
			if stringValue(st.Value) {
				fr.names[st.Name.Name] = &binding{kind: bindValue, res: l.wordValue(fr, st.Value), ident: st.Name}
				continue
			}
			r := l.expr(fr, st.Value)
			switch {
			case !r.ok() && r.typ != dsl.TypeNone && r.fn == "":
				return false
			case st.Unpack > 0 && (r.typ != dsl.TypeTuple || len(r.elems) != st.Unpack):
				l.unpackError(fr, st, r)
				return false
			case r.scalar() && !r.isConst():
				l.errorf(fr, st.Value.Span(), CodeFactoryArg, "%s = %s in factory %s is a run-time value", st.Name.Name, sourceText(fr, st.Value), m.Name).
					WithHint("a factory's statements before its inner def compute compile-time values; compute run-time ones in %s", defName(m))
				return false
			}
			fr.names[st.Name.Name] = &binding{kind: bindValue, res: r, ident: st.Name, buf: r.buf,
				sym: Symbol{Kind: SymLet, Name: st.Name.Name, Decl: st, Type: r.typ}}
			if r.typ == dsl.TypeBuffer {
				fr.names[st.Name.Name].kind = bindBuffer
			}
		case *dsl.PassStmt:
		case *dsl.RaiseStmt:
			l.errorf(fr, st.Sp, CodeStatement, "%s in factory %s is reached for %s", raiseText(fr, st), m.Name, call).
				WithHint("pass arguments for which Python does not raise")
			return false
		case *dsl.ForStmt:
			vals, known := l.iterValues(fr, st.Iter, "`for` over")
			if !known {
				return false
			}
			for _, v := range vals {
				if !l.bindLoopVar(fr, st, v) {
					return false
				}
				if !l.runPre(fr, m, call, st.Body) {
					return false
				}
			}
		case *dsl.AssertStmt:
			c, known := l.decide(fr, st.Cond, "assert")
			if !known {
				return false
			}
			if !c {
				l.errorf(fr, st.Cond.Span(), CodeStatement, "assertion %s in factory %s fails for %s", sourceText(fr, st.Cond), m.Name, call).
					WithHint("pass arguments that the assert accepts")
				return false
			}
		case *dsl.IfStmt:
			saved := l.defChoice
			l.defChoice = holdsDef(st)
			c, known := l.decide(fr, st.Cond, "if")
			l.defChoice = saved
			if !known {
				return false
			}
			block := st.Else
			if c {
				block = st.Then
			}
			if !l.runPre(fr, m, call, block) {
				return false
			}
		}
	}
	return true
}

// maxUnroll bounds the iterations of one unrolled `for` loop; the node
// budgets bound what the iterations build.
const maxUnroll = 4096

// iterValues evaluates iter, the iterable of a `for` loop or a generator
// (what names it in messages, "`for` over"), to the values its variable
// takes: range(...) of compile-time ints (rangeOf), a tuple (of constants,
// expressions, mods or buffers: a factory's `*mask_mods`, a tuple
// argument), or a buffer row along its next dimension (elementsOf). known
// is false after an error, or while a factory's declaration is checked
// (arguments unknown).
func (l *lowering) iterValues(f *frame, iter dsl.Expr, what string) (vals []result, known bool) {
	if call, ok := dsl.Unparen(iter).(*dsl.CallExpr); ok {
		if id, isID := dsl.Unparen(call.Fun).(*dsl.Ident); isID && id.Name == "range" && f.names["range"] == nil {
			ints, known := l.rangeOf(f, call, what)
			for _, v := range ints {
				vals = append(vals, l.constant(f, dsl.Int(v), iter.Span()))
			}
			return vals, known
		}
	}
	switch dsl.Unparen(iter).(type) {
	case *dsl.Ident, *dsl.TupleExpr, *dsl.IndexExpr:
		r := l.expr(f, iter)
		switch {
		case !r.ok() && r.fn == "":
			return nil, false // reported, or unknown until the factory is applied
		case r.typ == dsl.TypeBuffer:
			return l.elementsOf(f, r, iter.Span())
		case r.typ == dsl.TypeTuple:
			if len(r.elems) > maxUnroll {
				l.errorf(f, iter.Span(), CodeTooLarge, "%s %s runs more than %d times; maskc unrolls loops", what, sourceText(f, iter), maxUnroll).
					WithHint("write the loop as a closed form")
				return nil, false
			}
			return r.elems, true
		}
	}
	l.errorf(f, iter.Span(), CodeStatement, "%s %s: maskc unrolls loops over range(...) of constants, tuples and buffer rows only", what, sourceText(f, iter)).
		WithHint("write for i in range(N), with N a constant, a param or a factory argument, or loop over a tuple or over a buffer row of constant extent")
	return nil, false
}

// rangeOf evaluates range(stop), range(start, stop) or range(start, stop,
// step) of compile-time ints, the iterable of a loop, to its values.
func (l *lowering) rangeOf(f *frame, call *dsl.CallExpr, what string) (vals []int64, known bool) {
	if len(call.Args) < 1 || len(call.Args) > 3 {
		l.errorf(f, call.Span(), CodeStatement, "range() takes 1 to 3 arguments, got %d", len(call.Args)).
			WithHint("write range(stop), range(start, stop) or range(start, stop, step)")
		return nil, false
	}
	args := make([]int64, len(call.Args))
	for i, a := range call.Args {
		r := l.value(f, a)
		switch {
		case !r.ok():
			return nil, false
		case r.typ != dsl.TypeInt && r.typ != dsl.TypeBool:
			l.errorf(f, a.Span(), CodeStatement, "range() takes ints, got %s", r.typ).
				WithHint("convert with int(...)")
			return nil, false
		case !r.isConst():
			l.errorf(f, a.Span(), CodeStatement, "%s range(%s): the bound depends on a run-time value; maskc unrolls loops at compile time", what, sourceText(f, a)).
				WithHint("bound the loop by a constant, a param or a factory argument")
			return nil, false
		}
		args[i] = r.val.I
	}
	start, stop, step := int64(0), args[0], int64(1)
	if len(args) > 1 {
		start, stop = args[0], args[1]
	}
	if len(args) > 2 {
		step = args[2]
	}
	if step == 0 {
		l.errorf(f, call.Args[2].Span(), CodeStatement, "range() step must not be zero").
			WithHint("Python raises ValueError here")
		return nil, false
	}
	for v := start; step > 0 && v < stop || step < 0 && v > stop; v += step {
		if len(vals) == maxUnroll {
			l.errorf(f, call.Span(), CodeTooLarge, "%s %s runs more than %d times; maskc unrolls loops", what, sourceText(f, call), maxUnroll).
				WithHint("write the loop as a closed form")
			return nil, false
		}
		vals = append(vals, v)
	}
	return vals, true
}

// bindLoopVar binds a `for` loop's variable to v, one value of its
// iterable, or its names (`for _, offset, length in rows`) to v's
// elements: a tuple's, or a buffer row's along its next dimension. It
// reports whether the names could be bound.
func (l *lowering) bindLoopVar(f *frame, st *dsl.ForStmt, v result) bool {
	if len(st.Targets) == 0 {
		bindName(f, st.Var, v)
		return true
	}
	elems, ok := l.elementsOf(f, v, st.Iter.Span())
	if !ok {
		return false
	}
	if len(elems) != len(st.Targets) {
		l.errorf(f, st.Iter.Span(), CodeNotAValue, "cannot unpack %d values into the loop's %d names", len(elems), len(st.Targets)).
			WithHint("give the loop as many names as each element has values")
		return false
	}
	for i, t := range st.Targets {
		bindName(f, t, elems[i])
	}
	return true
}

// bindName binds a loop's or a generator's name to v.
func bindName(f *frame, id *dsl.Ident, v result) {
	b := &binding{kind: bindValue, res: v, ident: id, sym: Symbol{Kind: SymLet, Name: id.Name, Decl: id, Type: v.typ}}
	if v.typ == dsl.TypeBuffer && len(v.rows) == 0 {
		b.kind, b.buf = bindBuffer, v.buf
	}
	f.names[id.Name] = b
}

// elementsOf lists what a loop over v takes in turn: a tuple's elements,
// or a buffer's (or row's) elements along its next dimension, whose extent
// must be a constant (each a further row, or a read of one element). sp is
// the iterable's span, for messages.
func (l *lowering) elementsOf(f *frame, v result, sp dsl.Span) ([]result, bool) {
	switch {
	case v.typ == dsl.TypeTuple:
		return v.elems, true
	case v.typ != dsl.TypeBuffer:
		l.errorf(f, sp, CodeNotAValue, "cannot unpack %s %s", article(v.typ), v.typ).
			WithHint("loop over a tuple or a buffer row")
		return nil, false
	}
	dim := v.buf.Dims[len(v.rows)]
	if len(dim.Coef) > 0 {
		l.errorf(f, sp, CodeStatement, "a loop over dimension %d of buffer %s (%s), whose extent is not a constant", len(v.rows), v.buf.Name, v.buf.shape()).
			WithHint("maskc unrolls loops at compile time: declare that dimension with a constant extent")
		return nil, false
	}
	if dim.Const > maxUnroll {
		l.errorf(f, sp, CodeTooLarge, "a loop over %d rows of buffer %s runs more than %d times; maskc unrolls loops", dim.Const, v.buf.Name, maxUnroll).
			WithHint("write the loop as a closed form")
		return nil, false
	}
	out := make([]result, 0, dim.Const)
	for j := int64(0); j < dim.Const; j++ {
		idx := append(append([]result{}, v.rows...), l.constant(f, dsl.Int(j), sp))
		r := l.readRow(f, v.buf, idx, sp, sp)
		if !r.ok() {
			return nil, false
		}
		out = append(out, r)
	}
	return out, true
}

// tupleIndex reads an element of a compile-time tuple, t[i] (or t[i][j]
// ... as x[a][b] merges), with Python's negative indices.
func (l *lowering) tupleIndex(f *frame, x *dsl.IndexExpr, t result) result {
	for _, e := range x.Indices {
		i := l.value(f, e)
		switch {
		case !i.ok():
			return result{}
		case i.typ != dsl.TypeInt || !i.isConst():
			l.errorf(f, e.Span(), CodeIndexNotInt, "a tuple index must be a constant int, got %s", sourceText(f, e)).
				WithHint("maskc reads tuples at compile time")
			return result{}
		case t.typ != dsl.TypeTuple:
			l.errorf(f, x.Sp, CodeNotABuffer, "%s indexes %s, which is not a tuple", sourceText(f, x), t.typ).
				WithHint("index a tuple once per level")
			return result{}
		}
		k := i.val.I
		if k < 0 {
			k += int64(len(t.elems))
		}
		if k < 0 || k >= int64(len(t.elems)) {
			l.errorf(f, e.Span(), CodeIndexCount, "tuple index %d out of range for a tuple of %d", i.val.I, len(t.elems)).
				WithHint("Python raises IndexError here")
			return result{}
		}
		t = t.elems[k]
	}
	if t.isConst() {
		return l.constant(f, t.val, x.Sp)
	}
	return t
}

// unpackError reports `a, b = v` where v is not a tuple of as many
// elements, as Python raises.
func (l *lowering) unpackError(f *frame, let *dsl.LetStmt, r result) {
	if r.typ != dsl.TypeTuple {
		l.errorf(f, let.Value.Span(), CodeNotAValue, "cannot unpack %s into %d names: it is %s %s, not a tuple", sourceText(f, let.Value), let.Unpack, article(r.typ), r.typ).
			WithHint("unpack a tuple of compile-time values, e.g. a, b = pair")
		return
	}
	l.errorf(f, let.Value.Span(), CodeNotAValue, "cannot unpack a tuple of %d into %d names", len(r.elems), let.Unpack).
		WithHint("Python raises ValueError here")
}

// result lowers what m returns, e: a value, or for a helper function also
// a tuple, None or a function.
func (l *lowering) result(f *frame, m *Mod, e dsl.Expr) result {
	if !m.Helper {
		return l.value(f, e)
	}
	r := l.expr(f, e)
	if !r.scalar() && !callable(r) && r.typ != dsl.TypeTuple && r.typ != dsl.TypeNone && (r.ok() || r.fn != "") {
		return l.value(f, e) // reports what it is
	}
	return r
}

// stringValue reports whether e is a string built from literals: a
// literal, `a if c else b` or `a + b` of them. A factory may compute one
// (for a __name__); it has no meaning for the mod, and using it as a value
// is an error.
func stringValue(e dsl.Expr) bool {
	switch x := dsl.Unparen(e).(type) {
	case *dsl.StringLit:
		return true
	case *dsl.CondExpr:
		return stringValue(x.Then) && stringValue(x.Else)
	case *dsl.BinaryExpr:
		return x.Op == dsl.OpAdd && stringValue(x.X) && stringValue(x.Y)
	}
	return false
}

// raiseText is a raise statement as written, for messages.
func raiseText(f *frame, st *dsl.RaiseStmt) string {
	if f.site != nil || !st.Sp.IsValid() {
		return "raise"
	}
	return "`" + f.src.Slice(st.Sp) + "`"
}

// holdsDef reports whether the blocks of st hold an inner def of a factory
// with dsl.ModDecl.DefStmts (an assignment of a dsl.DefKey).
func holdsDef(st *dsl.IfStmt) bool {
	var in func([]dsl.Stmt) bool
	in = func(stmts []dsl.Stmt) bool {
		for _, s := range stmts {
			switch s := s.(type) {
			case *dsl.LetStmt:
				if id, ok := s.Value.(*dsl.Ident); ok && dsl.IsDefKey(id.Name) {
					return true
				}
			case *dsl.IfStmt:
				if in(s.Then) || in(s.Else) {
					return true
				}
			}
		}
		return false
	}
	return in(st.Then) || in(st.Else)
}

// wordValue is the TypeWord result of a string expression (stringValue):
// its text where it is known without running anything, a literal or a
// sum of literals.
func (l *lowering) wordValue(f *frame, e dsl.Expr) result {
	w, ok := knownWord(f, e)
	return result{typ: dsl.TypeWord, word: w, hasWord: ok}
}

// knownWord is the text of e where e is a string literal, a sum of known
// strings or a name bound to a known string.
func knownWord(f *frame, e dsl.Expr) (string, bool) {
	switch x := dsl.Unparen(e).(type) {
	case *dsl.StringLit:
		return x.Value, true
	case *dsl.BinaryExpr:
		if x.Op != dsl.OpAdd {
			return "", false
		}
		a, ok1 := knownWord(f, x.X)
		b, ok2 := knownWord(f, x.Y)
		return a + b, ok1 && ok2
	case *dsl.Ident:
		if b := f.names[x.Name]; b != nil && b.kind == bindValue && b.res.typ == dsl.TypeWord {
			return b.res.word, b.res.hasWord
		}
	}
	return "", false
}

// isWord reports whether e is a string: a literal, a sum of strings or a
// name bound to one.
func isWord(f *frame, e dsl.Expr) bool {
	if stringValue(e) {
		return true
	}
	if id, ok := dsl.Unparen(e).(*dsl.Ident); ok {
		b := f.names[id.Name]
		return b != nil && b.kind == bindValue && b.res.typ == dsl.TypeWord
	}
	return false
}
