package codegen

import (
	"fmt"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/normal"
)

// This file makes the walks exact for relations spelled with floor
// division and modulo, by rewriting a term's bounds into equivalent ones
// the walks read (normal.Form.Interval: sides on q or kv, or on one block
// index (v + k) // C):
//
//   - a quotient the term pins to a constant is that constant: BD3-LM's
//     `kv // N == 1 and (kv % N) // BLOCK < q // BLOCK` has kv in [N, 2N),
//     so kv // N is 1 and (kv - N * (kv // N)) // BLOCK is (kv - N) //
//     BLOCK, a block index of kv;
//   - in a term holding q // C == kv // C, a bound that reads q or kv
//     themselves and kv // C (a remainder: `q % C >= kv % C` is q - C*(q
//     // C) >= kv - C*(kv // C)) means the same with kv // C replaced by q
//     // C, where the quotients cancel: chunk-causal `q // C == kv // C and
//     q % C >= kv % C` walks kv <= q inside the chunk.

//   - a quotient of a remainder by a divisor of its period is a remainder
//     of a quotient: (X % P) // B is (X // B) % (P / B) where B divides P;
//   - an equality of two remainders by one divisor, `a % k == b % k` (or
//     their difference a constant w), implies (a - b) % k == w mod k, a
//     remainder of one dividend, which the tile filter tests (period.go):
//     `kv <= q and (q // 192) % 3 == (kv // 192) % 3` visits only the key
//     blocks of its query block's residue. The equality stays (the mask
//     evaluates it per element); the derived condition only filters tiles.

// rewriteTerm applies the rewrites to t (pinned quotients first); t
// itself when nothing changes. New quotients are added to f (the plan's
// own copy of the form). implied are the remainder conditions that
// equalRemainders derives, for the tile filter.
func rewriteTerm(f *normal.Form, t *normal.Term) (rt *normal.Term, implied []periodStep) {
	rt = remainderQuotients(f, sameQuotients(f, pinQuotients(f, t)))
	return rt, equalRemainders(f, rt)
}

// remainderQuotients returns t with each quotient of a remainder by a
// divisor of its period, (X % P) // B with B | P, replaced by the remainder
// of the quotient it equals, (X // B) % (P / B) (X = P a + r: X // B = (P /
// B) a + r // B), which equalRemainders then reads: `(q % 512) // 64 ==
// (kv % 512) // 64` is `(q // 64) % 8 == (kv // 64) % 8`. t itself when
// there is none.
func remainderQuotients(f *normal.Form, t *normal.Term) *normal.Term {
	subst := func(l normal.Linear) (normal.Linear, bool) {
		changed := false
		for i, c := range l.X {
			if c == 0 {
				continue
			}
			x, b, p, ok := remainderQuotient(f, i)
			if !ok {
				continue
			}
			m := p / b
			qb, ok1 := f.AddDiv(x, b)
			if !ok1 {
				return l, false
			}
			qm, ok2 := f.AddDiv(unitExtra(qb), m)
			if !ok2 || !small(c*m) {
				return l, false
			}
			l.X[i] = 0
			l.X[qb] += c
			l.X[qm] -= c * m
			changed = true
		}
		return l, changed
	}
	return rebuild(f, t, func(b normal.Bound) (normal.Linear, bool) { return subst(b.Dir) })
}

// remainderQuotient reads f's extra i as (X - P * (X // P)) // B with B
// dividing P (B < P), and returns X, B and P.
func remainderQuotient(f *normal.Form, i int) (x normal.Linear, b, p int64, ok bool) {
	e := extraAt(f, i)
	if e == nil || e.Kind != normal.ExtraDiv || e.Num.K != 0 {
		return normal.Linear{}, 0, 0, false
	}
	for j, c := range e.Num.X {
		ej := extraAt(f, j)
		if c == 0 || ej == nil || ej.Kind != normal.ExtraDiv || c != -ej.Den || ej.Den <= e.Den || ej.Den%e.Den != 0 {
			continue
		}
		rest := e.Num
		rest.X[j] = 0
		if rest == ej.Num {
			return ej.Num, e.Den, ej.Den, true
		}
	}
	return normal.Linear{}, 0, 0, false
}

