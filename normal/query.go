package normal

import (
	"slices"

	"github.com/maskc/maskc/dsl"
)

// This file is the query side of a Form for code generators: what one
// disjunct says about one index variable (kv for the forward's row walk,
// q for the backward's column walk) once the others are fixed.

// Side is one side of a disjunct's interval on an index variable v, at a
// fixed point of the other variables:
//
//	lower side: v >= Mul*ceil(Num/Den) + Off
//	upper side: v <= Mul*floor(Num/Den) + Off
//
// Num reads neither v nor an extra variable that reads v. A bound on v
// itself has Mul 1 and Off 0; a bound on a block index (v + k) // d has
// Mul d (block-diagonal and block-causal masks: `q // 64 == kv // 64`
// keeps kv in [64*(q // 64), 64*(q // 64) + 63]).
type Side struct {
	// Num is the numerator, linear over the other variables and extras.
	Num Linear
	// Den is the positive denominator.
	Den int64
	// Mul is the positive block size (1 for a bound on v itself).
	Mul int64
	// Off is the constant added last.
	Off int64
}

// Eval is the side's value at p with extra variables x; upper selects
// floor (an upper side) over ceil (a lower one).
func (s Side) Eval(p Point, x []int64, upper bool) int64 {
	n := Value(s.Num, p, x)
	r := floorDiv(n, s.Den)
	if !upper && r*s.Den != n {
		r++
	}
	return s.Mul*r + s.Off
}

// Interval is what one disjunct bounds an index variable v to when the
// other variables are fixed.
type Interval struct {
	// Lo and Hi are the sides: v >= every Lo side and v <= every Hi side.
	// No Lo (Hi) side means the bounds leave v unbounded below (above).
	Lo, Hi []Side
	// Rest are the term's bounds that read neither v nor an extra reading
	// v: conditions on the other variables alone.
	Rest []Bound
	// Loose are the term's bounds that read v but are not sides (a
	// remainder such as (q - kv) % 2 == 0, a quotient of a sum).
	Loose []Bound
	// Exact is set when Loose is empty: the term's bounds that read v then
	// hold exactly when v lies in [max Lo, min Hi]. Atoms (segments,
	// opaque conditions) are not part of the claim either way.
	Exact bool
}

// Interval returns what term t of f bounds index variable v (dsl.VarQ or
// dsl.VarKV) to at a fixed point of the other variables. Every point the
// term keeps has v within [max Lo, min Hi]; with Exact, a point whose Rest
// bounds hold and whose v lies in that interval satisfies every bound of
// the term.
func (f *Form) Interval(t *Term, v dsl.Var) Interval {
	reads := make([]bool, len(f.Extras))
	for i, e := range f.Extras {
		for _, w := range e.Vars {
			if w == v {
				reads[i] = true
			}
		}
	}
	var iv Interval
	for _, b := range t.Bounds {
		var extraAt []int
		for i, k := range b.Dir.X {
			if k != 0 && reads[i] {
				extraAt = append(extraAt, i)
			}
		}
		switch c := b.Dir.Coef[v]; {
		case c == 0 && len(extraAt) == 0:
			iv.Rest = append(iv.Rest, b)
		case c != 0 && len(extraAt) == 0:
			rest := b.Dir
			rest.Coef[v] = 0
			if !iv.sides(b, rest, c, 1, 0, 0) {
				iv.Loose = append(iv.Loose, b)
			}
		case c == 0 && len(extraAt) == 1 && f.blockOf(extraAt[0], v):
			i := extraAt[0]
			e := f.Extras[i]
			rest := b.Dir
			rest.X[i] = 0
			// x = (v + k) // d: x >= L iff v >= d*L - k, x <= U iff
			// v <= d*U + d - 1 - k.
			if !iv.sides(b, rest, b.Dir.X[i], e.Den, -e.Num.K, e.Den-1-e.Num.K) {
				iv.Loose = append(iv.Loose, b)
			}
		default:
			iv.Loose = append(iv.Loose, b)
		}
	}
	iv.Exact = len(iv.Loose) == 0
	return iv
}

// blockOf reports whether extra i is (v + k) // d.
func (f *Form) blockOf(i int, v dsl.Var) bool {
	e := f.Extras[i]
	if e.Kind != ExtraDiv || e.Num.UsesExtras() {
		return false
	}
	for w, k := range e.Num.Coef {
		if want := int64(0); dsl.Var(w) == v && k != 1 || dsl.Var(w) != v && k != want {
			return false
		}
	}
	return true
}

// sides turns lo <= c*y + rest <= hi (y being v, or v's block index with
// block size mul and offsets offLo, offHi) into sides on v; false on
// overflow.
func (iv *Interval) sides(b Bound, rest Linear, c, mul, offLo, offHi int64) bool {
	if c == -1<<63 {
		return false
	}
	var lo, hi []Side
	// add records c*y >= n (ge) or c*y <= n as a side on v.
	add := func(n Linear, ge bool) bool {
		den := c
		if c < 0 {
			var ok bool
			if n, ok = n.scale(-1); !ok {
				return false
			}
			den, ge = -c, !ge
		}
		if ge {
			lo = append(lo, Side{Num: n, Den: den, Mul: mul, Off: offLo})
		} else {
			hi = append(hi, Side{Num: n, Den: den, Mul: mul, Off: offHi})
		}
		return true
	}
	for _, side := range []struct {
		has bool
		at  int64
		ge  bool
	}{{b.HasLo, b.Lo, true}, {b.HasHi, b.Hi, false}} {
		if !side.has {
			continue
		}
		n, ok := Const(side.at).sub(rest) // c*y against at - rest
		if !ok || !add(n, side.ge) {
			return false
		}
	}
	iv.Lo = append(iv.Lo, lo...)
	iv.Hi = append(iv.Hi, hi...)
	return true
}

// Monotone returns how l moves as index variable v grows with the other
// variables fixed: 1 (never falls), -1 (never rises) or 0 (constant);
// false when it may do both (a remainder such as q - 2*(q // 2), a
// quotient of a difference against its dividend). A floor quotient whose
// dividend is monotone in v is monotone in v the same way; a symbol reads
// neither q nor kv, so for those it is constant. A bound on a monotone
// form holds over a box of q and kv when it holds at the box's corners.
func (f *Form) Monotone(l Linear, v dsl.Var) (int, bool) {
	up, down := false, false
	note := func(c int64, s int) {
		switch {
		case c == 0 || s == 0:
		case (c > 0) == (s > 0):
			up = true
		default:
			down = true
		}
	}
	note(l.Coef[v], 1)
	for i, c := range l.X {
		if c == 0 {
			continue
		}
		if i >= len(f.Extras) {
			return 0, false
		}
		e := f.Extras[i]
		if e.Kind != ExtraDiv {
			if slices.Contains(e.Vars, v) {
				return 0, false
			}
			continue
		}
		s, ok := f.Monotone(e.Num, v)
		if !ok {
			return 0, false
		}
		note(c, s)
	}
	switch {
	case up && down:
		return 0, false
	case up:
		return 1, true
	case down:
		return -1, true
	}
	return 0, true
}
