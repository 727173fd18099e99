package codegen

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/normal"
)

// This file turns a mask's normal form (package normal, the one the
// classifier reads too) into the block-sparsity plan: the steps that
// compute a tile row's kv range (and a tile column's q range) and decide
// whether a tile is full. The plan is data, read by two consumers that must
// agree: the C printer (sparsity.go), which writes maskc_kv_range,
// maskc_q_range and maskc_tile_full into the kernel, and the host evaluator
// (hostsparsity.go), which runs the same steps on the CPU to draw the tile
// map a kernel uses.

// sparsityPlan is the block sparsity of one mask.
type sparsityPlan struct {
	kind   hipsrc.Sparsity
	reason string
	// analysed is false when there is no mask or its normal form is too
	// large; the kernel then visits every tile.
	analysed bool
	// form is the mask's normal form; the plan's linear forms use its
	// extra variables.
	form *normal.Form
	// disjuncts are the terms of the analysed form (none: the mask is false
	// everywhere). The kernel reads their ranges and full tests only when
	// kind is SparsityAnalytic.
	disjuncts []disjunctPlan
}

// disjunctPlan is what one term of the form bounds.
type disjunctPlan struct {
	text string // the term, as normal prints it
	// kv computes the term's kv range over the q rows [q_lo, q_hi) (the
	// forward's row walk); q its q range over the kv columns [kv_lo,
	// kv_hi) (the backward's column walk).
	kv, q walkPlan
	// full is the test that every pair of a tile satisfies the term; nil
	// when an opaque condition or a bound not monotone in q and kv makes
	// that unprovable.
	full []fullTest
	// selFull is full with the term's block selection tested too (the
	// selection is its only opaque condition); it becomes full where the
	// row walk takes the selections (newSparsityPlan).
	selFull []fullTest
	// periods are the term's remainder conditions on q and kv, which the
	// tile filter tests per tile (period.go).
	periods []periodStep
}

// walkPlan computes one term's range [ia, ib] of the inner variable (kv in
// the row walk, q in the column walk) over outer values [oa, ob] given by
// the tile.
type walkPlan struct {
	inner, outer dsl.Var
	// live are the term's conditions on b, h, the sizes and symbols: the
	// term is dead where one fails.
	live []cond
	// outerSteps narrow [oa, ob] (bounds on the outer variable alone).
	outerSteps []sideStep
	// innerSteps bound the inner variable, each side evaluated at the end
	// of [oa, ob] where it is loosest.
	innerSteps []sideStep
	// segs narrow [ia, ib] to the segments of oa .. ob.
	segs []*BufferABI
	// loose are the texts of the conditions that bound nothing here; the
	// mask evaluates them per element.
	loose []string
	// bounded is set when some step bounds the inner variable.
	bounded bool
	// dataRel are the loose conditions that relate q and kv through buffer
	// values (`img[q] == img[kv]` over ids not declared segments): which
	// tiles of the range they empty only the data says (choose).
	dataRel []string
	// sel is the term's first block selection (selection.go), kv walk
	// only; its atom is in loose too (evaluated per element).
	sel *selStep
}

// cond is a condition of a term: a bound, or an atom (an opaque condition
// free of q and kv, or a `segments` equality).
type cond struct {
	bound normal.Bound
	atom  *normal.Atom
	seg   *BufferABI // for a segments equality
}

// sideStep is one side of an interval (normal.Side) on the variable a walk
// narrows: v <= side (upper) or v >= side.
type sideStep struct {
	side  normal.Side
	upper bool
	// atHi evaluates the side with the outer variable at ob (else oa); only
	// for inner steps whose side reads the outer variable.
	atHi bool
	text string // the bound it came from
}

// fullTest is one conjunct of a term's full-tile test.
type fullTest struct {
	cond
	// sel: the tile's rows read one selected block and its keys lie in it.
	sel *selStep
	// qMax, kvMax: the bound's direction is largest at q = qb (else qa)
	// and kv = kb (else ka); it is smallest at the opposite corner.
	qMax, kvMax bool
}

// coefLimit bounds the coefficients and constants the plan's generated
// int64 arithmetic multiplies and adds, so that it cannot overflow for
// indices below 2^31 (a bound with larger ones is evaluated per element).
const coefLimit = 1 << 30

