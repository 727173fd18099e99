package codegen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
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
// get their hull as one interval.
const maxKVIntervals = 8

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
var tooBigReason = fmt.Sprintf("the mask's normal form exceeds %d disjuncts of %d atoms; the pre-pass flags empty and full tiles", maxDisjuncts, maxAtoms)

// planSparsity analyses the mask (nil: no mask) and generates
// maskc_kv_range, maskc_kv_intervals, maskc_q_range, maskc_q_intervals and
// maskc_tile_full from its plan (sparsityplan.go).
//
// The mask is put in disjunctive normal form (analysis.go). For each
// disjunct, over q in [q_lo, q_hi): constraints free of q and kv are
// evaluated; linear constraints in q alone narrow the q range; linear
// constraints a*q + c*kv + e <= 0 bound kv from above (c > 0) or below
// (c < 0) at the q end point where the bound is loosest; a `segments`
// equality bounds kv to the documents of the first and last q, found by
// binary search; a relation between block indices (`kv // C <= q // C`,
// blockrel.go) bounds kv through the floor-division facts. Each disjunct's
// kv range, clamped to [0, KV), is one interval of maskc_kv_intervals (the
// forward visits the tiles of their union, hipsrc/tile_walk.h);
// maskc_kv_range is their hull. A tile is full when some disjunct has only
// such atoms and each holds at the tile corner where it is tightest. Opaque
// atoms (non-linear terms, other buffer lookups) are assumed true for
// ranges and make their disjunct unusable for fullness, so both answers
// stay sound. maskc_q_range and maskc_q_intervals are the same with the
// roles of q and kv exchanged, for the backward's column walk.
func planSparsity(l *dsl.Lowered, bufs []BufferABI, diags *dsl.Diagnostics) sparsity {
	p := newSparsityPlan(l, bufs)
	switch {
	case p.kind == SparsityNone:
		return sparsity{plan: p, code: kvRangeSig + " {\n  *lo = 0;\n  *hi = KV;\n}\n\n" + trivialIntervals + "\n" + qRangeSig + " {\n  *lo = 0;\n  *hi = Q;\n}\n\n" + trivialQIntervals + "\n" +
			tileFullSig + " {\n  return true;\n}\n"}
	case !p.analysed:
		return sparsity{plan: p, code: kvRangeSig + " {\n  // not analysed: the pre-pass decides\n  *lo = 0;\n  *hi = KV;\n}\n\n" + trivialIntervals + "\n" +
			qRangeSig + " {\n  // not analysed: the pre-pass decides\n  *lo = 0;\n  *hi = Q;\n}\n\n" + trivialQIntervals + "\n" + tileFullSig + " {\n  return false;\n}\n"}
	}
	g := &sparsityWriter{w: newFuncWriter(nil, l, cDouble, bufs, diags)}
	return sparsity{plan: p, code: g.kvRange(p) + "\n" + g.qRange(p.dnf, p.an) + "\n" + g.tileFull(p), segments: p.segments()}
}

// choose picks analytic or prepass: the pre-pass pays off only when some
// disjunct with an opaque atom has no kv bound at all, so that the analytic
// range degenerates to every kv.
func choose(d dnf, an *analyzer) (hipsrc.Sparsity, string) {
	var linearN, segN, blockN int
	var opaque []string
	for _, c := range d {
		bounded, hasOpaque := false, false
		for _, a := range c {
			switch a.kind {
			case atomLinear:
				linearN++
				if a.lin.kv != 0 {
					bounded = true
				}
			case atomSegment:
				segN++
				bounded = true
			case atomOpaque:
				if _, ok := an.blockOf(a); ok {
					blockN++
					bounded = true
				}
				hasOpaque = true
				opaque = append(opaque, atomText(a))
			}
		}
		if hasOpaque && !bounded {
			return SparsityPrepass, fmt.Sprintf("`%s` bounds no kv range (buffer lookup or non-linear term); the pre-pass flags empty and full tiles", atomText(lastOpaque(c)))
		}
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("closed-form kv range and full-tile test from %d linear constraint(s) in %d disjunct(s)", linearN, len(d)))
	if segN > 0 {
		parts = append(parts, "segment ids bounded by a search of the segments buffer")
	}
	if blockN > 0 {
		parts = append(parts, fmt.Sprintf("%d block-index relation(s) bounded through floor division", blockN))
	}
	if len(opaque) > 0 {
		parts = append(parts, "evaluated per element: "+strings.Join(uniq(opaque), ", "))
	}
	return SparsityAnalytic, strings.Join(parts, "; ")
}

