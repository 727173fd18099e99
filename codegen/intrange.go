package codegen

import (
	"math"
	"math/bits"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// This file decides where generated int arithmetic may run in 32 bits. An
// interval analysis over the lowered expression bounds every int value from
// the kernel's launch preconditions below; a node is computed in C `int`
// when its value and all its int operands lie in int32, so that every C
// operation on them is exact (no wrap, no undefined overflow), and in
// `long long` otherwise. Products of indices, sums of two lengths and i64
// buffer values therefore stay 64-bit.

// Launch preconditions the interval analysis assumes. They are the only
// assumptions behind the generated 32-bit arithmetic:
//
//   - B, H and HKV are C ints of MaskcShape, so 1 <= B, H, HKV <= 2^31 - 1,
//     0 <= b < B and 0 <= h < H;
//   - Q and KV are at most MaxSeqLen (MaskcShape's ints leave 256 of
//     headroom for tile arithmetic), 0 <= q < Q and 0 <= kv < KV. The
//     launcher checks this (gpu/harness.py Kernel.prepare; the Go runtime
//     must refuse longer sequences the same way).
const (
	// MaxSeqLen is the largest Q and KV a generated kernel accepts: 2^31 - 257
	// (hipsrc.MaxSeqLen, the ABI's one definition).
	MaxSeqLen = hipsrc.MaxSeqLen
	// MaxHeadsOrBatch bounds B, H and HKV (they are C ints).
	MaxHeadsOrBatch = math.MaxInt32
)

// interval is the closed range [Lo, Hi] of the values an int expression can
// take (dsl's one interval type). The full int64 range stands for
// "unknown".
type interval = dsl.Interval

var (
	fullRange  = dsl.Unbounded
	int32Range = iv(math.MinInt32, math.MaxInt32)
	boolRange  = iv(0, 1)
)

// iv is the interval [lo, hi].
func iv(lo, hi int64) interval { return interval{Lo: lo, Hi: hi} }

var point = dsl.Point

func hull(a, b interval) interval { return a.Hull(b) }

// add64 and mul64 return ok == false on int64 overflow (dsl's one
// checked arithmetic).
var add64, mul64 = dsl.AddInt64, dsl.MulInt64

func neg(r interval) interval {
	if r.Lo == math.MinInt64 {
		return fullRange
	}
	return iv(-r.Hi, -r.Lo)
}

func addRange(a, b interval) interval {
	lo, ok1 := add64(a.Lo, b.Lo)
	hi, ok2 := add64(a.Hi, b.Hi)
	if !ok1 || !ok2 {
		return fullRange
	}
	return iv(lo, hi)
}

func mulRange(a, b interval) interval {
	r := iv(math.MaxInt64, math.MinInt64)
	for _, x := range []int64{a.Lo, a.Hi} {
		for _, y := range []int64{b.Lo, b.Hi} {
			p, ok := mul64(x, y)
			if !ok {
				return fullRange
			}
			r = iv(min(r.Lo, p), max(r.Hi, p))
		}
	}
	return r
}

// shiftRange bounds p << q or p >> q (op OpShl, OpShr) for counts q >= 0:
// a shift is monotone in each operand, so its extremes are at the
// corners. ok is false where a count may be negative, or a left shift may
// leave int64.
func shiftRange(op dsl.Op, p, q interval) (interval, bool) {
	if q.Lo < 0 {
		return fullRange, false
	}
	r := iv(math.MaxInt64, math.MinInt64)
	for _, x := range []int64{p.Lo, p.Hi} {
		for _, n := range []int64{q.Lo, q.Hi} {
			v, err := dsl.Shift(op, x, n)
			if err != nil {
				return fullRange, false
			}
			r = iv(min(r.Lo, v), max(r.Hi, v))
		}
	}
	return r, true
}

// floorDiv64 is Python's a // c for c != 0 (no overflow for c != -1).
func floorDiv64(a, c int64) int64 {
	d := a / c
	if a%c != 0 && (a < 0) != (c < 0) {
		d--
	}
	return d
}

// magnitude is max |v| over r, or false when it overflows int64.
func magnitude(r interval) (int64, bool) {
	if r.Lo == math.MinInt64 {
		return 0, false
	}
	return max(-r.Lo, r.Lo, -r.Hi, r.Hi), true // lo > MinInt64, so hi > MinInt64 too
}

// floorDivRange bounds Python a // d.
func floorDivRange(a, d interval) interval {
	if d.Lo == d.Hi && d.Lo != 0 && d.Lo != -1 {
		x, y := floorDiv64(a.Lo, d.Lo), floorDiv64(a.Hi, d.Lo)
		return iv(min(x, y), max(x, y))
	}
	// |a // d| <= |a| for every int d (a // 0 is 0 in a kernel).
	m, ok := magnitude(a)
	if !ok {
		return fullRange
	}
	return iv(-m, m)
}

// floorModRange bounds Python a % d: the result has d's sign and |r| < |d|
// (a % 0 is 0 in a kernel).
func floorModRange(a, d interval) interval {
	if d.Lo > 0 {
		if a.Lo >= 0 && a.Hi < d.Lo {
			return a
		}
		return iv(0, d.Hi-1)
	}
	if d.Hi < 0 {
		if d.Lo == math.MinInt64 {
			return fullRange
		}
		return iv(d.Lo+1, 0)
	}
	m, ok := magnitude(d)
	if !ok {
		return fullRange
	}
	return iv(-max(m-1, 0), max(m-1, 0))
}

// varRange is the range of an index variable or size symbol under the
// launch preconditions.
func varRange(v dsl.Var) interval {
	switch v {
	case dsl.VarB, dsl.VarH:
		return iv(0, MaxHeadsOrBatch-1)
	case dsl.VarQ, dsl.VarKV:
		return iv(0, MaxSeqLen-1)
	case dsl.SizeB, dsl.SizeH, dsl.SizeHKV:
		return iv(1, MaxHeadsOrBatch)
	case dsl.SizeQ, dsl.SizeKV:
		return iv(0, MaxSeqLen)
	}
	return fullRange
}

// rangeAnalysis bounds the int and bool nodes of one lowered expression.
type rangeAnalysis struct {
	l       *dsl.Lowered
	buffers map[string]*BufferABI
	memo    map[dsl.Expr]interval
}

func newRangeAnalysis(l *dsl.Lowered, buffers map[string]*BufferABI) *rangeAnalysis {
	return &rangeAnalysis{l: l, buffers: buffers, memo: map[dsl.Expr]interval{}}
}

// of returns the range of e's value; bools are 0 or 1, floats unknown.
func (a *rangeAnalysis) of(e dsl.Expr) interval {
	if r, ok := a.memo[e]; ok {
		return r
	}
	r := a.compute(e)
	switch a.l.TypeOf(e) {
	case dsl.TypeBool:
		r = boolRange
	case dsl.TypeInt:
	default:
		r = fullRange
	}
	a.memo[e] = r
	return r
}

func (a *rangeAnalysis) compute(e dsl.Expr) interval {
	switch x := e.(type) {
	case *dsl.VarRef:
		return varRange(x.Var)
	case *dsl.IntLit:
		return point(x.Value)
	case *dsl.BoolLit:
		return boolRange
	case *dsl.ParenExpr:
		return a.of(x.X)
	case *dsl.UnaryExpr:
		v := a.of(x.X)
		switch x.Op {
		case dsl.OpNeg:
			return neg(v)
		case dsl.OpPos:
			return v
		case dsl.OpInvert: // ~v == -v - 1
			return addRange(neg(v), point(-1))
		}
	case *dsl.BinaryExpr:
		p, q := a.of(x.X), a.of(x.Y)
		switch x.Op {
		case dsl.OpAdd:
			return addRange(p, q)
		case dsl.OpSub:
			return addRange(p, neg(q))
		case dsl.OpMul:
			return mulRange(p, q)
		case dsl.OpFloorDiv:
			return floorDivRange(p, q)
		case dsl.OpMod:
			return floorModRange(p, q)
		case dsl.OpPow:
			lo, hi, ok := a.powExponent(x.Y)
			if !ok || hi > 64 {
				return fullRange
			}
			// The hull of p**k over the exponents k in [lo, hi].
			r, out := point(1), interval{}
			for k := int64(0); k <= hi; k++ {
				if k >= lo {
					if k == lo {
						out = r
					} else {
						out = hull(out, r)
					}
				}
				r = mulRange(r, p)
			}
			return out
		case dsl.OpAnd, dsl.OpOr: // Python's and/or yield one of the operands
			return hull(p, q)
		case dsl.OpBitAnd, dsl.OpBitOr, dsl.OpBitXor:
			if p.Lo >= 0 && q.Lo >= 0 {
				if x.Op == dsl.OpBitAnd {
					return iv(0, min(p.Hi, q.Hi))
				}
				return iv(0, int64(1)<<bits.Len64(uint64(max(p.Hi, q.Hi)))-1)
			}
			if p.Fits32() && q.Fits32() {
				return int32Range
			}
		case dsl.OpShl, dsl.OpShr:
			if r, ok := shiftRange(x.Op, p, q); ok {
				return r
			}
		}
	case *dsl.CondExpr:
		return hull(a.of(x.Then), a.of(x.Else))
	case *dsl.CallExpr:
		return a.call(x)
	case *dsl.IndexExpr:
		if id, ok := x.X.(*dsl.Ident); ok && a.buffers[id.Name] != nil {
			if lo, hi, ok := buftype.IntRange(a.buffers[id.Name].DType); ok {
				return iv(lo, hi)
			}
		}
	}
	return fullRange
}

func (a *rangeAnalysis) call(x *dsl.CallExpr) interval {
	id, ok := x.Fun.(*dsl.Ident)
	if !ok {
		return fullRange
	}
	args := make([]interval, len(x.Args))
	for i, e := range x.Args {
		args[i] = a.of(e)
	}
	switch id.Name {
	case "where":
		if len(args) == 3 {
			return hull(args[1], args[2])
		}
	case "min", "max", "clamp":
		if len(args) < 2 {
			break
		}
		lo, hi := args[0], args[1]
		if id.Name == "min" {
			return iv(min(lo.Lo, hi.Lo), min(lo.Hi, hi.Hi))
		}
		r := iv(max(lo.Lo, hi.Lo), max(lo.Hi, hi.Hi))
		if id.Name == "clamp" && len(args) == 3 {
			r = iv(min(r.Lo, args[2].Lo), min(r.Hi, args[2].Hi))
		}
		return r
	case "abs":
		if len(args) == 1 {
			v := args[0]
			switch {
			case v.Lo >= 0:
				return v
			case v.Hi <= 0:
				return neg(v)
			}
			m, ok := magnitude(v)
			if ok {
				return iv(0, m)
			}
		}
	case "floor", "ceil":
		if len(args) == 1 && a.l.TypeOf(x.Args[0]) == dsl.TypeInt {
			return args[0]
		}
	case "int":
		// Of a bool (0 or 1) or an int, the value itself; of a float,
		// anything (maskc_py_int saturates at the int64 bounds).
		if len(args) == 1 && a.l.TypeOf(x.Args[0]) != dsl.TypeFloat {
			return args[0]
		}
		// Of a float, its range truncated and saturated as maskc_py_int
		// does, widened for rounding (the kernel computes in fp32 where
		// floatRange assumes exact arithmetic), with 0 for NaN.
		if len(args) == 1 {
			lo, hi := a.floatRange(x.Args[0])
			return iv(min(saturateInt(math.Floor(lo-1e-3*math.Abs(lo)-2)), 0), max(saturateInt(math.Ceil(hi+1e-3*math.Abs(hi)+2)), 0))
		}
	}
	return fullRange
}

// saturateInt converts f to int64 as maskc_py_int does beyond the int64
// bounds: saturating.
func saturateInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// floatRange bounds a float expression for int(): literals, ints converted
// to float, + - * /, log, exp, abs, min, max and clamp; (-inf, +inf) where
// it cannot (the score, float buffers, a divisor that may be 0, ...).
func (a *rangeAnalysis) floatRange(e dsl.Expr) (lo, hi float64) {
	return floatRangeOf(a.l, e, func(e dsl.Expr) (float64, float64) {
		r := a.of(e)
		return float64(r.Lo), float64(r.Hi)
	})
}

// floatRangeOf is floatRange with the bounds of int and bool operands
// given by ints (the size-symbolic read analysis, readbounds.go, passes its
// own, refined by enclosing conditions).
func floatRangeOf(l *dsl.Lowered, e dsl.Expr, ints func(dsl.Expr) (float64, float64)) (lo, hi float64) {
	unknown := func() (float64, float64) { return math.Inf(-1), math.Inf(1) }
	if l.TypeOf(e) == dsl.TypeInt || l.TypeOf(e) == dsl.TypeBool {
		return ints(e)
	}
	ext := func(vs ...float64) (float64, float64) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range vs {
			if math.IsNaN(v) {
				return unknown()
			}
			lo, hi = min(lo, v), max(hi, v)
		}
		return lo, hi
	}
	switch x := e.(type) {
	case *dsl.FloatLit:
		return x.Value, x.Value
	case *dsl.IntLit:
		return float64(x.Value), float64(x.Value)
	case *dsl.ParenExpr:
		return floatRangeOf(l, x.X, ints)
	case *dsl.UnaryExpr:
		l, h := floatRangeOf(l, x.X, ints)
		switch x.Op {
		case dsl.OpNeg:
			return -h, -l
		case dsl.OpPos:
			return l, h
		}
	case *dsl.BinaryExpr:
		pl, ph := floatRangeOf(l, x.X, ints)
		ql, qh := floatRangeOf(l, x.Y, ints)
		switch x.Op {
		case dsl.OpAdd:
			return ext(pl+ql, ph+qh)
		case dsl.OpSub:
			return ext(pl-qh, ph-ql)
		case dsl.OpMul:
			return ext(pl*ql, pl*qh, ph*ql, ph*qh)
		case dsl.OpDiv:
			if ql > 0 || qh < 0 {
				return ext(pl/ql, pl/qh, ph/ql, ph/qh)
			}
		}
	case *dsl.CallExpr:
		id, ok := x.Fun.(*dsl.Ident)
		if !ok {
			break
		}
		var ls, hs []float64
		for _, arg := range x.Args {
			l, h := floatRangeOf(l, arg, ints)
			ls, hs = append(ls, l), append(hs, h)
		}
		switch {
		case id.Name == "float" && len(ls) == 1:
			return ls[0], hs[0]
		case id.Name == "log" && len(ls) == 1 && ls[0] >= 0:
			return math.Log(ls[0]), math.Log(hs[0]) // log(0) = -inf
		case id.Name == "exp" && len(ls) == 1:
			return math.Exp(ls[0]), math.Exp(hs[0])
		case id.Name == "abs" && len(ls) == 1:
			if ls[0] >= 0 {
				return ls[0], hs[0]
			}
			return 0, max(-ls[0], hs[0])
		case (id.Name == "min" || id.Name == "max") && len(ls) == 2:
			if id.Name == "min" {
				return min(ls[0], ls[1]), min(hs[0], hs[1])
			}
			return max(ls[0], ls[1]), max(hs[0], hs[1])
		case id.Name == "clamp" && len(ls) == 3:
			return min(max(ls[0], ls[1]), hs[2]), min(max(hs[0], hs[1]), hs[2])
		}
	}
	return unknown()
}

