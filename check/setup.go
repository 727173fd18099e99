package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
)

// Set-up code on tensors. Pasted factories often build a tensor before
// they define their mask_mod (`sel = torch.rand(n, n) < 0.1`, `ids =
// torch.zeros(n, dtype=torch.int32)` then `ids[a:b] = 3`, a loop filling
// it) and the mask_mod reads it. maskc compiles the mask, it runs no
// set-up code on tensors: such a tensor is computed in Python and passed
// as a buffer. Each factory (and each module constant) gets one error
// (CodeSetupTensor) at its first such statement, whose hint declares the
// buffer; the factory's instance then fails silently, so that no use of
// the tensor adds an error of its own.

// tensorBuilders are the torch functions that build a tensor (after
// `torch.`). torch.zeros_like and the like, which a mod writes for a
// scalar, are lowered in porting.go instead.
var tensorBuilders = map[string]bool{
	"rand": true, "randn": true, "randint": true, "randperm": true, "rand_like": true, "randn_like": true,
	"randint_like": true, "bernoulli": true, "multinomial": true, "normal": true,
	"zeros": true, "ones": true, "empty": true, "full": true, "empty_like": true,
	"arange": true, "range": true, "linspace": true, "logspace": true, "eye": true,
	"tensor": true, "as_tensor": true, "from_numpy": true,
	"cumsum": true, "cumprod": true, "cat": true, "concat": true, "stack": true, "tril": true, "triu": true,
	"nonzero": true, "argsort": true, "sort": true, "bucketize": true, "searchsorted": true,
	"repeat_interleave": true, "unique": true, "bincount": true, "diff": true, "flip": true, "roll": true,
	"meshgrid": true, "tril_indices": true, "triu_indices": true, "outer": true, "block_diag": true,
	"unique_consecutive": true, "cummax": true, "cummin": true, "sum": true, "prod": true,
	"masked_fill": true, "gather": true, "index_select": true, "nn.functional.pad": true,
}

// tensorMethodBuilders are the tensor methods that compute a tensor from a
// whole one (`lengths.cumsum(0)`, `doc_ids.roll(1)`, `lengths.sum()`),
// which a factory's set-up writes on its tensor arguments; no mod has them.
var tensorMethodBuilders = map[string]bool{
	"cumsum": true, "cumprod": true, "cummax": true, "cummin": true, "roll": true, "flip": true, "diff": true,
	"repeat_interleave": true, "repeat": true, "unique": true, "unique_consecutive": true, "bincount": true,
	"sum": true, "prod": true, "argsort": true, "sort": true, "nonzero": true, "argmax": true, "argmin": true,
	"view": true, "reshape": true, "flatten": true, "expand": true, "unsqueeze": true, "squeeze": true,
	"masked_fill": true, "gather": true, "index_select": true, "tril": true, "triu": true, "t": true,
	"transpose": true, "permute": true, "cat": true, "tolist": true,
}

