package codegen

import (
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/normal"
)

// This file makes the walks exact for chunked relations spelled with
// floor division and modulo: in a term that holds q // C == kv // C, a
// bound that reads q or kv themselves and also kv // C (a remainder: `q %
// C >= kv % C` is q - C*(q // C) >= kv - C*(kv // C)) means the same with
// kv // C replaced by q // C, and the quotients then cancel: chunk-causal
// `q // C == kv // C and q % C >= kv % C` walks kv <= q inside the chunk
// instead of the whole chunk.

// sameQuotients rewrites t's bounds as above for each equality x_q ==
// x_kv of quotients q // C and kv // C of one divisor; t itself when
// there is none or no bound changes.
func sameQuotients(f *normal.Form, t *normal.Term) *normal.Term {
	var out *normal.Term
	for _, eq := range t.Bounds {
		iq, ikv, ok := quotientEquality(f, eq)
		if !ok {
			continue
		}
		for k, b := range t.Bounds {
			if b.Dir.X[ikv] == 0 || b.Dir.Coef[dsl.VarQ] == 0 && b.Dir.Coef[dsl.VarKV] == 0 {
				continue
			}
			d := b.Dir
			d.X[iq] += d.X[ikv]
			d.X[ikv] = 0
			nb, ok := normalBound(b, d)
			if !ok {
				continue
			}
			if out == nil {
				out = &normal.Term{Bounds: append([]normal.Bound(nil), t.Bounds...), Atoms: t.Atoms}
			}
			out.Bounds[k] = nb
		}
		if out != nil {
			t = out
		}
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

// normalBound is b with direction d, brought to normal's form (gcd 1 and a
// positive first coefficient, the sides scaled with it); false when d is
// constant.
func normalBound(b normal.Bound, d normal.Linear) (normal.Bound, bool) {
	var g, first int64
	for _, c := range d.Coef {
		g, first = gcd64(g, c), leadCoef(first, c)
	}
	for _, c := range d.X {
		g, first = gcd64(g, c), leadCoef(first, c)
	}
	if g == 0 {
		return b, false
	}
	if first < 0 {
		g = -g
	}
	for i := range d.Coef {
		d.Coef[i] /= g
	}
	for i := range d.X {
		d.X[i] /= g
	}
	nb := b
	nb.Dir = d
	if g < 0 {
		nb.HasLo, nb.HasHi = b.HasHi, b.HasLo
		nb.Lo, nb.Hi = ceilDiv(b.Hi, g), -ceilDiv(-b.Lo, g)
		if !b.HasHi {
			nb.Lo = 0
		}
		if !b.HasLo {
			nb.Hi = 0
		}
		return nb, true
	}
	if b.HasLo {
		nb.Lo = ceilDiv(b.Lo, g)
	}
	if b.HasHi {
		nb.Hi = floorDiv(b.Hi, g)
	}
	return nb, true
}

func gcd64(a, b int64) int64 {
	a, b = max(a, -a), max(b, -b)
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func leadCoef(f, c int64) int64 {
	if f != 0 {
		return f
	}
	return c
}

// ceilDiv is ceil(a / d) for d != 0.
func ceilDiv(a, d int64) int64 {
	if d < 0 {
		a, d = -a, -d
	}
	return -floorDiv(-a, d)
}
