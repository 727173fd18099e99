package tilemap

import (
	"math"

	"github.com/maskc/maskc/buftype"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
)

// boxEval decides the mask over a box of pairs (one (b, h), the rows [q0,
// q1] and the keys [kv0, kv1]) without evaluating its pairs, where interval
// arithmetic over the lowered mask is exact enough: each int node gets the
// range of its values over the box, each bool node false, true or unknown.
// A node that reads neither q nor kv, and a buffer read whose indices are
// one value over the box, is evaluated exactly (the reference evaluator, at
// one pair of the box). A box is decided only when no evaluation failed and
// no arithmetic could fail (a divisor range holding 0, an overflow): the
// pair-by-pair evaluation that replaces it otherwise reports the error as
// before. It must not be used by two goroutines at once.
type boxEval struct {
	l    *dsl.Lowered
	env  *eval.Env
	b, h int64
	// reads says whether a node reads q or kv.
	reads map[dsl.Expr]bool
	// exact are the compiled nodes evaluated exactly.
	exact map[dsl.Expr]*eval.BoundExpr
	// fixed are the values of nodes that read neither q nor kv, for (b, h).
	fixed map[dsl.Expr]dsl.Interval
	// scans are the ranges scan found, for (b, h).
	scans map[scanKey]dsl.Interval
	// box of the current decision and whether it failed.
	q0, q1, kv0, kv1 int64
	failed           bool
}

var (
	falseIv, trueIv, boolIv = dsl.Point(0), dsl.Point(1), dsl.Interval{Lo: 0, Hi: 1}
)

func newBoxEval(l *dsl.Lowered, env *eval.Env) *boxEval {
	be := &boxEval{l: l, env: env, reads: map[dsl.Expr]bool{}, exact: map[dsl.Expr]*eval.BoundExpr{}, fixed: map[dsl.Expr]dsl.Interval{}, scans: map[scanKey]dsl.Interval{}}
	if l != nil {
		be.markReads(l.Expr)
	}
	return be
}

// markReads fills reads for e and its subexpressions.
func (be *boxEval) markReads(e dsl.Expr) bool {
	if r, ok := be.reads[e]; ok {
		return r
	}
	r := false
	for _, c := range children(e) {
		if be.markReads(c) {
			r = true
		}
	}
	if v, ok := e.(*dsl.VarRef); ok && (v.Var == dsl.VarQ || v.Var == dsl.VarKV) {
		r = true
	}
	be.reads[e] = r
	return r
}

// children are e's operands.
func children(e dsl.Expr) []dsl.Expr {
	switch x := e.(type) {
	case *dsl.ParenExpr:
		return []dsl.Expr{x.X}
	case *dsl.UnaryExpr:
		return []dsl.Expr{x.X}
	case *dsl.BinaryExpr:
		return []dsl.Expr{x.X, x.Y}
	case *dsl.CompareExpr:
		return x.Operands
	case *dsl.CondExpr:
		return []dsl.Expr{x.Then, x.Cond, x.Else}
	case *dsl.CallExpr:
		return append([]dsl.Expr{x.Fun}, x.Args...)
	case *dsl.IndexExpr:
		return append([]dsl.Expr{x.X}, x.Indices...)
	case *dsl.TupleExpr:
		return x.Elems
	}
	return nil
}

// setSlice starts the decisions of slice (b, h).
func (be *boxEval) setSlice(b, h int64) {
	if be.b != b || be.h != h {
		clear(be.fixed)
		clear(be.scans)
	}
	be.b, be.h = b, h
}

// decide returns 1 when the mask keeps every pair of rows [q0, q1] x keys
// [kv0, kv1] of the slice, 0 when it keeps none, -1 when it cannot tell.
func (be *boxEval) decide(q0, q1, kv0, kv1 int64) int {
	if be.l == nil {
		return 1
	}
	be.q0, be.q1, be.kv0, be.kv1, be.failed = q0, q1, kv0, kv1, false
	r := be.of(be.l.Expr)
	switch {
	case be.failed:
		return -1
	case r == trueIv:
		return 1
	case r == falseIv:
		return 0
	}
	return -1
}

// fail marks the decision failed and returns the unknown range.
func (be *boxEval) fail() dsl.Interval {
	be.failed = true
	return dsl.Unbounded
}