// builderCall returns the first call in e, in source order, of a torch
// function that builds a tensor (tensorBuilders), with its name as torch
// spells it (torch.rand); nil when e holds none.
func (l *lowering) builderCall(f *frame, e dsl.Expr) (*dsl.CallExpr, string) {
	var found *dsl.CallExpr
	var name string
	dsl.Inspect(e, func(x dsl.Expr) bool {
		if found != nil {
			return false
		}
		call, ok := x.(*dsl.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := dsl.Unparen(call.Fun).(*dsl.SelectorExpr); ok && tensorMethodBuilders[sel.Sel.Name] {
			found, name = call, "."+sel.Sel.Name+"()"
			return false
		}
		id, ok := dsl.Unparen(call.Fun).(*dsl.Ident)
		if !ok || f.names[id.Name] != nil {
			return true
		}
		q := id.Name
		if imp, ok := l.c.imported(f, id.Name); ok {
			q = imp
		} else if _, declared := l.c.lookup(f, id.Name); declared {
			return true
		}
		if op, ok := strings.CutPrefix(q, "torch."); ok && tensorBuilders[op] {
			found, name = call, q
			return false
		}
		return true
	})
	return found, name
}

// setupWork reports st when it is tensor work of a factory's set-up (a
// module constant's value when m is nil), with CodeSetupTensor, and
// reports whether it was: a value built by a torch function, a loop that
// builds one or fills one, or an in-place change of a tensor. Only the
// first such statement of a factory is reported; one after it, at
// another call, is silent.
func (l *lowering) setupWork(f *frame, m *Mod, st dsl.Stmt) bool {
	var sp dsl.Span
	var name, how string
	var call *dsl.CallExpr
	switch st := st.(type) {
	case *dsl.LetStmt:
		c, fn := l.builderCall(f, st.Value)
		if c == nil {
			return false
		}
		call, sp, name, how = c, c.Fun.Span(), setupName(f, st), "is built by "+fn
	case *dsl.InPlaceStmt:
		sp, name = st.Sp, st.Target.Name
		how = "is changed in place by ." + st.Method + "()"
		switch {
		case st.Built != "":
			how = "is built with " + st.Built
		case st.Method == "":
			how = "is assigned into (`" + f.src.Slice(st.Sp) + "`)"
		}
	case *dsl.ForStmt:
		c, fn := l.builderCall(f, st.Iter)
		target := filledBy(st.Body)
		if c == nil && target == nil {
			return false
		}
		sp = dsl.Span{Start: st.Sp.Start, End: st.Iter.Span().End}
		if target != nil {
			name, how = target.Name, "is filled by the loop `for ... in "+f.src.Slice(st.Iter.Span())+"`"
		} else {
			name, how = st.Var.Name, "loops over a tensor built by "+fn
		}
	default:
		return false
	}
	typ, known := "", false
	if let, ok := st.(*dsl.LetStmt); ok && call != nil {
		typ, known = l.tensorType(f, let.Value)
	}
	var also []string
	switch st := st.(type) {
	case *dsl.InPlaceStmt:
		for _, id := range st.Also {
			also = append(also, id.Name)
		}
	case *dsl.LetStmt:
		if st.Unpack > 0 {
			also = unpackedNames(f, st)
		}
	}
	l.setupError(f, m, sp, name, also, how, typ, known)
	return true
}

// setupError reports, once per factory m (every time for a module
// constant, m nil), that the tensor name of its set-up is built there, as
// how says, at sp; also are further names the statement binds (an
// unpacking), typ is the buffer type to declare ("" for `i32[...]`), known
// whether its dtype and extents are.
func (l *lowering) setupError(f *frame, m *Mod, sp dsl.Span, name string, also []string, how, typ string, known bool) {
	if m != nil {
		if l.c.setupReported[m] {
			return
		}
		l.c.markSetup(m)
	}
	if typ == "" {
		typ = "i32[...]"
	}
	when := "when the factory runs"
	if m == nil {
		when = "when the module is imported"
	}
	d := l.errorf(f, sp, CodeSetupTensor, "%s %s %s: maskc compiles the mask, not the set-up; compute %s in Python and pass it as a buffer", "`"+name+"`", how, when, name)
	if read, all := innerReads(m); len(read) > 0 && !all[name] {
		// `eos_mask = batch == eos_id` then `seq = eos_mask.cumsum(1)`:
		// the inner def reads seq, the tensor to pass.
		decls := make([]string, len(read))
		for i, r := range read {
			decls[i] = "`buffer " + r + ": i32[...]`"
		}
		d.WithHint("the inner def reads %s, built from it: declare %s (with the element type and extents each has) and read each with one index per dimension%s",
			strings.Join(read, ", "), strings.Join(decls, ", "), takeIt(m, read...))
		return
	}
	extents := ""
	if strings.HasPrefix(typ, "i64[") {
		// torch's default int tensor; int64 values in a mask's int
		// arithmetic are E311, so the declaration to write is i32, the
		// tensor passed as .int(), as FlexAttention's index tensors are.
		typ = "i32" + strings.TrimPrefix(typ, "i64")
		extents = fmt.Sprintf(" (pass %s.int(): torch makes it int64, and int64 values in a mask's int arithmetic are E311)", name)
	}
	if !known {
		extents = fmt.Sprintf(" (with the element type and the extents %s has: constants or forms of B, H, Q and KV, e.g. bool[Q // 128, KV // 128])", name)
	}
	names := []string{name}
	if _, all := innerReads(m); all != nil {
		for _, n := range also {
			if all[n] && n != name {
				names = append(names, n) // `lo, hi = edges[:-1], edges[1:]`: both
			}
		}
	}
	decl := "`buffer " + name + ": " + typ + "`" + extents
	for _, n := range names[1:] {
		decl += ", `buffer " + n + ": i32[...]`"
	}
	d.WithHint("declare %s and read it with one index per dimension%s", decl, takeIt(m, names...))
}

// innerReads are the names factory m's set-up assigns that its inner defs
// read, in the order of the set-up, and every name those read; none for a
// module constant.
func innerReads(m *Mod) ([]string, map[string]bool) {
	if m == nil {
		return nil, nil
	}
	read := map[string]bool{}
	for _, d := range append([]*dsl.ModDecl{m.Decl}, m.Decl.Locals...) {
		for _, e := range bodyExprs(d) {
			dsl.Inspect(e, func(x dsl.Expr) bool {
				if id, ok := x.(*dsl.Ident); ok {
					read[id.Name] = true
				}
				return true
			})
		}
	}
	var out []string
	for _, id := range assignedNames(m.Decl.FactoryPre) {
		if read[id.Name] && !strings.HasPrefix(id.Name, ".") {
			out = append(out, id.Name)
		}
	}
	return out, read
}

// setupFrame is a frame for factory m's set-up statements with its
// parameters unknown, for finding and naming their tensor work.
func (l *lowering) setupFrame(m *Mod) *frame {
	f := &frame{src: m.src, names: map[string]*binding{}}
	for _, p := range m.Decl.FactoryParams {
		f.names[p.Name] = &binding{kind: bindUnknown, ident: p}
	}
	return f
}

// letOf is the assignment of stmts (blocks included) whose value is e, or
// nil.
func letOf(stmts []dsl.Stmt, e dsl.Expr) *dsl.LetStmt {
	var found *dsl.LetStmt
	dsl.EachStmt(stmts, func(st dsl.Stmt) {
		if let, ok := st.(*dsl.LetStmt); ok && let.Value == e && found == nil {
			found = let
		}
	})
	return found
}

// setupName is the name an assignment of a set-up binds (the first one an
// unpacking keeps).
func setupName(f *frame, let *dsl.LetStmt) string {
	if let.Unpack > 0 {
		return unpackedName(f, let)
	}
	return let.Name.Name
}

// unpackedNames are the names an unpacking assignment binds, as written
// before its `=`, but the ones Python discards (`_`).
func unpackedNames(f *frame, st *dsl.LetStmt) []string {
	head := f.src.Slice(dsl.Span{Start: st.Sp.Start, End: st.Value.Span().Start})
	head, _, _ = strings.Cut(head, "=")
	var out []string
	for _, n := range strings.Split(head, ",") {
		if n = strings.TrimSpace(n); n != "" && n != "_" {
			out = append(out, n)
		}
	}
	return out
}

// unpackedName is the first name an unpacking assignment (`_, counts =
// torch.unique_consecutive(...)`) binds, as written before its `=`, past
// the ones Python discards (`_`) unless every one is.
func unpackedName(f *frame, st *dsl.LetStmt) string {
	head := f.src.Slice(dsl.Span{Start: st.Sp.Start, End: st.Value.Span().Start})
	head, _, _ = strings.Cut(head, "=")
	for _, n := range strings.Split(head, ",") {
		if n = strings.TrimSpace(n); n != "" && n != "_" {
			return n
		}
	}
	return "_"
}

// markSetup records that the tensor work of factory m's set-up has been
// reported.
func (c *checker) markSetup(m *Mod) {
	if c.setupReported == nil {
		c.setupReported = map[*Mod]bool{}
	}
	c.setupReported[m] = true
}

// takeIt says how the factory m takes the buffer name; nothing for a
// module constant, which the mods read as it is.
func takeIt(m *Mod, names ...string) string {
	if m == nil {
		return ""
	}
	// The parameters the inner defs still read, after the buffer.
	read := map[string]bool{}
	var exprs []dsl.Expr
	for _, d := range append([]*dsl.ModDecl{m.Decl}, m.Decl.Locals...) {
		exprs = append(exprs, bodyExprs(d)...)
	}
	for _, let := range m.Decl.FactoryLets {
		exprs = append(exprs, let.Value)
	}
	for _, e := range exprs {
		dsl.Inspect(e, func(x dsl.Expr) bool {
			if id, ok := x.(*dsl.Ident); ok {
				read[id.Name] = true
			}
			return true
		})
	}
	params := append([]string(nil), names...)
	for _, p := range m.Decl.FactoryParams {
		if !slices.Contains(names, p.Name) && read[p.Name] {
			params = append(params, p.Name)
		}
	}
	it, arg := "it", "an argument"
	if len(names) > 1 {
		it, arg = "them", "arguments"
	}
	return fmt.Sprintf("; have %s take %s as %s, `def %s(%s)`, and pass %s: `%s(%s)`",
		m.Name, it, arg, m.Name, strings.Join(params, ", "), it, m.Name, strings.Join(params, ", "))
}

// filledBy returns the first tensor that an in-place statement of stmts
// (blocks included) changes, or nil.
func filledBy(stmts []dsl.Stmt) *dsl.Ident {
	st, _ := dsl.FirstStmt(stmts, func(st dsl.Stmt) bool {
		_, ok := st.(*dsl.InPlaceStmt)
		return ok
	}).(*dsl.InPlaceStmt)
	if st == nil {
		return nil
	}
	return st.Target
}

// firstSetupWork returns the first statement of stmts (blocks included)
// that is tensor work (setupWork) by its shape alone, or nil.
func (l *lowering) firstSetupWork(f *frame, stmts []dsl.Stmt) dsl.Stmt {
	return dsl.FirstStmt(stmts, func(st dsl.Stmt) bool {
		switch st := st.(type) {
		case *dsl.LetStmt:
			c, _ := l.builderCall(f, st.Value)
			return c != nil
		case *dsl.InPlaceStmt:
			return true
		case *dsl.ForStmt:
			c, _ := l.builderCall(f, st.Iter)
			return c != nil || filledBy(st.Body) != nil
		}
		return false
	})
}

// uncalledSetups reports, for each user factory whose set-up does tensor
// work and that no call ran far enough to report it (a file of defs only,
// a factory never used), its first such statement, its extents unknown.
func (c *checker) uncalledSetups() {
	for _, m := range c.prog.Mods {
		if m.std || !m.Factory || c.setupReported[m] || len(m.Decl.FactoryPre) == 0 {
			continue
		}
		l := c.newLowering()
		f := l.setupFrame(m)
		if st := l.firstSetupWork(f, m.Decl.FactoryPre); st != nil {
			l.setupWork(f, m, st)
		}
	}
}

// tensorType is the buffer type of the tensor that e computes, `bool[64,
// 64]` for `torch.rand(n, n) < 0.1` at n = 64, and whether its dtype and
// every extent are known (constants at this call); else a form with `...`.
func (l *lowering) tensorType(f *frame, e dsl.Expr) (string, bool) {
	dt, dims := l.tensorOf(f, e)
	if dt == "" || dims == nil {
		if dt == "" {
			dt = "i32"
		}
		return dt + "[...]", false
	}
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = fmt.Sprint(d)
	}
	return dt + "[" + strings.Join(parts, ", ") + "]", true
}

