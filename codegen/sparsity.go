package codegen

import (
	"fmt"
	"slices"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/normal"
)

// Block-sparsity strategies recorded in Kernel.Sparsity (hipsrc.Sparsity
// is the one definition).
const (
	// SparsityAnalytic: closed-form kv ranges and full-tile tests.
	SparsityAnalytic = hipsrc.SparsityAnalytic
	// SparsityPrepass: the template's maskc_tile_flags pre-pass classifies
	// every tile as empty, partial or full by evaluating the mask.
	SparsityPrepass = hipsrc.SparsityPrepass
	// SparsityNone: there is no mask; every tile is full.
	SparsityNone = hipsrc.SparsityNone
)

const kvRangeSig = `__device__ __forceinline__ void maskc_g_kv_range(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                 long long b, long long h, long long q_lo, long long q_hi, long long* lo, long long* hi)`

const kvIntervalsSig = `__device__ __forceinline__ void maskc_g_kv_intervals(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                     long long b, long long h, long long q_lo, long long q_hi, long long* lo, long long* hi)`

// maxKVIntervals bounds maskc_kv_interval_count: masks with more disjuncts
// get their hull as one interval. As many as a block selection walks
// (maxSelIntervals): the walk's machinery is the same (tile_walk.h), and a
// union of more than 8 windows or global ranges walked as its hull visited
// several times the tiles it keeps.
const maxKVIntervals = maxSelIntervals

// maxQIntervals bounds maskc_q_interval_count, the backward's column walk:
// masks with more disjuncts get their q hull as one interval. Kept at 8,
// where the measured backwards were built (the selections' q lists reach 9
// and 17), until a GPU run times a longer list there.
const maxQIntervals = 8

// trivialIntervals is maskc_kv_intervals when every kv may be visible.
const trivialIntervals = "constexpr int maskc_kv_interval_count = 1;\n" + kvIntervalsSig + " {\n  lo[0] = 0;\n  hi[0] = KV;\n}\n"

const qIntervalsSig = `__device__ __forceinline__ void maskc_g_q_intervals(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                    long long b, long long h, long long kv_lo, long long kv_hi, long long* lo, long long* hi)`

// trivialQIntervals is maskc_q_intervals when every q may see the keys.
const trivialQIntervals = "constexpr int maskc_q_interval_count = 1;\n" + qIntervalsSig + " {\n  lo[0] = 0;\n  hi[0] = Q;\n}\n"

const qRangeSig = `__device__ __forceinline__ void maskc_g_q_range(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                long long b, long long h, long long kv_lo, long long kv_hi, long long* lo, long long* hi)`

const tileFullSig = `__device__ __forceinline__ bool maskc_g_tile_full(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                  long long b, long long h, long long q_lo, long long q_hi, long long kv_lo, long long kv_hi)`

// sparsity is the block-sparsity plan of one mask and the generated
// functions implementing it.
type sparsity struct {
	plan     sparsityPlan
	code     string       // maskc_kv_range and maskc_tile_full
	segments []*BufferABI // segments buffers whose binary searches the code calls
}

// tooBigReason is the plan's reason when the mask is not analysed.
var tooBigReason = fmt.Sprintf("the mask's normal form exceeds %d disjuncts; the pre-pass flags empty and full tiles", normal.MaxTerms)

// planSparsity analyses the mask (nil: no mask) and generates
// maskc_kv_range, maskc_kv_intervals, maskc_q_range, maskc_q_intervals and
// maskc_tile_full from its plan (sparsityplan.go).
//
// The mask's normal form (package normal) is a disjunction of terms, each
// a conjunction of bounds lo <= d <= hi on linear forms d over b, h, q, kv,
// the sizes and extra variables (floor quotients by constants, symbols
// free of q and kv such as `prefix_len[b]`), `segments` equalities and
// opaque atoms. For each term, over q in [q_lo, q_hi): bounds and atoms
// free of q and kv decide whether it is live; bounds on q alone narrow the
// q range; each bound reading kv gives sides on kv (normal.Form.Interval:
// on kv itself, or on a block index (kv + k) // C), evaluated at the q end
// point where they are loosest when they are monotone in q; a `segments`
// equality bounds kv to the documents of the first and last q, found by
// binary search. Each term's kv range, clamped to [0, KV), is one interval
// of maskc_kv_intervals (the forward visits the tiles of their union,
// hipsrc/tile_walk.h); maskc_kv_range is their hull. A tile is full when
// some term has only bounds monotone in q and in kv, each holding at the
// tile corners where it is tightest, segment equalities holding between
// the tile's first and last rows and columns, and conditions on b and h.
// Other conditions (remainders, non-linear terms, other buffer lookups) are
// assumed true for ranges and make their term unusable for fullness, so
// both answers stay sound. maskc_q_range and maskc_q_intervals are the same
// with the roles of q and kv exchanged, for the backward's column walk.
func planSparsity(l *dsl.Lowered, bufs []BufferABI, opts Options, diags *dsl.Diagnostics) sparsity {
	p := newSparsityPlan(l, bufs, opts)
	switch {
	case p.kind == SparsityNone:
		return sparsity{plan: p, code: kvRangeSig + " {\n  *lo = 0;\n  *hi = KV;\n}\n\n" + trivialIntervals + "\n" + qRangeSig + " {\n  *lo = 0;\n  *hi = Q;\n}\n\n" + trivialQIntervals + "\n" +
			tileFullSig + " {\n  return true;\n}\n"}
	case !p.analysed:
		return sparsity{plan: p, code: kvRangeSig + " {\n  // not analysed: the pre-pass decides\n  *lo = 0;\n  *hi = KV;\n}\n\n" + trivialIntervals + "\n" +
			qRangeSig + " {\n  // not analysed: the pre-pass decides\n  *lo = 0;\n  *hi = Q;\n}\n\n" + trivialQIntervals + "\n" + tileFullSig + " {\n  return false;\n}\n"}
	}
	g := &sparsityWriter{w: newFuncWriter(nil, l, cDouble, bufs, diags), f: p.form}
	return sparsity{plan: p, code: g.kvRange(p) + "\n" + g.rowIntervals(p) + g.termLive(p) + perElementFact(p) + qRangeMonotoneFact(p) + g.qRange(p) + "\n" + g.tileFull(p) + g.prepassTerms(p), segments: p.segments()}
}