// newSparsityPlan analyses the mask (nil: no mask), in its normal form
// from opts (Options.canon).
func newSparsityPlan(l *dsl.Lowered, bufs []BufferABI, opts Options) sparsityPlan {
	if l == nil || l.Expr == nil {
		return sparsityPlan{kind: SparsityNone, reason: "no mask: every kv tile is visited and full"}
	}
	f := opts.canon(l)
	if !f.TooComplex {
		f = f.Copy() // rewriteTerm may add quotients
	}
	if f.TooComplex {
		return sparsityPlan{kind: SparsityPrepass, reason: tooBigReason}
	}
	byName := map[string]*BufferABI{}
	for i := range bufs {
		byName[bufs[i].Name] = &bufs[i]
	}
	p := sparsityPlan{analysed: true, form: f}
	for _, t := range f.Terms {
		p.disjuncts = append(p.disjuncts, planTerm(f, t, byName))
	}
	p.kind, p.reason = choose(p)
	if selWalk(p) {
		for i := range p.disjuncts {
			if d := &p.disjuncts[i]; d.full == nil && d.selFull != nil {
				d.full = d.selFull
			}
		}
	}
	return p
}

// segmentBuffer returns the buffer of a `segments` equality the kernel can
// search (buf[q] == buf[kv] over a 1-D integer buffer declared segments),
// else nil.
func segmentBuffer(a *normal.Atom, byName map[string]*BufferABI) *BufferABI {
	if a.Kind != normal.AtomSegment || a.Neg || a.Batch || !a.Segments() {
		return nil
	}
	b := byName[a.Buffer.Name.Name]
	if b == nil || len(b.Dims) != 1 || !b.Segments || !buftype.CanSegment(b.DType) {
		return nil
	}
	return b
}

// planTerm plans one term's row walk, column walk and full test.
func planTerm(f *normal.Form, t *normal.Term, byName map[string]*BufferABI) disjunctPlan {
	d := disjunctPlan{text: termText(f, t)}
	t = rewriteTerm(f, t)
	d.periods = termPeriods(f, t)
	d.kv = planWalk(f, t, dsl.VarKV, dsl.VarQ, byName)
	d.q = planWalk(f, t, dsl.VarQ, dsl.VarKV, byName)
	full := []fullTest{}
	for _, b := range t.Bounds {
		sq, ok1 := f.Monotone(b.Dir, dsl.VarQ)
		sk, ok2 := f.Monotone(b.Dir, dsl.VarKV)
		if !ok1 || !ok2 || !safeLinear(f, b.Dir) || !safeBound(b) {
			return d
		}
		full = append(full, fullTest{cond: cond{bound: b}, qMax: sq >= 0, kvMax: sk >= 0})
	}
	var sel *selStep
	for _, a := range t.Atoms {
		switch {
		case segmentBuffer(a, byName) != nil:
			full = append(full, fullTest{cond: cond{atom: a, seg: segmentBuffer(a, byName)}})
		case freeAtom(a):
			full = append(full, fullTest{cond: cond{atom: a}})
		case sel == nil && d.kv.sel != nil && a.Text == d.kv.sel.text:
			sel = d.kv.sel
		default:
			return d
		}
	}
	if sel != nil {
		d.selFull = append(full, fullTest{sel: sel})
		return d
	}
	d.full = full
	return d
}

// freeAtom reports whether an atom reads neither q nor kv.
func freeAtom(a *normal.Atom) bool {
	for _, v := range a.Vars {
		if v == dsl.VarQ || v == dsl.VarKV {
			return false
		}
	}
	return a.Kind == normal.AtomOpaque
}

