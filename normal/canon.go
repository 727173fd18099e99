package normal

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
)

// MaxTerms bounds the disjunctive normal form; a mask whose DNF grows past it
// is marked TooComplex and becomes a generated kernel.
const MaxTerms = 64

// maxPieces bounds the piecewise-linear expansion of one integer operand
// (abs, min, max, clamp and int conditionals split it into pieces).
const maxPieces = 16

// Canon computes the canonical form of a lowered mask. A nil mask is the
// always-true form. Canon never evaluates the mask: it rewrites the
// expression (negation pushed to the atoms, conditionals and where() turned
// into and/or, abs/min/max/clamp split into linear pieces, integer
// comparisons normalised to bounds with `<` as `<= -1`) and simplifies
// bounds using only facts true for every length: 0 <= q < Q, 0 <= kv < KV,
// 0 <= b < B, 0 <= h < H.
func Canon(l *dsl.Lowered) *Form {
	if l == nil || l.Expr == nil {
		return &Form{Terms: []*Term{{}}}
	}
	c := &canonizer{lowered: l}
	terms, ok := c.dnf(c.formula(l.Expr))
	if !ok {
		return &Form{TooComplex: true}
	}
	return c.finish(terms)
}

// ---------------------------------------------------------------------------
// Boolean formulas in negation normal form

type fkind int

const (
	fConst fkind = iota
	fBound       // one linear bound, in conj form
	fAtom
	fAnd
	fOr
)

// formula is a boolean formula in negation normal form: negation appears
// only inside atoms and bounds.
type formula struct {
	kind  fkind
	val   bool
	bound Bound
	atom  *Atom
	kids  []*formula
}

var (
	fTrue  = &formula{kind: fConst, val: true}
	fFalse = &formula{kind: fConst, val: false}
)

func constF(v bool) *formula {
	if v {
		return fTrue
	}
	return fFalse
}

// alwaysTrue reports whether f is true by construction (a constant true or
// a conjunction of such).
func alwaysTrue(f *formula) bool {
	switch f.kind {
	case fConst:
		return f.val
	case fAnd:
		for _, k := range f.kids {
			if !alwaysTrue(k) {
				return false
			}
		}
		return true
	}
	return false
}

func and(fs ...*formula) *formula { return &formula{kind: fAnd, kids: fs} }
func or(fs ...*formula) *formula  { return &formula{kind: fOr, kids: fs} }

// not returns the negation of f, pushed to the leaves (De Morgan).
func not(f *formula) *formula {
	switch f.kind {
	case fConst:
		return constF(!f.val)
	case fAtom:
		return &formula{kind: fAtom, atom: f.atom.negate()}
	case fBound:
		b := f.bound
		// Lo <= d <= Hi negated: d <= Lo-1 or d >= Hi+1.
		var alts []*formula
		if b.HasLo && b.Lo > -1<<63 {
			alts = append(alts, &formula{kind: fBound, bound: Bound{Dir: b.Dir, Hi: b.Lo - 1, HasHi: true}})
		}
		if b.HasHi && b.Hi < 1<<63-1 {
			alts = append(alts, &formula{kind: fBound, bound: Bound{Dir: b.Dir, Lo: b.Hi + 1, HasLo: true}})
		}
		return or(alts...)
	case fAnd, fOr:
		kids := make([]*formula, len(f.kids))
		for i, k := range f.kids {
			kids[i] = not(k)
		}
		if f.kind == fAnd {
			return or(kids...)
		}
		return and(kids...)
	}
	return f
}

// ---------------------------------------------------------------------------
// From lowered expressions to formulas

type canonizer struct {
	lowered *dsl.Lowered
	// extras are the form's extra variables, by index; divs and syms find
	// an existing one again.
	extras []*Extra
	divs   map[divKey]int
	syms   map[string]int
}

type divKey struct {
	num Linear
	den int64
}

// floorLinear is floor(num / den) for den >= 1: num itself, a constant, or
// a constant plus a floor-quotient extra variable (whose dividend's
// constant is reduced mod den). false when the extras are exhausted.
func (c *canonizer) floorLinear(num Linear, den int64) (Linear, bool) {
	if den == 1 {
		return num, true
	}
	if num.IsConst() {
		return Const(floorDiv(num.K, den)), true
	}
	// Common factors of the dividend and divisor cancel exactly.
	g := uint64(den)
	for _, k := range num.Coef {
		g = gcd(g, uabs(k))
	}
	for _, k := range num.X {
		g = gcd(g, uabs(k))
	}
	g = gcd(g, uabs(num.K))
	if g > 1 {
		for i := range num.Coef {
			num.Coef[i] /= int64(g)
		}
		for i := range num.X {
			num.X[i] /= int64(g)
		}
		num.K /= int64(g)
		den /= int64(g)
		if den == 1 {
			return num, true
		}
	}
	// floor((n + K) / d) = K // d + floor((n + K % d) / d).
	whole := floorDiv(num.K, den)
	num.K -= whole * den
	key := divKey{num, den}
	i, ok := c.divs[key]
	if !ok {
		if len(c.extras) >= MaxExtras {
			return Linear{}, false
		}
		name := func(j int) string { return c.extras[j].Text }
		text := num.Format(name)
		if strings.Contains(text, " ") {
			text = "(" + text + ")"
		}
		e := &Extra{Kind: ExtraDiv, Num: num, Den: den, Text: fmt.Sprintf("%s // %d", text, den)}
		var seen [NumVars]bool
		for v, k := range num.Coef {
			if k != 0 && !dsl.Var(v).IsSize() {
				seen[v] = true
			}
		}
		for j, k := range num.X {
			if k != 0 {
				for _, v := range c.extras[j].Vars {
					seen[v] = true
				}
			}
		}
		for v, s := range seen {
			if s {
				e.Vars = append(e.Vars, dsl.Var(v))
			}
		}
		i = len(c.extras)
		c.extras = append(c.extras, e)
		if c.divs == nil {
			c.divs = map[divKey]int{}
		}
		c.divs[key] = i
	}
	l := extraLinear(i)
	l.K = whole
	return l, true
}

