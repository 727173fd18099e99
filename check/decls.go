package check

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
)

var inf = math.Inf(1)

// String formats the buffer's declaration, e.g. "buffer doc: i32[KV] segments".
func (b *Buffer) String() string {
	s := "buffer " + b.Name + ": " + b.shape()
	if b.Segments {
		s += " segments"
	}
	return s
}

// dimSource is dimension i as written.
func (b *Buffer) dimSource(i int) string {
	if b.src == nil || i >= len(b.Decl.Dims) {
		return "?"
	}
	return b.src.Slice(b.Decl.Dims[i].Span())
}

// checkBuffers validates element types, dimensions and properties.
func (c *checker) checkBuffers() {
	for _, b := range c.prog.Buffers {
		d := b.Decl
		if d.DType != nil {
			b.DType = d.DType.Name
			if buftype.Lookup(b.DType) == nil {
				names := make([]string, 0, len(buftype.All))
				for _, d := range buftype.All {
					names = append(names, d.Name)
				}
				sort.Strings(names)
				diag := c.diags.Add(c.src, d.DType.Sp, CodeUnknownDType, "unknown element type %s", b.DType)
				if h := didYouMean(b.DType, names); h != "" {
					diag.WithHint("%s (element types: %s)", h, strings.Join(names, ", "))
				} else {
					diag.WithHint("element types: %s", strings.Join(names, ", "))
				}
			}
		}
		okDims := true
		texts := make([]string, 0, len(d.Dims)) // empty, not nil, for a 0-d buffer
		for _, e := range d.Dims {
			dim, ok := c.dim(e)
			okDims = okDims && ok
			b.Dims = append(b.Dims, dim)
			texts = append(texts, dim.Text)
		}
		d.Extents = nil
		if okDims {
			d.Extents = texts
		}
		if d.Property != nil {
			switch d.Property.Name {
			case "segments":
				b.Segments = true
				c.info.Uses[d.Property] = Symbol{Kind: SymWord, Name: "segments",
					Doc: "segments: the buffer holds non-decreasing document ids (documents are contiguous)"}
				intType := buftype.CanSegment(b.DType)
				overSeq := len(b.Dims) == 1 && (b.Dims[0].IsSize(dsl.SizeQ) || b.Dims[0].IsSize(dsl.SizeKV))
				if okDims && (!intType || !overSeq) {
					c.diags.Add(c.src, d.Property.Sp, CodeBadSegments, "segments needs a 1-D integer buffer (%s) over Q or KV, got %s", buftype.SegmentNames(), b.shape()).
						WithHint("declare document ids as buffer %s: i32[KV] segments", b.Name)
				}
			default:
				c.diags.Add(c.src, d.Property.Sp, CodeUnknownProperty, "unknown buffer property %s", d.Property.Name).
					WithHint("the only property is segments (non-decreasing document ids)")
			}
		}
		c.info.Defs[d.Name] = global{kind: SymBuffer, name: b.Name, buf: b}.symbol()
	}
}

// shape is the element type and extents as written, e.g. "f32[H, KV]".
func (b *Buffer) shape() string { return b.DType + b.dimsText() }