// equalRemainders returns, for each bound `rem(A) - rem(B) == v` of t
// (rem(X) = X - k * (X // k), in either sign), the remainder condition
// `(A - B) % k == (±v) mod k` it implies, as a step of the tile filter (no
// extra variable is needed for it); the step covers the bound when v is 0
// (the two are then equivalent).
func equalRemainders(f *normal.Form, t *normal.Term) []periodStep {
	var out []periodStep
	for _, b := range t.Bounds {
		if !b.HasLo || !b.HasHi || b.Lo != b.Hi {
			continue
		}
		a, bb, k, s, ok := remainderDifference(f, b.Dir)
		if !ok {
			continue
		}
		num, ok := linearSum(a, 1, bb, -1)
		if !ok || num.IsConst() || !small(k) || !safeLinear(f, num) || !periodDividend(f, num) {
			continue
		}
		r := s * b.Lo
		r -= k * floorDiv(r, k)
		text := num.Format(func(i int) string { return f.Extras[i].Text })
		st := newPeriodStep(f, num, k, r, r, fmt.Sprintf("(%s) %% %d == %d", text, k, r))
		if b.Lo == 0 {
			st.covers = b.String()
		}
		out = append(out, st)
	}
	return out
}

// remainderDifference reads d as s * (rem(A) - rem(B)) for floor
// quotients xA = A // k and xB = B // k of f (s = ±1): rem(X) = X - k*xX.
func remainderDifference(f *normal.Form, d normal.Linear) (a, b normal.Linear, k, s int64, ok bool) {
	for i, ci := range d.X {
		ei := extraAt(f, i)
		if ci == 0 || ei == nil || ei.Kind != normal.ExtraDiv || (ci != -ei.Den && ci != ei.Den) {
			continue
		}
		for j, cj := range d.X {
			ej := extraAt(f, j)
			if j == i || cj != -ci || ej == nil || ej.Kind != normal.ExtraDiv || ej.Den != ei.Den {
				continue
			}
			s = -ci / ei.Den // d holds -s*k*xA
			ra, ok1 := linearSum(ei.Num, 1, unitExtra(i), -ei.Den)
			rb, ok2 := linearSum(ej.Num, 1, unitExtra(j), -ej.Den)
			if !ok1 || !ok2 {
				continue
			}
			want, ok3 := linearSum(ra, s, rb, -s)
			if ok3 && want == d {
				return ei.Num, ej.Num, ei.Den, s, true
			}
		}
	}
	return normal.Linear{}, normal.Linear{}, 0, 0, false
}

// extraAt is f's extra variable i, nil past them.
func extraAt(f *normal.Form, i int) *normal.Extra {
	if i >= len(f.Extras) {
		return nil
	}
	return f.Extras[i]
}

// unitExtra is the linear form x_i.
func unitExtra(i int) normal.Linear {
	var l normal.Linear
	l.X[i] = 1
	return l
}

// linearSum is ca*a + cb*b; ok is false when a coefficient leaves the
// plan's small range.
func linearSum(a normal.Linear, ca int64, b normal.Linear, cb int64) (normal.Linear, bool) {
	var out normal.Linear
	ok := true
	mix := func(x, y int64) int64 {
		v := ca*x + cb*y
		ok = ok && small(x) && small(y) && small(v)
		return v
	}
	for i := range out.Coef {
		out.Coef[i] = mix(a.Coef[i], b.Coef[i])
	}
	for i := range out.X {
		out.X[i] = mix(a.X[i], b.X[i])
	}
	out.K = mix(a.K, b.K)
	return out, ok
}

// pinQuotients replaces each extra (v + k) // C (v q or kv) whose value
// the term's bounds on v alone fix, and rebuilds the quotients whose
// dividends read it.
func pinQuotients(f *normal.Form, t *normal.Term) *normal.Term {
	const unknown = int64(1) << 62
	lo := [normal.NumVars]int64{}
	hi := [normal.NumVars]int64{}
	for _, v := range []dsl.Var{dsl.VarQ, dsl.VarKV} {
		lo[v], hi[v] = 0, unknown // indices are never negative
		for _, b := range t.Bounds {
			if b.Dir != normal.Var(v) {
				continue
			}
			if b.HasLo {
				lo[v] = max(lo[v], b.Lo)
			}
			if b.HasHi {
				hi[v] = min(hi[v], b.Hi)
			}
		}
	}
	pinned := map[int]int64{}
	for i, e := range f.Extras {
		if e.Kind != normal.ExtraDiv || e.Num.UsesExtras() {
			continue
		}
		for _, v := range []dsl.Var{dsl.VarQ, dsl.VarKV} {
			n := e.Num
			n.K = 0
			if n != normal.Var(v) || hi[v] >= unknown || lo[v] > hi[v] || !small(e.Num.K) {
				continue
			}
			if a := floorDiv(lo[v]+e.Num.K, e.Den); a == floorDiv(hi[v]+e.Num.K, e.Den) {
				pinned[i] = a
			}
		}
	}
	for _, b := range t.Bounds { // x == c
		if i, ok := singleExtra(b.Dir); ok && b.HasLo && b.HasHi && b.Lo == b.Hi && f.Extras[i].Kind == normal.ExtraDiv {
			pinned[i] = b.Lo
		}
	}
	if len(pinned) == 0 {
		return t
	}
	// subst rewrites l with the pinned extras as constants and the
	// quotients reading them rebuilt; ok is false where a new quotient
	// finds no free slot.
	var subst func(l normal.Linear) (normal.Linear, bool)
	subst = func(l normal.Linear) (normal.Linear, bool) {
		for i, c := range l.X {
			if c == 0 {
				continue
			}
			if v, ok := pinned[i]; ok {
				l.K += c * v
				l.X[i] = 0
				continue
			}
			e := f.Extras[i]
			if e.Kind != normal.ExtraDiv || !e.Num.UsesExtras() {
				continue
			}
			num, ok := subst(e.Num)
			if !ok {
				return l, false
			}
			if num == e.Num {
				continue
			}
			l.X[i] = 0
			if num.IsConst() {
				l.K += c * floorDiv(num.K, e.Den)
				continue
			}
			j, ok := f.AddDiv(num, e.Den)
			if !ok {
				return l, false
			}
			l.X[j] += c
		}
		return l, true
	}
	return rebuild(f, t, func(b normal.Bound) (normal.Linear, bool) { return subst(b.Dir) })
}

