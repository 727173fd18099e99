package normal

// This file eliminates floor quotients and orders the terms into the
// exported canonical form.

import (
	"slices"
	"sort"
)

// finish eliminates the floor quotients it can, then sorts the
// conjunctions into the exported canonical form with only the extra
// variables it still uses.
func (c *canonizer) finish(cs []*conj) *Form {
	var kept []*conj
	for _, t := range cs {
		if c.eliminate(t) {
			kept = append(kept, t)
		}
	}
	cs = reduce(kept)
	f := &Form{Terms: []*Term{}}
	remap := c.usedExtras(cs)
	for old, e := range c.extras {
		if remap[old] >= 0 {
			if e.Kind == ExtraDiv {
				e.Num = renumber(e.Num, remap)
			}
			if f.Extras == nil {
				f.Extras = make([]*Extra, len(c.extras))
			}
			f.Extras[remap[old]] = e
		}
	}
	for len(f.Extras) > 0 && f.Extras[len(f.Extras)-1] == nil {
		f.Extras = f.Extras[:len(f.Extras)-1]
	}
	for _, cj := range cs {
		t := &Term{}
		for _, b := range cj.bounds {
			b = orient(Bound{Dir: renumber(b.Dir, remap), Lo: b.Lo, Hi: b.Hi, HasLo: b.HasLo, HasHi: b.HasHi})
			b.extras = &f.Extras
			t.Bounds = append(t.Bounds, b)
		}
		sort.Slice(t.Bounds, func(i, j int) bool { return dirLess(t.Bounds[i].Dir, t.Bounds[j].Dir) })
		t.Atoms = append(t.Atoms, cj.atoms...)
		sort.Slice(t.Atoms, func(i, j int) bool { return t.Atoms[i].Text < t.Atoms[j].Text })
		f.Terms = append(f.Terms, t)
	}
	sort.SliceStable(f.Terms, func(i, j int) bool { return f.Terms[i].String() < f.Terms[j].String() })
	return f
}

// eliminate removes from t every floor quotient x = n // d that t bounds
// only directly (lo <= x <= hi), replacing that bound by the exact bound
// d*lo <= n <= d*hi + d - 1 on its dividend. It reports false when t
// becomes unsatisfiable.
func (c *canonizer) eliminate(t *conj) bool {
	for i := len(c.extras) - 1; i >= 0; i-- {
		e := c.extras[i]
		if e.Kind != ExtraDiv {
			continue
		}
		at, n := -1, 0
		for j, b := range t.bounds {
			if b.Dir.X[i] != 0 {
				at, n = j, n+1
			}
		}
		if n != 1 || t.bounds[at].Dir != extraLinear(i) {
			continue
		}
		b := t.bounds[at]
		var sides []*formula
		if b.HasLo {
			lo, ok := mulInt(b.Lo, e.Den)
			l, ok2 := Const(lo).sub(e.Num) // d*lo - n <= 0
			if !ok || !ok2 {
				continue
			}
			f, ok := c.leZero(l)
			if !ok {
				continue
			}
			sides = append(sides, f)
		}
		if b.HasHi {
			hi, ok := mulInt(b.Hi, e.Den)
			hi, ok2 := addInt(hi, e.Den-1)
			l, ok3 := e.Num.sub(Const(hi)) // n - (d*hi + d - 1) <= 0
			if !ok || !ok2 || !ok3 {
				continue
			}
			f, ok := c.leZero(l)
			if !ok {
				continue
			}
			sides = append(sides, f)
		}
		t.bounds = slices.Delete(t.bounds, at, at+1)
		for _, f := range sides {
			switch f.kind {
			case fConst:
				if !f.val {
					return false
				}
			case fBound:
				if !t.addBound(f.bound) {
					return false
				}
			}
		}
	}
	return true
}

// usedExtras maps each extra variable the conjunctions use (directly or
// through a used quotient's dividend) to its new index, the others to -1.
func (c *canonizer) usedExtras(cs []*conj) []int {
	used := make([]bool, len(c.extras))
	for _, t := range cs {
		for _, b := range t.bounds {
			for i, k := range b.Dir.X {
				if k != 0 {
					used[i] = true
				}
			}
		}
	}
	for i := len(c.extras) - 1; i >= 0; i-- {
		if used[i] && c.extras[i].Kind == ExtraDiv {
			for j, k := range c.extras[i].Num.X {
				if k != 0 {
					used[j] = true
				}
			}
		}
	}
	// The kept extras in a canonical order that does not depend on the
	// order the expression mentioned them: by nesting depth (a dividend
	// uses only earlier extras), kind, the variables read, then text.
	depth := make([]int, len(c.extras))
	var order []int
	for i, e := range c.extras {
		if e.Kind == ExtraDiv {
			for j, k := range e.Num.X {
				if k != 0 {
					depth[i] = max(depth[i], depth[j]+1)
				}
			}
		}
		if used[i] {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := c.extras[order[a]], c.extras[order[b]]
		if da, db := depth[order[a]], depth[order[b]]; da != db {
			return da < db
		}
		if x.Kind != y.Kind {
			return x.Kind < y.Kind
		}
		if c := slices.Compare(x.Vars, y.Vars); c != 0 {
			return c < 0
		}
		return x.Text < y.Text
	})
	remap := make([]int, len(c.extras))
	for i := range remap {
		remap[i] = -1
	}
	for n, i := range order {
		remap[i] = n
	}
	return remap
}

// orient makes the first non-zero coefficient of b's direction positive
// (renumbering extras can change which one is first), negating the bounds.
func orient(b Bound) Bound {
	first := int64(0)
	for _, k := range b.Dir.Coef {
		if first == 0 {
			first = k
		}
	}
	for _, k := range b.Dir.X {
		if first == 0 {
			first = k
		}
	}
	if first >= 0 || (b.HasLo && b.Lo == -1<<63) || (b.HasHi && b.Hi == -1<<63) {
		return b
	}
	d, ok := b.Dir.scale(-1)
	if !ok {
		return b
	}
	return Bound{Dir: d, Lo: -b.Hi, Hi: -b.Lo, HasLo: b.HasHi, HasHi: b.HasLo}
}

// renumber moves l's extra coefficients to their new indices.
func renumber(l Linear, remap []int) Linear {
	var x [MaxExtras]int64
	for i, k := range l.X {
		if k != 0 {
			x[remap[i]] = k
		}
	}
	l.X = x
	return l
}

// dirLess orders directions so that q - kv comes before q alone and kv alone.
func dirLess(a, b Linear) bool {
	return a.String() < b.String()
}