// symbol is the extra variable for e, an int expression that reads
// neither q nor kv; false when the extras are exhausted.
func (c *canonizer) symbol(e dsl.Expr) (Linear, bool) {
	e = dsl.Unparen(e)
	text := format.Expr(e)
	i, ok := c.syms[text]
	if !ok {
		if len(c.extras) >= MaxExtras {
			return Linear{}, false
		}
		i = len(c.extras)
		c.extras = append(c.extras, &Extra{Kind: ExtraSymbol, Expr: e, Text: text, Vars: exprVars(e)})
		if c.syms == nil {
			c.syms = map[string]int{}
		}
		c.syms[text] = i
	}
	return extraLinear(i), true
}

// freeOfQKV reports whether e reads neither q, kv nor the score.
func freeOfQKV(e dsl.Expr) bool {
	free := true
	dsl.Inspect(e, func(n dsl.Expr) bool {
		if r, ok := n.(*dsl.VarRef); ok && (r.Var == dsl.VarQ || r.Var == dsl.VarKV || r.Var == dsl.VarScore) {
			free = false
		}
		return free
	})
	return free
}

func (c *canonizer) typeOf(e dsl.Expr) dsl.Type { return c.lowered.TypeOf(e) }

// formula converts a bool expression.
func (c *canonizer) formula(e dsl.Expr) *formula {
	switch x := e.(type) {
	case *dsl.ParenExpr:
		return c.formula(x.X)
	case *dsl.BoolLit:
		return constF(x.Value)
	case *dsl.IntLit:
		return constF(x.Value != 0)
	case *dsl.UnaryExpr:
		if (x.Op == dsl.OpNot || x.Op == dsl.OpInvert) && c.isBool(x.X) {
			return not(c.formula(x.X))
		}
		if x.Op == dsl.OpNot {
			// not on an int: true when it is zero.
			return c.compare(x.X, dsl.OpEQ, &dsl.IntLit{Sp: dsl.NoSpan, Value: 0}, e)
		}
	case *dsl.BinaryExpr:
		if c.isBool(x.X) && c.isBool(x.Y) {
			switch x.Op {
			case dsl.OpAnd, dsl.OpBitAnd:
				return and(c.formula(x.X), c.formula(x.Y))
			case dsl.OpOr, dsl.OpBitOr:
				return or(c.formula(x.X), c.formula(x.Y))
			}
		}
	case *dsl.CompareExpr:
		if len(x.Operands) == 2 {
			return c.compare(x.Operands[0], x.Ops[0], x.Operands[1], e)
		}
		// Not produced by the checker, handled for hand-built input.
		var parts []*formula
		for i, op := range x.Ops {
			parts = append(parts, c.compare(x.Operands[i], op, x.Operands[i+1], e))
		}
		return and(parts...)
	case *dsl.CondExpr:
		if c.isBool(x.Then) && c.isBool(x.Else) {
			cond := c.truth(x.Cond)
			return or(and(cond, c.formula(x.Then)), and(not(cond), c.formula(x.Else)))
		}
	case *dsl.CallExpr:
		if name := callName(x); name == "where" && len(x.Args) == 3 && c.isBool(x.Args[1]) && c.isBool(x.Args[2]) {
			cond := c.truth(x.Args[0])
			return or(and(cond, c.formula(x.Args[1])), and(not(cond), c.formula(x.Args[2])))
		}
	}
	if c.typeOf(e) == dsl.TypeInt {
		return c.compare(e, dsl.OpNE, &dsl.IntLit{Sp: dsl.NoSpan, Value: 0}, e)
	}
	return c.opaque(e)
}

// truth converts a condition, which may be an int (Python truthiness).
func (c *canonizer) truth(e dsl.Expr) *formula {
	if c.isBool(e) {
		return c.formula(e)
	}
	if c.typeOf(e) == dsl.TypeInt {
		return c.compare(e, dsl.OpNE, &dsl.IntLit{Sp: dsl.NoSpan, Value: 0}, e)
	}
	return c.opaque(e)
}

func (c *canonizer) isBool(e dsl.Expr) bool {
	if _, ok := e.(*dsl.BoolLit); ok {
		return true
	}
	return c.typeOf(e) == dsl.TypeBool
}

func callName(x *dsl.CallExpr) string {
	if id, ok := x.Fun.(*dsl.Ident); ok {
		if b := dsl.LookupBuiltin(id.Name); b != nil {
			return b.Name
		}
		return id.Name
	}
	return ""
}

// compare converts `a op b`; whole is the expression for an opaque result.
func (c *canonizer) compare(a dsl.Expr, op dsl.Op, b dsl.Expr, whole dsl.Expr) *formula {
	a, b = dsl.Unparen(a), dsl.Unparen(b)
	if op == dsl.OpEQ || op == dsl.OpNE {
		if seg := c.segment(a, b); seg != nil {
			if op == dsl.OpNE {
				seg = seg.negate()
			}
			return &formula{kind: fAtom, atom: seg}
		}
		if c.isBool(a) && c.isBool(b) {
			fa, fb := c.formula(a), c.formula(b)
			eq := or(and(fa, fb), and(not(fa), not(fb)))
			if op == dsl.OpNE {
				return not(eq)
			}
			return eq
		}
	}
	if c.isLattice(a) || c.isLattice(b) {
		if f, ok := c.compareLattice(a, op, b); ok {
			return f
		}
	}
	pa, okA := c.pieces(a)
	pb, okB := c.pieces(b)
	if !okA || !okB {
		return c.opaque(whole)
	}
	f, ok := c.comparePieces(pa, op, pb)
	if !ok {
		return c.opaque(whole)
	}
	return f
}

// comparePieces is `a op b` for piecewise-linear a and b: for every pair
// of pieces, both conditions and the comparison of their values.
func (c *canonizer) comparePieces(pa []piece, op dsl.Op, pb []piece) (*formula, bool) {
	if len(pa)*len(pb) > maxPieces {
		return nil, false
	}
	var alts []*formula
	for _, x := range pa {
		for _, y := range pb {
			diff, ok := x.val.sub(y.val)
			if !ok {
				return nil, false
			}
			cmp, ok := c.compareZero(diff, op)
			if !ok {
				return nil, false
			}
			alts = append(alts, and(x.cond, y.cond, cmp))
		}
	}
	return or(alts...), true
}

