package codegen

import (
	"github.com/maskc/maskc/dsl"
)

// This file reduces a mask to a disjunctive normal form whose atoms the
// block-sparsity code understands. The DNF is exactly equivalent to the
// mask: atoms it cannot interpret are kept as opaque literals, which only
// make the derived bounds looser, never wrong.
//
// It is the second normal form issue 11 retires: package normal's Form
// (what classify reads) carries the same facts and more (floor quotients
// and remainders by constants as exact extra variables, q/kv-free symbols,
// simplification), and Form.Interval gives each disjunct's kv (or q)
// interval with block-index sides in closed form and an exactness flag.
// The sparsity plan (sparsityplan.go) is to be built from those, and this
// file deleted with it.

// linear is the integer expression q*Q + kv*KV + C + sum(terms), where every
// term is a constant multiple of an int expression that reads neither q nor
// kv (sizes, b, h, buffer values at such indices): its value is known when a
// tile is scheduled.
type linear struct {
	q, kv, c int64
	terms    []freeTerm
}

// freeTerm is coef * e, e being free of q and kv.
type freeTerm struct {
	coef int64
	e    dsl.Expr
}

// coefLimit bounds coefficients and constants so that the generated int64
// bound arithmetic cannot overflow for indices below 2^31.
const coefLimit = 1 << 30

func okCoef(v int64) bool { return v > -coefLimit && v < coefLimit }

func (a linear) add(b linear) (linear, bool) {
	out := linear{q: a.q + b.q, kv: a.kv + b.kv, c: a.c + b.c}
	out.terms = append(append([]freeTerm(nil), a.terms...), b.terms...)
	return out, okCoef(out.q) && okCoef(out.kv) && okCoef(out.c)
}

func (a linear) scale(k int64) (linear, bool) {
	if !okCoef(k) {
		return linear{}, false
	}
	out := linear{q: a.q * k, kv: a.kv * k, c: a.c * k}
	for _, t := range a.terms {
		out.terms = append(out.terms, freeTerm{t.coef * k, t.e})
		if !okCoef(t.coef * k) {
			return linear{}, false
		}
	}
	return out, okCoef(out.q) && okCoef(out.kv) && okCoef(out.c)
}

func (a linear) isConst() bool { return a.q == 0 && a.kv == 0 && len(a.terms) == 0 }

// side is an int expression built from linear leaves with min and max
// (abs(x) is max(x, -x), clamp(x, lo, hi) is min(max(x, lo), hi)).
type side struct {
	op   sideOp
	lin  linear // sideLeaf
	a, b *side  // sideMin, sideMax
}

type sideOp int

const (
	sideLeaf sideOp = iota
	sideMin
	sideMax
)

func leaf(l linear) *side { return &side{op: sideLeaf, lin: l} }

func (s *side) neg() (*side, bool) {
	if s.op == sideLeaf {
		l, ok := s.lin.scale(-1)
		return leaf(l), ok
	}
	a, ok1 := s.a.neg()
	b, ok2 := s.b.neg()
	op := sideMin
	if s.op == sideMin {
		op = sideMax
	}
	return &side{op: op, a: a, b: b}, ok1 && ok2
}

func (s *side) size() int {
	if s.op == sideLeaf {
		return 1
	}
	return s.a.size() + s.b.size()
}

func addSides(x, y *side) (*side, bool) {
	if x.op != sideLeaf {
		a, ok1 := addSides(x.a, y)
		b, ok2 := addSides(x.b, y)
		return &side{op: x.op, a: a, b: b}, ok1 && ok2
	}
	if y.op != sideLeaf {
		return addSides(y, x)
	}
	l, ok := x.lin.add(y.lin)
	return leaf(l), ok
}

func scaleSide(s *side, k int64) (*side, bool) {
	if k < 0 {
		n, ok := s.neg()
		if !ok {
			return nil, false
		}
		return scaleSide(n, -k)
	}
	if s.op == sideLeaf {
		l, ok := s.lin.scale(k)
		return leaf(l), ok
	}
	a, ok1 := scaleSide(s.a, k)
	b, ok2 := scaleSide(s.b, k)
	return &side{op: s.op, a: a, b: b}, ok1 && ok2
}

// atomKind classifies a literal of the DNF.
type atomKind int

const (
	// atomFree is a bool expression that reads neither q nor kv.
	atomFree atomKind = iota
	// atomLinear is `lin <= 0`.
	atomLinear
	// atomSegment is `buf[q] == buf[kv]` over a `segments` buffer.
	atomSegment
	// atomOpaque is any other literal.
	atomOpaque
)

