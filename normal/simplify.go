package normal

// This file simplifies a DNF: implication, unions along one direction,
// resolution.

import (
	"slices"
)

// implies reports whether every point of a satisfies b (a ⊆ b), judged
// syntactically: each bound of b is implied by a's bound on the same
// direction and each atom of b is in a.
func implies(a, b *conj) bool {
	for _, bb := range b.bounds {
		i := a.boundOn(bb.Dir)
		if i < 0 {
			return false
		}
		ab := a.bounds[i]
		if bb.HasLo && (!ab.HasLo || ab.Lo < bb.Lo) {
			return false
		}
		if bb.HasHi && (!ab.HasHi || ab.Hi > bb.Hi) {
			return false
		}
	}
	for _, at := range b.atoms {
		if a.atomIndex(at.key()) < 0 {
			return false
		}
	}
	return true
}

// unionAlong merges a and b when they differ only in the bound on one
// direction and the two intervals overlap or touch; the union is then one
// interval. A missing bound is the whole line.
func unionAlong(a, b *conj) (*conj, bool) {
	if len(a.atoms) != len(b.atoms) {
		return nil, false
	}
	for _, at := range a.atoms {
		if b.atomIndex(at.key()) < 0 {
			return nil, false
		}
	}
	// The directions whose bounds differ (or that only one side bounds).
	var diff []Linear
	for _, x := range a.bounds {
		if i := b.boundOn(x.Dir); i < 0 || b.bounds[i] != x {
			diff = append(diff, x.Dir)
		}
	}
	for _, y := range b.bounds {
		if a.boundOn(y.Dir) < 0 {
			diff = append(diff, y.Dir)
		}
	}
	if len(diff) != 1 {
		return nil, false
	}
	i, j := a.boundOn(diff[0]), b.boundOn(diff[0])
	if i < 0 || j < 0 {
		return nil, false // one side is unbounded: implies() handles it
	}
	x, y := a.bounds[i], b.bounds[j]
	// Order so that x starts first (an unbounded start is first).
	if !(!x.HasLo || (y.HasLo && x.Lo <= y.Lo)) {
		x, y = y, x
	}
	// Contiguous iff y starts no later than just past x's end.
	if x.HasHi && y.HasLo && x.Hi < 1<<63-1 && y.Lo > x.Hi+1 {
		return nil, false
	}
	u := Bound{Dir: x.Dir, Lo: x.Lo, HasLo: x.HasLo}
	if x.HasHi && y.HasHi {
		u.Hi, u.HasHi = max(x.Hi, y.Hi), true
	}
	n := a.clone()
	u, state := a.cx.domain(u)
	if state == boundOpen {
		n.bounds[i] = u
	} else {
		n.bounds = slices.Delete(n.bounds, i, i+1)
	}
	return n, true
}

// resolve merges `X and A` with `X and not A` into X (A an atom).
func resolve(a, b *conj) (*conj, bool) {
	if len(a.atoms) != len(b.atoms) || len(a.bounds) != len(b.bounds) {
		return nil, false
	}
	for _, x := range a.bounds {
		if i := b.boundOn(x.Dir); i < 0 || b.bounds[i] != x {
			return nil, false
		}
	}
	diff := -1
	for i, at := range a.atoms {
		if b.atomIndex(at.key()) >= 0 {
			continue
		}
		if diff >= 0 {
			return nil, false
		}
		if b.atomIndex(at.negate().key()) < 0 {
			return nil, false
		}
		diff = i
	}
	if diff < 0 {
		return nil, false
	}
	n := a.clone()
	n.atoms = slices.Delete(n.atoms, diff, diff+1)
	return n, true
}

// reduce removes conjunctions implied by others and merges neighbouring
// intervals until nothing changes.
func reduce(ts []*conj) []*conj {
	for changed := true; changed; {
		changed = false
	outer:
		for i := 0; i < len(ts); i++ {
			for j := 0; j < len(ts); j++ {
				if i == j {
					continue
				}
				if implies(ts[i], ts[j]) {
					ts = append(ts[:i], ts[i+1:]...)
					changed = true
					break outer
				}
				if u, ok := resolve(ts[i], ts[j]); ok {
					ts[i] = u
					ts = append(ts[:j], ts[j+1:]...)
					changed = true
					break outer
				}
				if u, ok := unionAlong(ts[i], ts[j]); ok {
					ts[i] = u
					ts = append(ts[:j], ts[j+1:]...)
					changed = true
					break outer
				}
			}
		}
	}
	return ts
}