// compareZero converts `d op 0` into bounds.
func (c *canonizer) compareZero(d Linear, op dsl.Op) (*formula, bool) {
	return byOrder(d, op, Const(0), func(x, y Linear, strict bool) (*formula, bool) {
		l, ok := x.sub(y)
		if ok && strict {
			l, ok = l.add(Const(1))
		}
		if !ok {
			return nil, false
		}
		return c.leZero(l)
	})
}

// byOrder converts `a op b` for an ordering op given le, which converts
// x <= y (x < y when strict): a >= b is b <= a, a == b is a <= b and
// b <= a, a != b its negation.
func byOrder[T any](a T, op dsl.Op, b T, le func(x, y T, strict bool) (*formula, bool)) (*formula, bool) {
	switch op {
	case dsl.OpLE:
		return le(a, b, false)
	case dsl.OpLT:
		return le(a, b, true)
	case dsl.OpGE:
		return le(b, a, false)
	case dsl.OpGT:
		return le(b, a, true)
	case dsl.OpEQ, dsl.OpNE:
		x, ok1 := le(a, b, false)
		y, ok2 := le(b, a, false)
		if !ok1 || !ok2 {
			return nil, false
		}
		if op == dsl.OpEQ {
			return and(x, y), true
		}
		return not(and(x, y)), true
	}
	return nil, false
}

// leZero converts `l <= 0` into one bound on its normalised direction, or a
// constant.
func (c *canonizer) leZero(l Linear) (*formula, bool) {
	var g uint64
	for _, k := range l.Coef {
		g = gcd(g, uabs(k))
	}
	for _, k := range l.X {
		g = gcd(g, uabs(k))
	}
	if g == 0 {
		return constF(l.K <= 0), true
	}
	if g > 1<<62 || l.K == -1<<63 {
		return nil, false
	}
	gi := int64(g)
	dir := l
	dir.K = 0
	sign := int64(0)
	for i, k := range l.Coef {
		dir.Coef[i] = k / gi
		if sign == 0 && k != 0 {
			sign = 1
			if k < 0 {
				sign = -1
			}
		}
	}
	for i, k := range l.X {
		dir.X[i] = k / gi
		if sign == 0 && k != 0 {
			sign = 1
			if k < 0 {
				sign = -1
			}
		}
	}
	if sign < 0 {
		dir, _ = dir.scale(-1) // no overflow: |k / g| < 2^63
	}
	// g*sign*dir + K <= 0.
	if sign > 0 {
		return c.boundF(Bound{Dir: dir, Hi: floorDiv(-l.K, gi), HasHi: true}), true
	}
	return c.boundF(Bound{Dir: dir, Lo: -floorDiv(-l.K, gi), HasLo: true}), true
}

// boundF makes a bound formula, simplified by the domain facts.
func (c *canonizer) boundF(b Bound) *formula {
	b, state := c.domain(b)
	switch state {
	case boundTrue:
		return fTrue
	case boundFalse:
		return fFalse
	}
	return &formula{kind: fBound, bound: b}
}

type boundState int

const (
	boundOpen boundState = iota
	boundTrue
	boundFalse
)

// sizeOf maps an index variable to its size symbol.
var sizeOf = map[dsl.Var]dsl.Var{dsl.VarB: dsl.SizeB, dsl.VarH: dsl.SizeH, dsl.VarQ: dsl.SizeQ, dsl.VarKV: dsl.SizeKV}

// domain drops the sides of a bound that hold for every index in range and
// every size, and reports a bound no index satisfies. It uses only facts
// true for every length: 0 <= x <= X-1 for an index x of size X, X >= 1,
// a floor quotient's range from its dividend's, and 0 <= n - d*(n // d) <= d-1.
func (c *canonizer) domain(b Bound) (Bound, boundState) {
	if b.HasLo && b.HasHi && b.Lo > b.Hi {
		return b, boundFalse
	}
	r := c.rangeOf(b.Dir)
	if !b.Dir.UsesExtras() {
		nz := 0
		for _, k := range b.Dir.Coef {
			if k != 0 {
				nz++
			}
		}
		for x, size := range sizeOf {
			if nz == 2 && b.Dir.Coef[x] == 1 && b.Dir.Coef[size] == -1 { // x - X in [-inf, -1]
				r = r.meet(ival{hi: -1, hasHi: true})
			}
		}
	}
	if m, ok := c.modRange(b.Dir); ok {
		r = r.meet(m)
	}
	if (r.hasHi && b.HasLo && b.Lo > r.hi) || (r.hasLo && b.HasHi && b.Hi < r.lo) {
		return b, boundFalse
	}
	if b.HasLo && r.hasLo && r.lo >= b.Lo {
		b.HasLo = false
	}
	if b.HasHi && r.hasHi && r.hi <= b.Hi {
		b.HasHi = false
	}
	if !b.HasLo && !b.HasHi {
		return b, boundTrue
	}
	return b, boundOpen
}

// ival is an integer interval, each side possibly unbounded.
type ival struct {
	lo, hi       int64
	hasLo, hasHi bool
}

// meet intersects two intervals.
func (r ival) meet(o ival) ival {
	if o.hasLo && (!r.hasLo || o.lo > r.lo) {
		r.lo, r.hasLo = o.lo, true
	}
	if o.hasHi && (!r.hasHi || o.hi < r.hi) {
		r.hi, r.hasHi = o.hi, true
	}
	return r
}

// plus adds k*v for v in o to r (a side overflowing becomes unbounded).
func (r ival) plus(k int64, o ival) ival {
	if k < 0 {
		o = ival{lo: -o.hi, hi: -o.lo, hasLo: o.hasHi && o.hi != -1<<63, hasHi: o.hasLo && o.lo != -1<<63}
		if k == -1<<63 {
			return ival{}
		}
		k = -k
	}
	side := func(has bool, a, b int64, hasB bool) (int64, bool) {
		if !has || !hasB {
			return 0, false
		}
		p, ok := mulInt(k, b)
		if !ok {
			return 0, false
		}
		return addInt(a, p)
	}
	lo, okLo := side(r.hasLo, r.lo, o.lo, o.hasLo)
	hi, okHi := side(r.hasHi, r.hi, o.hi, o.hasHi)
	return ival{lo: lo, hi: hi, hasLo: okLo, hasHi: okHi}
}

