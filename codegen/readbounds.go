package codegen

import (
	"math"
	"sort"
	"strconv"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// This file bounds every buffer read's indices as integer expressions of a
// call's sizes (hipsrc.Bound, over hipsrc.BoundSymbols), so that a launcher
// refuses, before launch and with host arithmetic alone, a call whose reads
// would fall outside the buffers' extents (issue 33; hipsrc.CheckRead).
//
// The analysis is an interval analysis whose bounds are expressions rather
// than numbers (intrange.go's is numeric, over every size the ABI allows):
//
//   - b ranges over [0, B-1], h over [h0, h0+Sh-1], q over [q0, q0+Sq-1],
//     kv over [kv0, kv0+Skv-1]; B, H, HKV, Q and KV are themselves;
//   - an affine index (q - kv + 3, h, KV - 1 + q - kv) is bounded exactly
//     over that box; where its q and kv coefficients cancel (a function of
//     q - kv), a score read takes q - kv only over the diagonal band the
//     mask's conjunction of comparisons keeps (q >= kv, q - kv <= W): on a
//     pair the mask removes the score is discarded, so a read there cannot
//     change the result. A mask read counts on every pair;
//   - + - * // % min max clamp abs where and if/else combine bounds; a
//     where's branches see its condition (x < c in the then-branch, x >= c
//     in the else-branch, for a constant c), as T5's bucket needs;
//   - a float sub-expression converted by int() is bounded numerically
//     (floatRangeOf) and is a constant;
//   - an index computed from buffer values is ValueDependent: it is bounded
//     by the values the buffers' dtypes hold, the launcher checks nothing
//     it cannot prove, and the kernel flags an out-of-range read instead.
//
// Everything else falls back to intrange.go's numeric range (sound over
// every size) or to no bound, which the launcher refuses: when unsure
// whether a read can fall outside, it can.

// symRange is a symbolic interval: lo nil means -inf, hi nil +inf.
type symRange struct{ lo, hi *hipsrc.Bound }

func symPoint(b hipsrc.Bound) symRange { return symRange{&b, &b} }

func symConst(v int64) symRange { return symPoint(hipsrc.Const(v)) }

// concrete bounds the value of a Bound over every size the ABI allows.
func concrete(b *hipsrc.Bound) interval {
	if b == nil {
		return fullRange
	}
	switch b.Op {
	case "const":
		return point(b.Value)
	case "sym":
		switch b.Sym {
		case "B", "H", "HKV", "Sh":
			return iv(1, MaxHeadsOrBatch)
		case "Q", "KV", "Sq", "Skv":
			return iv(1, MaxSeqLen)
		case "q0", "kv0":
			return iv(0, MaxSeqLen-1)
		case "h0":
			return iv(0, MaxHeadsOrBatch-1)
		}
		return fullRange
	}
	r := concrete(&b.Args[0])
	for i := 1; i < len(b.Args); i++ {
		a := concrete(&b.Args[i])
		switch b.Op {
		case "add":
			r = addRange(r, a)
		case "mul":
			r = mulRange(r, a)
		case "min":
			r = iv(min(r.Lo, a.Lo), min(r.Hi, a.Hi))
		case "max":
			r = iv(max(r.Lo, a.Lo), max(r.Hi, a.Hi))
		case "floordiv":
			r = floorDivRange(r, a)
		default:
			return fullRange
		}
	}
	return r
}

// bAdd is a + b, folded: nil (an infinite end) absorbs.
func bAdd(a, b *hipsrc.Bound) *hipsrc.Bound {
	if a == nil || b == nil {
		return nil
	}
	var terms []hipsrc.Bound
	var c int64
	for _, x := range []hipsrc.Bound{*a, *b} {
		parts := []hipsrc.Bound{x}
		if x.Op == "add" {
			parts = x.Args
		}
		for _, p := range parts {
			if v, ok := p.IsConst(); ok {
				s, ok := add64(c, v)
				if !ok {
					return nil
				}
				c = s
				continue
			}
			terms = append(terms, p)
		}
	}
	if c != 0 || len(terms) == 0 {
		terms = append(terms, hipsrc.Const(c))
	}
	if len(terms) == 1 {
		return &terms[0]
	}
	return &hipsrc.Bound{Op: "add", Args: terms}
}

// bScale is c * a, folded (a sum is distributed, so messages read Q + 2
// rather than 1 * (Q + 2)).
func bScale(c int64, a *hipsrc.Bound) *hipsrc.Bound {
	if a == nil {
		return nil
	}
	switch {
	case c == 1:
		return a
	case c == 0:
		z := hipsrc.Const(0)
		return &z
	}
	if v, ok := a.IsConst(); ok {
		p, ok := mul64(c, v)
		if !ok {
			return nil
		}
		r := hipsrc.Const(p)
		return &r
	}
	if a.Op == "add" {
		var r *hipsrc.Bound
		for i := range a.Args {
			t := bScale(c, &a.Args[i])
			if t == nil {
				return nil
			}
			if r == nil {
				r = t
			} else {
				r = bAdd(r, t)
			}
		}
		return r
	}
	if a.Op == "mul" && len(a.Args) == 2 {
		if v, ok := a.Args[0].IsConst(); ok {
			if p, ok := mul64(c, v); ok {
				return bScale(p, &a.Args[1])
			}
		}
	}
	return &hipsrc.Bound{Op: "mul", Args: []hipsrc.Bound{hipsrc.Const(c), *a}}
}

// bMinMax is min(a, b) or max(a, b) of two finite bounds, folded where
// the numeric ranges decide it.
func bMinMax(op string, a, b *hipsrc.Bound) *hipsrc.Bound {
	ca, cb := concrete(a), concrete(b)
	aFirst := ca.Hi <= cb.Lo // a <= b always
	bFirst := cb.Hi <= ca.Lo
	if a.String() == b.String() {
		return a
	}
	switch {
	case op == "min" && aFirst, op == "max" && bFirst:
		return a
	case op == "min" && bFirst, op == "max" && aFirst:
		return b
	}
	var args []hipsrc.Bound
	for _, x := range []*hipsrc.Bound{a, b} {
		if x.Op == op {
			args = append(args, x.Args...)
		} else {
			args = append(args, *x)
		}
	}
	return &hipsrc.Bound{Op: op, Args: args}
}

// loMin, loMax, hiMin, hiMax combine ends where nil is -inf (lo) or +inf (hi).
func loMin(a, b *hipsrc.Bound) *hipsrc.Bound {
	if a == nil || b == nil {
		return nil
	}
	return bMinMax("min", a, b)
}

func loMax(a, b *hipsrc.Bound) *hipsrc.Bound {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return bMinMax("max", a, b)
}

func hiMin(a, b *hipsrc.Bound) *hipsrc.Bound { return loMax2(a, b, "min") }

func hiMax(a, b *hipsrc.Bound) *hipsrc.Bound {
	if a == nil || b == nil {
		return nil
	}
	return bMinMax("max", a, b)
}

// loMax2 is the min of two hi ends (nil +inf): the finite one wins.
func loMax2(a, b *hipsrc.Bound, op string) *hipsrc.Bound {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return bMinMax(op, a, b)
}

func (r symRange) add(s symRange) symRange { return symRange{bAdd(r.lo, s.lo), bAdd(r.hi, s.hi)} }

func (r symRange) scale(c int64) symRange {
	if c >= 0 {
		return symRange{bScale(c, r.lo), bScale(c, r.hi)}
	}
	return symRange{bScale(c, r.hi), bScale(c, r.lo)}
}

func (r symRange) hull(s symRange) symRange { return symRange{loMin(r.lo, s.lo), hiMax(r.hi, s.hi)} }

func (r symRange) meet(s symRange) symRange { return symRange{loMax(r.lo, s.lo), hiMin(r.hi, s.hi)} }

// fromInterval turns a numeric range into a symbolic one (the full int64
// range's ends become infinite).
func fromInterval(i interval) symRange {
	var r symRange
	if i.Lo != math.MinInt64 {
		b := hipsrc.Const(i.Lo)
		r.lo = &b
	}
	if i.Hi != math.MaxInt64 {
		b := hipsrc.Const(i.Hi)
		r.hi = &b
	}
	return r
}

// readAnalysis bounds the indices of one lowered mod's buffer reads.
type readAnalysis struct {
	l       *dsl.Lowered
	num     *rangeAnalysis
	band    symRange // q - kv over the pairs that count (score reads: the mask's band)
	refined map[string]symRange
	texts   map[dsl.Expr]string
}

func newReadAnalysis(l *dsl.Lowered, bufs map[string]*BufferABI, band symRange) *readAnalysis {
	return &readAnalysis{l: l, num: newRangeAnalysis(l, bufs), band: band, refined: map[string]symRange{}, texts: map[dsl.Expr]string{}}
}

func (a *readAnalysis) text(e dsl.Expr) string {
	t, ok := a.texts[e]
	if !ok {
		t = exprText(e)
		a.texts[e] = t
	}
	return t
}

var (
	symLoQ  = hipsrc.Sym("q0")
	symLoKV = hipsrc.Sym("kv0")
)

// varBox is the range of an index variable or size over the launch.
func varBox(v dsl.Var) (symRange, bool) {
	last := func(off, n string) *hipsrc.Bound { // off + n - 1
		return bAdd(bAdd(ptr(hipsrc.Sym(off)), ptr(hipsrc.Sym(n))), ptr(hipsrc.Const(-1)))
	}
	switch v {
	case dsl.VarB:
		return symRange{ptr(hipsrc.Const(0)), bAdd(ptr(hipsrc.Sym("B")), ptr(hipsrc.Const(-1)))}, true
	case dsl.VarH:
		return symRange{ptr(hipsrc.Sym("h0")), last("h0", "Sh")}, true
	case dsl.VarQ:
		return symRange{ptr(symLoQ), last("q0", "Sq")}, true
	case dsl.VarKV:
		return symRange{ptr(symLoKV), last("kv0", "Skv")}, true
	case dsl.SizeB:
		return symPoint(hipsrc.Sym("B")), true
	case dsl.SizeH:
		return symPoint(hipsrc.Sym("H")), true
	case dsl.SizeHKV:
		return symPoint(hipsrc.Sym("HKV")), true
	case dsl.SizeQ:
		return symPoint(hipsrc.Sym("Q")), true
	case dsl.SizeKV:
		return symPoint(hipsrc.Sym("KV")), true
	}
	return symRange{}, false
}

func ptr(b hipsrc.Bound) *hipsrc.Bound { return &b }

// affine is an int expression sum(coef[v] * v) + rest, rest free of the
// index variables b, h, q, kv.
type affine struct {
	coef map[dsl.Var]int64
	rest symRange
}

func isIndexVar(v dsl.Var) bool {
	return v == dsl.VarB || v == dsl.VarH || v == dsl.VarQ || v == dsl.VarKV
}

func usesIndexVar(e dsl.Expr) bool {
	return dsl.Any(e, func(x dsl.Expr) bool {
		v, ok := x.(*dsl.VarRef)
		return ok && isIndexVar(v.Var)
	})
}

// affineOf writes e as an affine form, or false.
func (a *readAnalysis) affineOf(e dsl.Expr) (affine, bool) {
	if a.l.TypeOf(e) != dsl.TypeInt {
		return affine{}, false
	}
	if !usesIndexVar(e) {
		return affine{coef: map[dsl.Var]int64{}, rest: a.rangeOf(e)}, true
	}
	switch x := e.(type) {
	case *dsl.VarRef:
		return affine{coef: map[dsl.Var]int64{x.Var: 1}, rest: symConst(0)}, true
	case *dsl.ParenExpr:
		return a.affineOf(x.X)
	case *dsl.UnaryExpr:
		f, ok := a.affineOf(x.X)
		if !ok {
			return f, false
		}
		switch x.Op {
		case dsl.OpPos:
			return f, true
		case dsl.OpNeg:
			return f.scale(-1)
		}
	case *dsl.BinaryExpr:
		f, ok1 := a.affineOf(x.X)
		g, ok2 := a.affineOf(x.Y)
		if !ok1 || !ok2 {
			return affine{}, false
		}
		switch x.Op {
		case dsl.OpAdd:
			return f.plus(g, 1)
		case dsl.OpSub:
			return f.plus(g, -1)
		case dsl.OpMul:
			if c, ok := g.constant(); ok {
				return f.scale(c)
			}
			if c, ok := f.constant(); ok {
				return g.scale(c)
			}
		}
	}
	return affine{}, false
}

func (f affine) constant() (int64, bool) {
	if len(f.coef) != 0 || f.rest.lo == nil || f.rest.hi == nil {
		return 0, false
	}
	lo, ok1 := f.rest.lo.IsConst()
	hi, ok2 := f.rest.hi.IsConst()
	return lo, ok1 && ok2 && lo == hi
}

func (f affine) scale(c int64) (affine, bool) {
	g := affine{coef: map[dsl.Var]int64{}, rest: f.rest.scale(c)}
	for v, k := range f.coef {
		p, ok := mul64(k, c)
		if !ok {
			return g, false
		}
		if p != 0 {
			g.coef[v] = p
		}
	}
	return g, true
}

func (f affine) plus(g affine, sign int64) (affine, bool) {
	g, ok := g.scale(sign)
	if !ok {
		return g, false
	}
	h := affine{coef: map[dsl.Var]int64{}, rest: f.rest.add(g.rest)}
	for _, m := range []map[dsl.Var]int64{f.coef, g.coef} {
		for v, k := range m {
			s, ok := add64(h.coef[v], k)
			if !ok {
				return h, false
			}
			h.coef[v] = s
			if s == 0 {
				delete(h.coef, v)
			}
		}
	}
	return h, true
}

// diagonal is the range of q - kv over the launch's box.
func diagonal() symRange {
	qb, _ := varBox(dsl.VarQ)
	kvb, _ := varBox(dsl.VarKV)
	return qb.add(kvb.scale(-1))
}

// rangeOf bounds f over the launch's box, q - kv within a.band.
func (a *readAnalysis) affineRange(f affine) symRange {
	r := f.rest
	coef := map[dsl.Var]int64{}
	for v, k := range f.coef {
		coef[v] = k
	}
	if k := coef[dsl.VarQ]; k != 0 && coef[dsl.VarKV] == -k {
		r = r.add(diagonal().meet(a.band).scale(k))
		delete(coef, dsl.VarQ)
		delete(coef, dsl.VarKV)
	}
	vars := make([]dsl.Var, 0, len(coef))
	for v := range coef {
		vars = append(vars, v)
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i] < vars[j] })
	for _, v := range vars {
		box, _ := varBox(v)
		r = r.add(box.scale(coef[v]))
	}
	return r
}