// tensorOf infers the buffer dtype name (buftype) and the extents of the
// tensor e computes: "" for an unknown dtype, nil dims for unknown ones.
func (l *lowering) tensorOf(f *frame, e dsl.Expr) (string, []int64) {
	switch x := dsl.Unparen(e).(type) {
	case *dsl.CallExpr:
		if id, ok := dsl.Unparen(x.Fun).(*dsl.Ident); ok {
			name := id.Name
			if imp, ok := l.c.imported(f, name); ok {
				name = imp
			}
			if op, ok := strings.CutPrefix(name, "torch."); ok && tensorBuilders[op] {
				return l.builderType(f, op, x)
			}
			return "", nil
		}
		sel, ok := dsl.Unparen(x.Fun).(*dsl.SelectorExpr)
		if !ok {
			return "", nil
		}
		dt, dims := l.tensorOf(f, sel.X)
		switch sel.Sel.Name {
		case "int":
			return "i32", dims
		case "long":
			return "i64", dims
		case "float":
			return "f32", dims
		case "double":
			return "f64", dims
		case "bool":
			return "bool", dims
		case "to":
			for _, a := range x.Args {
				if k, ok := a.(*dsl.KeywordArg); ok {
					a = k.Value
				}
				if t := torchBufType(a); t != "" {
					return t, dims
				}
			}
			return dt, dims
		case "contiguous", "clone", "cuda", "cpu", "detach":
			return dt, dims
		}
		return "", nil
	case *dsl.CompareExpr:
		for _, o := range x.Operands {
			if _, dims := l.tensorOf(f, o); dims != nil {
				return "bool", dims
			}
		}
		return "bool", nil
	case *dsl.UnaryExpr:
		return l.tensorOf(f, x.X)
	case *dsl.BinaryExpr:
		dt, dims := l.tensorOf(f, x.X)
		dt2, dims2 := l.tensorOf(f, x.Y)
		if dims == nil {
			dims = dims2
		}
		if dt == "" {
			dt = dt2
		}
		switch x.Op {
		case dsl.OpAnd, dsl.OpOr, dsl.OpBitAnd, dsl.OpBitOr, dsl.OpBitXor:
			return dt, dims
		case dsl.OpDiv:
			if dt == "f64" {
				return dt, dims
			}
			return "f32", dims
		}
		if dt == "bool" {
			dt = "i64" // arithmetic on bools gives int64
		}
		if strings.HasPrefix(dt, "i") || strings.HasPrefix(dt, "u") {
			// int op float: a float tensor
			for _, o := range []dsl.Expr{x.X, x.Y} {
				if _, isFloat := dsl.Unparen(o).(*dsl.FloatLit); isFloat {
					return "f32", dims
				}
			}
		}
		return dt, dims
	}
	return "", nil
}