// rangeOf bounds l over every point: indices are at least 0, sizes at
// least 1, a floor quotient lies in its dividend's range divided, a symbol
// is unbounded.
func (c *canonizer) rangeOf(l Linear) ival {
	r := ival{lo: l.K, hi: l.K, hasLo: true, hasHi: true}
	for v, k := range l.Coef {
		if k == 0 {
			continue
		}
		min := int64(0)
		if dsl.Var(v).IsSize() {
			min = 1
		}
		r = r.plus(k, ival{lo: min, hasLo: true})
	}
	for i, k := range l.X {
		if k == 0 {
			continue
		}
		var x ival
		if e := c.extras[i]; e.Kind == ExtraDiv {
			n := c.rangeOf(e.Num)
			x = ival{lo: floorDiv(n.lo, e.Den), hi: floorDiv(n.hi, e.Den), hasLo: n.hasLo, hasHi: n.hasHi}
		}
		r = r.plus(k, x)
	}
	return r
}

// modRange bounds a direction that is a multiple of a remainder
// n - d*(n // d) less its constant, from 0 <= n - d*(n // d) <= d - 1.
func (c *canonizer) modRange(dir Linear) (ival, bool) {
	for i, e := range c.extras {
		if dir.X[i] == 0 || e.Kind != ExtraDiv {
			continue
		}
		m, ok := e.Num.sub(extraScaled(i, e.Den))
		if !ok {
			continue
		}
		k := m.X[i] / dir.X[i] // m = k*dir + m.K when dir is proportional
		if k == 0 || m.X[i]%dir.X[i] != 0 {
			continue
		}
		kd, ok := dir.scale(k)
		m0 := m
		m0.K = 0
		if !ok || kd != m0 || m.K == -1<<63 {
			continue
		}
		// k*dir = v - m.K with v in [0, d-1].
		a, b := -m.K, e.Den-1-m.K
		if k > 0 {
			return ival{lo: -floorDiv(-a, k), hi: floorDiv(b, k), hasLo: true, hasHi: true}, true
		}
		return ival{lo: -floorDiv(b, -k), hi: floorDiv(-a, -k), hasLo: true, hasHi: true}, true
	}
	return ival{}, false
}

func extraScaled(i int, k int64) Linear {
	l := extraLinear(i)
	l.X[i] = k
	return l
}

// segment recognises `buf[q] == buf[kv]` (either order) and
// `buf[b, q] == buf[b, kv]` for one integer buffer.
func (c *canonizer) segment(a, b dsl.Expr) *Atom {
	ia, ok1 := a.(*dsl.IndexExpr)
	ib, ok2 := b.(*dsl.IndexExpr)
	if !ok1 || !ok2 {
		return nil
	}
	na, ok1 := ia.X.(*dsl.Ident)
	nb, ok2 := ib.X.(*dsl.Ident)
	if !ok1 || !ok2 || na.Name != nb.Name || len(ia.Indices) != len(ib.Indices) {
		return nil
	}
	buf := c.buffer(na.Name)
	if buf == nil || !isIntDType(buf) {
		return nil
	}
	isVar := func(e dsl.Expr, v dsl.Var) bool {
		r, ok := dsl.Unparen(e).(*dsl.VarRef)
		return ok && r.Var == v
	}
	pair := func(x, y dsl.Expr) bool {
		return (isVar(x, dsl.VarQ) && isVar(y, dsl.VarKV)) || (isVar(x, dsl.VarKV) && isVar(y, dsl.VarQ))
	}
	atom := &Atom{Kind: AtomSegment, Buffer: buf, Vars: []dsl.Var{dsl.VarQ, dsl.VarKV}}
	switch len(ia.Indices) {
	case 1:
		if !pair(ia.Indices[0], ib.Indices[0]) {
			return nil
		}
	case 2:
		if !isVar(ia.Indices[0], dsl.VarB) || !isVar(ib.Indices[0], dsl.VarB) || !pair(ia.Indices[1], ib.Indices[1]) {
			return nil
		}
		atom.Batch = true
		atom.Vars = []dsl.Var{dsl.VarB, dsl.VarQ, dsl.VarKV}
	default:
		return nil
	}
	atom.Text = atomText(atom)
	return atom
}

func isIntDType(b *dsl.BufferDecl) bool {
	return b.DType != nil && buftype.IsInt(b.DType.Name)
}

func (c *canonizer) buffer(name string) *dsl.BufferDecl {
	for _, b := range c.lowered.Buffers {
		if b.Name != nil && b.Name.Name == name {
			return b
		}
	}
	return nil
}

// opaque wraps a condition the canonical form cannot look into.
func (c *canonizer) opaque(e dsl.Expr) *formula {
	e = dsl.Unparen(e)
	a := &Atom{Kind: AtomOpaque, Expr: e, Why: c.why(e), Vars: exprVars(e)}
	a.Text = atomText(a)
	return &formula{kind: fAtom, atom: a}
}

// why names the first construct that makes e non-linear.
func (c *canonizer) why(e dsl.Expr) string {
	reason := "is not a linear comparison of q and kv"
	found := false
	dsl.Inspect(e, func(n dsl.Expr) bool {
		if found {
			return false
		}
		switch x := n.(type) {
		case *dsl.IndexExpr:
			reason, found = "reads buffer "+format.Expr(x.X), true
		case *dsl.BinaryExpr:
			switch x.Op {
			case dsl.OpMod, dsl.OpFloorDiv, dsl.OpPow, dsl.OpBitAnd, dsl.OpBitOr:
				reason, found = "uses "+x.Op.String(), true
			case dsl.OpMul:
				reason, found = "multiplies by a variable", true
			}
		case *dsl.FloatLit:
			reason, found = "compares floats", true
		case *dsl.CallExpr:
			if n := callName(x); n != "abs" && n != "min" && n != "max" && n != "clamp" && n != "where" {
				reason, found = "calls "+n, true
			}
		}
		if !found && c.typeOf(n) == dsl.TypeFloat {
			reason, found = "compares floats", true
		}
		return !found
	})
	return reason
}

// exprVars lists the index variables e reads, in dsl.Var order.
func exprVars(e dsl.Expr) []dsl.Var {
	var seen [NumVars]bool
	dsl.Inspect(e, func(n dsl.Expr) bool {
		if r, ok := n.(*dsl.VarRef); ok && !r.Var.IsSize() && r.Var != dsl.VarScore {
			seen[r.Var] = true
		}
		return true
	})
	var out []dsl.Var
	for v, s := range seen {
		if s {
			out = append(out, dsl.Var(v))
		}
	}
	return out
}

