package normal

// This file holds the boolean formulas in negation normal form that
// canonization builds before the DNF.

type fkind int

const (
	fConst fkind = iota
	fBound       // one linear bound, in conj form
	fAtom
	fAnd
	fOr
)

// formula is a boolean formula in negation normal form: negation appears
// only inside atoms and bounds.
type formula struct {
	kind  fkind
	val   bool
	bound Bound
	atom  *Atom
	kids  []*formula
}

var (
	fTrue  = &formula{kind: fConst, val: true}
	fFalse = &formula{kind: fConst, val: false}
)

func constF(v bool) *formula {
	if v {
		return fTrue
	}
	return fFalse
}

// alwaysTrue reports whether f is true by construction (a constant true or
// a conjunction of such).
func alwaysTrue(f *formula) bool {
	switch f.kind {
	case fConst:
		return f.val
	case fAnd:
		for _, k := range f.kids {
			if !alwaysTrue(k) {
				return false
			}
		}
		return true
	}
	return false
}

func and(fs ...*formula) *formula { return &formula{kind: fAnd, kids: fs} }
func or(fs ...*formula) *formula  { return &formula{kind: fOr, kids: fs} }

// not returns the negation of f, pushed to the leaves (De Morgan).
func not(f *formula) *formula {
	switch f.kind {
	case fConst:
		return constF(!f.val)
	case fAtom:
		return &formula{kind: fAtom, atom: f.atom.negate()}
	case fBound:
		b := f.bound
		// Lo <= d <= Hi negated: d <= Lo-1 or d >= Hi+1.
		var alts []*formula
		if b.HasLo && b.Lo > -1<<63 {
			alts = append(alts, &formula{kind: fBound, bound: Bound{Dir: b.Dir, Hi: b.Lo - 1, HasHi: true}})
		}
		if b.HasHi && b.Hi < 1<<63-1 {
			alts = append(alts, &formula{kind: fBound, bound: Bound{Dir: b.Dir, Lo: b.Hi + 1, HasLo: true}})
		}
		return or(alts...)
	case fAnd, fOr:
		kids := make([]*formula, len(f.kids))
		for i, k := range f.kids {
			kids[i] = not(k)
		}
		if f.kind == fAnd {
			return or(kids...)
		}
		return and(kids...)
	}
	return f
}