// rangeOf bounds the int or bool expression e.
func (a *readAnalysis) rangeOf(e dsl.Expr) symRange {
	r := a.compute(e)
	if c, ok := a.refined[a.text(e)]; ok {
		r = r.meet(c)
	}
	return r
}

func (a *readAnalysis) compute(e dsl.Expr) symRange {
	switch a.l.TypeOf(e) {
	case dsl.TypeBool:
		return symRange{ptr(hipsrc.Const(0)), ptr(hipsrc.Const(1))}
	case dsl.TypeInt:
	default:
		return symRange{}
	}
	switch x := e.(type) {
	case *dsl.VarRef:
		if r, ok := varBox(x.Var); ok {
			return r
		}
	case *dsl.IntLit:
		return symConst(x.Value)
	case *dsl.ParenExpr:
		return a.rangeOf(x.X)
	}
	if !usesIndexVar(e) {
		// no index variable: fall through to the structural rules
	} else if f, ok := a.affineOf(e); ok && len(f.coef) > 0 {
		return a.affineRange(f)
	}
	num := fromInterval(a.num.of(e)) // sound over every size
	switch x := e.(type) {
	case *dsl.UnaryExpr:
		v := a.rangeOf(x.X)
		switch x.Op {
		case dsl.OpNeg:
			return v.scale(-1)
		case dsl.OpPos:
			return v
		case dsl.OpInvert:
			return v.scale(-1).add(symConst(-1))
		}
	case *dsl.BinaryExpr:
		p, q := a.rangeOf(x.X), a.rangeOf(x.Y)
		switch x.Op {
		case dsl.OpAdd:
			return p.add(q)
		case dsl.OpSub:
			return p.add(q.scale(-1))
		case dsl.OpMul:
			if c, ok := constOf(q); ok {
				return p.scale(c)
			}
			if c, ok := constOf(p); ok {
				return q.scale(c)
			}
			// b * H and the like: both factors non-negative, so the
			// product is monotone in each.
			if p.lo != nil && p.hi != nil && q.lo != nil && q.hi != nil && concrete(p.lo).Lo >= 0 && concrete(q.lo).Lo >= 0 {
				mul := func(x, y *hipsrc.Bound) *hipsrc.Bound {
					if c, ok := x.IsConst(); ok {
						return bScale(c, y)
					}
					if c, ok := y.IsConst(); ok {
						return bScale(c, x)
					}
					return &hipsrc.Bound{Op: "mul", Args: []hipsrc.Bound{*x, *y}}
				}
				return symRange{mul(p.lo, q.lo), mul(p.hi, q.hi)}
			}
		case dsl.OpFloorDiv:
			if c, ok := constOf(q); ok && c > 0 {
				div := func(b *hipsrc.Bound) *hipsrc.Bound {
					if b == nil {
						return nil
					}
					if v, ok := b.IsConst(); ok {
						return ptr(hipsrc.Const(floorDiv64(v, c)))
					}
					return &hipsrc.Bound{Op: "floordiv", Args: []hipsrc.Bound{*b, hipsrc.Const(c)}}
				}
				return symRange{div(p.lo), div(p.hi)}
			}
		case dsl.OpMod:
			if c, ok := constOf(q); ok && c > 0 {
				if concrete(p.lo).Lo >= 0 && p.hi != nil && concrete(p.hi).Hi < c {
					return p
				}
				return symRange{ptr(hipsrc.Const(0)), ptr(hipsrc.Const(c - 1))}
			}
		}
	case *dsl.CondExpr:
		return a.branch(x.Cond, true, x.Then).hull(a.branch(x.Cond, false, x.Else))
	case *dsl.CallExpr:
		if r, ok := a.call(x); ok {
			return r
		}
	}
	return num
}