// piece is one linear piece of an integer expression: val where cond holds.
type piece struct {
	cond *formula
	val  Linear
}

// pieces expands an integer expression into linear pieces whose conditions
// partition the domain, or reports that it is not piecewise linear.
func (c *canonizer) pieces(e dsl.Expr) ([]piece, bool) {
	if p, ok := c.pieces1(e); ok {
		return p, true
	}
	// An int the expansion cannot look into but that reads neither q nor
	// kv is a symbol: its value is fixed for every (b, h).
	if c.typeOf(e) == dsl.TypeInt && freeOfQKV(e) {
		if l, ok := c.symbol(e); ok {
			return []piece{{fTrue, l}}, true
		}
	}
	return nil, false
}

func (c *canonizer) pieces1(e dsl.Expr) ([]piece, bool) {
	switch x := e.(type) {
	case *dsl.ParenExpr:
		return c.pieces(x.X)
	case *dsl.IntLit:
		return []piece{{fTrue, Const(x.Value)}}, true
	case *dsl.BoolLit:
		if x.Value {
			return []piece{{fTrue, Const(1)}}, true
		}
		return []piece{{fTrue, Const(0)}}, true
	case *dsl.VarRef:
		if x.Var == dsl.VarScore || x.Var < 0 || int(x.Var) >= NumVars {
			return nil, false
		}
		return []piece{{fTrue, Var(x.Var)}}, true
	}
	if c.typeOf(e) != dsl.TypeInt {
		return nil, false
	}
	switch x := e.(type) {
	case *dsl.UnaryExpr:
		p, ok := c.pieces(x.X)
		if !ok {
			return nil, false
		}
		switch x.Op {
		case dsl.OpPos:
			return p, true
		case dsl.OpNeg:
			return mapPieces(p, func(l Linear) (Linear, bool) { return l.scale(-1) })
		}
	case *dsl.BinaryExpr:
		switch x.Op {
		case dsl.OpAdd, dsl.OpSub, dsl.OpMul:
			pa, ok1 := c.pieces(x.X)
			pb, ok2 := c.pieces(x.Y)
			if !ok1 || !ok2 || len(pa)*len(pb) > maxPieces {
				return nil, false
			}
			var out []piece
			for _, a := range pa {
				for _, b := range pb {
					var v Linear
					var ok bool
					switch {
					case x.Op == dsl.OpAdd:
						v, ok = a.val.add(b.val)
					case x.Op == dsl.OpSub:
						v, ok = a.val.sub(b.val)
					case a.val.IsConst():
						v, ok = b.val.scale(a.val.K)
					case b.val.IsConst():
						v, ok = a.val.scale(b.val.K)
					}
					if !ok {
						return nil, false
					}
					out = append(out, piece{and(a.cond, b.cond), v})
				}
			}
			return out, true
		case dsl.OpFloorDiv, dsl.OpMod:
			return c.divMod(x)
		}
	case *dsl.CondExpr:
		return c.choose(c.truth(x.Cond), x.Then, x.Else)
	case *dsl.CallExpr:
		switch callName(x) {
		case "where":
			if len(x.Args) == 3 {
				return c.choose(c.truth(x.Args[0]), x.Args[1], x.Args[2])
			}
		case "abs":
			if len(x.Args) == 1 {
				p, ok := c.pieces(x.Args[0])
				if !ok || 2*len(p) > maxPieces {
					return nil, false
				}
				var out []piece
				for _, a := range p {
					n, ok := a.val.scale(-1)
					ge, ok2 := c.compareZero(a.val, dsl.OpGE)
					if !ok || !ok2 {
						return nil, false
					}
					out = append(out, piece{and(a.cond, ge), a.val}, piece{and(a.cond, not(ge)), n})
				}
				return out, true
			}
		case "min", "max":
			if len(x.Args) == 2 {
				return c.minMax(callName(x) == "min", x.Args[0], x.Args[1])
			}
		case "clamp":
			if len(x.Args) == 3 {
				lo, ok := c.minMaxPieces(false, x.Args[0], x.Args[1])
				if !ok {
					return nil, false
				}
				hi, ok := c.pieces(x.Args[2])
				if !ok {
					return nil, false
				}
				return c.combineMinMax(true, lo, hi)
			}
		}
	}
	return nil, false
}

// divMod expands `a // d` and `a % d` for a constant d != 0: the quotient
// is an extra variable x with d*x <= a <= d*x + d - 1 (for d > 0), the
// remainder a - d*x.
func (c *canonizer) divMod(x *dsl.BinaryExpr) ([]piece, bool) {
	pb, ok := c.pieces(x.Y)
	if !ok || len(pb) != 1 || !pb[0].val.IsConst() || !alwaysTrue(pb[0].cond) {
		return nil, false
	}
	d := pb[0].val.K
	if d == 0 || d == -1<<63 {
		return nil, false
	}
	pa, ok := c.pieces(x.X)
	if !ok {
		return nil, false
	}
	out := make([]piece, 0, len(pa))
	for _, a := range pa {
		num, den := a.val, d
		if d < 0 {
			// floor(a / d) = floor(-a / -d).
			if num, ok = num.scale(-1); !ok {
				return nil, false
			}
			den = -d
		}
		t, ok := c.floorLinear(num, den)
		if !ok {
			return nil, false
		}
		v := t
		if x.Op == dsl.OpMod {
			dt, ok := t.scale(d)
			if !ok {
				return nil, false
			}
			if v, ok = a.val.sub(dt); !ok {
				return nil, false
			}
		}
		out = append(out, piece{a.cond, v})
	}
	return out, true
}

func mapPieces(p []piece, f func(Linear) (Linear, bool)) ([]piece, bool) {
	out := make([]piece, len(p))
	for i, a := range p {
		v, ok := f(a.val)
		if !ok {
			return nil, false
		}
		out[i] = piece{a.cond, v}
	}
	return out, true
}

func (c *canonizer) choose(cond *formula, then, els dsl.Expr) ([]piece, bool) {
	pt, ok1 := c.pieces(then)
	pe, ok2 := c.pieces(els)
	if !ok1 || !ok2 || len(pt)+len(pe) > maxPieces {
		return nil, false
	}
	var out []piece
	for _, a := range pt {
		out = append(out, piece{and(cond, a.cond), a.val})
	}
	nc := not(cond)
	for _, a := range pe {
		out = append(out, piece{and(nc, a.cond), a.val})
	}
	return out, true
}

