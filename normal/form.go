package normal

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
)

// Form is the canonical form of a lowered mask: a disjunction of Terms
// (disjunctive normal form), decided symbolically from the expression. Two
// masks with the same Form are the same mask; the converse holds for the
// patterns the classifier recognises (every spelling of causal, a window, a
// band or a document mask reaches the same Form).
type Form struct {
	// Terms are the disjuncts in a canonical order. No terms means the mask
	// is never true; one term with no constraints means it is always true.
	Terms []*Term
	// TooComplex is set when the normal form exceeded its size limit; Terms
	// is then nil and the form says nothing about the mask.
	TooComplex bool
	// Extras are the extra variables x0, x1, ... the Linear forms of the
	// terms use: floor quotients of linear forms by positive constants and
	// integer expressions free of q and kv. An extra variable is a function
	// of the point (b, h, q, kv and the sizes), never a free choice.
	Extras []*Extra
}

// ExtraKind tells the kinds of extra variable apart.
type ExtraKind int

const (
	// ExtraDiv is floor(Num / Den) for a positive constant Den: an integer
	// x with Den*x <= Num <= Den*x + Den - 1 (so Num % Den is Num - Den*x).
	ExtraDiv ExtraKind = iota
	// ExtraSymbol is an integer expression that reads neither q nor kv
	// (`prefix_len[b]`, `b * h`): its value is known once b, h and the
	// sizes are. A symbol from one branch of a conditional may be undefined
	// (an out-of-range read) where the mask takes the other: a consumer
	// evaluates it only where the bounds on b, h and sizes of its term hold.
	ExtraSymbol
)

// Extra is one extra variable of a Form.
type Extra struct {
	// Kind is ExtraDiv or ExtraSymbol.
	Kind ExtraKind
	// Num is the dividend of an ExtraDiv; it may use the extra variables
	// before this one.
	Num Linear
	// Den is the divisor of an ExtraDiv, at least 2.
	Den int64
	// Expr is the expression of an ExtraSymbol.
	Expr dsl.Expr
	// Text prints the variable, e.g. "(q - kv) // 4" or "prefix_len[b]".
	Text string
	// Vars are the index variables (b, h, q, kv) it reads, in dsl.Var order.
	Vars []dsl.Var
}

// Term is a conjunction: every Bound and every Atom holds.
type Term struct {
	// Bounds are the linear constraints, one per direction, sorted by
	// direction. Bounds on Dir `q - kv` are the band of a window.
	Bounds []Bound
	// Atoms are the non-linear conditions, sorted by text.
	Atoms []*Atom
}

// Bound constrains an integer linear form: Lo <= Dir <= Hi. Dir has no
// constant term, coefficients with gcd 1 and a positive first coefficient
// (in dsl.Var order, then the extra variables), e.g. `q - kv` or `kv`.
type Bound struct {
	// Dir is the constrained form.
	Dir Linear
	// Lo is the lower bound when HasLo.
	Lo int64
	// Hi is the upper bound when HasHi.
	Hi int64
	// HasLo and HasHi say which sides are bounded (at least one is).
	HasLo, HasHi bool
	// extras names Dir's extra variables (nil while a form is built).
	extras *[]*Extra
}

// AtomKind tells the kinds of non-linear atom apart.
type AtomKind int

const (
	// AtomSegment is `buf[q] == buf[kv]` (or `buf[b, q] == buf[b, kv]`):
	// q and kv lie in the same segment of an integer buffer.
	AtomSegment AtomKind = iota
	// AtomOpaque is any other condition, kept as its expression.
	AtomOpaque
)

// Atom is a non-linear condition of a Term.
type Atom struct {
	// Kind is AtomSegment or AtomOpaque.
	Kind AtomKind
	// Neg is set when the atom is negated (`doc[q] != doc[kv]`).
	Neg bool
	// Buffer is the segment buffer of an AtomSegment.
	Buffer *dsl.BufferDecl
	// Batch is set when the segment buffer is indexed by b first.
	Batch bool
	// Expr is the condition of an AtomOpaque (without the negation).
	Expr dsl.Expr
	// Text prints the atom, negation included, e.g. "doc[q] == doc[kv]".
	Text string
	// Why says why an opaque atom is not linear, e.g. "uses %".
	Why string
	// Vars are the index variables the atom reads (b, h, q, kv), directly
	// or through buffer indices.
	Vars []dsl.Var
}