// rebuild returns t with each bound whose direction dir(b) changes (ok)
// rebuilt on that direction; a bound that would become a constant is
// kept as it was (the bounds that pin a quotient among them). t itself
// when nothing changes.
func rebuild(f *normal.Form, t *normal.Term, dir func(b normal.Bound) (normal.Linear, bool)) *normal.Term {
	var out *normal.Term
	for k, b := range t.Bounds {
		d, ok := dir(b)
		if !ok || d == b.Dir || d.IsConst() {
			continue
		}
		nb, ok := f.NewBound(d, b.Lo, b.Hi, b.HasLo, b.HasHi)
		if !ok || !safeBound(nb) {
			continue
		}
		if out == nil {
			out = &normal.Term{Bounds: append([]normal.Bound(nil), t.Bounds...), Atoms: t.Atoms}
		}
		out.Bounds[k] = nb
	}
	if out == nil {
		return t
	}
	return out
}

// singleExtra reports whether l is 1·x_i alone, and i.
func singleExtra(l normal.Linear) (int, bool) {
	if l.Coef != ([normal.NumVars]int64{}) || l.K != 0 {
		return 0, false
	}
	at := -1
	for i, c := range l.X {
		switch {
		case c == 0:
		case c == 1 && at < 0:
			at = i
		default:
			return 0, false
		}
	}
	return at, at >= 0
}

// sameQuotients rewrites t's remainder bounds for each equality x_q ==
// x_kv of quotients q // C and kv // C of one divisor.
func sameQuotients(f *normal.Form, t *normal.Term) *normal.Term {
	for _, eq := range t.Bounds {
		iq, ikv, ok := quotientEquality(f, eq)
		if !ok {
			continue
		}
		t = rebuild(f, t, func(b normal.Bound) (normal.Linear, bool) {
			d := b.Dir
			if d.X[ikv] == 0 || d.Coef[dsl.VarQ] == 0 && d.Coef[dsl.VarKV] == 0 {
				return d, false
			}
			d.X[iq] += d.X[ikv]
			d.X[ikv] = 0
			return d, true
		})
	}
	return t
}

// quotientEquality matches a bound x_i - x_j == 0 (either sign) where x_i
// is q // C and x_j kv // C, and returns (i, j).
func quotientEquality(f *normal.Form, b normal.Bound) (int, int, bool) {
	if !b.HasLo || !b.HasHi || b.Lo != 0 || b.Hi != 0 || b.Dir.Coef != ([normal.NumVars]int64{}) || b.Dir.K != 0 {
		return 0, 0, false
	}
	iq, ikv := -1, -1
	for i, c := range b.Dir.X {
		if c == 0 {
			continue
		}
		if (c != 1 && c != -1) || i >= len(f.Extras) || f.Extras[i].Kind != normal.ExtraDiv {
			return 0, 0, false
		}
		switch f.Extras[i].Num {
		case normal.Var(dsl.VarQ):
			if iq >= 0 {
				return 0, 0, false
			}
			iq = i
		case normal.Var(dsl.VarKV):
			if ikv >= 0 {
				return 0, 0, false
			}
			ikv = i
		default:
			return 0, 0, false
		}
	}
	if iq < 0 || ikv < 0 || b.Dir.X[iq] != -b.Dir.X[ikv] || f.Extras[iq].Den != f.Extras[ikv].Den {
		return 0, 0, false
	}
	return iq, ikv, true
}