func (c *canonizer) minMax(isMin bool, a, b dsl.Expr) ([]piece, bool) {
	return c.minMaxPieces(isMin, a, b)
}

func (c *canonizer) minMaxPieces(isMin bool, a, b dsl.Expr) ([]piece, bool) {
	pa, ok1 := c.pieces(a)
	pb, ok2 := c.pieces(b)
	if !ok1 || !ok2 {
		return nil, false
	}
	return c.combineMinMax(isMin, pa, pb)
}

// combineMinMax builds min(a, b) (or max) piecewise: a where a <= b, else b.
func (c *canonizer) combineMinMax(isMin bool, pa, pb []piece) ([]piece, bool) {
	if 2*len(pa)*len(pb) > maxPieces {
		return nil, false
	}
	var out []piece
	for _, x := range pa {
		for _, y := range pb {
			diff, ok := x.val.sub(y.val)
			if !ok {
				return nil, false
			}
			op := dsl.OpLE
			if !isMin {
				op = dsl.OpGE
			}
			first, ok := c.compareZero(diff, op)
			if !ok {
				return nil, false
			}
			out = append(out, piece{and(x.cond, y.cond, first), x.val}, piece{and(x.cond, y.cond, not(first)), y.val})
		}
	}
	return out, true
}

// ---------------------------------------------------------------------------
// Disjunctive normal form and simplification

// conj is a conjunction under construction: one interval per direction and
// a set of atoms. Both are short, so they are kept in slices and searched
// linearly: building a DNF clones and merges many of them.
type conj struct {
	bounds []Bound // at most one per direction
	atoms  []*Atom // at most one per key
	cx     *canonizer
}

func (c *canonizer) newConj() *conj { return &conj{cx: c} }

func (t *conj) clone() *conj {
	return &conj{bounds: slices.Clone(t.bounds), atoms: slices.Clone(t.atoms), cx: t.cx}
}

// cloneFor is clone with room to merge o in without growing.
func (t *conj) cloneFor(o *conj) *conj {
	n := &conj{bounds: make([]Bound, len(t.bounds), len(t.bounds)+len(o.bounds)), cx: t.cx}
	copy(n.bounds, t.bounds)
	if len(t.atoms)+len(o.atoms) > 0 {
		n.atoms = make([]*Atom, len(t.atoms), len(t.atoms)+len(o.atoms))
		copy(n.atoms, t.atoms)
	}
	return n
}

// boundOn returns the index of t's bound on direction d, or -1.
func (t *conj) boundOn(d Linear) int {
	for i := range t.bounds {
		if t.bounds[i].Dir == d {
			return i
		}
	}
	return -1
}

// atomIndex returns the index of t's atom with key k, or -1.
func (t *conj) atomIndex(k string) int {
	for i, a := range t.atoms {
		if a.key() == k {
			return i
		}
	}
	return -1
}

// addBound intersects b into t; false when t becomes unsatisfiable.
func (t *conj) addBound(b Bound) bool {
	i := t.boundOn(b.Dir)
	if i >= 0 {
		old := t.bounds[i]
		if old.HasLo && (!b.HasLo || old.Lo > b.Lo) {
			b.Lo, b.HasLo = old.Lo, true
		}
		if old.HasHi && (!b.HasHi || old.Hi < b.Hi) {
			b.Hi, b.HasHi = old.Hi, true
		}
	}
	b, state := t.cx.domain(b)
	switch state {
	case boundFalse:
		return false
	case boundTrue:
		if i >= 0 {
			t.bounds = slices.Delete(t.bounds, i, i+1)
		}
		return true
	}
	if i >= 0 {
		t.bounds[i] = b
	} else {
		t.bounds = append(t.bounds, b)
	}
	return true
}

// addAtom adds a; false when its negation is already there.
func (t *conj) addAtom(a *Atom) bool {
	if t.atomIndex(a.negate().key()) >= 0 {
		return false
	}
	if i := t.atomIndex(a.key()); i >= 0 {
		t.atoms[i] = a
	} else {
		t.atoms = append(t.atoms, a)
	}
	return true
}

func (t *conj) merge(o *conj) bool {
	for _, b := range o.bounds {
		if !t.addBound(b) {
			return false
		}
	}
	for _, a := range o.atoms {
		if !t.addAtom(a) {
			return false
		}
	}
	return true
}