// overflows reports whether the int operation at e can leave int64 for
// some values its operands may take (an unknown operand, such as an i64
// buffer value, may take any): C's signed overflow is undefined behaviour
// where Python's ints are exact, so such an operation is refused (E311)
// rather than generated.
func (a *rangeAnalysis) overflows(e dsl.Expr) bool {
	if a.l.TypeOf(e) != dsl.TypeInt {
		return false
	}
	switch x := e.(type) {
	case *dsl.UnaryExpr:
		return x.Op == dsl.OpNeg && a.of(x.X).Lo == math.MinInt64
	case *dsl.BinaryExpr:
		p, q := a.of(x.X), a.of(x.Y)
		switch x.Op {
		case dsl.OpAdd:
			_, ok1 := add64(p.Lo, q.Lo)
			_, ok2 := add64(p.Hi, q.Hi)
			return !ok1 || !ok2
		case dsl.OpSub:
			if q.Lo == math.MinInt64 {
				return true
			}
			_, ok1 := add64(p.Lo, -q.Hi)
			_, ok2 := add64(p.Hi, -q.Lo)
			return !ok1 || !ok2
		case dsl.OpMul:
			for _, x := range []int64{p.Lo, p.Hi} {
				for _, y := range []int64{q.Lo, q.Hi} {
					if _, ok := mul64(x, y); !ok {
						return true
					}
				}
			}
		case dsl.OpFloorDiv: // MinInt64 // -1
			return p.Lo == math.MinInt64 && q.Lo <= -1 && q.Hi >= -1
		case dsl.OpShl: // a negative count is refused apart (funcWriter.shift)
			_, ok := shiftRange(x.Op, p, iv(max(q.Lo, 0), max(q.Hi, 0)))
			return !ok
		case dsl.OpPow:
			_, hi, ok := a.powExponent(x.Y)
			if !ok {
				return false // not an int power the generator writes (E306)
			}
			if p.Lo >= -1 && p.Hi <= 1 {
				return false
			}
			if hi > 63 {
				return true
			}
			r := point(1)
			for i := int64(0); i < hi; i++ {
				for _, x := range []int64{r.Lo, r.Hi} {
					for _, y := range []int64{p.Lo, p.Hi} {
						if _, ok := mul64(x, y); !ok {
							return true
						}
					}
				}
				r = mulRange(r, p)
			}
		}
	case *dsl.CallExpr:
		if id, ok := x.Fun.(*dsl.Ident); ok && id.Name == "abs" && len(x.Args) == 1 {
			return a.of(x.Args[0]).Lo == math.MinInt64
		}
	}
	return false
}