func lastOpaque(c conj) atom {
	var last atom
	for _, a := range c {
		if a.kind == atomOpaque {
			last = a
		}
	}
	return last
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

// atomText prints an atom for comments and reasons.
func atomText(a atom) string {
	switch a.kind {
	case atomLinear:
		return linText(a.lin)
	case atomSegment:
		return a.seg.Name + "[q] == " + a.seg.Name + "[kv]"
	}
	if a.neg {
		return "not " + exprText(a.e)
	}
	return exprText(a.e)
}

// linText prints lin <= 0 with positive terms on the left and negative
// ones on the right, e.g. `kv <= q` or `q - 1024 <= kv`.
func linText(l linear) string {
	all := []term{{l.q, "q"}, {l.kv, "kv"}}
	for _, t := range l.terms {
		all = append(all, term{t.coef, exprText(t.e)})
	}
	return inequality(all, l.c, func(c int64) string { return strconv.FormatInt(c, 10) })
}

// inequality prints sum(ts) + c <= 0 with the positive terms on the left
// and the negative ones, negated, on the right; a constant goes to the
// right when nothing else does (kv - 2047 <= 0 reads better as kv <= 2047).
func inequality(ts []term, c int64, lit func(int64) string) string {
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
	return sumCode(left, lc, lit) + " <= " + sumCode(right, rc, lit)
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

// sparsityWriter prints the two sparsity functions of a plan.
type sparsityWriter struct {
	w *funcWriter
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

// leCode prints l <= 0 as `left <= right` with positive coefficients on
// both sides, e.g. `kb <= qa` for kv - q <= 0 at the corner (qa, kb).
func (g *sparsityWriter) leCode(l linear, qv, kvv string) string {
	all := []term{{l.q, qv}, {l.kv, kvv}}
	for _, t := range l.terms {
		all = append(all, term{t.coef, conv(g.w.expr(t.e), cInt).code})
	}
	return inequality(all, l.c, intLit)
}

// linCode prints the value of l at q = qv and kv = kv (either may be ""
// when its coefficient is zero) as a C int64 expression.
func (g *sparsityWriter) linCode(l linear, qv, kvv string) string {
	ts := []term{{l.q, qv}, {l.kv, kvv}}
	for _, t := range l.terms {
		ts = append(ts, term{t.coef, conv(g.w.expr(t.e), cInt).code})
	}
	return sumCode(ts, l.c, intLit)
}

// boolCode prints a free atom.
func (g *sparsityWriter) boolCode(a atom) string {
	v := truth(g.w.expr(a.e)).code
	if a.neg {
		return "!" + v
	}
	return v
}

// floorBound prints floor(-rest / d), rest evaluated at q = qv, for a
// constant d > 0: the upper bound that rest + d*x <= 0 puts on x.
func (g *sparsityWriter) floorBound(rest linear, qv string, d int64) string {
	neg, _ := rest.scale(-1)
	n := g.linCode(neg, qv, "")
	if d == 1 {
		return n
	}
	return fmt.Sprintf("maskc_py_floordiv(%s, %s)", n, intLit(d))
}

// ceilBound prints ceil(rest / d) = -floor(-rest / d), rest evaluated at
// q = qv, for a constant d > 0: the lower bound that rest - d*x <= 0 puts
// on x.
func (g *sparsityWriter) ceilBound(rest linear, qv string, d int64) string {
	if d == 1 {
		return g.linCode(rest, qv, "")
	}
	neg, _ := rest.scale(-1)
	return fmt.Sprintf("-maskc_py_floordiv(%s, %s)", g.linCode(neg, qv, ""), intLit(d))
}

// kvDisjuncts prints, for each disjunct of the plan, the code computing
// its kv range [ka_i, kb_i] and liveness over q in [q_lo, q_hi), followed by
// sink(i, live, ka, kb), the lines that consume it.
func (g *sparsityWriter) kvDisjuncts(p sparsityPlan, sink func(i int, live, ka, kb string)) {
	for i, d := range p.disjuncts {
		g.w.body.WriteString("\n")
		g.line("// disjunct %d: %s", i, d.text)
		qa, qb, ka, kb, live := fmt.Sprintf("qa%d", i), fmt.Sprintf("qb%d", i), fmt.Sprintf("ka%d", i), fmt.Sprintf("kb%d", i), fmt.Sprintf("live%d", i)
		g.line("long long %s = q_lo, %s = q_hi - 1, %s = 0, %s = KV - 1;", qa, qb, ka, kb)
		g.line("bool %s = true;", live)
		for _, s := range d.rows {
			switch s.kind {
			case stepLive:
				g.line("%s = %s && %s;", live, live, g.boolCode(s.at))
			case stepLiveConst:
				g.line("%s = %s && (%s);", live, live, g.leCode(s.at.lin, "", ""))
			case stepQUpper:
				g.line("%s = maskc_py_min(%s, %s);  // %s", qb, qb, g.floorBound(s.rest, "", s.coef), atomText(s.at))
			case stepQLower:
				g.line("%s = maskc_py_max(%s, %s);  // %s", qa, qa, g.ceilBound(s.rest, "", s.coef), atomText(s.at))
			}
		}
		for _, s := range d.cols {
			qStar := qb
			if s.atQLo {
				qStar = qa
			}
			switch s.kind {
			case stepKVUpper:
				g.line("%s = maskc_py_min(%s, %s);  // %s", kb, kb, g.floorBound(s.rest, qStar, s.coef), atomText(s.at))
			case stepKVLower:
				g.line("%s = maskc_py_max(%s, %s);  // %s", ka, ka, g.ceilBound(s.rest, qStar, s.coef), atomText(s.at))
			case stepSegment:
				seg := s.at.seg
				rd, n := readerName(seg), fmt.Sprintf("buf.dim[%d][0]", seg.Slot)
				g.line("if (%s >= 0 && %s <= %s && %s < %s && KV <= %s) {  // %s: documents of q_lo .. q_hi-1", qa, qa, qb, qb, n, n, atomText(s.at))
				g.line("  %s = maskc_py_max(%s, maskc_seg_first_%s(buf, %s(buf, %s)));", ka, ka, cName(seg.Name), rd, qa)
				g.line("  %s = maskc_py_min(%s, maskc_seg_end_%s(buf, %s(buf, %s)) - 1);", kb, kb, cName(seg.Name), rd, qb)
				g.line("}")
			case stepKVBlock:
				g.blockKV(s.blk, qa, qb, ka, kb)
			case stepOpaque:
				g.line("// not bounded: %s", atomText(s.at))
			}
		}
		sink(i, live, ka, kb)
	}
}

// blockIndex prints floor(l(v) / c) for l linear in the one variable v.
func (g *sparsityWriter) blockIndex(l linear, c int64, qv, kvv string) string {
	n := g.linCode(l, qv, kvv)
	if c == 1 {
		return n
	}
	return fmt.Sprintf("maskc_py_floordiv(%s, %s)", n, intLit(c))
}

// blockKV narrows [ka, kb] by the block relation r over q in [qa, qb]:
// F(q) lies in [F(qa), F(qb)], G(kv) in the bounds the relation puts on it,
// and ck*G <= fk(kv) <= ck*G + ck - 1 turns those into bounds on kv.
func (g *sparsityWriter) blockKV(r blockRel, qa, qb, ka, kb string) {
	g.line("{  // %s", r.text())
	g.line("  const long long fmin = %s, fmax = %s;", g.blockIndex(r.fq, r.cq, qa, ""), g.blockIndex(r.fq, r.cq, qb, ""))
	rest := r.fk
	rest.kv = 0
	gLo, gHi := blockTargets(r.op, "fmin", "fmax", false)
	g.blockBounds(rest, r.fk.kv, r.ck, gLo, gHi, ka, kb)
	g.line("}")
}

// blockTargets names the bounds that G op F puts on G (other: false) or on
// F (other: true) in terms of the other side's extreme block indices lo
// and hi; "" where the relation puts none.
func blockTargets(op dsl.Op, lo, hi string, other bool) (tLo, tHi string) {
	if other { // the bounds on F: G <= F gives F >= gmin, and so on
		switch op {
		case dsl.OpLE:
			return lo, ""
		case dsl.OpLT:
			return "(" + lo + " + 1)", ""
		case dsl.OpGE:
			return "", hi
		case dsl.OpGT:
			return "", "(" + hi + " - 1)"
		}
		return lo, hi
	}
	switch op {
	case dsl.OpLE:
		return "", hi
	case dsl.OpLT:
		return "", "(" + hi + " - 1)"
	case dsl.OpGE:
		return lo, ""
	case dsl.OpGT:
		return "(" + lo + " + 1)", ""
	}
	return lo, hi
}

// blockBounds narrows [xa, xb] for x with a*x + rest = f(x), given that
// floor(f(x) / c) lies in [tLo, tHi] ("" for no bound): c*tLo <= f(x) <=
// c*tHi + c - 1.
func (g *sparsityWriter) blockBounds(rest linear, a, c int64, tLo, tHi, xa, xb string) {
	restCode := ""
	if !(rest.isConst() && rest.c == 0) {
		restCode = g.linCode(rest, "", "")
	}
	div := func(n string) string {
		if a == 1 {
			return "(" + n + ")"
		}
		return fmt.Sprintf("maskc_py_floordiv(%s, %s)", n, intLit(a))
	}
	if tHi != "" { // a*x <= c*tHi + c - 1 - rest
		n := fmt.Sprintf("%s * %s + %s", intLit(c), tHi, intLit(c-1))
		if restCode != "" {
			n += " - (" + restCode + ")"
		}
		g.line("  %s = maskc_py_min(%s, %s);", xb, xb, div(n))
	}
	if tLo != "" { // a*x >= c*tLo - rest: x >= -floor((rest - c*tLo) / a)
		n := fmt.Sprintf("-%s * %s", intLit(c), tLo)
		if restCode != "" {
			n = "(" + restCode + ") - " + intLit(c) + " * " + tLo
		}
		g.line("  %s = maskc_py_max(%s, -%s);", xa, xa, div(n))
	}
}

// blockQ narrows [qa, qb] by the block relation r over kv in [ka, kb]
// (blockKV with the roles of q and kv exchanged).
func (g *sparsityWriter) blockQ(r blockRel, qa, qb, ka, kb string) {
	g.line("{  // %s", r.text())
	g.line("  const long long gmin = %s, gmax = %s;", g.blockIndex(r.fk, r.ck, "", ka), g.blockIndex(r.fk, r.ck, "", kb))
	rest := r.fq
	rest.q = 0
	fLo, fHi := blockTargets(r.op, "gmin", "gmax", true)
	g.blockBounds(rest, r.fq.q, r.cq, fLo, fHi, qa, qb)
	g.line("}")
}

// blockFull prints the test that G op F holds over the whole tile: between
// the block indices of its extreme rows and columns (blockRel.holdsAll).
func (g *sparsityWriter) blockFull(r blockRel) string {
	gmin, gmax := g.blockIndex(r.fk, r.ck, "", "ka"), g.blockIndex(r.fk, r.ck, "", "kb")
	fmin, fmax := g.blockIndex(r.fq, r.cq, "qa", ""), g.blockIndex(r.fq, r.cq, "qb", "")
	switch r.op {
	case dsl.OpLE:
		return "(" + gmax + " <= " + fmin + ")"
	case dsl.OpLT:
		return "(" + gmax + " < " + fmin + ")"
	case dsl.OpGE:
		return "(" + gmin + " >= " + fmax + ")"
	case dsl.OpGT:
		return "(" + gmin + " > " + fmax + ")"
	}
	return "(" + gmin + " == " + gmax + " && " + fmin + " == " + fmax + " && " + gmin + " == " + fmin + ")"
}

// kvRange prints maskc_kv_intervals (one kv interval per disjunct, for the
// forward's tile walk, hipsrc/tile_walk.h) and maskc_kv_range (their hull,
// for the backward and per-warp classification).
func (g *sparsityWriter) kvRange(p sparsityPlan) string {
	g.reset()
	if len(p.disjuncts) > maxKVIntervals {
		g.line("// %d disjuncts: one interval, their hull", len(p.disjuncts))
		g.line("maskc_g_kv_range(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, &lo[0], &hi[0]);")
	} else {
		g.kvDisjuncts(p, func(i int, live, ka, kb string) {
			g.line("const bool some%d = %s && qa%d <= qb%d && %s <= %s;", i, live, i, i, ka, kb)
			g.line("lo[%d] = some%d ? %s : 0;", i, i, ka)
			g.line("hi[%d] = some%d ? %s + 1 : 0;", i, i, kb)
		})
	}
	n := len(p.disjuncts)
	if n > maxKVIntervals || n == 0 {
		n = 1
	}
	if len(p.disjuncts) == 0 {
		g.line("lo[0] = 0;  // the mask is false everywhere")
		g.line("hi[0] = 0;")
	}
	intervals := fmt.Sprintf("// Every kv index a q in [q_lo, q_hi) can see lies in one of the intervals\n"+
		"// [lo[i], hi[i]) (empty when lo[i] >= hi[i]), i < maskc_kv_interval_count.\n"+
		"constexpr int maskc_kv_interval_count = %d;\n", n) + kvIntervalsSig + " {\n" + g.w.body.String() + "}\n"

	g.reset()
	g.line("long long lo_all = KV;  // hull of the disjuncts' kv ranges, empty so far")
	g.line("long long hi_all = 0;")
	g.kvDisjuncts(p, func(i int, live, ka, kb string) {
		g.line("if (%s && qa%d <= qb%d && %s <= %s) {", live, i, i, ka, kb)
		g.line("  lo_all = maskc_py_min(lo_all, %s);", ka)
		g.line("  hi_all = maskc_py_max(hi_all, %s + 1);", kb)
		g.line("}")
	})
	g.hullEnd("no kv is visible")
	hull := "// The kv indices outside [*lo, *hi) are masked for every q in [q_lo, q_hi).\n" +
		kvRangeSig + " {\n" + g.w.body.String() + "}\n"
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

// qRange is kvRange with the roles of q and kv exchanged: the q rows that
// can see some kv of [kv_lo, kv_hi), for the backward's column walk.
// Constraints on kv alone narrow the kv range first; a linear constraint
// a*q + c*kv + e <= 0 with a != 0 bounds q at the kv end point where the
// bound is loosest; a `segments` equality bounds q to the documents of the
// first and last kv.
func (g *sparsityWriter) qRange(d dnf, an *analyzer) string {
	g.reset()
	g.line("long long lo_all = Q;  // hull of the disjuncts' q ranges, empty so far")
	g.line("long long hi_all = 0;")
	g.qDisjuncts(d, an, func(i int, live, qa, qb, ka, kb string) {
		g.line("if (%s && %s <= %s && %s <= %s) {", live, qa, qb, ka, kb)
		g.line("  lo_all = maskc_py_min(lo_all, %s);", qa)
		g.line("  hi_all = maskc_py_max(hi_all, %s + 1);", qb)
		g.line("}")
	})
	g.hullEnd("no q sees these kv")
	hull := "// The q indices outside [*lo, *hi) are masked for every kv in [kv_lo, kv_hi).\n" +
		qRangeSig + " {\n" + g.w.body.String() + "}\n"

	g.reset()
	n := len(d)
	if n > maxKVIntervals || n == 0 {
		n = 1
		g.line("maskc_g_q_range(buf, B, H, HKV, Q, KV, b, h, kv_lo, kv_hi, &lo[0], &hi[0]);  // their hull")
	} else {
		g.qDisjuncts(d, an, func(i int, live, qa, qb, ka, kb string) {
			g.line("const bool some%d = %s && %s <= %s && %s <= %s;", i, live, qa, qb, ka, kb)
			g.line("lo[%d] = some%d ? %s : 0;", i, i, qa)
			g.line("hi[%d] = some%d ? %s + 1 : 0;", i, i, qb)
		})
	}
	intervals := fmt.Sprintf("// Every q index that sees some kv in [kv_lo, kv_hi) lies in one of the\n"+
		"// intervals [lo[i], hi[i]) (empty when lo[i] >= hi[i]), i < maskc_q_interval_count:\n"+
		"// the backward's column walk (maskc_walk_from in hipsrc/tile_walk.h takes them).\n"+
		"constexpr int maskc_q_interval_count = %d;\n", n) + qIntervalsSig + " {\n" + g.w.body.String() + "}\n"
	return hull + "\n" + intervals
}

// qDisjuncts prints, for each disjunct, the code computing its q range
// [qa_i, qb_i] over kv in [kv_lo, kv_hi), followed by sink's lines.
func (g *sparsityWriter) qDisjuncts(d dnf, an *analyzer, sink func(i int, live, qa, qb, ka, kb string)) {
	for i, c := range d {
		g.w.body.WriteString("\n")
		g.line("// disjunct %d: %s", i, conjText(c))
		qa, qb, ka, kb, live := fmt.Sprintf("qa%d", i), fmt.Sprintf("qb%d", i), fmt.Sprintf("ka%d", i), fmt.Sprintf("kb%d", i), fmt.Sprintf("live%d", i)
		g.line("long long %s = 0, %s = Q - 1, %s = kv_lo, %s = kv_hi - 1;", qa, qb, ka, kb)
		g.line("bool %s = true;", live)
		for _, a := range c {
			switch {
			case a.kind == atomFree:
				g.line("%s = %s && %s;", live, live, g.boolCode(a))
			case a.kind == atomLinear && a.lin.kv == 0 && a.lin.q == 0:
				g.line("%s = %s && (%s);", live, live, g.leCode(a.lin, "", ""))
			case a.kind == atomLinear && a.lin.q == 0:
				rest := a.lin
				rest.kv = 0
				if a.lin.kv > 0 { // kv <= floor(-rest / c)
					g.line("%s = maskc_py_min(%s, %s);  // %s", kb, kb, g.boundAt(rest, "", "", a.lin.kv, true), atomText(a))
				} else { // kv >= ceil(rest / -c)
					g.line("%s = maskc_py_max(%s, %s);  // %s", ka, ka, g.boundAt(rest, "", "", -a.lin.kv, false), atomText(a))
				}
			}
		}
		for _, a := range c {
			switch {
			case a.kind == atomLinear && a.lin.q != 0:
				kvStar := kb
				if a.lin.kv > 0 {
					kvStar = ka
				}
				rest := a.lin
				rest.q = 0
				if a.lin.q > 0 { // q <= floor((-c*kv - e) / a), largest at kvStar
					g.line("%s = maskc_py_min(%s, %s);  // %s", qb, qb, g.boundAt(rest, "", kvStar, a.lin.q, true), atomText(a))
				} else { // q >= ceil((c*kv + e) / -a), smallest at kvStar
					g.line("%s = maskc_py_max(%s, %s);  // %s", qa, qa, g.boundAt(rest, "", kvStar, -a.lin.q, false), atomText(a))
				}
			case a.kind == atomSegment:
				rd, n := readerName(a.seg), fmt.Sprintf("buf.dim[%d][0]", a.seg.Slot)
				g.line("if (%s >= 0 && %s <= %s && %s < %s && Q <= %s) {  // %s: documents of kv_lo .. kv_hi-1", ka, ka, kb, kb, n, n, atomText(a))
				g.line("  %s = maskc_py_max(%s, maskc_seg_first_%s(buf, %s(buf, %s)));", qa, qa, cName(a.seg.Name), rd, ka)
				g.line("  %s = maskc_py_min(%s, maskc_seg_end_%s(buf, %s(buf, %s)) - 1);", qb, qb, cName(a.seg.Name), rd, kb)
				g.line("}")
			case a.kind == atomOpaque:
				if r, ok := an.blockOf(a); ok {
					g.blockQ(r, qa, qb, ka, kb)
					continue
				}
				g.line("// not bounded: %s", atomText(a))
			}
		}
		sink(i, live, qa, qb, ka, kb)
	}
}

// boundAt prints the bound that rest + d*x <= 0 (upper: floor(-rest / d))
// or rest - d*x <= 0 (lower: ceil(rest / d)) puts on x, for a constant
// d > 0, with rest evaluated at q = qv and kv = kvv.
func (g *sparsityWriter) boundAt(rest linear, qv, kvv string, d int64, upper bool) string {
	neg, _ := rest.scale(-1)
	if upper {
		n := g.linCode(neg, qv, kvv)
		if d == 1 {
			return n
		}
		return fmt.Sprintf("maskc_py_floordiv(%s, %s)", n, intLit(d))
	}
	if d == 1 {
		return g.linCode(rest, qv, kvv)
	}
	return fmt.Sprintf("-maskc_py_floordiv(%s, %s)", g.linCode(neg, qv, kvv), intLit(d))
}

func (g *sparsityWriter) tileFull(p sparsityPlan) string {
	g.reset()
	g.line("const long long qa = q_lo, qb = q_hi - 1, ka = kv_lo, kb = kv_hi - 1;")
	var fulls []string
	for i, d := range p.disjuncts {
		if d.full == nil {
			g.line("// disjunct %d (%s) cannot be proven full: it has an opaque term", i, d.text)
			continue
		}
		var conds []string
		for _, f := range d.full {
			switch f.kind {
			case fullFree:
				conds = append(conds, g.boolCode(f.at))
			case fullLinear:
				conds = append(conds, "("+g.leCode(f.at.lin, corner(f.qHi, "q"), corner(f.kvHi, "k"))+")")
			case fullBlock:
				r := f.blk
				conds = append(conds, g.blockFull(r))
			case fullSegment:
				seg := f.at.seg
				rd, n := readerName(seg), fmt.Sprintf("buf.dim[%d][0]", seg.Slot)
				conds = append(conds, fmt.Sprintf("(qa >= 0 && ka >= 0 && qb < %s && kb < %s && %s(buf, qa) == %s(buf, qb) && %s(buf, ka) == %s(buf, kb) && %s(buf, qa) == %s(buf, ka))",
					n, n, rd, rd, rd, rd, rd, rd))
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
	g.line("return %s;", strings.Join(fulls, " || "))
	return "// True only if every (q, kv) of [q_lo, q_hi) x [kv_lo, kv_hi) is kept by the mask.\n" +
		tileFullSig + " {\n" + g.w.body.String() + "}\n"
}

// corner names a tile corner variable: qb or qa (v "q"), kb or ka (v "k").
func corner(hi bool, v string) string {
	if hi {
		return v + "b"
	}
	return v + "a"
}

func conjText(c conj) string {
	if len(c) == 0 {
		return "true"
	}
	parts := make([]string, len(c))
	for i, a := range c {
		parts[i] = atomText(a)
	}
	return strings.Join(parts, " and ")
}