// builderType infers the dtype and extents of the tensor that torch.op
// builds at call x, from its constant arguments.
func (l *lowering) builderType(f *frame, op string, x *dsl.CallExpr) (string, []int64) {
	var pos []dsl.Expr
	dt := ""
	for _, a := range x.Args {
		if k, ok := a.(*dsl.KeywordArg); ok {
			if k.Name.Name == "dtype" {
				dt = torchBufType(k.Value)
				if dt == "" {
					return "", nil
				}
			}
			continue
		}
		pos = append(pos, a)
	}
	size := func(args []dsl.Expr) []int64 {
		if len(args) == 1 {
			if t, ok := dsl.Unparen(args[0]).(*dsl.TupleExpr); ok {
				args = t.Elems
			}
		}
		var dims []int64
		for _, a := range args {
			n, ok := l.constInt(f, a)
			if !ok || n <= 0 {
				return nil
			}
			dims = append(dims, n)
		}
		if len(dims) == 0 {
			return nil
		}
		return dims
	}
	or := func(def string) string {
		if dt != "" {
			return dt
		}
		return def
	}
	switch op {
	case "rand", "randn", "zeros", "ones", "empty":
		return or("f32"), size(pos)
	case "full":
		if len(pos) != 2 {
			return or(""), nil
		}
		fill := ""
		switch v := dsl.Unparen(pos[1]).(type) {
		case *dsl.BoolLit:
			fill = "bool"
		case *dsl.IntLit:
			fill = "i64"
		case *dsl.FloatLit:
			fill = "f32"
		case *dsl.Ident:
			if v.Name == "True" || v.Name == "False" {
				fill = "bool"
			}
		}
		return or(fill), size(pos[:1])
	case "randint":
		if len(pos) < 2 {
			return or("i64"), nil
		}
		return or("i64"), size(pos[len(pos)-1:])
	case "randperm":
		return or("i64"), size(pos)
	case "arange":
		vals := make([]int64, len(pos))
		for i, a := range pos {
			n, ok := l.constInt(f, a)
			if !ok {
				return or(""), nil
			}
			vals[i] = n
		}
		start, stop, step := int64(0), int64(0), int64(1)
		switch len(vals) {
		case 1:
			stop = vals[0]
		case 2, 3:
			start, stop = vals[0], vals[1]
			if len(vals) == 3 {
				step = vals[2]
			}
		default:
			return or("i64"), nil
		}
		if step <= 0 || stop <= start {
			return or("i64"), nil
		}
		return or("i64"), []int64{(stop - start + step - 1) / step}
	case "eye":
		d := size(pos)
		if len(d) == 1 {
			d = append(d, d[0])
		}
		return or("f32"), d
	case "linspace", "logspace":
		if len(pos) < 3 {
			return or("f32"), nil
		}
		return or("f32"), size(pos[2:3])
	}
	return dt, nil
}

// constInt is e's value when it is an int constant at this point, without
// reporting anything about e.
func (l *lowering) constInt(f *frame, e dsl.Expr) (int64, bool) {
	n := len(l.c.diags)
	r := l.value(f, e)
	l.c.diags = l.c.diags[:n]
	if r.typ != dsl.TypeInt || !r.isConst() {
		return 0, false
	}
	return r.val.I, true
}

// torchBufType is the buffer dtype name (buftype) of the torch dtype e
// names, torch.int32 giving i32; "" for another expression.
func torchBufType(e dsl.Expr) string {
	id, ok := dsl.Unparen(e).(*dsl.Ident)
	if !ok {
		return ""
	}
	if t := buftype.FromTorch(id.Name); t != nil {
		return t.Name
	}
	return ""
}