// narrow reports whether the int node e can be computed in C int: its value
// and every int operand it combines lie in int32. A buffer read's indices
// are not combined into its value, so only the value's range counts there.
func (a *rangeAnalysis) narrow(e dsl.Expr) bool {
	if a.l.TypeOf(e) != dsl.TypeInt || !a.of(e).Fits32() {
		return false
	}
	var ops []dsl.Expr
	switch x := e.(type) {
	case *dsl.UnaryExpr:
		ops = []dsl.Expr{x.X}
	case *dsl.BinaryExpr:
		if x.Op == dsl.OpPow {
			return true // computed in 64 bits by maskc_py_ipow, then narrowed exactly
		}
		ops = []dsl.Expr{x.X, x.Y}
	case *dsl.CondExpr:
		ops = []dsl.Expr{x.Then, x.Else}
	case *dsl.CallExpr:
		ops = x.Args
		if id, ok := x.Fun.(*dsl.Ident); ok && id.Name == "where" && len(x.Args) == 3 {
			ops = x.Args[1:]
		}
	case *dsl.ParenExpr:
		ops = []dsl.Expr{x.X}
	}
	for _, o := range ops {
		if a.l.TypeOf(o) == dsl.TypeInt && !a.of(o).Fits32() {
			return false
		}
		if t := a.l.TypeOf(o); t != dsl.TypeInt && t != dsl.TypeBool {
			return false
		}
	}
	return true
}