// maxPrepassTerms bounds the terms the pre-pass tests one by one (a bit
// each of maskc_g_term_rows's answer).
const maxPrepassTerms = 32

// prepassTermTests reports whether the pre-pass tests a tile term by term
// before evaluating its pairs (prepassTerms): a pre-pass kernel whose mask
// has an analysed normal form of at most maxPrepassTerms terms, each of
// which narrows the tiles it can meet (termNarrows) with no search of a
// segments buffer. The tests are made by every thread of a pre-pass block:
// where each term's range is closed form, a few integer operations decide
// most tiles (Gemma 4's sliding layer: its pre-pass 0.146 -> 0.052 ms at
// 2x16x8192 on the H100, docs/kernel-decisions.md); where each range is
// two binary searches of a document buffer, their dependent reads cost
// more than evaluating the tile's pairs (packed multimodal documents:
// 0.063 -> 0.085 ms); and a term that meets every tile (`flag[kv]`) leaves
// no tile to decide empty.
func prepassTermTests(p sparsityPlan) bool {
	if p.kind != SparsityPrepass || !p.analysed || len(p.disjuncts) == 0 || len(p.disjuncts) > maxPrepassTerms ||
		len(p.disjuncts) != len(p.form.Terms) {
		return false
	}
	for i, d := range p.disjuncts {
		if len(d.kv.segs) > 0 || !termNarrows(d, p.form.Terms[i]) {
			return false
		}
	}
	return true
}

// termNarrows reports whether term t (its plan d) leaves some tiles of a
// (b, h) unmet: it bounds the keys over a tile's rows, or it has a
// condition on q alone (qOnlyAtoms) that fails on some rows.
func termNarrows(d disjunctPlan, t *normal.Term) bool {
	return d.kv.bounded || len(d.kv.outerSteps) > 0 || len(qOnlyAtoms(t)) > 0
}

// qOnlyAtoms are the opaque conditions of t that read q and not kv.
func qOnlyAtoms(t *normal.Term) []*normal.Atom {
	var out []*normal.Atom
	for _, a := range t.Atoms {
		if a.Kind == normal.AtomOpaque && slices.Contains(a.Vars, dsl.VarQ) && !slices.Contains(a.Vars, dsl.VarKV) {
			out = append(out, a)
		}
	}
	return out
}

// prepassTerms prints, where prepassTermTests holds, MASKC_PREPASS_TERMS
// and what hipsrc/attn_fwd.h's maskc_tile_flags reads with it:
// maskc_g_term_rows, one bit per term, set where the term's conditions on
// q alone (its atoms that read q and not kv) hold at a row, and
// maskc_g_kv_term_ranges, each term's kv range over the rows (its bounds;
// the conditions that bound nothing assumed true, as maskc_kv_range does).
// A tile that no term both live on one of its rows and ranging over its
// keys meets holds no kept pair: the pre-pass flags it empty without
// evaluating its pairs, and a tile maskc_tile_full proves full, full.
// Gemma 4's image groups (`g[q] >= 0 and g[q] == g[kv]`) are such a term:
// live on the q tiles holding image rows only.
func (g *sparsityWriter) prepassTerms(p sparsityPlan) string {
	if !prepassTermTests(p) {
		return ""
	}
	g.reset()
	g.line("unsigned bits = 0;")
	for i, t := range p.form.Terms {
		var conds []string
		for _, a := range qOnlyAtoms(t) {
			conds = append(conds, g.condCode(cond{atom: a}))
		}
		if len(conds) == 0 {
			g.line("bits |= 1u << %d;  // disjunct %d: no condition on q alone", i, i)
			continue
		}
		g.line("bits |= (%s) ? 1u << %d : 0u;  // disjunct %d", strings.Join(conds, " && "), i, i)
	}
	g.line("(void)buf, (void)B, (void)H, (void)HKV, (void)Q, (void)KV, (void)b, (void)h, (void)q;")
	g.line("return bits;")
	rows := g.w.body.String()

	g.reset()
	g.walkDisjuncts(p, dsl.VarKV, func(i int, n walkNames) { g.termInterval(i, n, n.ka, n.kb) })
	ranges := g.w.body.String()
	return "\n// The pre-pass's tests per term (hipsrc/attn_fwd.h's maskc_tile_flags): a tile that no term\n" +
		"// live on one of its rows and ranging over its keys meets holds no kept pair.\n" +
		"#define MASKC_PREPASS_TERMS 1\n" +
		fmt.Sprintf("constexpr int maskc_term_count = %d;\n", len(p.disjuncts)) +
		"// Bit i: term i's conditions on q alone (its atoms that read q, not kv) hold at row q.\n" +
		termRowsSig + " {\n" + rows + "}\n" +
		"// Term i's kv range [lo[i], hi[i]) over the rows [q_lo, q_hi) (empty when lo[i] >= hi[i]).\n" +
		termRangesSig + " {\n" + ranges + "}\n"
}