// dnf expands f into satisfiable-looking conjunctions, or reports that the
// expansion grew past MaxTerms.
func (c *canonizer) dnf(f *formula) ([]*conj, bool) {
	switch f.kind {
	case fConst:
		if f.val {
			return []*conj{c.newConj()}, true
		}
		return nil, true
	case fBound:
		t := c.newConj()
		if !t.addBound(f.bound) {
			return nil, true
		}
		return []*conj{t}, true
	case fAtom:
		t := c.newConj()
		t.addAtom(f.atom)
		return []*conj{t}, true
	case fOr:
		var out []*conj
		for _, k := range f.kids {
			ts, ok := c.dnf(k)
			if !ok {
				return nil, false
			}
			out = append(out, ts...)
			if out = reduce(out); len(out) > MaxTerms {
				return nil, false
			}
		}
		return out, true
	case fAnd:
		out := []*conj{c.newConj()}
		for _, k := range f.kids {
			if k.kind == fConst && k.val {
				continue // and-ing with true changes nothing
			}
			ts, ok := c.dnf(k)
			if !ok {
				return nil, false
			}
			if len(out)*len(ts) > MaxTerms*MaxTerms {
				return nil, false
			}
			var next []*conj
			for _, a := range out {
				for _, b := range ts {
					n := a.cloneFor(b)
					if n.merge(b) {
						next = append(next, n)
					}
				}
			}
			if out = reduce(next); len(out) > MaxTerms {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

// implies reports whether every point of a satisfies b (a ⊆ b), judged
// syntactically: each bound of b is implied by a's bound on the same
// direction and each atom of b is in a.
func implies(a, b *conj) bool {
	for _, bb := range b.bounds {
		i := a.boundOn(bb.Dir)
		if i < 0 {
			return false
		}
		ab := a.bounds[i]
		if bb.HasLo && (!ab.HasLo || ab.Lo < bb.Lo) {
			return false
		}
		if bb.HasHi && (!ab.HasHi || ab.Hi > bb.Hi) {
			return false
		}
	}
	for _, at := range b.atoms {
		if a.atomIndex(at.key()) < 0 {
			return false
		}
	}
	return true
}

// unionAlong merges a and b when they differ only in the bound on one
// direction and the two intervals overlap or touch; the union is then one
// interval. A missing bound is the whole line.
func unionAlong(a, b *conj) (*conj, bool) {
	if len(a.atoms) != len(b.atoms) {
		return nil, false
	}
	for _, at := range a.atoms {
		if b.atomIndex(at.key()) < 0 {
			return nil, false
		}
	}
	// The directions whose bounds differ (or that only one side bounds).
	var diff []Linear
	for _, x := range a.bounds {
		if i := b.boundOn(x.Dir); i < 0 || b.bounds[i] != x {
			diff = append(diff, x.Dir)
		}
	}
	for _, y := range b.bounds {
		if a.boundOn(y.Dir) < 0 {
			diff = append(diff, y.Dir)
		}
	}
	if len(diff) != 1 {
		return nil, false
	}
	i, j := a.boundOn(diff[0]), b.boundOn(diff[0])
	if i < 0 || j < 0 {
		return nil, false // one side is unbounded: implies() handles it
	}
	x, y := a.bounds[i], b.bounds[j]
	// Order so that x starts first (an unbounded start is first).
	if !(!x.HasLo || (y.HasLo && x.Lo <= y.Lo)) {
		x, y = y, x
	}
	// Contiguous iff y starts no later than just past x's end.
	if x.HasHi && y.HasLo && x.Hi < 1<<63-1 && y.Lo > x.Hi+1 {
		return nil, false
	}
	u := Bound{Dir: x.Dir, Lo: x.Lo, HasLo: x.HasLo}
	if x.HasHi && y.HasHi {
		u.Hi, u.HasHi = max(x.Hi, y.Hi), true
	}
	n := a.clone()
	u, state := a.cx.domain(u)
	if state == boundOpen {
		n.bounds[i] = u
	} else {
		n.bounds = slices.Delete(n.bounds, i, i+1)
	}
	return n, true
}

// resolve merges `X and A` with `X and not A` into X (A an atom).
func resolve(a, b *conj) (*conj, bool) {
	if len(a.atoms) != len(b.atoms) || len(a.bounds) != len(b.bounds) {
		return nil, false
	}
	for _, x := range a.bounds {
		if i := b.boundOn(x.Dir); i < 0 || b.bounds[i] != x {
			return nil, false
		}
	}
	diff := -1
	for i, at := range a.atoms {
		if b.atomIndex(at.key()) >= 0 {
			continue
		}
		if diff >= 0 {
			return nil, false
		}
		if b.atomIndex(at.negate().key()) < 0 {
			return nil, false
		}
		diff = i
	}
	if diff < 0 {
		return nil, false
	}
	n := a.clone()
	n.atoms = slices.Delete(n.atoms, diff, diff+1)
	return n, true
}

// reduce removes conjunctions implied by others and merges neighbouring
// intervals until nothing changes.
func reduce(ts []*conj) []*conj {
	for changed := true; changed; {
		changed = false
	outer:
		for i := 0; i < len(ts); i++ {
			for j := 0; j < len(ts); j++ {
				if i == j {
					continue
				}
				if implies(ts[i], ts[j]) {
					ts = append(ts[:i], ts[i+1:]...)
					changed = true
					break outer
				}
				if u, ok := resolve(ts[i], ts[j]); ok {
					ts[i] = u
					ts = append(ts[:j], ts[j+1:]...)
					changed = true
					break outer
				}
				if u, ok := unionAlong(ts[i], ts[j]); ok {
					ts[i] = u
					ts = append(ts[:j], ts[j+1:]...)
					changed = true
					break outer
				}
			}
		}
	}
	return ts
}

// finish eliminates the floor quotients it can, then sorts the
// conjunctions into the exported canonical form with only the extra
// variables it still uses.
func (c *canonizer) finish(cs []*conj) *Form {
	var kept []*conj
	for _, t := range cs {
		if c.eliminate(t) {
			kept = append(kept, t)
		}
	}
	cs = reduce(kept)
	f := &Form{Terms: []*Term{}}
	remap := c.usedExtras(cs)
	for old, e := range c.extras {
		if remap[old] >= 0 {
			if e.Kind == ExtraDiv {
				e.Num = renumber(e.Num, remap)
			}
			if f.Extras == nil {
				f.Extras = make([]*Extra, len(c.extras))
			}
			f.Extras[remap[old]] = e
		}
	}
	for len(f.Extras) > 0 && f.Extras[len(f.Extras)-1] == nil {
		f.Extras = f.Extras[:len(f.Extras)-1]
	}
	for _, cj := range cs {
		t := &Term{}
		for _, b := range cj.bounds {
			b = orient(Bound{Dir: renumber(b.Dir, remap), Lo: b.Lo, Hi: b.Hi, HasLo: b.HasLo, HasHi: b.HasHi})
			b.extras = &f.Extras
			t.Bounds = append(t.Bounds, b)
		}
		sort.Slice(t.Bounds, func(i, j int) bool { return dirLess(t.Bounds[i].Dir, t.Bounds[j].Dir) })
		t.Atoms = append(t.Atoms, cj.atoms...)
		sort.Slice(t.Atoms, func(i, j int) bool { return t.Atoms[i].Text < t.Atoms[j].Text })
		f.Terms = append(f.Terms, t)
	}
	sort.SliceStable(f.Terms, func(i, j int) bool { return f.Terms[i].String() < f.Terms[j].String() })
	return f
}

// eliminate removes from t every floor quotient x = n // d that t bounds
// only directly (lo <= x <= hi), replacing that bound by the exact bound
// d*lo <= n <= d*hi + d - 1 on its dividend. It reports false when t
// becomes unsatisfiable.
func (c *canonizer) eliminate(t *conj) bool {
	for i := len(c.extras) - 1; i >= 0; i-- {
		e := c.extras[i]
		if e.Kind != ExtraDiv {
			continue
		}
		at, n := -1, 0
		for j, b := range t.bounds {
			if b.Dir.X[i] != 0 {
				at, n = j, n+1
			}
		}
		if n != 1 || t.bounds[at].Dir != extraLinear(i) {
			continue
		}
		b := t.bounds[at]
		var sides []*formula
		if b.HasLo {
			lo, ok := mulInt(b.Lo, e.Den)
			l, ok2 := Const(lo).sub(e.Num) // d*lo - n <= 0
			if !ok || !ok2 {
				continue
			}
			f, ok := c.leZero(l)
			if !ok {
				continue
			}
			sides = append(sides, f)
		}
		if b.HasHi {
			hi, ok := mulInt(b.Hi, e.Den)
			hi, ok2 := addInt(hi, e.Den-1)
			l, ok3 := e.Num.sub(Const(hi)) // n - (d*hi + d - 1) <= 0
			if !ok || !ok2 || !ok3 {
				continue
			}
			f, ok := c.leZero(l)
			if !ok {
				continue
			}
			sides = append(sides, f)
		}
		t.bounds = slices.Delete(t.bounds, at, at+1)
		for _, f := range sides {
			switch f.kind {
			case fConst:
				if !f.val {
					return false
				}
			case fBound:
				if !t.addBound(f.bound) {
					return false
				}
			}
		}
	}
	return true
}

// usedExtras maps each extra variable the conjunctions use (directly or
// through a used quotient's dividend) to its new index, the others to -1.
func (c *canonizer) usedExtras(cs []*conj) []int {
	used := make([]bool, len(c.extras))
	for _, t := range cs {
		for _, b := range t.bounds {
			for i, k := range b.Dir.X {
				if k != 0 {
					used[i] = true
				}
			}
		}
	}
	for i := len(c.extras) - 1; i >= 0; i-- {
		if used[i] && c.extras[i].Kind == ExtraDiv {
			for j, k := range c.extras[i].Num.X {
				if k != 0 {
					used[j] = true
				}
			}
		}
	}
	// The kept extras in a canonical order that does not depend on the
	// order the expression mentioned them: by nesting depth (a dividend
	// uses only earlier extras), kind, the variables read, then text.
	depth := make([]int, len(c.extras))
	var order []int
	for i, e := range c.extras {
		if e.Kind == ExtraDiv {
			for j, k := range e.Num.X {
				if k != 0 {
					depth[i] = max(depth[i], depth[j]+1)
				}
			}
		}
		if used[i] {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := c.extras[order[a]], c.extras[order[b]]
		if da, db := depth[order[a]], depth[order[b]]; da != db {
			return da < db
		}
		if x.Kind != y.Kind {
			return x.Kind < y.Kind
		}
		if c := slices.Compare(x.Vars, y.Vars); c != 0 {
			return c < 0
		}
		return x.Text < y.Text
	})
	remap := make([]int, len(c.extras))
	for i := range remap {
		remap[i] = -1
	}
	for n, i := range order {
		remap[i] = n
	}
	return remap
}

// orient makes the first non-zero coefficient of b's direction positive
// (renumbering extras can change which one is first), negating the bounds.
func orient(b Bound) Bound {
	first := int64(0)
	for _, k := range b.Dir.Coef {
		if first == 0 {
			first = k
		}
	}
	for _, k := range b.Dir.X {
		if first == 0 {
			first = k
		}
	}
	if first >= 0 || (b.HasLo && b.Lo == -1<<63) || (b.HasHi && b.Hi == -1<<63) {
		return b
	}
	d, ok := b.Dir.scale(-1)
	if !ok {
		return b
	}
	return Bound{Dir: d, Lo: -b.Hi, Hi: -b.Lo, HasLo: b.HasHi, HasHi: b.HasLo}
}

// renumber moves l's extra coefficients to their new indices.
func renumber(l Linear, remap []int) Linear {
	var x [MaxExtras]int64
	for i, k := range l.X {
		if k != 0 {
			x[remap[i]] = k
		}
	}
	l.X = x
	return l
}

// dirLess orders directions so that q - kv comes before q alone and kv alone.
func dirLess(a, b Linear) bool {
	return a.String() < b.String()
}

// DistanceRange returns the bounds on d = q - kv that every true point of
// the form satisfies: the hull of the top-left `q - kv` bounds of all
// terms. A side is unbounded when some term does not bound it. The code
// generator uses it to skip tiles that lie wholly outside the band. ok is
// false for a TooComplex form; a never-true form gives the empty bound
// Lo = 1 > Hi = 0.
func (f *Form) DistanceRange() (b Bound, ok bool) {
	if f.TooComplex {
		return Bound{}, false
	}
	b = Bound{Dir: distance}
	if len(f.Terms) == 0 {
		return Bound{Dir: distance, Lo: 1, Hi: 0, HasLo: true, HasHi: true}, true
	}
	for i, t := range f.Terms {
		var tb Bound
		for _, x := range t.Bounds {
			if x.Dir == distance {
				tb = x
			}
		}
		if i == 0 {
			b.Lo, b.HasLo, b.Hi, b.HasHi = tb.Lo, tb.HasLo, tb.Hi, tb.HasHi
			continue
		}
		b.HasLo = b.HasLo && tb.HasLo
		b.Lo = min(b.Lo, tb.Lo)
		b.HasHi = b.HasHi && tb.HasHi
		b.Hi = max(b.Hi, tb.Hi)
	}
	if !b.HasLo {
		b.Lo = 0
	}
	if !b.HasHi {
		b.Hi = 0
	}
	return b, true
}

// distance is the direction q - kv.
var distance = func() Linear { l := Var(dsl.VarQ); l.Coef[dsl.VarKV] = -1; return l }()

// LinearOf is e as one linear form over the index variables and sizes, when
// it is one (no pieces, no extra variables): `q - kv`, `2 * (kv - q) + 1`.
func LinearOf(l *dsl.Lowered, e dsl.Expr) (Linear, bool) {
	c := &canonizer{lowered: l}
	ps, ok := c.pieces(e)
	if !ok || len(ps) != 1 || !alwaysTrue(ps[0].cond) || ps[0].val.UsesExtras() {
		return Linear{}, false
	}
	return ps[0].val, true
}

// CallName is the built-in a call names (its canonical spelling), or the
// called identifier, or "".
func CallName(x *dsl.CallExpr) string { return callName(x) }