// atom is one literal: for atomFree and atomOpaque the value of e, negated
// when neg is set; for atomLinear lin <= 0; for atomSegment equality of the
// segment ids of q and kv.
type atom struct {
	kind atomKind
	lin  linear
	e    dsl.Expr
	neg  bool
	seg  *BufferABI
}

// conj is a conjunction of atoms; the empty conj is true.
type conj []atom

// dnf is a disjunction of conjunctions; the empty dnf is false.
type dnf []conj

// Limits on the size of a DNF; a larger mask is not analysed.
const (
	maxDisjuncts = 32
	maxAtoms     = 32
	maxSideSize  = 16
)

// analyzer builds the DNF of one lowered mask.
type analyzer struct {
	l       *dsl.Lowered
	buffers map[string]*BufferABI
	tooBig  bool
	qkv     map[dsl.Expr]bool // mentionsQKV's answers, per node
}

func newAnalyzer(l *dsl.Lowered, bufs []BufferABI) *analyzer {
	a := &analyzer{l: l, buffers: map[string]*BufferABI{}}
	for i := range bufs {
		a.buffers[bufs[i].Name] = &bufs[i]
	}
	return a
}

// maskDNF returns the DNF of the mask, or ok == false when it is too large.
func maskDNF(l *dsl.Lowered, bufs []BufferABI) (dnf, bool) {
	a := newAnalyzer(l, bufs)
	d := a.dnf(l.Expr, false)
	if a.tooBig {
		return nil, false
	}
	return simplify(d), true
}

func (a *analyzer) and(x, y dnf) dnf {
	if len(x)*len(y) > maxDisjuncts {
		a.tooBig = true
		return dnf{{}}
	}
	var out dnf
	for _, cx := range x {
		for _, cy := range y {
			if len(cx)+len(cy) > maxAtoms {
				a.tooBig = true
				return dnf{{}}
			}
			out = append(out, append(append(conj(nil), cx...), cy...))
		}
	}
	return out
}

func (a *analyzer) or(x, y dnf) dnf {
	if len(x)+len(y) > maxDisjuncts {
		a.tooBig = true
		return dnf{{}}
	}
	return append(append(dnf(nil), x...), y...)
}

// mentionsQKV reports whether e reads q, kv or the score. The answer for
// every node of e's tree is kept, so the analysis, which asks at every node
// of a long chain, stays linear in the tree's size.
func (a *analyzer) mentionsQKV(e dsl.Expr) bool {
	if v, ok := a.qkv[e]; ok {
		return v
	}
	if a.qkv == nil {
		a.qkv = map[dsl.Expr]bool{}
	}
	found := false
	if v, ok := e.(*dsl.VarRef); ok && (v.Var == dsl.VarQ || v.Var == dsl.VarKV || v.Var == dsl.VarScore) {
		found = true
	}
	dsl.Inspect(e, func(x dsl.Expr) bool {
		if x == e {
			return true
		}
		if a.mentionsQKV(x) { // every child is answered and kept
			found = true
		}
		return false
	})
	a.qkv[e] = found
	return found
}

// dnf converts the bool expression e (negated when neg is set).
func (a *analyzer) dnf(e dsl.Expr, neg bool) dnf {
	if a.tooBig {
		return dnf{{}}
	}
	if a.l.TypeOf(e) != dsl.TypeBool {
		return dnf{{{kind: atomOpaque, e: e, neg: neg}}}
	}
	if lit, ok := e.(*dsl.BoolLit); ok {
		if lit.Value != neg {
			return dnf{{}}
		}
		return dnf{}
	}
	if !a.mentionsQKV(e) {
		return dnf{{{kind: atomFree, e: e, neg: neg}}}
	}
	switch x := e.(type) {
	case *dsl.ParenExpr:
		return a.dnf(x.X, neg)
	case *dsl.UnaryExpr:
		if x.Op == dsl.OpNot || x.Op == dsl.OpInvert && a.l.TypeOf(x.X) == dsl.TypeBool {
			return a.dnf(x.X, !neg)
		}
	case *dsl.BinaryExpr:
		if a.l.TypeOf(x.X) == dsl.TypeBool && a.l.TypeOf(x.Y) == dsl.TypeBool {
			switch x.Op {
			case dsl.OpAnd, dsl.OpBitAnd:
				if neg {
					return a.or(a.dnf(x.X, true), a.dnf(x.Y, true))
				}
				return a.and(a.dnf(x.X, false), a.dnf(x.Y, false))
			case dsl.OpOr, dsl.OpBitOr:
				if neg {
					return a.and(a.dnf(x.X, true), a.dnf(x.Y, true))
				}
				return a.or(a.dnf(x.X, false), a.dnf(x.Y, false))
			}
		}
	case *dsl.CondExpr:
		return a.choice(x.Cond, x.Then, x.Else, neg, e)
	case *dsl.CallExpr:
		if id, ok := x.Fun.(*dsl.Ident); ok && id.Name == "where" && len(x.Args) == 3 {
			return a.choice(x.Args[0], x.Args[1], x.Args[2], neg, e)
		}
	case *dsl.CompareExpr:
		if d, ok := a.compare(x, neg); ok {
			return d
		}
	}
	return dnf{{{kind: atomOpaque, e: e, neg: neg}}}
}