// dimsText is the extents as written, e.g. "[H, KV]".
func (b *Buffer) dimsText() string {
	parts := make([]string, len(b.Decl.Dims))
	for i := range parts {
		parts[i] = b.dimSource(i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// dimHint is the hint of every E033 on an extent's form.
const dimHint = "write an int constant, an expression such as KV or 2 * KV - 1, or one floor-divided by a positive int constant such as Q // 64 or (Q + 63) // 64"

// dim types a buffer dimension and reduces it to (Const + sum Coef*size)
// // Div, with its canonical Text.
func (c *checker) dim(e dsl.Expr) (Dim, bool) {
	d := Dim{Expr: e}
	l := c.newLowering()
	r := l.value(c.userFrame(), e)
	if !r.ok() {
		return d, false
	}
	if r.typ != dsl.TypeInt {
		c.diags.Add(c.src, e.Span(), CodeBadDim, "buffer dimension must be an int, got %s", r.typ).
			WithHint(dimHint)
		return d, false
	}
	form, ok := c.dimForm(e)
	if !ok {
		return d, false
	}
	d.Const, d.Coef, d.Div = form.Const, form.Coef, form.Div
	if len(d.Coef) == 0 && d.Const <= 0 {
		c.diags.Add(c.src, e.Span(), CodeBadDim, "buffer dimension must be positive, got %d", d.Const).
			WithHint("a buffer needs at least one element along each dimension")
		return d, false
	}
	d.Text = d.text()
	return d, true
}

// dimForm reduces extent e to a linear form of the sizes, or one
// floor-divided by a positive int constant (Div > 1), reporting E033 for
// anything else: a product of sizes, a division by a size or by a
// constant <= 0, a modulo of a size, a floor division inside a sum.
func (c *checker) dimForm(e dsl.Expr) (Dim, bool) {
	if lin, ok := c.linear(e); ok {
		return lin, true
	}
	x, ok := dsl.Unparen(e).(*dsl.BinaryExpr)
	if !ok || x.Op != dsl.OpFloorDiv {
		msg := "buffer dimension must be linear in the sizes B, H, HKV, Q, KV, or such a form floor-divided by a positive int constant"
		switch {
		case ok && x.Op == dsl.OpMod:
			msg = "buffer dimension cannot take a modulo of the sizes B, H, HKV, Q, KV"
		case c.hasFloorDiv(e):
			msg = "buffer dimension may floor-divide only as its outermost operation, (linear form) // constant"
		case ok && x.Op == dsl.OpMul:
			msg = "buffer dimension cannot multiply sizes together: it must be linear in B, H, HKV, Q, KV"
		}
		c.diags.Add(c.src, e.Span(), CodeBadDim, "%s", msg).WithHint(dimHint)
		return Dim{}, false
	}
	den, ok := c.linear(x.Y)
	if !ok || len(den.Coef) != 0 {
		c.diags.Add(c.src, x.Y.Span(), CodeBadDim, "buffer dimension can floor-divide only by an int constant, not by %s", c.src.Slice(x.Y.Span())).
			WithHint(dimHint)
		return Dim{}, false
	}
	if den.Const <= 0 {
		c.diags.Add(c.src, x.Y.Span(), CodeBadDim, "buffer dimension must floor-divide by a positive int constant, got %d", den.Const).
			WithHint(dimHint)
		return Dim{}, false
	}
	num, ok := c.dimForm(x.X) // (L // a) // b is L // (a * b) for a, b > 0
	if !ok {
		return Dim{}, false
	}
	div, err := dsl.IntMul(max(num.Div, 1), den.Const)
	if err != nil || div > math.MaxInt32 {
		c.diags.Add(c.src, x.Y.Span(), CodeBadDim, "buffer dimension divides by more than 2^31 - 1").
			WithHint(dimHint)
		return Dim{}, false
	}
	num.Div = div
	return reduceDiv(num), true
}

// hasFloorDiv reports whether e floor-divides somewhere.
func (c *checker) hasFloorDiv(e dsl.Expr) bool {
	found := false
	dsl.Inspect(e, func(x dsl.Expr) bool {
		if b, ok := x.(*dsl.BinaryExpr); ok && b.Op == dsl.OpFloorDiv {
			found = true
		}
		return !found
	})
	return found
}

// reduceDiv divides d's terms and divisor by their common factor: (2 * Q)
// // 2 is Q, (2 * Q + 2) // 4 is (Q + 1) // 2 (exact, since floor((g*x) /
// (g*k)) = floor(x / k) for g > 0); a divisor of 1 is none.
func reduceDiv(d Dim) Dim {
	g := d.Div
	for _, k := range d.Coef {
		g = gcd64(g, k)
	}
	g = gcd64(g, d.Const)
	if g > 1 {
		d.Const /= g
		for v := range d.Coef {
			d.Coef[v] /= g
		}
		d.Div /= g
	}
	if d.Div == 1 {
		d.Div = 0
	}
	return d
}

func gcd64(a, b int64) int64 {
	if a < 0 {
		a = -a
	}
	if b < 0 {
		b = -b
	}
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// text is d's canonical extent text (Dim.Text).
func (d Dim) text() string {
	var b strings.Builder
	terms := 0
	for v := dsl.SizeB; v <= dsl.SizeKV; v++ {
		k := d.Coef[v]
		if k == 0 {
			continue
		}
		switch {
		case terms == 0 && k == -1:
			b.WriteString("-")
		case terms == 0 && k != 1:
			fmt.Fprintf(&b, "%d * ", k)
		case terms > 0 && k == 1:
			b.WriteString(" + ")
		case terms > 0 && k == -1:
			b.WriteString(" - ")
		case terms > 0 && k > 0:
			fmt.Fprintf(&b, " + %d * ", k)
		case terms > 0:
			fmt.Fprintf(&b, " - %d * ", uint64(-k))
		}
		b.WriteString(v.String())
		terms++
	}
	switch c := d.Const; {
	case terms == 0:
		fmt.Fprintf(&b, "%d", c)
	case c == math.MinInt64:
		b.WriteString(" - 9223372036854775807 - 1")
	case c > 0:
		fmt.Fprintf(&b, " + %d", c)
	case c < 0:
		fmt.Fprintf(&b, " - %d", -c)
	}
	if d.Div > 1 {
		s := b.String()
		if terms > 1 || d.Const != 0 || strings.HasPrefix(s, "-") || strings.Contains(s, "*") {
			s = "(" + s + ")"
		}
		return fmt.Sprintf("%s // %d", s, d.Div)
	}
	return b.String()
}

// linear reduces an int expression of constants, params and size symbols
// to linear form; ok is false for anything else (or on overflow).
func (c *checker) linear(e dsl.Expr) (Dim, bool) {
	switch x := e.(type) {
	case *dsl.IntLit:
		return Dim{Const: x.Value}, true
	case *dsl.ParenExpr:
		return c.linear(x.X)
	case *dsl.Ident:
		if v, ok := dsl.SizeVar(x.Name); ok && c.prog.params[x.Name] == nil {
			return Dim{Coef: map[dsl.Var]int64{v: 1}}, true
		}
		if p := c.prog.params[x.Name]; p != nil && p.Value.Type == dsl.TypeInt {
			return Dim{Const: p.Value.I}, true
		}
	case *dsl.UnaryExpr:
		a, ok := c.linear(x.X)
		if !ok {
			return a, false
		}
		switch x.Op {
		case dsl.OpPos:
			return a, true
		case dsl.OpNeg:
			return scaleDim(a, -1)
		}
	case *dsl.BinaryExpr:
		a, okA := c.linear(x.X)
		b, okB := c.linear(x.Y)
		if !okA || !okB {
			return Dim{}, false
		}
		switch x.Op {
		case dsl.OpAdd:
			return addDim(a, b, 1)
		case dsl.OpSub:
			return addDim(a, b, -1)
		case dsl.OpMul:
			if len(a.Coef) == 0 {
				return scaleDim(b, a.Const)
			}
			if len(b.Coef) == 0 {
				return scaleDim(a, b.Const)
			}
		case dsl.OpFloorDiv, dsl.OpMod, dsl.OpPow:
			if len(a.Coef) == 0 && len(b.Coef) == 0 {
				v, err := dsl.BinaryOp(x.Op, dsl.Int(a.Const), dsl.Int(b.Const))
				if err == nil && v.Type == dsl.TypeInt {
					return Dim{Const: v.I}, true
				}
			}
		}
	}
	return Dim{}, false
}

func scaleDim(a Dim, k int64) (Dim, bool) {
	out := Dim{Coef: map[dsl.Var]int64{}}
	var err error
	if out.Const, err = dsl.IntMul(a.Const, k); err != nil {
		return out, false
	}
	for v, c := range a.Coef {
		if out.Coef[v], err = dsl.IntMul(c, k); err != nil {
			return out, false
		}
	}
	return normDim(out), true
}

func addDim(a, b Dim, sign int64) (Dim, bool) {
	b, ok := scaleDim(b, sign)
	if !ok {
		return b, false
	}
	out := Dim{Coef: map[dsl.Var]int64{}}
	var err error
	if out.Const, err = dsl.IntAdd(a.Const, b.Const); err != nil {
		return out, false
	}
	for _, m := range []map[dsl.Var]int64{a.Coef, b.Coef} {
		for v, c := range m {
			if out.Coef[v], err = dsl.IntAdd(out.Coef[v], c); err != nil {
				return out, false
			}
		}
	}
	return normDim(out), true
}

func normDim(d Dim) Dim {
	for v, c := range d.Coef {
		if c == 0 {
			delete(d.Coef, v)
		}
	}
	if len(d.Coef) == 0 {
		d.Coef = nil
	}
	return d
}

// checkMods checks each user mod's declaration and body.
// Callees are checked before their callers, so that a caller's lowering
// knows the size of what it inlines.
func (c *checker) checkMods() {
	if c.bodies != nil {
		c.bodies = make(map[*Mod]*loweredBody, len(c.prog.Mods))
	}
	for _, m := range dependencyOrder(c.prog.Mods, func(name string) *Mod { return c.prog.mods[name] }) {
		if m.asFn != nil {
			m = m.asFn // a function until something uses it as a mod
		}
		c.checkMod(m)
	}
}

// dependencyOrder sorts mods so that each comes after the mods its body
// names (cycles are broken arbitrarily; they are reported elsewhere).
func dependencyOrder(mods []*Mod, byName func(string) *Mod) []*Mod {
	out := make([]*Mod, 0, len(mods))
	state := map[*Mod]int{} // 1 visiting, 2 done
	var visit func(m *Mod)
	visit = func(m *Mod) {
		if state[m] != 0 {
			return
		}
		state[m] = 1
		for _, e := range bodyExprs(m.Decl) {
			dsl.Inspect(e, func(e dsl.Expr) bool {
				if id, ok := e.(*dsl.Ident); ok {
					if callee := byName(id.Name); callee != nil {
						visit(callee)
					}
				}
				return true
			})
		}
		state[m] = 2
		out = append(out, m)
	}
	for _, m := range mods {
		visit(m)
	}
	return out
}

// bodyExprs lists the expressions of a mod body: the lets' values and the
// result.
func bodyExprs(d *dsl.ModDecl) []dsl.Expr {
	if d.Body == nil {
		return nil
	}
	return d.Body.Exprs()
}

func (c *checker) checkMod(m *Mod) {
	diagsBefore := len(c.diags)
	d := m.Decl
	f := &frame{src: m.src, names: map[string]*binding{}, record: !m.std, std: m.std}
	c.info.Defs[d.Name] = Symbol{Kind: SymMod, Name: m.Name, Decl: d, Type: kindType(m.Kind), Doc: m.hover}
	if !m.paramCount {
		sp := d.Name.Sp
		if len(d.Params) > 0 {
			sp = d.Params[0].Sp.Join(d.Params[len(d.Params)-1].Sp)
		}
		c.diags.Add(m.src, sp, CodeModParamCount, "%s %s takes %d parameters (%s), got %d", m.Kind, m.Name,
			m.Kind.Arity(), strings.Join(kindParams(m.Kind), ", "), len(d.Params)).
			WithHint("declare it as %s %s(%s)", m.Kind, m.Name, strings.Join(kindParams(m.Kind), ", "))
	}
	declare := func(id *dsl.Ident, b *binding, what string) {
		if id == nil {
			return
		}
		if prev := f.names[id.Name]; prev != nil {
			c.diags.Add(m.src, id.Sp, CodeDuplicate, "%s %s is already declared in %s", what, id.Name, m.Name).
				WithHint("%s", c.firstDeclared(m.src, prev.ident))
			return
		}
		// `def gen(doc): ...` called as gen(doc): a factory parameter that
		// takes a buffer and is named after one is the idiom, not a slip.
		// So is a helper function's parameter named after the buffer it is
		// passed (transformers' chunked_causal_mask_function(chunk_size,
		// left_padding)).
		idiom := what == "factory parameter" && m.bufParams[id.Name] && c.prog.buffers[id.Name] != nil ||
			m.Helper && c.prog.buffers[id.Name] != nil
		if !m.std && !idiom {
			c.checkShadow(f, id, what)
			c.info.Defs[id] = b.sym
		}
		f.names[id.Name] = b
	}
	for _, p := range d.FactoryParams {
		sym := Symbol{Kind: SymFactoryParam, Name: p.Name, Decl: p, Doc: "factory parameter " + p.Name + " of " + m.Name}
		if m.bufParams[p.Name] {
			sym.Type = dsl.TypeBuffer
		}
		declare(p, &binding{kind: bindUnknown, sym: sym, ident: p}, "factory parameter")
	}
	for _, ld := range d.Locals {
		if f.names[ld.Name.Name] == nil {
			f.names[ld.Name.Name] = &binding{kind: bindUnknown, ident: ld.Name,
				sym: Symbol{Kind: SymMod, Name: ld.Name.Name, Decl: ld, Doc: "inner def " + ld.Name.Name + " of factory " + m.Name}}
		}
	}
	inner := map[string]bool{} // the inner function's parameters hide the factory's locals
	for _, p := range d.Params {
		inner[p.Name] = true
	}
	if d.DefStmts {
		// A mod that a branch binds (`else: mask_mod = causal`) is used by
		// the factory, whichever branch its calls take.
		params := map[string]bool{}
		for _, p := range d.FactoryParams {
			params[p.Name] = true
		}
		for _, e := range stmtExprs(d.FactoryPre) {
			dsl.Inspect(e, func(x dsl.Expr) bool {
				if id, ok := x.(*dsl.Ident); ok && !params[id.Name] && c.prog.mods[id.Name] != nil {
					c.prog.mods[id.Name].Used = true
				}
				return true
			})
		}
	}
	for _, id := range assignedNames(d.FactoryPre) {
		// Known only when the factory is called (factoryPre).
		if f.names[id.Name] == nil && !inner[id.Name] {
			f.names[id.Name] = &binding{kind: bindUnknown, ident: id,
				sym: Symbol{Kind: SymLet, Name: id.Name, Decl: id, Doc: "local " + id.Name + " of factory " + m.Name}}
		}
	}
	l := c.newLowering()
	l.stack = append(l.stackBuf[:0], m)
	l.rootKind, l.rootName, l.rootSpan, l.declPass = m.Kind, m.Name, d.Name.Sp, true
	for i, p := range d.Params {
		v, typ, ok := paramVar(m.Kind, i)
		if !ok || m.Helper {
			v = -1 // a helper's parameters are known where it is called
		}
		sym := Symbol{Kind: SymModParam, Name: p.Name, Decl: p, Type: typ, Doc: c.modParamDoc(p.Name, v)}
		b := &binding{kind: bindUnknown, sym: sym, ident: p}
		if v >= 0 {
			b.kind = bindValue
			b.res = l.varRef(f, v, typ, p.Sp)
		}
		declare(p, b, "mod parameter")
	}
	// A plain user mod's body, lowered here with its parameters bound to
	// the index variables, is kept for inlining it at such a use.
	keep := c.bodies != nil && !m.std && !m.Factory && m.paramCount
	if keep {
		l.types = map[dsl.Expr]dsl.Type{}
	}
	work := l.work
	r := l.body(f, m)
	switch {
	case l.aborted:
		c.modSize[m] = -1
	case r.ok():
		c.modSize[m] = r.size
	}
	if keep && r.ok() && !l.aborted && !c.exhausted && l.applies == 0 && len(c.diags) == diagsBefore {
		c.bodies[m] = &loweredBody{res: r, types: l.types, buffers: l.buffers, work: l.work - work}
	}
}

// modParamDoc is the hover text of a mod parameter standing for index
// variable v (none when v < 0), e.g. "mod parameter q_idx (q)". The texts
// are shared: most files name their parameters alike.
func (c *checker) modParamDoc(name string, v dsl.Var) string {
	key := modParamKey{name, v}
	if doc, ok := c.modParamDocs[key]; ok {
		return doc
	}
	doc := "mod parameter " + name
	if v >= 0 {
		doc += " (" + v.String() + ")"
	}
	if c.modParamDocs == nil {
		c.modParamDocs = map[modParamKey]string{}
	}
	c.modParamDocs[key] = doc
	return doc
}

// modParamKey identifies the hover text of a mod parameter.
type modParamKey struct {
	name string
	v    dsl.Var
}

// paramVar is the index variable that parameter i of a mod of kind k
// stands for, and its type; ok is false past the kind's arity.
func paramVar(k dsl.ModKind, i int) (v dsl.Var, typ dsl.Type, ok bool) {
	if k == dsl.ScoreMod {
		switch {
		case i == 0:
			return dsl.VarScore, dsl.TypeFloat, true
		case i <= 4:
			return dsl.Var(i - 1), dsl.TypeInt, true
		}
		return 0, dsl.TypeInt, false
	}
	if i < 4 {
		return dsl.Var(i), dsl.TypeInt, true
	}
	return 0, dsl.TypeInt, false
}

// warnUnused reports params, buffers and mods that nothing uses.
func (c *checker) warnUnused() {
	for _, p := range c.prog.Params {
		if !p.used {
			c.diags.Warn(c.src, p.Decl.Name.Sp, CodeUnusedParam, "param %s is never used", p.Name).
				WithHint("remove it, or use it in a mod, a buffer dimension or a setting")
		}
	}
	for _, b := range c.prog.Buffers {
		if !b.used {
			c.diags.Warn(c.src, b.Decl.Name.Sp, CodeUnusedBuffer, "buffer %s is never used", b.Name).
				WithHint("remove it, or read it in a mod (%s[...]) or a setting", b.Name)
		}
	}
	if len(c.prog.Attentions) == 0 {
		return // a file of mods only is a library: its mods are its output
	}
	for _, m := range c.prog.Mods {
		if !m.Used && m.asFn != nil {
			c.diags.Warn(c.src, m.Decl.Name.Sp, CodeUnusedMod, "def %s is never used", m.Name).
				WithHint("call it from a mod, use it as a %s (%s = %s), or remove it", m.Kind, m.Kind, m.Name)
		} else if !m.Used && m.Helper {
			c.diags.Warn(c.src, m.Decl.Name.Sp, CodeUnusedMod, "function %s is never used", m.Name).
				WithHint("call it from a mod, or remove it (a mask_mod takes 4 parameters, a score_mod 5)")
		} else if !m.Used {
			c.diags.Warn(c.src, m.Decl.Name.Sp, CodeUnusedMod, "%s %s is never used", m.Kind, m.Name).
				WithHint("use it in an attention block (%s = %s), or remove it", m.Kind, m.Name)
		}
	}
}