const termRowsSig = `__device__ __forceinline__ unsigned maskc_g_term_rows(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                    long long b, long long h, long long q)`

const termRangesSig = `__device__ __forceinline__ void maskc_g_kv_term_ranges(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                        long long b, long long h, long long q_lo, long long q_hi, long long* lo, long long* hi)`

// perElement reports whether no tile of an analytic mask can be proven
// full (every term has a condition evaluated per element), while its kv
// walk takes no bound through floor division: a dilated window, not a 2-D
// neighbourhood. attn_fwd.h then evaluates the mask into keep bits before
// the MMA on sm_90a (MASKC_MASK_BITS): on the H200 (docs/kernel-decisions.md, run 19x)
// dilated2048 and examples/dilated_window gained 4%, where
// neighbourhood_2d (block-index bounds) lost 9% and masks with full tiles
// lost up to 5%.
func perElement(p sparsityPlan) bool {
	if p.kind != SparsityAnalytic || len(p.disjuncts) == 0 {
		return false
	}
	for _, d := range p.disjuncts {
		if d.full != nil || len(d.kv.loose) == 0 {
			return false
		}
		for _, s := range d.kv.innerSteps {
			if s.side.Mul > 1 || s.side.Num.UsesExtras() && readsDiv(p.form, s.side.Num) {
				return false
			}
		}
	}
	return true
}

// perElementFact is MASKC_MASK_PER_ELEMENT's definition where perElement
// holds, else "".
func perElementFact(p sparsityPlan) string {
	if !perElement(p) {
		return ""
	}
	return "// No tile can be proven full: every visited tile evaluates the mask per element.\n#define MASKC_MASK_PER_ELEMENT 1\n\n"
}

// qRangeMonotone reports whether maskc_q_range's ends never fall as its kv
// range moves right over the kv tiles whose range is not empty: a single
// term (a union's hull moves back where a term is born or dies) whose
// sides on q all grow or stay with kv (normal.Form.Monotone), with no
// block selection or data relation narrowing q; its segment searches give
// the first and last row of the documents of the range's ends, which grow
// with kv where the ids are sorted (and apply to every tile or none). The
// ordered dQ's envelope of such a kv tile is then its own range
// (attn_bwd.h's maskc_bwd_order_tiles), not a reduction over every kv
// tile of the head.
func qRangeMonotone(p sparsityPlan) bool {
	if p.kind != SparsityAnalytic || len(p.disjuncts) != 1 {
		return false
	}
	w := p.disjuncts[0].q
	if w.sel != nil || len(w.dataRel) > 0 {
		return false
	}
	for _, s := range w.innerSteps {
		if m, ok := p.form.Monotone(s.side.Num, dsl.VarKV); !ok || m < 0 {
			return false
		}
	}
	return true
}

// qRangeMonotoneFact is MASKC_Q_RANGE_MONOTONE's definition where
// qRangeMonotone holds, else "".
func qRangeMonotoneFact(p sparsityPlan) string {
	if !qRangeMonotone(p) {
		return ""
	}
	return "// maskc_q_range's ends never fall as its kv range moves right (one term, sides growing with kv).\n#define MASKC_Q_RANGE_MONOTONE 1\n\n"
}

const kvIntervalsLaneSig = `__device__ __forceinline__ void maskc_g_kv_intervals_lane(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                          long long b, long long h, long long q_lo, long long q_hi, long long* lo, long long* hi)`

const kvRowsExactSig = `__device__ __forceinline__ bool maskc_g_kv_rows_exact(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV)`

// rowsExact reports whether maskc_kv_intervals of a single row q is the
// row's kept set exactly (where maskc_kv_rows_exact holds at run time):
// every term bounds kv by sides that normal.Interval proves exact, segment
// equalities and conditions free of q and kv, with nothing left to evaluate
// per element, and there are at most maxKVIntervals terms or their union is
// their hull (unionIsHull), so that no interval is a hull wider than its
// terms.
func rowsExact(p sparsityPlan) bool {
	if p.kind != SparsityAnalytic || len(p.disjuncts) == 0 || len(p.disjuncts) > maxKVIntervals && !unionIsHull(p, dsl.VarKV) {
		return false
	}
	for _, d := range p.disjuncts {
		if len(d.kv.loose) > 0 {
			return false
		}
	}
	return true
}