// choice converts `t if c else f`: (c and t) or (not c and f).
func (a *analyzer) choice(c, t, f dsl.Expr, neg bool, e dsl.Expr) dnf {
	if a.l.TypeOf(c) != dsl.TypeBool || a.l.TypeOf(t) != dsl.TypeBool || a.l.TypeOf(f) != dsl.TypeBool {
		return dnf{{{kind: atomOpaque, e: e, neg: neg}}}
	}
	return a.or(a.and(a.dnf(c, false), a.dnf(t, neg)), a.and(a.dnf(c, true), a.dnf(f, neg)))
}

// compare converts a two-operand comparison of ints (or of bools under ==
// and !=); ok is false when it is not expressible.
func (a *analyzer) compare(x *dsl.CompareExpr, neg bool) (dnf, bool) {
	if len(x.Operands) != 2 {
		return nil, false
	}
	l, r, op := x.Operands[0], x.Operands[1], x.Ops[0]
	tl, tr := a.l.TypeOf(l), a.l.TypeOf(r)
	if neg {
		op = op.Negate()
	}
	if tl == dsl.TypeBool && tr == dsl.TypeBool && (op == dsl.OpEQ || op == dsl.OpNE) {
		same := a.or(a.and(a.dnf(l, false), a.dnf(r, false)), a.and(a.dnf(l, true), a.dnf(r, true)))
		if op == dsl.OpNE {
			same = a.or(a.and(a.dnf(l, false), a.dnf(r, true)), a.and(a.dnf(l, true), a.dnf(r, false)))
		}
		return same, true
	}
	if tl == dsl.TypeFloat || tr == dsl.TypeFloat || !tl.IsNumeric() || !tr.IsNumeric() {
		return nil, false
	}
	if d, ok := a.segment(l, r, op); ok {
		return d, true
	}
	ls, ok1 := a.side(l)
	rs, ok2 := a.side(r)
	if !ok1 || !ok2 {
		return nil, false
	}
	switch op {
	case dsl.OpLE:
		return a.lessEq(ls, rs, false), true
	case dsl.OpLT:
		return a.lessEq(ls, rs, true), true
	case dsl.OpGE:
		return a.lessEq(rs, ls, false), true
	case dsl.OpGT:
		return a.lessEq(rs, ls, true), true
	case dsl.OpEQ:
		return a.and(a.lessEq(ls, rs, false), a.lessEq(rs, ls, false)), true
	case dsl.OpNE:
		return a.or(a.lessEq(ls, rs, true), a.lessEq(rs, ls, true)), true
	}
	return nil, false
}

// lessEq converts L <= R (L < R when strict).
func (a *analyzer) lessEq(l, r *side, strict bool) dnf {
	switch {
	case l.op == sideMax:
		return a.and(a.lessEq(l.a, r, strict), a.lessEq(l.b, r, strict))
	case l.op == sideMin:
		return a.or(a.lessEq(l.a, r, strict), a.lessEq(l.b, r, strict))
	case r.op == sideMax:
		return a.or(a.lessEq(l, r.a, strict), a.lessEq(l, r.b, strict))
	case r.op == sideMin:
		return a.and(a.lessEq(l, r.a, strict), a.lessEq(l, r.b, strict))
	}
	nr, ok := r.lin.scale(-1)
	d, ok2 := l.lin.add(nr)
	if strict {
		d.c++
	}
	if !ok || !ok2 || !okCoef(d.c) {
		a.tooBig = true
		return dnf{{}}
	}
	return dnf{{{kind: atomLinear, lin: d}}}
}

// segment recognises buf[q] == buf[kv] (either order) over a 1-D int buffer
// declared `segments`.
func (a *analyzer) segment(l, r dsl.Expr, op dsl.Op) (dnf, bool) {
	if op != dsl.OpEQ {
		return nil, false
	}
	bl, il, ok1 := a.read1(l)
	br, ir, ok2 := a.read1(r)
	if !ok1 || !ok2 || bl != br || !bl.Segments || (bl.DType != "i32" && bl.DType != "i64") {
		return nil, false
	}
	if !(il == dsl.VarQ && ir == dsl.VarKV || il == dsl.VarKV && ir == dsl.VarQ) {
		return nil, false
	}
	return dnf{{{kind: atomSegment, seg: bl}}}, true
}

