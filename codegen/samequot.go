package codegen

import (
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

// rewriteTerm applies both rewrites to t (pinned quotients first); t
// itself when nothing changes. New quotients are added to f (the plan's
// own copy of the form).
func rewriteTerm(f *normal.Form, t *normal.Term) *normal.Term {
	return sameQuotients(f, pinQuotients(f, t))
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