// at evaluates e exactly at one pair of the box (its value is the same at
// every pair: the caller checked).
func (be *boxEval) at(e dsl.Expr) dsl.Interval {
	x := be.exact[e]
	if x == nil {
		c, err := eval.CompileExpr(be.l, e)
		if err == nil {
			x, err = c.Bind(be.env)
		}
		if err != nil {
			return be.fail()
		}
		be.exact[e] = x
	}
	v, err := x.Int(be.b, be.h, be.q0, be.kv0)
	if err != nil {
		return be.fail()
	}
	return dsl.Point(v)
}

// of returns the range of e over the box: an int's values, a bool's 0 or
// 1, anything for a float.
func (be *boxEval) of(e dsl.Expr) dsl.Interval {
	if be.failed {
		return dsl.Unbounded
	}
	t := be.l.TypeOf(e)
	if t != dsl.TypeInt && t != dsl.TypeBool {
		return be.fail() // floats are left to the pairs
	}
	if !be.reads[e] {
		if r, ok := be.fixed[e]; ok {
			return r
		}
		r := be.at(e)
		if !be.failed {
			be.fixed[e] = r
		}
		return r
	}
	r := be.compute(e, t == dsl.TypeBool)
	if t == dsl.TypeBool {
		r = r.Meet(boolIv)
	}
	return r
}

func bounded(r dsl.Interval) bool { return r.HasLo() && r.HasHi() }

func (be *boxEval) compute(e dsl.Expr, isBool bool) dsl.Interval {
	switch x := e.(type) {
	case *dsl.VarRef:
		switch x.Var {
		case dsl.VarQ:
			return dsl.Interval{Lo: be.q0, Hi: be.q1}
		case dsl.VarKV:
			return dsl.Interval{Lo: be.kv0, Hi: be.kv1}
		}
	case *dsl.ParenExpr:
		return be.of(x.X)
	case *dsl.UnaryExpr:
		v := be.of(x.X)
		switch {
		case x.Op == dsl.OpNot || (x.Op == dsl.OpInvert && isBool):
			if be.l.TypeOf(x.X) == dsl.TypeBool || be.l.TypeOf(x.X) == dsl.TypeInt {
				return truthNot(v)
			}
		case x.Op == dsl.OpNeg:
			return be.ok(negIv(v), v)
		case x.Op == dsl.OpPos:
			return v
		}
	case *dsl.BinaryExpr:
		if isBool && (x.Op == dsl.OpAnd || x.Op == dsl.OpBitAnd || x.Op == dsl.OpOr || x.Op == dsl.OpBitOr) &&
			be.l.TypeOf(x.X) == dsl.TypeBool && be.l.TypeOf(x.Y) == dsl.TypeBool {
			and := x.Op == dsl.OpAnd || x.Op == dsl.OpBitAnd
			p := be.of(x.X)
			if and && p == falseIv || !and && p == trueIv {
				return p
			}
			q := be.of(x.Y)
			if and && q == falseIv || !and && q == trueIv {
				return q
			}
			if p == q {
				return p
			}
			return boolIv
		}
		p, q := be.of(x.X), be.of(x.Y)
		switch x.Op {
		case dsl.OpAdd:
			return be.ok(addIv(p, q), p, q)
		case dsl.OpSub:
			return be.ok(addIv(p, negIv(q)), p, q)
		case dsl.OpMul:
			return be.ok(mulIv(p, q), p, q)
		case dsl.OpFloorDiv, dsl.OpMod:
			if !bounded(p) || q.Lo != q.Hi || q.Lo <= 0 {
				return be.fail() // a divisor that may be 0 or negative: the pairs decide
			}
			d := q.Lo
			lo, hi := floorDiv(p.Lo, d), floorDiv(p.Hi, d)
			if x.Op == dsl.OpFloorDiv {
				return dsl.Interval{Lo: lo, Hi: hi}
			}
			if lo == hi {
				return dsl.Interval{Lo: p.Lo - lo*d, Hi: p.Hi - hi*d}
			}
			return dsl.Interval{Lo: 0, Hi: d - 1}
		}
	case *dsl.CompareExpr:
		out := trueIv
		prev := be.of(x.Operands[0])
		for i, op := range x.Ops {
			next := be.of(x.Operands[i+1])
			c := compareIv(op, prev, next)
			if c == falseIv {
				return falseIv
			}
			if c != trueIv {
				out = boolIv
			}
			prev = next
		}
		return out
	case *dsl.CondExpr:
		return be.choose(be.of(x.Cond), x.Then, x.Else)
	case *dsl.CallExpr:
		id, _ := x.Fun.(*dsl.Ident)
		if id == nil {
			break
		}
		switch {
		case id.Name == "where" && len(x.Args) == 3 && be.l.TypeOf(x.Args[0]) == dsl.TypeBool:
			// where evaluates both branches (torch.where): a branch that
			// may fail fails the box even where it is not chosen.
			c, then, els := be.of(x.Args[0]), be.of(x.Args[1]), be.of(x.Args[2])
			switch {
			case c == trueIv:
				return then
			case c == falseIv:
				return els
			}
			return then.Hull(els)
		case (id.Name == "min" || id.Name == "max") && len(x.Args) == 2:
			p, q := be.of(x.Args[0]), be.of(x.Args[1])
			if id.Name == "min" {
				return dsl.Interval{Lo: min(p.Lo, q.Lo), Hi: min(p.Hi, q.Hi)}
			}
			return dsl.Interval{Lo: max(p.Lo, q.Lo), Hi: max(p.Hi, q.Hi)}
		case id.Name == "abs" && len(x.Args) == 1:
			v := be.of(x.Args[0])
			switch {
			case !bounded(v) || v.Lo == math.MinInt64:
				return dsl.Unbounded
			case v.Lo >= 0:
				return v
			case v.Hi <= 0:
				return negIv(v)
			}
			return dsl.Interval{Lo: 0, Hi: max(-v.Lo, v.Hi)}
		}
	case *dsl.IndexExpr:
		// One index per dimension; a read whose indices take one value is
		// exact, one whose indices stay inside the buffer anything, and
		// one that may read outside is left to the pairs (their error).
		id, _ := x.X.(*dsl.Ident)
		var t *eval.Tensor
		if id != nil {
			t = be.env.Buffers[id.Name]
		}
		if t == nil || len(t.Dims) != len(x.Indices) {
			return be.fail()
		}
		point := true
		for d, i := range x.Indices {
			r := be.of(i)
			if be.failed || r.Lo < 0 || r.Hi >= int64(t.Dims[d]) {
				return be.fail()
			}
			point = point && r.Lo == r.Hi
		}
		if point {
			return be.at(e)
		}
		if r, ok := be.scan(e, x); ok {
			return r
		}
		// The element type's range (a bool's 0 or 1).
		for _, d := range be.l.Buffers {
			if d.Name != nil && d.Name.Name == id.Name && d.DType != nil {
				if lo, hi, ok := buftype.IntRange(d.DType.Name); ok {
					return dsl.Interval{Lo: lo, Hi: hi}
				}
				if d.DType.Name == "bool" {
					return boolIv
				}
			}
		}
		return be.fail()
	}
	return be.fail() // a node the box does not follow: the pairs decide
}