// read1 matches buf[v] for a 1-D buffer and an index variable v.
func (a *analyzer) read1(e dsl.Expr) (*BufferABI, dsl.Var, bool) {
	x, ok := dsl.Unparen(e).(*dsl.IndexExpr)
	if !ok || len(x.Indices) != 1 {
		return nil, 0, false
	}
	id, ok := x.X.(*dsl.Ident)
	v, ok2 := dsl.Unparen(x.Indices[0]).(*dsl.VarRef)
	if !ok || !ok2 {
		return nil, 0, false
	}
	b := a.buffers[id.Name]
	if b == nil || len(b.Dims) != 1 {
		return nil, 0, false
	}
	return b, v.Var, true
}

// side converts an int expression into min/max of linear leaves.
func (a *analyzer) side(e dsl.Expr) (*side, bool) {
	t := a.l.TypeOf(e)
	if t != dsl.TypeInt && t != dsl.TypeBool {
		return nil, false
	}
	s, ok := a.side1(e)
	if !ok || s.size() > maxSideSize {
		return nil, false
	}
	return s, true
}

func (a *analyzer) side1(e dsl.Expr) (*side, bool) {
	switch x := e.(type) {
	case *dsl.IntLit:
		return leaf(linear{c: x.Value}), okCoef(x.Value)
	case *dsl.BoolLit:
		if x.Value {
			return leaf(linear{c: 1}), true
		}
		return leaf(linear{}), true
	case *dsl.ParenExpr:
		return a.side(x.X)
	}
	if !a.mentionsQKV(e) {
		return leaf(linear{terms: []freeTerm{{1, e}}}), true
	}
	switch x := e.(type) {
	case *dsl.VarRef:
		switch x.Var {
		case dsl.VarQ:
			return leaf(linear{q: 1}), true
		case dsl.VarKV:
			return leaf(linear{kv: 1}), true
		}
	case *dsl.UnaryExpr:
		s, ok := a.side(x.X)
		if !ok {
			return nil, false
		}
		switch x.Op {
		case dsl.OpNeg:
			return s.neg()
		case dsl.OpPos:
			return s, true
		}
	case *dsl.BinaryExpr:
		if x.Op != dsl.OpAdd && x.Op != dsl.OpSub && x.Op != dsl.OpMul {
			return nil, false
		}
		s1, ok1 := a.side(x.X)
		s2, ok2 := a.side(x.Y)
		if !ok1 || !ok2 {
			return nil, false
		}
		switch x.Op {
		case dsl.OpAdd:
			return addSides(s1, s2)
		case dsl.OpSub:
			n, ok := s2.neg()
			if !ok {
				return nil, false
			}
			return addSides(s1, n)
		}
		if s1.op == sideLeaf && s1.lin.isConst() {
			return scaleSide(s2, s1.lin.c)
		}
		if s2.op == sideLeaf && s2.lin.isConst() {
			return scaleSide(s1, s2.lin.c)
		}
	case *dsl.CallExpr:
		id, ok := x.Fun.(*dsl.Ident)
		if !ok || a.l.TypeOf(e) != dsl.TypeInt {
			return nil, false
		}
		args := make([]*side, len(x.Args))
		for i, arg := range x.Args {
			s, ok := a.side(arg)
			if !ok {
				return nil, false
			}
			args[i] = s
		}
		switch {
		case id.Name == "abs" && len(args) == 1:
			n, ok := args[0].neg()
			return &side{op: sideMax, a: args[0], b: n}, ok
		case id.Name == "min" && len(args) == 2:
			return &side{op: sideMin, a: args[0], b: args[1]}, true
		case id.Name == "max" && len(args) == 2:
			return &side{op: sideMax, a: args[0], b: args[1]}, true
		case id.Name == "clamp" && len(args) == 3:
			return &side{op: sideMin, a: &side{op: sideMax, a: args[0], b: args[1]}, b: args[2]}, true
		case (id.Name == "floor" || id.Name == "ceil") && len(args) == 1:
			return args[0], true
		}
	}
	return nil, false
}

// simplify drops constant linear atoms: a true one from its conjunction, a
// false one with its conjunction.
func simplify(d dnf) dnf {
	var out dnf
	for _, c := range d {
		var keep conj
		dead := false
		for _, at := range c {
			if at.kind == atomLinear && at.lin.isConst() {
				if at.lin.c > 0 {
					dead = true
					break
				}
				continue
			}
			keep = append(keep, at)
		}
		if !dead {
			out = append(out, keep)
		}
	}
	return out
}
