package dsl

import "math"

// Interval is the closed range [Lo, Hi] of the values an int64 quantity can
// take; Lo = math.MinInt64 leaves it unbounded below and Hi = math.MaxInt64
// unbounded above. It is the one interval type of maskc's analyses: the
// code generator's int ranges (which int arithmetic fits in 32 bits, which
// may overflow), the normal form's ranges of linear forms (which bounds are
// implied or impossible) and the evaluator's buffer element ranges.
type Interval struct{ Lo, Hi int64 }

// Unbounded is the interval of every int64: nothing is known.
var Unbounded = Interval{Lo: math.MinInt64, Hi: math.MaxInt64}

// Point is the interval holding v alone.
func Point(v int64) Interval { return Interval{Lo: v, Hi: v} }

// AtLeast is [lo, +inf).
func AtLeast(lo int64) Interval { return Interval{Lo: lo, Hi: math.MaxInt64} }

// AtMost is (-inf, hi].
func AtMost(hi int64) Interval { return Interval{Lo: math.MinInt64, Hi: hi} }

// HasLo reports whether r is bounded below.
func (r Interval) HasLo() bool { return r.Lo != math.MinInt64 }

// HasHi reports whether r is bounded above.
func (r Interval) HasHi() bool { return r.Hi != math.MaxInt64 }

// Hull is the smallest interval holding r and o.
func (r Interval) Hull(o Interval) Interval {
	return Interval{Lo: min(r.Lo, o.Lo), Hi: max(r.Hi, o.Hi)}
}

// Meet is the intersection of r and o (empty when Lo > Hi).
func (r Interval) Meet(o Interval) Interval {
	return Interval{Lo: max(r.Lo, o.Lo), Hi: min(r.Hi, o.Hi)}
}

// Fits32 reports whether every value of r is an int32.
func (r Interval) Fits32() bool { return r.Lo >= math.MinInt32 && r.Hi <= math.MaxInt32 }

// AddScaled is r + k*v for v in o, side by side: a side of the result is
// unbounded where a side it comes from is, or where it leaves int64.
func (r Interval) AddScaled(k int64, o Interval) Interval {
	if k == 0 {
		return r
	}
	if k < 0 {
		if k == math.MinInt64 {
			return Unbounded
		}
		k, o = -k, o.neg()
	}
	side := func(a int64, hasA bool, b int64, hasB bool) (int64, bool) {
		if !hasA || !hasB {
			return 0, false
		}
		p, ok := MulInt64(k, b)
		if !ok {
			return 0, false
		}
		return AddInt64(a, p)
	}
	out := Unbounded
	if lo, ok := side(r.Lo, r.HasLo(), o.Lo, o.HasLo()); ok && lo != math.MinInt64 {
		out.Lo = lo
	}
	if hi, ok := side(r.Hi, r.HasHi(), o.Hi, o.HasHi()); ok && hi != math.MaxInt64 {
		out.Hi = hi
	}
	return out
}

// neg is {-v : v in r}, an unbounded side becoming the other unbounded
// side.
func (r Interval) neg() Interval {
	out := Unbounded
	if r.HasHi() {
		out.Lo = -r.Hi // Hi < MaxInt64, so -Hi > MinInt64
	}
	if r.HasLo() {
		out.Hi = -r.Lo // MaxInt64 (unbounded) for MinInt64 + 1
	}
	return out
}