// constOf returns the value of a constant range.
func constOf(r symRange) (int64, bool) {
	if r.lo == nil || r.hi == nil {
		return 0, false
	}
	lo, ok1 := r.lo.IsConst()
	hi, ok2 := r.hi.IsConst()
	return lo, ok1 && ok2 && lo == hi
}

// branch bounds e where cond is (pos) or is not (!pos) true: a comparison
// of an int expression with a constant narrows that expression wherever e
// contains it (T5: is_small = d < 8 ? d : 8 + log-bucket of d >= 8).
func (a *readAnalysis) branch(cond dsl.Expr, pos bool, e dsl.Expr) symRange {
	cond = dsl.Unparen(cond)
	c, ok := cond.(*dsl.CompareExpr)
	if !ok || len(c.Ops) != 1 || len(c.Operands) != 2 {
		return a.rangeOf(e)
	}
	x, y, op := c.Operands[0], c.Operands[1], c.Ops[0]
	k, isConst := constOf(a.rangeOf(y))
	if !isConst {
		var ok bool
		if k, ok = constOf(a.rangeOf(x)); !ok || a.l.TypeOf(y) != dsl.TypeInt {
			return a.rangeOf(e)
		}
		x = y
		op = map[dsl.Op]dsl.Op{dsl.OpLT: dsl.OpGT, dsl.OpLE: dsl.OpGE, dsl.OpGT: dsl.OpLT, dsl.OpGE: dsl.OpLE}[op]
	}
	if a.l.TypeOf(x) != dsl.TypeInt {
		return a.rangeOf(e)
	}
	if !pos {
		op = map[dsl.Op]dsl.Op{dsl.OpLT: dsl.OpGE, dsl.OpLE: dsl.OpGT, dsl.OpGT: dsl.OpLE, dsl.OpGE: dsl.OpLT}[op]
	}
	var lim symRange
	switch op {
	case dsl.OpLT:
		lim.hi = ptr(hipsrc.Const(k - 1))
	case dsl.OpLE:
		lim.hi = ptr(hipsrc.Const(k))
	case dsl.OpGT:
		lim.lo = ptr(hipsrc.Const(k + 1))
	case dsl.OpGE:
		lim.lo = ptr(hipsrc.Const(k))
	default:
		return a.rangeOf(e)
	}
	key := a.text(x)
	old, had := a.refined[key]
	if had {
		a.refined[key] = old.meet(lim)
	} else {
		a.refined[key] = lim
	}
	r := a.rangeOf(e)
	if had {
		a.refined[key] = old
	} else {
		delete(a.refined, key)
	}
	return r
}

