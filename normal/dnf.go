package normal

// This file builds the disjunctive normal form of a formula.

import (
	"slices"
)

// conj is a conjunction under construction: one interval per direction and
// a set of atoms. Both are short, so they are kept in slices and searched
// linearly: building a DNF clones and merges many of them.
type conj struct {
	bounds []Bound // at most one per direction
	atoms  []*Atom // at most one per key
	cx     *canonizer
}

func (c *canonizer) newConj() *conj { return &conj{cx: c} }

func (t *conj) clone() *conj {
	return &conj{bounds: slices.Clone(t.bounds), atoms: slices.Clone(t.atoms), cx: t.cx}
}

// cloneFor is clone with room to merge o in without growing.
func (t *conj) cloneFor(o *conj) *conj {
	n := &conj{bounds: make([]Bound, len(t.bounds), len(t.bounds)+len(o.bounds)), cx: t.cx}
	copy(n.bounds, t.bounds)
	if len(t.atoms)+len(o.atoms) > 0 {
		n.atoms = make([]*Atom, len(t.atoms), len(t.atoms)+len(o.atoms))
		copy(n.atoms, t.atoms)
	}
	return n
}

// boundOn returns the index of t's bound on direction d, or -1.
func (t *conj) boundOn(d Linear) int {
	for i := range t.bounds {
		if t.bounds[i].Dir == d {
			return i
		}
	}
	return -1
}

// atomIndex returns the index of t's atom with key k, or -1.
func (t *conj) atomIndex(k string) int {
	for i, a := range t.atoms {
		if a.key() == k {
			return i
		}
	}
	return -1
}

// addBound intersects b into t; false when t becomes unsatisfiable.
func (t *conj) addBound(b Bound) bool {
	i := t.boundOn(b.Dir)
	if i >= 0 {
		old := t.bounds[i]
		if old.HasLo && (!b.HasLo || old.Lo > b.Lo) {
			b.Lo, b.HasLo = old.Lo, true
		}
		if old.HasHi && (!b.HasHi || old.Hi < b.Hi) {
			b.Hi, b.HasHi = old.Hi, true
		}
	}
	b, state := t.cx.domain(b)
	switch state {
	case boundFalse:
		return false
	case boundTrue:
		if i >= 0 {
			t.bounds = slices.Delete(t.bounds, i, i+1)
		}
		return true
	}
	if i >= 0 {
		t.bounds[i] = b
	} else {
		t.bounds = append(t.bounds, b)
	}
	return true
}

// addAtom adds a; false when its negation is already there.
func (t *conj) addAtom(a *Atom) bool {
	if t.atomIndex(a.negate().key()) >= 0 {
		return false
	}
	if i := t.atomIndex(a.key()); i >= 0 {
		t.atoms[i] = a
	} else {
		t.atoms = append(t.atoms, a)
	}
	return true
}

func (t *conj) merge(o *conj) bool {
	for _, b := range o.bounds {
		if !t.addBound(b) {
			return false
		}
	}
	for _, a := range o.atoms {
		if !t.addAtom(a) {
			return false
		}
	}
	return true
}

// dnf expands f into satisfiable-looking conjunctions, or reports that the
// expansion grew past MaxTerms.
func (c *canonizer) dnf(f *formula) ([]*conj, bool) {
	switch f.kind {
	case fConst:
		if f.val {
			return []*conj{c.newConj()}, true
		}
		return nil, true
	case fBound:
		t := c.newConj()
		if !t.addBound(f.bound) {
			return nil, true
		}
		return []*conj{t}, true
	case fAtom:
		t := c.newConj()
		t.addAtom(f.atom)
		return []*conj{t}, true
	case fOr:
		var out []*conj
		for _, k := range f.kids {
			ts, ok := c.dnf(k)
			if !ok {
				return nil, false
			}
			out = append(out, ts...)
			if out = reduce(out); len(out) > MaxTerms {
				return nil, false
			}
		}
		return out, true
	case fAnd:
		out := []*conj{c.newConj()}
		for _, k := range f.kids {
			if k.kind == fConst && k.val {
				continue // and-ing with true changes nothing
			}
			ts, ok := c.dnf(k)
			if !ok {
				return nil, false
			}
			if len(out)*len(ts) > MaxTerms*MaxTerms {
				return nil, false
			}
			var next []*conj
			for _, a := range out {
				for _, b := range ts {
					n := a.cloneFor(b)
					if n.merge(b) {
						next = append(next, n)
					}
				}
			}
			if out = reduce(next); len(out) > MaxTerms {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}