// ok returns r, failing the box where r is unbounded though its operands
// are bounded (an int64 overflow, left to the pairs).
func (be *boxEval) ok(r dsl.Interval, operands ...dsl.Interval) dsl.Interval {
	for _, o := range operands {
		if !bounded(o) {
			return dsl.Unbounded
		}
	}
	if !bounded(r) {
		return be.fail()
	}
	return r
}

// maxScan is the most elements scan reads for one buffer read.
const maxScan = 256

// scan returns the exact range of a buffer read whose indices are points
// but one, which is q or kv itself: the read evaluated at each value of
// that variable over the box (the other indices keep their one value).
func (be *boxEval) scan(e dsl.Expr, x *dsl.IndexExpr) (dsl.Interval, bool) {
	var v dsl.Var
	n := 0
	key, np := scanKey{e: e}, 0
	for _, i := range x.Indices {
		for {
			p, ok := i.(*dsl.ParenExpr)
			if !ok {
				break
			}
			i = p.X
		}
		if r, ok := i.(*dsl.VarRef); ok && (r.Var == dsl.VarQ || r.Var == dsl.VarKV) {
			if lo, hi := be.varRange(r.Var); lo != hi {
				v = r.Var
				n++
				continue
			}
		}
		// A point (the caller checked): part of the key.
		if np == len(key.points) {
			return dsl.Interval{}, false
		}
		key.points[np] = be.of(i).Lo
		np++
	}
	if n != 1 {
		return dsl.Interval{}, false
	}
	lo, hi := be.varRange(v)
	if hi-lo >= maxScan {
		return dsl.Interval{}, false
	}
	key.lo, key.hi = lo, hi
	if r, ok := be.scans[key]; ok {
		return r, true
	}
	if be.at(e); be.failed { // compiles e
		return dsl.Unbounded, true
	}
	out := dsl.Interval{Lo: math.MaxInt64, Hi: math.MinInt64}
	for i := lo; i <= hi; i++ {
		q, kv := be.q0, i
		if v == dsl.VarQ {
			q, kv = i, be.kv0
		}
		val, err := be.exact[e].Int(be.b, be.h, q, kv)
		if err != nil {
			return be.fail(), true
		}
		out.Lo, out.Hi = min(out.Lo, val), max(out.Hi, val)
	}
	be.scans[key] = out
	return out, true
}