// planWalk plans the range of inner over the outer variable's tile range.
func planWalk(f *normal.Form, t *normal.Term, inner, outer dsl.Var, byName map[string]*BufferABI) walkPlan {
	w := walkPlan{inner: inner, outer: outer}
	var outerOnly normal.Term
	for _, b := range t.Bounds {
		switch {
		case b.Uses(inner):
		case b.Uses(outer):
			outerOnly.Bounds = append(outerOnly.Bounds, b)
		case safeLinear(f, b.Dir) && safeBound(b):
			w.live = append(w.live, cond{bound: b})
		default:
			w.loose = append(w.loose, b.String())
		}
	}
	// Bounds on the outer variable alone narrow its range; their sides
	// read neither variable.
	ov := f.Interval(&outerOnly, outer)
	for _, s := range ov.Lo {
		w.addOuter(f, s, false)
	}
	for _, s := range ov.Hi {
		w.addOuter(f, s, true)
	}
	for _, b := range ov.Loose {
		w.loose = append(w.loose, b.String())
	}
	// Bounds reading the inner variable: each of their sides is monotone
	// in the outer variable when every coefficient reading it has one
	// sign; it is then loosest at one end of the outer range. A bound's
	// sides come in the order of its own (lower, then upper), as written.
	for _, b := range t.Bounds {
		if !b.Uses(inner) {
			continue
		}
		iv := f.Interval(&normal.Term{Bounds: []normal.Bound{b}}, inner)
		first, second := iv.Lo, iv.Hi
		firstUpper := false
		if s, _ := f.Monotone(b.Dir, inner); s < 0 {
			first, second, firstUpper = iv.Hi, iv.Lo, true
		}
		for k, ss := range [][]normal.Side{first, second} {
			upper := firstUpper == (k == 0)
			for _, s := range ss {
				m, ok := f.Monotone(s.Num, outer)
				if !ok || !safeSide(f, s) {
					w.loose = append(w.loose, sideText(f, s, inner, upper))
					continue
				}
				// An upper side grows with its numerator: largest at ob
				// when the numerator does not fall as the outer variable
				// grows; a lower side is smallest at oa then.
				atHi := m != 0 && (m > 0) == upper
				w.innerSteps = append(w.innerSteps, sideStep{side: s, upper: upper, atHi: atHi, text: sideText(f, s, inner, upper)})
				w.bounded = true
			}
		}
		for _, lb := range iv.Loose {
			w.loose = append(w.loose, lb.String())
		}
	}
	for _, a := range t.Atoms {
		switch {
		case segmentBuffer(a, byName) != nil:
			w.segs = append(w.segs, segmentBuffer(a, byName))
			w.bounded = true
		case freeAtom(a):
			w.live = append(w.live, cond{atom: a})
		default:
			if inner == dsl.VarKV && w.sel == nil {
				w.sel = selectionAtom(a, byName)
			}
			if (w.sel == nil || w.sel.text != a.Text) && relatesThroughBuffer(a) {
				w.dataRel = append(w.dataRel, a.Text)
			}
			w.loose = append(w.loose, a.Text)
		}
	}
	return w
}

// relatesThroughBuffer reports whether a reads q and kv and a buffer
// value: an equality of buffer ids or an opaque condition with a buffer
// read.
func relatesThroughBuffer(a *normal.Atom) bool {
	var q, kv bool
	for _, v := range a.Vars {
		q = q || v == dsl.VarQ
		kv = kv || v == dsl.VarKV
	}
	if !q || !kv {
		return false
	}
	if a.Kind == normal.AtomSegment {
		return true
	}
	reads := false
	dsl.Inspect(a.Expr, func(e dsl.Expr) bool {
		if _, ok := e.(*dsl.IndexExpr); ok {
			reads = true
		}
		return !reads
	})
	return reads
}

// addOuter records a side on the outer variable, or notes it loose.
func (w *walkPlan) addOuter(f *normal.Form, s normal.Side, upper bool) {
	text := sideText(f, s, w.outer, upper)
	if !safeSide(f, s) {
		w.loose = append(w.loose, text)
		return
	}
	w.outerSteps = append(w.outerSteps, sideStep{side: s, upper: upper, text: text})
}

// small reports whether |c| is below coefLimit.
func small(c int64) bool { return c > -coefLimit && c < coefLimit }

// safeLinear reports whether l and the quotients it reads have only small
// coefficients and constants.
func safeLinear(f *normal.Form, l normal.Linear) bool {
	if !small(l.K) {
		return false
	}
	for _, c := range l.Coef {
		if !small(c) {
			return false
		}
	}
	for i, c := range l.X {
		if c == 0 {
			continue
		}
		if !small(c) || i >= len(f.Extras) {
			return false
		}
		if e := f.Extras[i]; e.Kind == normal.ExtraDiv && (!small(e.Den) || !safeLinear(f, e.Num)) {
			return false
		}
	}
	return true
}

func safeBound(b normal.Bound) bool {
	return (!b.HasLo || small(b.Lo)) && (!b.HasHi || small(b.Hi))
}

func safeSide(f *normal.Form, s normal.Side) bool {
	return safeLinear(f, s.Num) && small(s.Den) && small(s.Mul) && small(s.Off)
}