// rowIntervals prints, for a mask whose single-row intervals are exact
// (rowsExact), MASKC_KV_ROWS_EXACT, maskc_kv_intervals_lane (the
// intervals with per-lane segment searches, so that each lane may ask for
// its own row) and maskc_kv_rows_exact, the run-time condition: every
// segments buffer covers Q and KV (else the searches are skipped and an
// interval only bounds its row). attn_fwd.h's MASKC_ROW_BITS tests a
// partial tile's keys against the rows' intervals instead of the mask.
func (g *sparsityWriter) rowIntervals(p sparsityPlan) string {
	if !rowsExact(p) {
		return ""
	}
	g.lane = "_lane"
	defer func() { g.lane = "" }()
	g.reset()
	if unionIsHull(p, dsl.VarKV) {
		// No segment search: the lanes' rows need no lane-wise one.
		g.line("%s(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, &lo[0], &hi[0]);  // their union is their hull", funcName(kvRangeSig))
	} else {
		g.walkDisjuncts(p, dsl.VarKV, func(i int, n walkNames) { g.termInterval(i, n, n.ka, n.kb) })
	}
	var b strings.Builder
	b.WriteString("// The mask keeps exactly the kv of maskc_kv_intervals(q, q + 1) for every row q\n")
	b.WriteString("// where maskc_kv_rows_exact holds (its terms are exact bounds and segment equalities).\n")
	b.WriteString("#define MASKC_KV_ROWS_EXACT 1\n")
	b.WriteString("// maskc_kv_intervals with per-lane segment searches (lanes may pass different rows).\n")
	b.WriteString(kvIntervalsLaneSig + " {\n" + g.w.body.String() + "}\n")
	var conds []string
	for _, seg := range p.segments() {
		dim := fmt.Sprintf("buf.dim[%d][0]", seg.Slot)
		conds = append(conds, fmt.Sprintf("%s(buf) && Q <= %s && KV <= %s", segSortedName(seg), dim, dim))
	}
	exact := "true"
	if len(conds) > 0 {
		exact = strings.Join(conds, " && ")
	}
	if len(conds) > 0 {
		b.WriteString("// Whether the single-row intervals are exact for this launch: the segment searches apply to every row\n")
		b.WriteString("// (the ids are sorted and cover Q and KV).\n")
	} else {
		b.WriteString("// Whether the single-row intervals are exact for this launch: the segment searches apply to every row.\n")
	}
	b.WriteString(kvRowsExactSig + " {\n  return " + exact + ";\n}\n\n")
	return b.String()
}

// choose picks analytic or prepass: the pre-pass pays off only when some
// term with a condition evaluated per element has no kv bound at all, so
// that the analytic range degenerates to every kv.
func choose(p sparsityPlan) (hipsrc.Sparsity, string) {
	var linearN, segN, blockN int
	var loose []string
	filtered := filterable(p)
	_, selected := selFit(p)
	for _, d := range p.disjuncts {
		w := d.kv
		// A term whose kv range is bounded only by a block selection walks
		// the blocks it selects (selCode) where the row walk takes them.
		if !w.bounded && len(w.loose) > 0 && !(filtered && periodsCover(d)) && !(selected && w.sel != nil) {
			return SparsityPrepass, fmt.Sprintf("`%s` bounds no kv range (buffer lookup or non-linear term); the pre-pass flags empty and full tiles", w.loose[len(w.loose)-1])
		}
		if len(w.dataRel) > 0 { // selections or not: only the data shows the empty tiles
			return SparsityPrepass, fmt.Sprintf("`%s` relates q and kv through buffer values, which leave tiles of the term's kv range empty that only the data shows; the pre-pass flags empty and full tiles (PrepassTileCost per tile against a visit)", w.dataRel[0])
		}
		segN += len(w.segs)
		for _, s := range w.innerSteps {
			if s.side.Mul > 1 || s.side.Num.UsesExtras() && readsDiv(p.form, s.side.Num) {
				blockN++
			}
		}
		loose = append(loose, w.loose...)
	}
	for _, t := range p.form.Terms {
		for _, b := range t.Bounds {
			if !readsDiv(p.form, b.Dir) {
				linearN += len(boundTexts(p.form, b))
			}
		}
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("closed-form kv range and full-tile test from %d linear constraint(s) in %d disjunct(s)", linearN, len(p.disjuncts)))
	if segN > 0 {
		parts = append(parts, "segment ids bounded by a search of the segments buffer")
	}
	if blockN > 0 {
		parts = append(parts, fmt.Sprintf("%d block-index bound(s) through floor division", blockN))
	}
	if filtered {
		var periods []string
		for _, d := range p.disjuncts {
			for _, s := range d.periods {
				periods = append(periods, "`"+s.text+"`")
			}
		}
		parts = append(parts, "tiles filtered by the remainder condition(s) "+strings.Join(uniq(periods), ", "))
	}
	if len(loose) > 0 {
		parts = append(parts, "evaluated per element: "+strings.Join(uniq(loose), ", "))
	}
	return SparsityAnalytic, strings.Join(parts, "; ")
}