func (a *readAnalysis) call(x *dsl.CallExpr) (symRange, bool) {
	id, ok := x.Fun.(*dsl.Ident)
	if !ok {
		return symRange{}, false
	}
	arg := func(i int) symRange { return a.rangeOf(x.Args[i]) }
	switch {
	case id.Name == "where" && len(x.Args) == 3:
		return a.branch(x.Args[0], true, x.Args[1]).hull(a.branch(x.Args[0], false, x.Args[2])), true
	case id.Name == "min" && len(x.Args) == 2:
		p, q := arg(0), arg(1)
		return symRange{loMin(p.lo, q.lo), hiMin(p.hi, q.hi)}, true
	case (id.Name == "max" || id.Name == "clamp") && len(x.Args) >= 2:
		p, q := arg(0), arg(1)
		r := symRange{loMax(p.lo, q.lo), hiMax(p.hi, q.hi)}
		if id.Name == "clamp" && len(x.Args) == 3 {
			u := arg(2)
			r = symRange{loMin(r.lo, u.lo), hiMin(r.hi, u.hi)}
		}
		return r, true
	case id.Name == "abs" && len(x.Args) == 1:
		v := arg(0)
		lo := loMax(ptr(hipsrc.Const(0)), v.lo)
		if v.hi != nil {
			lo = loMax(lo, bScale(-1, v.hi))
		}
		var hi *hipsrc.Bound
		if v.lo != nil {
			hi = hiMax(bScale(-1, v.lo), v.hi)
		}
		return symRange{lo, hi}, true
	case (id.Name == "floor" || id.Name == "ceil" || id.Name == "int") && len(x.Args) == 1 && a.l.TypeOf(x.Args[0]) != dsl.TypeFloat:
		return arg(0), true
	case id.Name == "int" && len(x.Args) == 1:
		// int() truncates toward zero; the kernel computes in fp32 where
		// floatRangeOf is exact arithmetic, so the ends are widened first.
		lo, hi := floatRangeOf(a.l, x.Args[0], func(e dsl.Expr) (float64, float64) {
			r := a.rangeOf(e)
			return float64(concrete(r.lo).Lo), float64(concrete(r.hi).Hi)
		})
		widen := func(f float64, dir float64) float64 { return f + dir*(1e-3*math.Abs(f)+1e-3) }
		var r symRange
		if !math.IsInf(lo, 0) && !math.IsNaN(lo) {
			r.lo = ptr(hipsrc.Const(min(saturateInt(math.Trunc(widen(lo, -1))), 0)))
			if lo >= 0 {
				r.lo = ptr(hipsrc.Const(saturateInt(math.Trunc(widen(lo, -1)))))
			}
		}
		if !math.IsInf(hi, 0) && !math.IsNaN(hi) {
			r.hi = ptr(hipsrc.Const(max(saturateInt(math.Trunc(widen(hi, 1))), 0)))
			if hi < 0 {
				r.hi = ptr(hipsrc.Const(saturateInt(math.Trunc(widen(hi, 1)))))
			}
		}
		// NaN converts to 0: keep 0 inside unless the range is known.
		if r.lo != nil && r.hi != nil {
			return r.hull(symConst(0)), true
		}
		return r, true
	}
	return symRange{}, false
}