// positivePow2 returns k when c == 2^k > 0.
func positivePow2(c int64) (uint, bool) {
	if c <= 0 || c&(c-1) != 0 {
		return 0, false
	}
	return uint(bits.TrailingZeros64(uint64(c))), true
}

// alwaysKept reports whether the lowered mask l is true for every index
// the launch preconditions allow: its normal form is True (package normal,
// as classify decides a full mask: `q < Q`, `q >= 0 and kv >= 0`), or the
// interval analysis proves it from the preconditions' bounds (`q <
// 2147483391`, below MaxSeqLen). Such a mask is compiled as no mask at
// all: same result, and the kernel takes its unmasked path. Masks that
// read buffers are not folded, so the kernel's buffer table stays the one
// the mask declares.
func alwaysKept(l *dsl.Lowered, bufs []BufferABI, opts Options) bool {
	if l == nil || l.Expr == nil || l.Kind != dsl.MaskMod || len(l.Buffers) > 0 {
		return false // a mask that reads buffers keeps them in the kernel's ABI
	}
	byName := map[string]*BufferABI{}
	for i := range bufs {
		byName[bufs[i].Name] = &bufs[i]
	}
	return opts.canon(l).IsTrue() || newRangeAnalysis(l, byName).provedTrue(l.Expr)
}

