package classify

import (
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/normal"
)

// The canonical form is package normal's; these names keep classify's
// vocabulary for it.
type (
	// Form is normal.Form, the canonical form of a mask.
	Form = normal.Form
	// Term is normal.Term, one disjunct.
	Term = normal.Term
	// Bound is normal.Bound, an interval on a linear form.
	Bound = normal.Bound
	// Atom is normal.Atom, a non-linear condition.
	Atom = normal.Atom
	// Linear is normal.Linear, an integer linear form.
	Linear = normal.Linear
)

const (
	// AtomSegment is normal.AtomSegment.
	AtomSegment = normal.AtomSegment
	// AtomOpaque is normal.AtomOpaque.
	AtomOpaque = normal.AtomOpaque
	// numVars is normal.NumVars.
	numVars = normal.NumVars
)

// Canon is normal.Canon: the canonical form of a lowered mask.
func Canon(l *dsl.Lowered) *Form { return normal.Canon(l) }

// distance is the direction q - kv.
var distance = func() Linear { l := normal.Var(dsl.VarQ); l.Coef[dsl.VarKV] = -1; return l }()