// sideText prints `v <= side` or `v >= side` for comments, a plain side
// (v against a linear form) as an inequality with positive terms on both
// sides, e.g. `kv <= q` or `q - 1024 <= kv`.
func sideText(f *normal.Form, s normal.Side, v dsl.Var, upper bool) string {
	name := func(i int) string { return f.Extras[i].Text }
	if s.Den == 1 && s.Mul == 1 && s.Off == 0 {
		d := s.Num // upper: v - num <= 0; lower: num - v <= 0
		if upper {
			d = scaleLinear(d, -1)
			d.Coef[v]++
		} else {
			d.Coef[v]--
		}
		return linearText(f, d)
	}
	n := s.Num.Format(name)
	if s.Den != 1 {
		if strings.Contains(n, " ") {
			n = "(" + n + ")"
		}
		if upper {
			n = fmt.Sprintf("%s // %d", n, s.Den)
		} else {
			n = fmt.Sprintf("ceil(%s / %d)", n, s.Den)
		}
	}
	if s.Mul != 1 {
		if strings.Contains(n, " ") {
			n = "(" + n + ")"
		}
		n = fmt.Sprintf("%d * %s", s.Mul, n)
	}
	switch {
	case s.Off > 0:
		n = fmt.Sprintf("%s + %d", n, s.Off)
	case s.Off < 0:
		n = fmt.Sprintf("%s - %d", n, -s.Off)
	}
	op := " >= "
	if upper {
		op = " <= "
	}
	return v.String() + op + n
}

// linearText prints l <= 0 with positive terms on the left and negative
// ones on the right, extra variables by their text.
func linearText(f *normal.Form, l normal.Linear) string {
	var ts []term
	for v, c := range l.Coef {
		if c != 0 {
			ts = append(ts, term{c, dsl.Var(v).String()})
		}
	}
	for i, c := range l.X {
		if c != 0 {
			text := f.Extras[i].Text
			if strings.Contains(text, " ") && c != 1 && c != -1 {
				text = "(" + text + ")"
			}
			ts = append(ts, term{c, text})
		}
	}
	return relation(ts, l.K, "<=", func(c int64) string { return fmt.Sprint(c) })
}

// boundTexts prints a bound as the inequalities of its sides, e.g. `kv <=
// q` and `q - 1024 <= kv` for 0 <= q - kv <= 1024, or `kv // 64 <= q //
// 64`; a bound mixing quotients with index variables (a remainder) as
// normal prints it, e.g. `(q - kv) % 2 == 0`.
func boundTexts(f *normal.Form, b normal.Bound) []string {
	if readsDiv(f, b.Dir) && b.Dir.Coef != ([normal.NumVars]int64{}) {
		return []string{b.String()}
	}
	var out []string
	if b.HasLo {
		d := scaleLinear(b.Dir, -1)
		d.K += b.Lo
		out = append(out, linearText(f, d))
	}
	if b.HasHi {
		d := b.Dir
		d.K -= b.Hi
		out = append(out, linearText(f, d))
	}
	return out
}

// termText prints a term for comments: segment equalities, the bounds'
// inequalities, then the other atoms.
func termText(f *normal.Form, t *normal.Term) string {
	var parts []string
	for _, a := range t.Atoms {
		if a.Kind == normal.AtomSegment {
			parts = append(parts, a.Text)
		}
	}
	for _, b := range t.Bounds {
		parts = append(parts, boundTexts(f, b)...)
	}
	for _, a := range t.Atoms {
		if a.Kind != normal.AtomSegment {
			parts = append(parts, a.Text)
		}
	}
	if len(parts) == 0 {
		return "true"
	}
	return strings.Join(parts, " and ")
}

// segments lists the segments buffers the plan searches, in first-use
// order (their search functions precede the sparsity code).
func (p sparsityPlan) segments() []*BufferABI {
	var out []*BufferABI
	seen := map[*BufferABI]bool{}
	use := func(b *BufferABI) {
		if b != nil && !seen[b] {
			seen[b] = true
			out = append(out, b)
		}
	}
	for _, d := range p.disjuncts {
		for _, b := range d.kv.segs {
			use(b)
		}
		for _, b := range d.q.segs {
			use(b)
		}
	}
	for _, d := range p.disjuncts {
		for _, f := range d.full {
			use(f.seg)
		}
	}
	return out
}