// scanKey is one scan: the read, the range of its variable index and the
// values of its other indices.
type scanKey struct {
	e      dsl.Expr
	lo, hi int64
	points [4]int64
}

// varRange is the box's range of q or kv.
func (be *boxEval) varRange(v dsl.Var) (lo, hi int64) {
	if v == dsl.VarQ {
		return be.q0, be.q1
	}
	return be.kv0, be.kv1
}

// choose is the range of `then if c else els`.
func (be *boxEval) choose(c dsl.Interval, then, els dsl.Expr) dsl.Interval {
	switch {
	case c == trueIv:
		return be.of(then)
	case c == falseIv:
		return be.of(els)
	}
	return be.of(then).Hull(be.of(els))
}

// truthNot is `not v` of a bool or int range.
func truthNot(v dsl.Interval) dsl.Interval {
	switch {
	case v == falseIv:
		return trueIv
	case v.Lo > 0 || v.Hi < 0:
		return falseIv
	}
	return boolIv
}

func negIv(v dsl.Interval) dsl.Interval {
	if !bounded(v) || v.Lo == math.MinInt64 {
		return dsl.Unbounded
	}
	return dsl.Interval{Lo: -v.Hi, Hi: -v.Lo}
}

func addIv(a, b dsl.Interval) dsl.Interval {
	if !bounded(a) || !bounded(b) {
		return dsl.Unbounded
	}
	lo, ok1 := dsl.AddInt64(a.Lo, b.Lo)
	hi, ok2 := dsl.AddInt64(a.Hi, b.Hi)
	if !ok1 || !ok2 {
		return dsl.Unbounded
	}
	return dsl.Interval{Lo: lo, Hi: hi}
}

func mulIv(a, b dsl.Interval) dsl.Interval {
	if !bounded(a) || !bounded(b) {
		return dsl.Unbounded
	}
	out := dsl.Interval{Lo: math.MaxInt64, Hi: math.MinInt64}
	for _, x := range []int64{a.Lo, a.Hi} {
		for _, y := range []int64{b.Lo, b.Hi} {
			p, ok := dsl.MulInt64(x, y)
			if !ok {
				return dsl.Unbounded
			}
			out.Lo, out.Hi = min(out.Lo, p), max(out.Hi, p)
		}
	}
	return out
}

// compareIv decides `a op b` over the ranges: true, false or unknown.
func compareIv(op dsl.Op, a, b dsl.Interval) dsl.Interval {
	if !bounded(a) || !bounded(b) {
		return boolIv
	}
	var yes, no bool
	switch op {
	case dsl.OpEQ:
		yes, no = a.Lo == a.Hi && b.Lo == b.Hi && a.Lo == b.Lo, a.Hi < b.Lo || b.Hi < a.Lo
	case dsl.OpNE:
		no, yes = a.Lo == a.Hi && b.Lo == b.Hi && a.Lo == b.Lo, a.Hi < b.Lo || b.Hi < a.Lo
	case dsl.OpLT:
		yes, no = a.Hi < b.Lo, a.Lo >= b.Hi
	case dsl.OpLE:
		yes, no = a.Hi <= b.Lo, a.Lo > b.Hi
	case dsl.OpGT:
		yes, no = a.Lo > b.Hi, a.Hi <= b.Lo
	case dsl.OpGE:
		yes, no = a.Lo >= b.Hi, a.Hi < b.Lo
	}
	switch {
	case yes:
		return trueIv
	case no:
		return falseIv
	}
	return boolIv
}

// floorDiv is Python's a // d for d > 0.
func floorDiv(a, d int64) int64 {
	q := a / d
	if a%d != 0 && a < 0 {
		q--
	}
	return q
}
