package normal

// This file turns lowered expressions into formulas: comparisons of
// linear forms become bounds, segment equalities and opaque atoms.

import (
	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
)

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
			case dsl.OpBitXor: // a != b
				a, b := c.formula(x.X), c.formula(x.Y)
				return or(and(a, not(b)), and(not(a), b))
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
	// A bool compared with an int is its value 0 or 1 compared (Python's
	// and torch's promotion): `flag == 1` is flag, `flag == 0` its negation,
	// so that the terms it conditions stay bounds, not an opaque atom.
	if c.isBool(a) != c.isBool(b) {
		flag, other, flagLeft := a, b, true
		if c.isBool(b) {
			flag, other, flagLeft = b, a, false
		}
		if c.typeOf(other) == dsl.TypeInt {
			f := c.formula(flag)
			side := func(v int64) *formula {
				lit := &dsl.IntLit{Sp: dsl.NoSpan, Value: v}
				if flagLeft {
					return c.compare(lit, op, other, whole)
				}
				return c.compare(other, op, lit, whole)
			}
			return or(and(f, side(1)), and(not(f), side(0)))
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
				r = r.Meet(dsl.AtMost(-1))
			}
		}
	}
	if m, ok := c.modRange(b.Dir); ok {
		r = r.Meet(m)
	}
	if (r.HasHi() && b.HasLo && b.Lo > r.Hi) || (r.HasLo() && b.HasHi && b.Hi < r.Lo) {
		return b, boundFalse
	}
	if b.HasLo && r.HasLo() && r.Lo >= b.Lo {
		b.HasLo = false
	}
	if b.HasHi && r.HasHi() && r.Hi <= b.Hi {
		b.HasHi = false
	}
	if !b.HasLo && !b.HasHi {
		return b, boundTrue
	}
	return b, boundOpen
}

// rangeOf bounds l over every point: indices are at least 0, sizes at
// least 1, a floor quotient lies in its dividend's range divided, a symbol
// is unbounded.
func (c *canonizer) rangeOf(l Linear) dsl.Interval {
	r := dsl.Point(l.K)
	for v, k := range l.Coef {
		if k == 0 {
			continue
		}
		min := int64(0)
		if dsl.Var(v).IsSize() {
			min = 1
		}
		r = r.AddScaled(k, dsl.AtLeast(min))
	}
	for i, k := range l.X {
		if k == 0 {
			continue
		}
		x := dsl.Unbounded
		if e := c.extras[i]; e.Kind == ExtraDiv {
			n := c.rangeOf(e.Num)
			if n.HasLo() {
				x.Lo = floorDiv(n.Lo, e.Den)
			}
			if n.HasHi() {
				x.Hi = floorDiv(n.Hi, e.Den)
			}
		}
		r = r.AddScaled(k, x)
	}
	return r
}

// modRange bounds a direction that is a multiple of a remainder
// n - d*(n // d) less its constant, from 0 <= n - d*(n // d) <= d - 1.
func (c *canonizer) modRange(dir Linear) (dsl.Interval, bool) {
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
			return dsl.Interval{Lo: -floorDiv(-a, k), Hi: floorDiv(b, k)}, true
		}
		return dsl.Interval{Lo: -floorDiv(b, -k), Hi: floorDiv(-a, -k)}, true
	}
	return dsl.Unbounded, false
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
			case dsl.OpMod, dsl.OpFloorDiv, dsl.OpPow, dsl.OpBitAnd, dsl.OpBitOr, dsl.OpBitXor, dsl.OpShl, dsl.OpShr:
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