// readsDiv reports whether l reads a floor-quotient extra variable.
func readsDiv(f *normal.Form, l normal.Linear) bool {
	for i, c := range l.X {
		if c != 0 && i < len(f.Extras) && f.Extras[i].Kind == normal.ExtraDiv {
			return true
		}
	}
	return false
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// relation prints sum(ts) + c op 0 with the positive terms on the left
// and the negative ones, negated, on the right; a constant goes to the
// right when nothing else does (kv - 2047 <= 0 reads better as kv <= 2047).
func relation(ts []term, c int64, op string, lit func(int64) string) string {
	var left, right []term
	for _, t := range ts {
		if t.coef > 0 {
			left = append(left, t)
		} else if t.coef < 0 {
			right = append(right, term{-t.coef, t.code})
		}
	}
	lc, rc := c, int64(0)
	if len(right) == 0 {
		lc, rc = 0, -c
	}
	return sumCode(left, lc, lit) + " " + op + " " + sumCode(right, rc, lit)
}

// term is coef * code in a generated sum.
type term struct {
	coef int64
	code string
}

// sumCode prints sum(terms) + c readably: `q - kv + 5`.
func sumCode(ts []term, c int64, lit func(int64) string) string {
	var b strings.Builder
	for _, t := range ts {
		if t.coef == 0 {
			continue
		}
		coef := t.coef
		if b.Len() > 0 {
			if coef < 0 {
				b.WriteString(" - ")
				coef = -coef
			} else {
				b.WriteString(" + ")
			}
		} else if coef < 0 {
			b.WriteString("-")
			coef = -coef
		}
		if coef != 1 {
			b.WriteString(lit(coef) + " * ")
		}
		b.WriteString(t.code)
	}
	switch {
	case b.Len() == 0:
		return lit(c)
	case c > 0:
		b.WriteString(" + " + lit(c))
	case c < 0:
		b.WriteString(" - " + lit(-c))
	}
	return b.String()
}

// sparsityWriter prints the sparsity functions of a plan.
type sparsityWriter struct {
	w *funcWriter
	f *normal.Form // the plan's normal form
	// lane is appended to the segment searches' names: "" for the
	// warp-collective ones, "_lane" for per-lane binary searches.
	lane string
}

// reset starts a new function body.
func (g *sparsityWriter) reset() {
	g.w.body.Reset()
	g.w.temps = map[string]cExpr{}
	g.w.uses = map[string]int{}
	g.w.ntemp = 0
}

func (g *sparsityWriter) line(format string, args ...any) {
	g.w.body.WriteString("  ")
	fmt.Fprintf(&g.w.body, format, args...)
	g.w.body.WriteByte('\n')
}

// linTerms lists the terms of l at q = qv and kv = kvv as C int64 code;
// the plan never reads a variable it has not fixed ("" there).
func (g *sparsityWriter) linTerms(l normal.Linear, qv, kvv string) []term {
	var ts []term
	for v, c := range l.Coef {
		if c == 0 {
			continue
		}
		name := dsl.Var(v).String()
		switch dsl.Var(v) {
		case dsl.VarQ:
			name = qv
		case dsl.VarKV:
			name = kvv
		}
		if name == "" {
			panic("codegen: the sparsity plan reads " + dsl.Var(v).String() + " where it is not fixed")
		}
		ts = append(ts, term{c, name})
	}
	for i, c := range l.X {
		if c == 0 {
			continue
		}
		e := g.f.Extras[i]
		var code string
		if e.Kind == normal.ExtraDiv {
			code = fmt.Sprintf("maskc_py_floordiv(%s, %s)", g.linCode(e.Num, qv, kvv), intLit(e.Den))
		} else if code = conv(g.w.expr(e.Expr), cInt).code; strings.Contains(strings.TrimPrefix(code, "(long long)"), " ") {
			code = "(" + code + ")"
		}
		ts = append(ts, term{c, code})
	}
	return ts
}

// linCode prints the value of l at q = qv and kv = kvv as a C int64
// expression.
func (g *sparsityWriter) linCode(l normal.Linear, qv, kvv string) string {
	return sumCode(g.linTerms(l, qv, kvv), l.K, intLit)
}

// sideCode prints a side's value (normal.Side.Eval): Mul*floor(Num/Den) +
// Off for an upper side, Mul*ceil(Num/Den) + Off for a lower one, with Num
// at q = qv and kv = kvv.
func (g *sparsityWriter) sideCode(s normal.Side, upper bool, qv, kvv string) string {
	if s.Den == 1 {
		l := scaleLinear(s.Num, s.Mul)
		l.K += s.Off
		return g.linCode(l, qv, kvv)
	}
	if upper {
		return sumCode([]term{{s.Mul, fmt.Sprintf("maskc_py_floordiv(%s, %s)", g.linCode(s.Num, qv, kvv), intLit(s.Den))}}, s.Off, intLit)
	}
	return sumCode([]term{{-s.Mul, fmt.Sprintf("maskc_py_floordiv(%s, %s)", g.linCode(scaleLinear(s.Num, -1), qv, kvv), intLit(s.Den))}}, s.Off, intLit)
}

// scaleLinear is k*l (the plan's coefficients are small: no overflow).
func scaleLinear(l normal.Linear, k int64) normal.Linear {
	for i := range l.Coef {
		l.Coef[i] *= k
	}
	for i := range l.X {
		l.X[i] *= k
	}
	l.K *= k
	return l
}

// boundCodes prints the tests that bound b holds, its direction evaluated
// at (qLo, kvLo) against its lower side and at (qHi, kvHi) against its
// upper side.
func (g *sparsityWriter) boundCodes(b normal.Bound, qLo, kvLo, qHi, kvHi string) []string {
	if b.HasLo && b.HasHi && b.Lo == b.Hi && qLo == qHi && kvLo == kvHi {
		return []string{relation(g.linTerms(b.Dir, qLo, kvLo), b.Dir.K-b.Lo, "==", intLit)}
	}
	var parts []string
	if b.HasLo { // lo - d <= 0
		d := scaleLinear(b.Dir, -1)
		parts = append(parts, relation(g.linTerms(d, qLo, kvLo), d.K+b.Lo, "<=", intLit))
	}
	if b.HasHi { // d - hi <= 0
		parts = append(parts, relation(g.linTerms(b.Dir, qHi, kvHi), b.Dir.K-b.Hi, "<=", intLit))
	}
	return parts
}

// condCode prints a condition free of q and kv (a bound or an opaque
// atom) as a C bool.
func (g *sparsityWriter) condCode(c cond) string {
	if num, den, r, ok := c.bound.Remainder(); c.atom == nil && ok {
		// A remainder reads better as one: h % 2 == 0, not h <= 2 * (h // 2).
		m := fmt.Sprintf("maskc_py_floormod_pos(%s, %s)", g.linCode(num, "", ""), intLit(den))
		switch {
		case r.HasLo && r.HasHi && r.Lo == r.Hi:
			return fmt.Sprintf("(%s == %s)", m, intLit(r.Lo))
		case r.HasLo && r.HasHi:
			return fmt.Sprintf("(%s <= %s && %s <= %s)", intLit(r.Lo), m, m, intLit(r.Hi))
		case r.HasLo:
			return fmt.Sprintf("(%s >= %s)", m, intLit(r.Lo))
		case r.HasHi:
			return fmt.Sprintf("(%s <= %s)", m, intLit(r.Hi))
		}
	}
	if c.atom == nil {
		return "(" + strings.Join(g.boundCodes(c.bound, "", "", "", ""), " && ") + ")"
	}
	v := truth(g.w.expr(c.atom.Expr)).code
	if c.atom.Neg {
		return "!(" + v + ")"
	}
	return v
}

// condText prints a condition for comments.
func condText(c cond) string {
	if c.atom != nil {
		return c.atom.Text
	}
	return c.bound.String()
}

// walkNames are the C variables of one term's walk: its outer range [oa,
// ob], inner range [ia, ib] and liveness.
type walkNames struct{ qa, qb, ka, kb, live string }

// walkDisjuncts prints, for each term of the plan, the code computing its
// range of w.inner and liveness over the outer tile range (q in [q_lo,
// q_hi) for the kv walk, kv in [kv_lo, kv_hi) for the q walk), followed by
// sink(i, names), the lines that consume it.
func (g *sparsityWriter) walkDisjuncts(p sparsityPlan, inner dsl.Var, sink func(i int, n walkNames)) {
	for i, d := range p.disjuncts {
		w := d.kv
		if inner == dsl.VarQ {
			w = d.q
		}
		g.w.body.WriteString("\n")
		g.line("// disjunct %d: %s", i, d.text)
		n := walkNames{fmt.Sprintf("qa%d", i), fmt.Sprintf("qb%d", i), fmt.Sprintf("ka%d", i), fmt.Sprintf("kb%d", i), fmt.Sprintf("live%d", i)}
		oa, ob, ia, ib, size, tileRange := n.qa, n.qb, n.ka, n.kb, "KV", "q_lo .. q_hi-1"
		if inner == dsl.VarKV {
			g.line("long long %s = q_lo, %s = q_hi - 1, %s = 0, %s = KV - 1;", n.qa, n.qb, n.ka, n.kb)
		} else {
			g.line("long long %s = 0, %s = Q - 1, %s = kv_lo, %s = kv_hi - 1;", n.qa, n.qb, n.ka, n.kb)
			oa, ob, ia, ib, size, tileRange = n.ka, n.kb, n.qa, n.qb, "Q", "kv_lo .. kv_hi-1"
		}
		g.line("bool %s = true;", n.live)
		for _, c := range w.live {
			g.line("%s = %s && %s;  // %s", n.live, n.live, g.condCode(c), condText(c))
		}
		at := func(v string) (string, string) { // (q, kv) with the outer variable at v
			if inner == dsl.VarKV {
				return v, ""
			}
			return "", v
		}
		step := func(s sideStep, lo, hi string, qv, kvv string) {
			if s.upper {
				g.line("%s = maskc_py_min(%s, %s);  // %s", hi, hi, g.sideCode(s.side, true, qv, kvv), s.text)
			} else {
				g.line("%s = maskc_py_max(%s, %s);  // %s", lo, lo, g.sideCode(s.side, false, qv, kvv), s.text)
			}
		}
		for _, s := range w.outerSteps {
			step(s, oa, ob, "", "")
		}
		for _, s := range w.innerSteps {
			v := oa
			if s.atHi {
				v = ob
			}
			qv, kvv := at(v)
			step(s, ia, ib, qv, kvv)
		}
		for _, seg := range w.segs {
			rd, dim := readerName(seg), fmt.Sprintf("buf.dim[%d][0]", seg.Slot)
			g.line("if (%s(buf) && %s >= 0 && %s <= %s && %s < %s && %s <= %s) {  // %s[q] == %s[kv]: documents of %s (ids sorted)", segSortedName(seg), oa, oa, ob, ob, dim, size, dim, seg.Name, seg.Name, tileRange)
			g.line("  %s = maskc_py_max(%s, maskc_seg_first_%s%s(buf, %s(buf, %s)));", ia, ia, cName(seg.Name), g.lane, rd, oa)
			g.line("  %s = maskc_py_min(%s, maskc_seg_end_%s%s(buf, %s(buf, %s)) - 1);", ib, ib, cName(seg.Name), g.lane, rd, ob)
			g.line("}")
		}
		for _, s := range w.loose {
			g.line("// not bounded: %s", s)
		}
		sink(i, n)
	}
}

// walkFuncs are what one walk direction's two functions are called and
// say: the forward's row walk bounds kv over q rows, the backward's column
// walk q over kv columns.
type walkFuncs struct {
	inner                  dsl.Var
	size, hullSig, listSig string
	count                  string
	args                   string // the walk's tile range arguments
	hullDoc, listDoc, none string
}

// funcName is the name a signature declares.
func funcName(sig string) string {
	name, _, _ := strings.Cut(sig, "(")
	return name[strings.LastIndexByte(name, ' ')+1:]
}

var (
	kvWalk = walkFuncs{
		inner: dsl.VarKV, size: "KV", hullSig: kvRangeSig, listSig: kvIntervalsSig,
		count: "maskc_kv_interval_count", args: "q_lo, q_hi",
		hullDoc: "// The kv indices outside [*lo, *hi) are masked for every q in [q_lo, q_hi).\n",
		listDoc: "// Every kv index a q in [q_lo, q_hi) can see lies in one of the intervals\n" +
			"// [lo[i], hi[i]) (empty when lo[i] >= hi[i]), i < maskc_kv_interval_count.\n",
		none: "no kv is visible",
	}
	qWalk = walkFuncs{
		inner: dsl.VarQ, size: "Q", hullSig: qRangeSig, listSig: qIntervalsSig,
		count: "maskc_q_interval_count", args: "kv_lo, kv_hi",
		hullDoc: "// The q indices outside [*lo, *hi) are masked for every kv in [kv_lo, kv_hi).\n",
		listDoc: "// Every q index that sees some kv in [kv_lo, kv_hi) lies in one of the\n" +
			"// intervals [lo[i], hi[i]) (empty when lo[i] >= hi[i]), i < maskc_q_interval_count:\n" +
			"// the backward's column walk (maskc_walk_from in hipsrc/tile_walk.h takes them).\n",
		none: "no q sees these kv",
	}
)

// kvRange prints maskc_kv_range (the hull of the terms' kv ranges, for the
// backward and per-warp classification) and maskc_kv_intervals (one kv
// interval per term, for the forward's tile walk, hipsrc/tile_walk.h).
func (g *sparsityWriter) kvRange(p sparsityPlan) string { return g.walkRange(p, kvWalk) }

// qRange is kvRange with the roles of q and kv exchanged: maskc_q_range
// and maskc_q_intervals, the q rows that can see some kv of [kv_lo,
// kv_hi), for the backward's column walk.
func (g *sparsityWriter) qRange(p sparsityPlan) string { return g.walkRange(p, qWalk) }

// unionIsHull reports whether, over any tile, the union of the terms'
// ranges of the inner variable (kv in the row walk, q in the column walk) is
// their hull: every range a prefix (no term bounds the variable from below:
// each starts at 0) or every range a suffix (none bounds it from above: each
// runs to the last index), with no segment search, block selection or
// remainder filter tying an interval to its term. The walk then takes the
// hull as its one interval: a union of prefixes such as Transfusion's causal
// rows widened to each modality span's end (`q >= kv or q >= offset[m] and kv
// < offset[m] + length[m]`, nine terms) walks, tests and keeps one range
// instead of nine.
func unionIsHull(p sparsityPlan, inner dsl.Var) bool {
	if p.kind != SparsityAnalytic || len(p.disjuncts) < 2 {
		return false
	}
	prefix, suffix := true, true
	for _, d := range p.disjuncts {
		w := d.kv
		if inner == dsl.VarQ {
			w = d.q
		}
		if len(w.segs) > 0 || w.sel != nil || len(d.periods) > 0 {
			return false
		}
		for _, s := range w.innerSteps {
			if s.upper {
				suffix = false
			} else {
				prefix = false
			}
		}
	}
	return prefix || suffix
}

// walkRange prints one walk direction's hull and interval-list functions.
func (g *sparsityWriter) walkRange(p sparsityPlan, wf walkFuncs) string {
	ends := func(n walkNames) (string, string) {
		if wf.inner == dsl.VarKV {
			return n.ka, n.kb
		}
		return n.qa, n.qb
	}
	g.reset()
	g.line("long long lo_all = %s;  // hull of the disjuncts' %s ranges, empty so far", wf.size, wf.inner)
	g.line("long long hi_all = 0;")
	g.walkDisjuncts(p, wf.inner, func(i int, n walkNames) {
		lo, hi := ends(n)
		g.line("if (%s && %s <= %s && %s <= %s) {", n.live, n.qa, n.qb, n.ka, n.kb)
		g.line("  lo_all = maskc_py_min(lo_all, %s);", lo)
		g.line("  hi_all = maskc_py_max(hi_all, %s + 1);", hi)
		g.line("}")
	})
	g.hullEnd(wf.none)
	hull := wf.hullDoc + wf.hullSig + " {\n" + g.w.body.String() + "}\n"

	g.reset()
	n := len(p.disjuncts)
	limit := maxKVIntervals
	if wf.inner == dsl.VarQ {
		limit = maxQIntervals
	}
	if total, ok := selIntervals(p); ok && wf.inner == dsl.VarKV {
		slot := 0
		g.walkDisjuncts(p, wf.inner, func(i int, n walkNames) {
			if s := p.disjuncts[i].kv.sel; s != nil {
				g.selCode(s, n, slot)
			} else {
				g.termInterval(slot, n, n.ka, n.kb)
			}
			slot += p.disjuncts[i].selSlots()
		})
		n = total
	} else if merged := unionIsHull(p, wf.inner); n > limit || n == 0 || merged {
		n = 1
		why := "their hull"
		if merged {
			why = "their hull, which is their union (every range starts at 0 or every range runs to the end)"
		}
		g.line("%s(buf, B, H, HKV, Q, KV, b, h, %s, &lo[0], &hi[0]);  // %s", funcName(wf.hullSig), wf.args, why)
	} else {
		g.walkDisjuncts(p, wf.inner, func(i int, n walkNames) {
			lo, hi := ends(n)
			g.termInterval(i, n, lo, hi)
		})
	}
	intervals := wf.listDoc + fmt.Sprintf("constexpr int %s = %d;\n", wf.count, n) + wf.listSig + " {\n" + g.w.body.String() + "}\n"
	if _, ok := selIntervals(p); ok && wf.inner == dsl.VarKV {
		intervals = selectionFact + intervals
	}
	return hull + "\n" + intervals
}

// hullEnd closes a hull function body: an empty hull (lo_all >= hi_all,
// commented with none) becomes [0, 0), and the hull is stored in *lo, *hi.
func (g *sparsityWriter) hullEnd(none string) {
	g.w.body.WriteString("\n")
	g.line("if (lo_all >= hi_all) {  // %s", none)
	g.line("  lo_all = 0;")
	g.line("  hi_all = 0;")
	g.line("}")
	g.line("*lo = lo_all;")
	g.line("*hi = hi_all;")
}

// termInterval prints interval slot of an interval list: [lo, hi + 1]
// (lo and hi name the term's inner range, ka..kb or qa..qb) where the term
// is live and both its ranges are non-empty, else [0, 0).
func (g *sparsityWriter) termInterval(slot int, n walkNames, lo, hi string) {
	g.line("const bool some%d = %s && %s <= %s && %s <= %s;", slot, n.live, n.qa, n.qb, n.ka, n.kb)
	g.line("lo[%d] = some%d ? %s : 0;", slot, slot, lo)
	g.line("hi[%d] = some%d ? %s + 1 : 0;", slot, slot, hi)
}

// tileFullRowsSig is maskc_g_tile_full_rows: maskc_g_tile_full given the
// rows' kv intervals (selFull's rows).
const tileFullRowsSig = `__device__ __forceinline__ bool maskc_g_tile_full_rows(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                       long long b, long long h, long long q_lo, long long q_hi, long long kv_lo, long long kv_hi,
                                                       const long long* iv_lo, const long long* iv_hi, long long iv_off)`

// tileFull prints maskc_g_tile_full and, where the row walk takes block
// selections, maskc_g_tile_full_rows: the same test with each selection
// answered from the rows' kv intervals instead of the buffer
// (hipsrc/frame.h's maskc_tile_full_rows; the kernels that hold a q tile's
// intervals ask it once per kv tile).
func (g *sparsityWriter) tileFull(p sparsityPlan) string {
	out := "// True only if every (q, kv) of [q_lo, q_hi) x [kv_lo, kv_hi) is kept by the mask.\n" +
		tileFullSig + " {\n" + g.tileFullBody(p, false) + "}\n"
	if selWalk(p) {
		out += "// maskc_g_tile_full, the block selections read from the rows' maskc_kv_intervals iv_lo, iv_hi\n" +
			"// (local keys; iv_off: the frame's first key) instead of the buffer: the kernels that hold\n" +
			"// a q tile's intervals ask it (hipsrc/frame.h's maskc_tile_full_rows).\n" +
			"#define MASKC_TILE_FULL_ROWS 1\n" +
			tileFullRowsSig + " {\n" + g.tileFullBody(p, true) + "}\n"
	}
	return out
}

// tileFullBody is the body of tileFull's functions (rows: the selections
// from the intervals).
func (g *sparsityWriter) tileFullBody(p sparsityPlan, rows bool) string {
	g.reset()
	g.line("const long long qa = q_lo, qb = q_hi - 1, ka = kv_lo, kb = kv_hi - 1;")
	var fulls []string
	slot := 0 // the term's first slot of maskc_kv_intervals (walkRange's order)
	for i, d := range p.disjuncts {
		first := slot
		slot += d.selSlots()
		if d.full == nil {
			g.line("// disjunct %d (%s) cannot be proven full: it has a condition evaluated per element", i, d.text)
			continue
		}
		var conds []string
		for _, f := range d.full {
			switch {
			case f.sel != nil:
				conds = append(conds, g.selFull(f.sel, i, first, rows))
			case f.seg != nil:
				rd, n := readerName(f.seg), fmt.Sprintf("buf.dim[%d][0]", f.seg.Slot)
				conds = append(conds, fmt.Sprintf("(%s(buf) && qa >= 0 && ka >= 0 && qb < %s && kb < %s && %s(buf, qa) == %s(buf, qb) && %s(buf, ka) == %s(buf, kb) && %s(buf, qa) == %s(buf, ka))",
					segSortedName(f.seg), n, n, rd, rd, rd, rd, rd, rd))
			case f.atom != nil:
				conds = append(conds, g.condCode(f.cond))
			default:
				// The direction is smallest at the corner opposite its largest.
				for _, c := range g.boundCodes(f.bound, corner(!f.qMax, "q"), corner(!f.kvMax, "k"), corner(f.qMax, "q"), corner(f.kvMax, "k")) {
					conds = append(conds, "("+c+")")
				}
			}
		}
		if len(conds) == 0 {
			conds = []string{"true"}
		}
		name := fmt.Sprintf("full%d", i)
		g.line("// disjunct %d: %s", i, d.text)
		g.line("const bool %s = %s;", name, strings.Join(conds, " && "))
		fulls = append(fulls, name)
	}
	if len(fulls) == 0 {
		fulls = []string{"false"}
	}
	if rows {
		g.line("(void)buf, (void)B, (void)H, (void)HKV, (void)Q, (void)KV, (void)b, (void)h;")
	}
	g.line("return %s;", strings.Join(fulls, " || "))
	return g.w.body.String()
}

// corner names a tile corner variable: qb or qa (v "q"), kb or ka (v "k").
func corner(hi bool, v string) string {
	if hi {
		return v + "b"
	}
	return v + "a"
}