// Segments reports whether a segment atom's buffer is declared `segments`
// (non-decreasing ids: every document is one contiguous run).
func (a *Atom) Segments() bool {
	return a.Buffer != nil && a.Buffer.Property != nil && a.Buffer.Property.Name == "segments"
}

func (a *Atom) key() string {
	return a.Text
}

func (a *Atom) negate() *Atom {
	n := *a
	n.Neg = !a.Neg
	n.Text = atomText(&n)
	return &n
}

func atomText(a *Atom) string {
	if a.Kind == AtomSegment {
		op := " == "
		if a.Neg {
			op = " != "
		}
		idx := func(v string) string {
			if a.Batch {
				return a.Buffer.Name.Name + "[b, " + v + "]"
			}
			return a.Buffer.Name.Name + "[" + v + "]"
		}
		return idx("q") + op + idx("kv")
	}
	s := format.Expr(a.Expr)
	if a.Neg {
		return "not (" + s + ")"
	}
	return s
}

// IsFalse reports whether the form is never true.
func (f *Form) IsFalse() bool { return !f.TooComplex && len(f.Terms) == 0 }

// IsTrue reports whether the form is always true.
func (f *Form) IsTrue() bool {
	return !f.TooComplex && len(f.Terms) == 1 && len(f.Terms[0].Bounds) == 0 && len(f.Terms[0].Atoms) == 0
}

// Depends reports whether the form reads index variable v (b, h, q or kv)
// in any bound or atom. A TooComplex form depends on everything.
func (f *Form) Depends(v dsl.Var) bool {
	if f.TooComplex {
		return true
	}
	for _, t := range f.Terms {
		for _, b := range t.Bounds {
			if b.Uses(v) {
				return true
			}
		}
		for _, a := range t.Atoms {
			for _, w := range a.Vars {
				if w == v {
					return true
				}
			}
		}
	}
	return false
}

// Uses reports whether the bound reads index variable v, directly or
// through an extra variable.
func (b Bound) Uses(v dsl.Var) bool {
	if b.Dir.Coef[v] != 0 {
		return true
	}
	if b.extras == nil {
		return false
	}
	for i, c := range b.Dir.X {
		if c != 0 && i < len(*b.extras) {
			for _, w := range (*b.extras)[i].Vars {
				if w == v {
					return true
				}
			}
		}
	}
	return false
}

// String prints the form, e.g. "0 <= q - kv <= 1023" or
// "doc[q] == doc[kv] and q - kv >= 0 or kv <= 99".
func (f *Form) String() string {
	switch {
	case f.TooComplex:
		return "<too complex>"
	case len(f.Terms) == 0:
		return "False"
	}
	parts := make([]string, len(f.Terms))
	for i, t := range f.Terms {
		parts[i] = t.String()
	}
	return strings.Join(parts, " or ")
}

// String prints the conjunction, "True" when it is empty.
func (t *Term) String() string {
	var parts []string
	for _, a := range t.Atoms {
		if a.Kind == AtomSegment {
			parts = append(parts, a.Text)
		}
	}
	for _, b := range t.Bounds {
		parts = append(parts, b.String())
	}
	for _, a := range t.Atoms {
		if a.Kind != AtomSegment {
			parts = append(parts, a.Text)
		}
	}
	if len(parts) == 0 {
		return "True"
	}
	return strings.Join(parts, " and ")
}

// String prints the bound as `lo <= dir <= hi`, `dir >= lo`, `dir <= hi` or
// `dir == v`, extra variables by their text.
func (b Bound) String() string {
	var name func(int) string
	if b.extras != nil {
		ex := *b.extras
		name = func(i int) string { return ex[i].Text }
		if s, ok := b.modString(ex, name); ok {
			return s
		}
		if s, ok := b.symbolString(ex, name); ok {
			return s
		}
	}
	return b.Format(b.Dir.Format(name))
}

