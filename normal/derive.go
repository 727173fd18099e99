package normal

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// This file lets a consumer of a Form derive equivalent bounds of one
// term (codegen's sparsity plan substitutes quotients the term pins to a
// constant): a copy of the form that may grow extra variables, and bounds
// built on it.

// Copy returns a copy of f with its own Extras slice (the terms and extra
// variables themselves shared), so that AddDiv on the copy leaves f as it
// was. Bounds of f's terms read the names of f's extras; Rebind gives
// them the copy's.
func (f *Form) Copy() *Form {
	c := *f
	c.Extras = append([]*Extra(nil), f.Extras...)
	return &c
}

// AddDiv returns the index of the extra variable num // den (den >= 2, num
// reading extras of f only), appending it to f's extras when no equal one
// exists; ok is false when the MaxExtras slots are taken.
func (f *Form) AddDiv(num Linear, den int64) (int, bool) {
	if den < 2 {
		return 0, false
	}
	for i, e := range f.Extras {
		if e.Kind == ExtraDiv && e.Den == den && e.Num == num {
			return i, true
		}
	}
	if len(f.Extras) >= MaxExtras {
		return 0, false
	}
	text := num.Format(func(i int) string { return f.Extras[i].Text })
	if strings.Contains(text, " ") {
		text = "(" + text + ")"
	}
	e := &Extra{Kind: ExtraDiv, Num: num, Den: den, Text: fmt.Sprintf("%s // %d", text, den)}
	var seen [NumVars]bool
	for v, k := range num.Coef {
		if k != 0 && !dsl.Var(v).IsSize() {
			seen[v] = true
		}
	}
	for j, k := range num.X {
		if k != 0 {
			for _, v := range f.Extras[j].Vars {
				seen[v] = true
			}
		}
	}
	for v, s := range seen {
		if s {
			e.Vars = append(e.Vars, dsl.Var(v))
		}
	}
	f.Extras = append(f.Extras, e)
	return len(f.Extras) - 1, true
}

// Rebind returns b reading the names and variables of its extras from f.
func (f *Form) Rebind(b Bound) Bound {
	b.extras = &f.Extras
	return b
}

// NewBound is the bound lo <= dir <= hi (each side where has) of f, in
// normal's orientation: the constant term moved into the sides,
// coefficients divided by their gcd (the sides rounded inwards), the first
// coefficient positive. ok is false when dir is constant or a side would
// overflow.
func (f *Form) NewBound(dir Linear, lo, hi int64, hasLo, hasHi bool) (Bound, bool) {
	const limit = 1 << 62
	k := dir.K
	dir.K = 0
	if k <= -limit || k >= limit || hasLo && (lo <= -limit || lo >= limit) || hasHi && (hi <= -limit || hi >= limit) {
		return Bound{}, false
	}
	lo, hi = lo-k, hi-k
	var g uint64
	for _, c := range dir.Coef {
		g = gcd(g, uint64(max(c, -c)))
	}
	for _, c := range dir.X {
		g = gcd(g, uint64(max(c, -c)))
	}
	if g == 0 {
		return Bound{}, false
	}
	d := int64(g)
	for i := range dir.Coef {
		dir.Coef[i] /= d
	}
	for i := range dir.X {
		dir.X[i] /= d
	}
	b := Bound{Dir: dir, HasLo: hasLo, HasHi: hasHi}
	if hasLo {
		b.Lo = -floorDiv(-lo, d)
	}
	if hasHi {
		b.Hi = floorDiv(hi, d)
	}
	b = orient(b)
	b.extras = &f.Extras
	return b, true
}