// provedTrue reports whether the bool expression e is true for every value
// in its operands' ranges (false means "not proved").
func (a *rangeAnalysis) provedTrue(e dsl.Expr) bool {
	switch x := e.(type) {
	case *dsl.BoolLit:
		return x.Value
	case *dsl.ParenExpr:
		return a.provedTrue(x.X)
	case *dsl.BinaryExpr:
		switch x.Op {
		case dsl.OpAnd, dsl.OpBitAnd:
			return a.provedTrue(x.X) && a.provedTrue(x.Y)
		case dsl.OpOr, dsl.OpBitOr:
			return a.provedTrue(x.X) || a.provedTrue(x.Y)
		}
	case *dsl.CompareExpr:
		if len(x.Operands) != 2 || len(x.Ops) != 1 {
			return false
		}
		for _, o := range x.Operands {
			if t := a.l.TypeOf(o); t != dsl.TypeInt && t != dsl.TypeBool {
				return false
			}
		}
		p, q := a.of(x.Operands[0]), a.of(x.Operands[1])
		switch x.Ops[0] {
		case dsl.OpGE:
			return p.Lo >= q.Hi
		case dsl.OpGT:
			return p.Lo > q.Hi
		case dsl.OpLE:
			return p.Hi <= q.Lo
		case dsl.OpLT:
			return p.Hi < q.Lo
		case dsl.OpNE:
			return p.Hi < q.Lo || q.Hi < p.Lo
		case dsl.OpEQ:
			return p.Lo == p.Hi && q.Lo == q.Hi && p.Lo == q.Lo
		}
	}
	return false
}

// powExponent is the range [lo, hi] of an int power's exponent y when the
// generator writes the power (maskc_py_ipow): a constant, or an int
// expression whose range lies in [0, dsl.MaxIntPowExponent], such as
// kv % 3 (issue 31: refused although kv % 3 >= 0).
func (a *rangeAnalysis) powExponent(y dsl.Expr) (lo, hi int64, ok bool) {
	if n, isLit := dsl.Unparen(y).(*dsl.IntLit); isLit {
		return n.Value, n.Value, n.Value >= 0 && n.Value <= dsl.MaxIntPowExponent
	}
	r := a.of(y)
	return r.Lo, r.Hi, r.Lo >= 0 && r.Hi <= dsl.MaxIntPowExponent
}