// maskBand is the range of q - kv that a mask's top-level conjunction of
// comparisons keeps (q >= kv, 0 <= q - kv <= W, kv - q < L); unbounded
// where the mask says nothing about it.
func maskBand(mask *dsl.Lowered, bufs map[string]*BufferABI) symRange {
	if mask == nil || mask.Expr == nil {
		return symRange{}
	}
	a := newReadAnalysis(mask, bufs, symRange{})
	var band symRange
	var walk func(e dsl.Expr)
	walk = func(e dsl.Expr) {
		switch x := dsl.Unparen(e).(type) {
		case *dsl.BinaryExpr:
			if x.Op == dsl.OpAnd || x.Op == dsl.OpBitAnd {
				walk(x.X)
				walk(x.Y)
			}
		case *dsl.CompareExpr:
			for i, op := range x.Ops {
				band = band.meet(a.compareBand(x.Operands[i], op, x.Operands[i+1]))
			}
		}
	}
	walk(mask.Expr)
	return band
}

// compareBand is what `x op y` says about d = q - kv.
func (a *readAnalysis) compareBand(x dsl.Expr, op dsl.Op, y dsl.Expr) symRange {
	f, ok1 := a.affineOf(x)
	g, ok2 := a.affineOf(y)
	if !ok1 || !ok2 {
		return symRange{}
	}
	h, ok := f.plus(g, -1) // x - y = k*d + rest
	if !ok || len(h.coef) != 2 || h.rest.lo == nil || h.rest.hi == nil || h.rest.lo.String() != h.rest.hi.String() {
		return symRange{}
	}
	k := h.coef[dsl.VarQ]
	if (k != 1 && k != -1) || h.coef[dsl.VarKV] != -k {
		return symRange{}
	}
	// k*d + r op 0, so d op' -r*k.
	if k == -1 {
		op = map[dsl.Op]dsl.Op{dsl.OpLT: dsl.OpGT, dsl.OpLE: dsl.OpGE, dsl.OpGT: dsl.OpLT, dsl.OpGE: dsl.OpLE, dsl.OpEQ: dsl.OpEQ}[op]
	}
	at := bScale(-k, h.rest.lo) // d op at
	var r symRange
	switch op {
	case dsl.OpGE:
		r.lo = at
	case dsl.OpGT:
		r.lo = bAdd(at, ptr(hipsrc.Const(1)))
	case dsl.OpLE:
		r.hi = at
	case dsl.OpLT:
		r.hi = bAdd(at, ptr(hipsrc.Const(-1)))
	case dsl.OpEQ:
		r = symRange{at, at}
	}
	return r
}

