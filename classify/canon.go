package classify

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
)

// maxTerms bounds the disjunctive normal form; a mask whose DNF grows past it
// is marked TooComplex and becomes a generated kernel.
const maxTerms = 64

// maxPieces bounds the piecewise-linear expansion of one integer operand
// (abs, min, max, clamp and int conditionals split it into pieces).
const maxPieces = 16

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
// (in dsl.Var order), e.g. `q - kv` or `kv`.
type Bound struct {
	// Dir is the constrained form.
	Dir Linear
	// Lo is the lower bound when HasLo.
	Lo int64
	// Hi is the upper bound when HasHi.
	Hi int64
	// HasLo and HasHi say which sides are bounded (at least one is).
	HasLo, HasHi bool
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
			if b.Dir.Uses(v) {
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
// `dir == v`.
func (b Bound) String() string { return b.Format(b.Dir.String()) }

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

// Canon computes the canonical form of a lowered mask. A nil mask is the
// always-true form. Canon never evaluates the mask: it rewrites the
// expression (negation pushed to the atoms, conditionals and where() turned
// into and/or, abs/min/max/clamp split into linear pieces, integer
// comparisons normalised to bounds with `<` as `<= -1`) and simplifies
// bounds using only facts true for every length: 0 <= q < Q, 0 <= kv < KV,
// 0 <= b < B, 0 <= h < H.
func Canon(l *dsl.Lowered) *Form {
	if l == nil || l.Expr == nil {
		return &Form{Terms: []*Term{{}}}
	}
	c := &canonizer{lowered: l}
	terms, ok := dnf(c.formula(l.Expr))
	if !ok {
		return &Form{TooComplex: true}
	}
	return finish(terms)
}

// ---------------------------------------------------------------------------
// Boolean formulas in negation normal form

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

// ---------------------------------------------------------------------------
// From lowered expressions to formulas

type canonizer struct {
	lowered *dsl.Lowered
}

func (c *canonizer) typeOf(e dsl.Expr) dsl.Type { return c.lowered.TypeOf(e) }

// formula converts a bool expression.
func (c *canonizer) formula(e dsl.Expr) *formula {
	switch x := e.(type) {
	case *dsl.ParenExpr:
		return c.formula(x.X)
	case *dsl.BoolLit:
		return constF(x.Value)
	case *dsl.IntLit:
		return constF(x.Value != 0)
	case *dsl.UnaryExpr:
		if (x.Op == dsl.OpNot || x.Op == dsl.OpInvert) && c.isBool(x.X) {
			return not(c.formula(x.X))
		}
		if x.Op == dsl.OpNot {
			// not on an int: true when it is zero.
			return c.compare(x.X, dsl.OpEQ, &dsl.IntLit{Sp: dsl.NoSpan, Value: 0}, e)
		}
	case *dsl.BinaryExpr:
		if c.isBool(x.X) && c.isBool(x.Y) {
			switch x.Op {
			case dsl.OpAnd, dsl.OpBitAnd:
				return and(c.formula(x.X), c.formula(x.Y))
			case dsl.OpOr, dsl.OpBitOr:
				return or(c.formula(x.X), c.formula(x.Y))
			}
		}
	case *dsl.CompareExpr:
		if len(x.Operands) == 2 {
			return c.compare(x.Operands[0], x.Ops[0], x.Operands[1], e)
		}
		// Not produced by the checker, handled for hand-built input.
		var parts []*formula
		for i, op := range x.Ops {
			parts = append(parts, c.compare(x.Operands[i], op, x.Operands[i+1], e))
		}
		return and(parts...)
	case *dsl.CondExpr:
		if c.isBool(x.Then) && c.isBool(x.Else) {
			cond := c.truth(x.Cond)
			return or(and(cond, c.formula(x.Then)), and(not(cond), c.formula(x.Else)))
		}
	case *dsl.CallExpr:
		if name := callName(x); name == "where" && len(x.Args) == 3 && c.isBool(x.Args[1]) && c.isBool(x.Args[2]) {
			cond := c.truth(x.Args[0])
			return or(and(cond, c.formula(x.Args[1])), and(not(cond), c.formula(x.Args[2])))
		}
	}
	if c.typeOf(e) == dsl.TypeInt {
		return c.compare(e, dsl.OpNE, &dsl.IntLit{Sp: dsl.NoSpan, Value: 0}, e)
	}
	return c.opaque(e)
}

// truth converts a condition, which may be an int (Python truthiness).
func (c *canonizer) truth(e dsl.Expr) *formula {
	if c.isBool(e) {
		return c.formula(e)
	}
	if c.typeOf(e) == dsl.TypeInt {
		return c.compare(e, dsl.OpNE, &dsl.IntLit{Sp: dsl.NoSpan, Value: 0}, e)
	}
	return c.opaque(e)
}

func (c *canonizer) isBool(e dsl.Expr) bool {
	if _, ok := e.(*dsl.BoolLit); ok {
		return true
	}
	return c.typeOf(e) == dsl.TypeBool
}

func callName(x *dsl.CallExpr) string {
	if id, ok := x.Fun.(*dsl.Ident); ok {
		if b := dsl.LookupBuiltin(id.Name); b != nil {
			return b.Name
		}
		return id.Name
	}
	return ""
}

// compare converts `a op b`; whole is the expression for an opaque result.
func (c *canonizer) compare(a dsl.Expr, op dsl.Op, b dsl.Expr, whole dsl.Expr) *formula {
	a, b = dsl.Unparen(a), dsl.Unparen(b)
	if op == dsl.OpEQ || op == dsl.OpNE {
		if seg := c.segment(a, b); seg != nil {
			if op == dsl.OpNE {
				seg = seg.negate()
			}
			return &formula{kind: fAtom, atom: seg}
		}
		if c.isBool(a) && c.isBool(b) {
			fa, fb := c.formula(a), c.formula(b)
			eq := or(and(fa, fb), and(not(fa), not(fb)))
			if op == dsl.OpNE {
				return not(eq)
			}
			return eq
		}
	}
	pa, okA := c.pieces(a)
	pb, okB := c.pieces(b)
	if !okA || !okB || len(pa)*len(pb) > maxPieces {
		return c.opaque(whole)
	}
	var alts []*formula
	for _, x := range pa {
		for _, y := range pb {
			diff, ok := x.val.sub(y.val)
			if !ok {
				return c.opaque(whole)
			}
			cmp, ok := compareZero(diff, op)
			if !ok {
				return c.opaque(whole)
			}
			alts = append(alts, and(x.cond, y.cond, cmp))
		}
	}
	return or(alts...)
}

// compareZero converts `d op 0` into bounds.
func compareZero(d Linear, op dsl.Op) (*formula, bool) {
	le := func(l Linear) (*formula, bool) { return leZero(l) }
	neg, ok := d.scale(-1)
	if !ok {
		return nil, false
	}
	switch op {
	case dsl.OpLE:
		return le(d)
	case dsl.OpLT:
		l, ok := d.add(constLinear(1))
		if !ok {
			return nil, false
		}
		return le(l)
	case dsl.OpGE:
		return le(neg)
	case dsl.OpGT:
		l, ok := neg.add(constLinear(1))
		if !ok {
			return nil, false
		}
		return le(l)
	case dsl.OpEQ, dsl.OpNE:
		x, ok1 := le(d)
		y, ok2 := le(neg)
		if !ok1 || !ok2 {
			return nil, false
		}
		if op == dsl.OpEQ {
			return and(x, y), true
		}
		return not(and(x, y)), true
	}
	return nil, false
}

// leZero converts `l <= 0` into one bound on its normalised direction, or a
// constant.
func leZero(l Linear) (*formula, bool) {
	var g uint64
	for _, c := range l.Coef {
		g = gcd(g, uabs(c))
	}
	if g == 0 {
		return constF(l.K <= 0), true
	}
	if g > 1<<62 || l.K == -1<<63 {
		return nil, false
	}
	gi := int64(g)
	var dir Linear
	sign := int64(0)
	for i, c := range l.Coef {
		dir.Coef[i] = c / gi
		if sign == 0 && c != 0 {
			sign = 1
			if c < 0 {
				sign = -1
			}
		}
	}
	if sign < 0 {
		for i := range dir.Coef {
			dir.Coef[i] = -dir.Coef[i]
		}
	}
	// g*sign*dir + K <= 0.
	if sign > 0 {
		return boundF(Bound{Dir: dir, Hi: floorDiv(-l.K, gi), HasHi: true}), true
	}
	return boundF(Bound{Dir: dir, Lo: -floorDiv(-l.K, gi), HasLo: true}), true
}

// boundF makes a bound formula, simplified by the domain facts.
func boundF(b Bound) *formula {
	b, state := domain(b)
	switch state {
	case boundTrue:
		return fTrue
	case boundFalse:
		return fFalse
	}
	return &formula{kind: fBound, bound: b}
}

type boundState int

const (
	boundOpen boundState = iota
	boundTrue
	boundFalse
)

// sizeOf maps an index variable to its size symbol.
var sizeOf = map[dsl.Var]dsl.Var{dsl.VarB: dsl.SizeB, dsl.VarH: dsl.SizeH, dsl.VarQ: dsl.SizeQ, dsl.VarKV: dsl.SizeKV}

// domain drops the sides of a bound that hold for every index in range and
// every size, and reports a bound no index satisfies. It uses only
// 0 <= x <= X-1 for an index x of size X, and X >= 1.
func domain(b Bound) (Bound, boundState) {
	if b.HasLo && b.HasHi && b.Lo > b.Hi {
		return b, boundFalse
	}
	nz := 0
	for _, c := range b.Dir.Coef {
		if c != 0 {
			nz++
		}
	}
	for x, size := range sizeOf {
		switch {
		case nz == 1 && b.Dir.Coef[x] == 1: // x in [0, inf)
			if b.HasHi && b.Hi < 0 {
				return b, boundFalse
			}
			if b.HasLo && b.Lo <= 0 {
				b.HasLo = false
			}
		case nz == 1 && b.Dir.Coef[size] == 1: // X in [1, inf)
			if b.HasHi && b.Hi < 1 {
				return b, boundFalse
			}
			if b.HasLo && b.Lo <= 1 {
				b.HasLo = false
			}
		case nz == 2 && b.Dir.Coef[x] == 1 && b.Dir.Coef[size] == -1: // x - X in [-inf, -1]
			if b.HasLo && b.Lo > -1 {
				return b, boundFalse
			}
			if b.HasHi && b.Hi >= -1 {
				b.HasHi = false
			}
		}
	}
	if !b.HasLo && !b.HasHi {
		return b, boundTrue
	}
	return b, boundOpen
}

// segment recognises `buf[q] == buf[kv]` (either order) and
// `buf[b, q] == buf[b, kv]` for one integer buffer.
func (c *canonizer) segment(a, b dsl.Expr) *Atom {
	ia, ok1 := a.(*dsl.IndexExpr)
	ib, ok2 := b.(*dsl.IndexExpr)
	if !ok1 || !ok2 {
		return nil
	}
	na, ok1 := ia.X.(*dsl.Ident)
	nb, ok2 := ib.X.(*dsl.Ident)
	if !ok1 || !ok2 || na.Name != nb.Name || len(ia.Indices) != len(ib.Indices) {
		return nil
	}
	buf := c.buffer(na.Name)
	if buf == nil || !isIntDType(buf) {
		return nil
	}
	isVar := func(e dsl.Expr, v dsl.Var) bool {
		r, ok := dsl.Unparen(e).(*dsl.VarRef)
		return ok && r.Var == v
	}
	pair := func(x, y dsl.Expr) bool {
		return (isVar(x, dsl.VarQ) && isVar(y, dsl.VarKV)) || (isVar(x, dsl.VarKV) && isVar(y, dsl.VarQ))
	}
	atom := &Atom{Kind: AtomSegment, Buffer: buf, Vars: []dsl.Var{dsl.VarQ, dsl.VarKV}}
	switch len(ia.Indices) {
	case 1:
		if !pair(ia.Indices[0], ib.Indices[0]) {
			return nil
		}
	case 2:
		if !isVar(ia.Indices[0], dsl.VarB) || !isVar(ib.Indices[0], dsl.VarB) || !pair(ia.Indices[1], ib.Indices[1]) {
			return nil
		}
		atom.Batch = true
		atom.Vars = []dsl.Var{dsl.VarB, dsl.VarQ, dsl.VarKV}
	default:
		return nil
	}
	atom.Text = atomText(atom)
	return atom
}

func isIntDType(b *dsl.BufferDecl) bool {
	return b.DType != nil && (b.DType.Name == "i32" || b.DType.Name == "i64")
}

func (c *canonizer) buffer(name string) *dsl.BufferDecl {
	for _, b := range c.lowered.Buffers {
		if b.Name != nil && b.Name.Name == name {
			return b
		}
	}
	return nil
}

// opaque wraps a condition the canonical form cannot look into.
func (c *canonizer) opaque(e dsl.Expr) *formula {
	e = dsl.Unparen(e)
	a := &Atom{Kind: AtomOpaque, Expr: e, Why: c.why(e), Vars: exprVars(e)}
	a.Text = atomText(a)
	return &formula{kind: fAtom, atom: a}
}

// why names the first construct that makes e non-linear.
func (c *canonizer) why(e dsl.Expr) string {
	reason := "is not a linear comparison of q and kv"
	found := false
	dsl.Inspect(e, func(n dsl.Expr) bool {
		if found {
			return false
		}
		switch x := n.(type) {
		case *dsl.IndexExpr:
			reason, found = "reads buffer "+format.Expr(x.X), true
		case *dsl.BinaryExpr:
			switch x.Op {
			case dsl.OpMod, dsl.OpFloorDiv, dsl.OpPow, dsl.OpBitAnd, dsl.OpBitOr:
				reason, found = "uses "+x.Op.String(), true
			case dsl.OpMul:
				reason, found = "multiplies by a variable", true
			}
		case *dsl.FloatLit:
			reason, found = "compares floats", true
		case *dsl.CallExpr:
			if n := callName(x); n != "abs" && n != "min" && n != "max" && n != "clamp" && n != "where" {
				reason, found = "calls "+n, true
			}
		}
		if !found && c.typeOf(n) == dsl.TypeFloat {
			reason, found = "compares floats", true
		}
		return !found
	})
	return reason
}

// exprVars lists the index variables e reads, in dsl.Var order.
func exprVars(e dsl.Expr) []dsl.Var {
	var seen [numVars]bool
	dsl.Inspect(e, func(n dsl.Expr) bool {
		if r, ok := n.(*dsl.VarRef); ok && !r.Var.IsSize() && r.Var != dsl.VarScore {
			seen[r.Var] = true
		}
		return true
	})
	var out []dsl.Var
	for v, s := range seen {
		if s {
			out = append(out, dsl.Var(v))
		}
	}
	return out
}

// piece is one linear piece of an integer expression: val where cond holds.
type piece struct {
	cond *formula
	val  Linear
}

// pieces expands an integer expression into linear pieces whose conditions
// partition the domain, or reports that it is not piecewise linear.
func (c *canonizer) pieces(e dsl.Expr) ([]piece, bool) {
	switch x := e.(type) {
	case *dsl.ParenExpr:
		return c.pieces(x.X)
	case *dsl.IntLit:
		return []piece{{fTrue, constLinear(x.Value)}}, true
	case *dsl.BoolLit:
		if x.Value {
			return []piece{{fTrue, constLinear(1)}}, true
		}
		return []piece{{fTrue, constLinear(0)}}, true
	case *dsl.VarRef:
		if x.Var == dsl.VarScore || x.Var < 0 || int(x.Var) >= numVars {
			return nil, false
		}
		return []piece{{fTrue, varLinear(x.Var)}}, true
	}
	if c.typeOf(e) != dsl.TypeInt {
		return nil, false
	}
	switch x := e.(type) {
	case *dsl.UnaryExpr:
		p, ok := c.pieces(x.X)
		if !ok {
			return nil, false
		}
		switch x.Op {
		case dsl.OpPos:
			return p, true
		case dsl.OpNeg:
			return mapPieces(p, func(l Linear) (Linear, bool) { return l.scale(-1) })
		}
	case *dsl.BinaryExpr:
		switch x.Op {
		case dsl.OpAdd, dsl.OpSub, dsl.OpMul:
			pa, ok1 := c.pieces(x.X)
			pb, ok2 := c.pieces(x.Y)
			if !ok1 || !ok2 || len(pa)*len(pb) > maxPieces {
				return nil, false
			}
			var out []piece
			for _, a := range pa {
				for _, b := range pb {
					var v Linear
					var ok bool
					switch {
					case x.Op == dsl.OpAdd:
						v, ok = a.val.add(b.val)
					case x.Op == dsl.OpSub:
						v, ok = a.val.sub(b.val)
					case a.val.IsConst():
						v, ok = b.val.scale(a.val.K)
					case b.val.IsConst():
						v, ok = a.val.scale(b.val.K)
					}
					if !ok {
						return nil, false
					}
					out = append(out, piece{and(a.cond, b.cond), v})
				}
			}
			return out, true
		}
	case *dsl.CondExpr:
		return c.choose(c.truth(x.Cond), x.Then, x.Else)
	case *dsl.CallExpr:
		switch callName(x) {
		case "where":
			if len(x.Args) == 3 {
				return c.choose(c.truth(x.Args[0]), x.Args[1], x.Args[2])
			}
		case "abs":
			if len(x.Args) == 1 {
				p, ok := c.pieces(x.Args[0])
				if !ok || 2*len(p) > maxPieces {
					return nil, false
				}
				var out []piece
				for _, a := range p {
					n, ok := a.val.scale(-1)
					ge, ok2 := compareZero(a.val, dsl.OpGE)
					if !ok || !ok2 {
						return nil, false
					}
					out = append(out, piece{and(a.cond, ge), a.val}, piece{and(a.cond, not(ge)), n})
				}
				return out, true
			}
		case "min", "max":
			if len(x.Args) == 2 {
				return c.minMax(callName(x) == "min", x.Args[0], x.Args[1])
			}
		case "clamp":
			if len(x.Args) == 3 {
				lo, ok := c.minMaxPieces(false, x.Args[0], x.Args[1])
				if !ok {
					return nil, false
				}
				hi, ok := c.pieces(x.Args[2])
				if !ok {
					return nil, false
				}
				return combineMinMax(true, lo, hi)
			}
		}
	}
	return nil, false
}

func mapPieces(p []piece, f func(Linear) (Linear, bool)) ([]piece, bool) {
	out := make([]piece, len(p))
	for i, a := range p {
		v, ok := f(a.val)
		if !ok {
			return nil, false
		}
		out[i] = piece{a.cond, v}
	}
	return out, true
}

func (c *canonizer) choose(cond *formula, then, els dsl.Expr) ([]piece, bool) {
	pt, ok1 := c.pieces(then)
	pe, ok2 := c.pieces(els)
	if !ok1 || !ok2 || len(pt)+len(pe) > maxPieces {
		return nil, false
	}
	var out []piece
	for _, a := range pt {
		out = append(out, piece{and(cond, a.cond), a.val})
	}
	nc := not(cond)
	for _, a := range pe {
		out = append(out, piece{and(nc, a.cond), a.val})
	}
	return out, true
}

func (c *canonizer) minMax(isMin bool, a, b dsl.Expr) ([]piece, bool) {
	return c.minMaxPieces(isMin, a, b)
}

func (c *canonizer) minMaxPieces(isMin bool, a, b dsl.Expr) ([]piece, bool) {
	pa, ok1 := c.pieces(a)
	pb, ok2 := c.pieces(b)
	if !ok1 || !ok2 {
		return nil, false
	}
	return combineMinMax(isMin, pa, pb)
}

// combineMinMax builds min(a, b) (or max) piecewise: a where a <= b, else b.
func combineMinMax(isMin bool, pa, pb []piece) ([]piece, bool) {
	if 2*len(pa)*len(pb) > maxPieces {
		return nil, false
	}
	var out []piece
	for _, x := range pa {
		for _, y := range pb {
			diff, ok := x.val.sub(y.val)
			if !ok {
				return nil, false
			}
			op := dsl.OpLE
			if !isMin {
				op = dsl.OpGE
			}
			first, ok := compareZero(diff, op)
			if !ok {
				return nil, false
			}
			out = append(out, piece{and(x.cond, y.cond, first), x.val}, piece{and(x.cond, y.cond, not(first)), y.val})
		}
	}
	return out, true
}

// ---------------------------------------------------------------------------
// Disjunctive normal form and simplification

// conj is a conjunction under construction: one interval per direction and
// a set of atoms. Both are short, so they are kept in slices and searched
// linearly: building a DNF clones and merges many of them.
type conj struct {
	bounds []Bound // at most one per direction
	atoms  []*Atom // at most one per key
}

func newConj() *conj { return &conj{} }

func (t *conj) clone() *conj {
	return &conj{bounds: slices.Clone(t.bounds), atoms: slices.Clone(t.atoms)}
}

// cloneFor is clone with room to merge o in without growing.
func (t *conj) cloneFor(o *conj) *conj {
	n := &conj{bounds: make([]Bound, len(t.bounds), len(t.bounds)+len(o.bounds))}
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
	b, state := domain(b)
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
// expansion grew past maxTerms.
func dnf(f *formula) ([]*conj, bool) {
	switch f.kind {
	case fConst:
		if f.val {
			return []*conj{newConj()}, true
		}
		return nil, true
	case fBound:
		t := newConj()
		if !t.addBound(f.bound) {
			return nil, true
		}
		return []*conj{t}, true
	case fAtom:
		t := newConj()
		t.addAtom(f.atom)
		return []*conj{t}, true
	case fOr:
		var out []*conj
		for _, k := range f.kids {
			ts, ok := dnf(k)
			if !ok {
				return nil, false
			}
			out = append(out, ts...)
			if out = reduce(out); len(out) > maxTerms {
				return nil, false
			}
		}
		return out, true
	case fAnd:
		out := []*conj{newConj()}
		for _, k := range f.kids {
			if k.kind == fConst && k.val {
				continue // and-ing with true changes nothing
			}
			ts, ok := dnf(k)
			if !ok {
				return nil, false
			}
			if len(out)*len(ts) > maxTerms*maxTerms {
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
			if out = reduce(next); len(out) > maxTerms {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

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
	u, state := domain(u)
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

// finish sorts the conjunctions into the exported canonical form.
func finish(cs []*conj) *Form {
	cs = reduce(cs)
	f := &Form{Terms: []*Term{}}
	for _, c := range cs {
		t := &Term{}
		t.Bounds = append(t.Bounds, c.bounds...)
		sort.Slice(t.Bounds, func(i, j int) bool { return dirLess(t.Bounds[i].Dir, t.Bounds[j].Dir) })
		t.Atoms = append(t.Atoms, c.atoms...)
		sort.Slice(t.Atoms, func(i, j int) bool { return t.Atoms[i].Text < t.Atoms[j].Text })
		f.Terms = append(f.Terms, t)
	}
	sort.SliceStable(f.Terms, func(i, j int) bool { return f.Terms[i].String() < f.Terms[j].String() })
	return f
}

// dirLess orders directions so that q - kv comes before q alone and kv alone.
func dirLess(a, b Linear) bool {
	return a.String() < b.String()
}

// DistanceRange returns the bounds on d = q - kv that every true point of
// the form satisfies: the hull of the top-left `q - kv` bounds of all
// terms. A side is unbounded when some term does not bound it. The code
// generator uses it to skip tiles that lie wholly outside the band. ok is
// false for a TooComplex form; a never-true form gives the empty bound
// Lo = 1 > Hi = 0.
func (f *Form) DistanceRange() (b Bound, ok bool) {
	if f.TooComplex {
		return Bound{}, false
	}
	b = Bound{Dir: distance}
	if len(f.Terms) == 0 {
		return Bound{Dir: distance, Lo: 1, Hi: 0, HasLo: true, HasHi: true}, true
	}
	for i, t := range f.Terms {
		var tb Bound
		for _, x := range t.Bounds {
			if x.Dir == distance {
				tb = x
			}
		}
		if i == 0 {
			b.Lo, b.HasLo, b.Hi, b.HasHi = tb.Lo, tb.HasLo, tb.Hi, tb.HasHi
			continue
		}
		b.HasLo = b.HasLo && tb.HasLo
		b.Lo = min(b.Lo, tb.Lo)
		b.HasHi = b.HasHi && tb.HasHi
		b.Hi = max(b.Hi, tb.Hi)
	}
	if !b.HasLo {
		b.Lo = 0
	}
	if !b.HasHi {
		b.Hi = 0
	}
	return b, true
}

// distance is the direction q - kv.
var distance = func() Linear { l := varLinear(dsl.VarQ); l.Coef[dsl.VarKV] = -1; return l }()