// symbolString prints a bound whose direction subtracts symbols with the
// symbols moved to the other side, e.g. "kv < prefix_len[b]" for
// kv - prefix_len[b] <= -1.
func (b Bound) symbolString(ex []*Extra, name func(int) string) (string, bool) {
	left, right := b.Dir, Linear{}
	for i, k := range b.Dir.X {
		if k < 0 && ex[i].Kind == ExtraSymbol {
			left.X[i], right.X[i] = 0, -k
		}
	}
	if right == (Linear{}) || left.IsConst() {
		return "", false
	}
	l := left.Format(name)
	rhs := func(k int64) string { r := right; r.K = k; return r.Format(name) }
	switch {
	case b.HasLo && b.HasHi && b.Lo == b.Hi:
		return l + " == " + rhs(b.Lo), true
	case b.HasLo && b.HasHi:
		return rhs(b.Lo) + " <= " + l + " <= " + rhs(b.Hi), true
	case b.HasLo && b.Lo == 1:
		return l + " > " + rhs(0), true
	case b.HasLo:
		return l + " >= " + rhs(b.Lo), true
	case b.Hi == -1:
		return l + " < " + rhs(0), true
	}
	return l + " <= " + rhs(b.Hi), true
}

// modString prints a bound on ±(n - d*(n // d)) as one on `n % d`, its
// sides cut to the remainder's range 0..d-1, e.g. "(q - kv) % 2 == 0".
func (b Bound) modString(ex []*Extra, name func(int) string) (string, bool) {
	num, den, r, ok := b.remainder(ex)
	if !ok {
		return "", false
	}
	text := num.Format(name)
	if strings.Contains(text, " ") {
		text = "(" + text + ")"
	}
	return r.Format(fmt.Sprintf("%s %% %d", text, den)), true
}

// Remainder reads a bound on ±(n - d*(n // d)) as the bound r on the
// remainder n % d (r's Dir is unset; a side no remainder in 0..d-1 can
// violate is dropped, and a single value has both sides), e.g. "(q - kv)
// % 2 == 0" is n = q - kv, d = 2, r = [0, 0]. ok is false when b is not
// such a bound.
func (b Bound) Remainder() (num Linear, den int64, r Bound, ok bool) {
	if b.extras == nil {
		return Linear{}, 0, Bound{}, false
	}
	return b.remainder(*b.extras)
}

func (b Bound) remainder(ex []*Extra) (Linear, int64, Bound, bool) {
	for i, e := range ex {
		if b.Dir.X[i] == 0 || e.Kind != ExtraDiv {
			continue
		}
		m, ok := e.Num.sub(extraScaled(i, e.Den))
		if !ok {
			continue
		}
		k := m.K
		m.K = 0
		neg, ok := b.Dir.scale(-1)
		if !ok {
			continue
		}
		var r Bound
		switch m {
		case b.Dir:
			r = Bound{Lo: b.Lo + k, Hi: b.Hi + k, HasLo: b.HasLo, HasHi: b.HasHi}
		case neg:
			r = Bound{Lo: k - b.Hi, Hi: k - b.Lo, HasLo: b.HasHi, HasHi: b.HasLo}
		default:
			continue
		}
		if !r.HasLo || r.Lo <= 0 {
			r.Lo, r.HasLo = 0, false
		}
		if !r.HasHi || r.Hi >= e.Den-1 {
			r.Hi, r.HasHi = e.Den-1, false
		}
		if r.Lo == r.Hi {
			r.HasLo, r.HasHi = true, true
		}
		return e.Num, e.Den, r, true
	}
	return Linear{}, 0, Bound{}, false
}

// Format prints the bound with its direction written as d, e.g. "0 <= q - kv <= 127".
func (b Bound) Format(d string) string {
	switch {
	case b.HasLo && b.HasHi && b.Lo == b.Hi:
		return fmt.Sprintf("%s == %d", d, b.Lo)
	case b.HasLo && b.HasHi:
		return fmt.Sprintf("%d <= %s <= %d", b.Lo, d, b.Hi)
	case b.HasLo:
		return fmt.Sprintf("%s >= %d", d, b.Lo)
	case b.HasHi:
		return fmt.Sprintf("%s <= %d", d, b.Hi)
	}
	return "True"
}

// Contains reports whether value x satisfies the bound.
func (b Bound) Contains(x int64) bool {
	return (!b.HasLo || x >= b.Lo) && (!b.HasHi || x <= b.Hi)
}

// Point is the value of every index variable and size symbol (indexed by
// dsl.Var; the score entry is ignored).
type Point [NumVars]int64

// Value is l at point p with extra variables x (wrapping on overflow, as
// no form built by Canon overflows on indices below 2^31).
func Value(l Linear, p Point, x []int64) int64 {
	v := l.K
	for i, c := range l.Coef {
		if c != 0 && dsl.Var(i) != dsl.VarScore {
			v += c * p[i]
		}
	}
	for i, c := range l.X {
		if c != 0 {
			v += c * x[i]
		}
	}
	return v
}