// ReadBounds bounds every buffer read of a kernel's mask and score
// (hipsrc.ReadBound, in source order; one entry per distinct read text and
// context). src names positions.
func ReadBounds(src *dsl.Source, mask, score *dsl.Lowered, bufs []BufferABI) []hipsrc.ReadBound {
	r, _ := readBounds(src, mask, score, bufs)
	return r
}

// readBounds is ReadBounds with each read's span.
func readBounds(src *dsl.Source, mask, score *dsl.Lowered, bufs []BufferABI) ([]hipsrc.ReadBound, []dsl.Span) {
	var spans []dsl.Span
	byName := map[string]*BufferABI{}
	for i := range bufs {
		byName[bufs[i].Name] = &bufs[i]
	}
	var out []hipsrc.ReadBound
	seen := map[string]bool{}
	for _, m := range []struct {
		l    *dsl.Lowered
		in   string
		band symRange
	}{{mask, "mask", symRange{}}, {score, "score", maskBand(mask, byName)}} {
		if m.l == nil || m.l.Expr == nil {
			continue
		}
		a := newReadAnalysis(m.l, byName, m.band)
		dsl.Inspect(m.l.Expr, func(e dsl.Expr) bool {
			x, ok := e.(*dsl.IndexExpr)
			if !ok {
				return true
			}
			id, ok := x.X.(*dsl.Ident)
			if !ok || byName[id.Name] == nil {
				return true
			}
			b := byName[id.Name]
			// Index is [] for a 0-d buffer's read, never null: every manifest
			// reader takes a list.
			r := hipsrc.ReadBound{Buffer: b.Name, Slot: b.Slot, In: m.in, Dims: b.Dims, Index: []hipsrc.ReadIndex{}, Text: exprText(x), At: "<builtin>"}
			if src != nil && x.Sp.IsValid() && x.Sp.End <= len(src.Text) {
				p := src.Position(x.Sp.Start)
				r.At = src.Name + ":" + itoa(p.Line) + ":" + itoa(p.Column)
				r.Text = src.Slice(x.Sp)
			}
			for _, ix := range x.Indices {
				rg := a.rangeOf(ix)
				ri := hipsrc.ReadIndex{Lo: rg.lo, Hi: rg.hi}
				deps := map[string]bool{}
				dsl.Inspect(ix, func(y dsl.Expr) bool {
					if z, ok := y.(*dsl.IndexExpr); ok {
						if id, ok := z.X.(*dsl.Ident); ok && byName[id.Name] != nil {
							deps[id.Name] = true
						}
					}
					return true
				})
				for d := range deps {
					ri.Depends = append(ri.Depends, d)
				}
				sort.Strings(ri.Depends)
				ri.ValueDependent = len(ri.Depends) > 0
				r.Index = append(r.Index, ri)
			}
			// One read as written can be several reads after inlining (a
			// factory called with two arguments): the key has the bounds.
			key := r.In + "\x00" + r.At + "\x00" + r.Text
			for _, ix := range r.Index {
				for _, b := range []*hipsrc.Bound{ix.Lo, ix.Hi} {
					key += "\x00"
					if b != nil {
						key += b.String()
					}
				}
			}
			if !seen[key] {
				seen[key] = true
				out = append(out, r)
				spans = append(spans, x.Sp)
			}
			return true
		})
	}
	return out, spans
}

func itoa(v int) string { return strconv.Itoa(v) }

// indexReadsBuffers reports whether an index of read x is computed from
// the values of buffers (of bufs): such a read calls the flagged accessor.
func indexReadsBuffers(x *dsl.IndexExpr, bufs map[string]*BufferABI) bool {
	found := false
	for _, ix := range x.Indices {
		dsl.Inspect(ix, func(y dsl.Expr) bool {
			if z, ok := y.(*dsl.IndexExpr); ok {
				if id, ok := z.X.(*dsl.Ident); ok && bufs[id.Name] != nil {
					found = true
				}
			}
			return !found
		})
	}
	return found
}
