package codegen

import (
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// This file turns a mask's normal form (analysis.go) into the block-sparsity
// plan: the steps that compute a tile row's kv range and decide whether a
// tile is full. The plan is data, read by two consumers that must agree:
// the C printer (sparsity.go), which writes maskc_kv_range and
// maskc_tile_full into the kernel, and the host evaluator (hostsparsity.go),
// which runs the same steps on the CPU to draw the tile map a kernel uses.

// sparsityPlan is the block sparsity of one mask.
type sparsityPlan struct {
	kind   hipsrc.Sparsity
	reason string
	// analysed is false when there is no mask or its normal form is too
	// large; the kernel then visits every tile.
	analysed bool
	// disjuncts are the disjuncts of the analysed mask (none: the mask is
	// false everywhere). The kernel reads their ranges and full tests only
	// when kind is SparsityAnalytic.
	disjuncts []disjunctPlan
	// dnf is the analysed normal form the disjuncts were planned from;
	// maskc_q_range (the backward's column walk) is printed from it.
	dnf dnf
	// an reads block relations out of the normal form's opaque atoms.
	an *analyzer
}

// disjunctPlan computes one disjunct's kv range over q in [q_lo, q_hi)
// and, when provable, its full-tile test.
type disjunctPlan struct {
	text string // conjText of the disjunct
	// rows are the steps over q alone, in atom order: they decide whether
	// the disjunct is live and narrow the q range [qa, qb].
	rows []rangeStep
	// cols are the steps bounding kv to [ka, kb], in atom order.
	cols []rangeStep
	// full is the test that every pair of a tile satisfies the disjunct;
	// nil when an opaque atom makes that unprovable.
	full []fullTest
}

// stepKind says what a rangeStep does.
type stepKind int

const (
	// stepLive: live = live && the free atom.
	stepLive stepKind = iota
	// stepLiveConst: live = live && lin <= 0, lin reading neither q nor kv.
	stepLiveConst
	// stepQUpper: qb = min(qb, floor(-rest / coef)), for coef*q + rest <= 0.
	stepQUpper
	// stepQLower: qa = max(qa, ceil(rest / coef)), for -coef*q + rest <= 0.
	stepQLower
	// stepKVUpper: kb = min(kb, floor(-rest(q*) / coef)), for
	// coef*kv + rest <= 0; q* is qa when atQLo, else qb.
	stepKVUpper
	// stepKVLower: ka = max(ka, ceil(rest(q*) / coef)), for
	// -coef*kv + rest <= 0.
	stepKVLower
	// stepSegment: [ka, kb] narrowed to the documents of qa .. qb.
	stepSegment
	// stepOpaque: an atom that bounds nothing (a comment in C).
	stepOpaque
	// stepKVBlock: [ka, kb] narrowed by a block relation (blockrel.go)
	// over the block indices of qa .. qb.
	stepKVBlock
)

// rangeStep is one step of a disjunct's range computation.
type rangeStep struct {
	kind  stepKind
	at    atom
	rest  linear   // the atom's linear form without the bounded variable
	coef  int64    // > 0: the magnitude of the bounded variable's coefficient
	atQLo bool     // kv bounds: evaluate rest at qa (else qb)
	blk   blockRel // stepKVBlock
}

// fullKind says what a fullTest checks.
type fullKind int

const (
	// fullFree: the free atom holds.
	fullFree fullKind = iota
	// fullLinear: lin <= 0 at the tile corner where lin is largest.
	fullLinear
	// fullSegment: the tile's first and last q and kv share one segment.
	fullSegment
	// fullBlock: the block relation holds between the tile's extreme
	// block indices.
	fullBlock
)

// fullTest is one conjunct of a disjunct's full-tile test.
type fullTest struct {
	kind fullKind
	at   atom
	// qHi, kvHi: the corner is qb (else qa) and kb (else ka).
	qHi, kvHi bool
	blk       blockRel // fullBlock
}

// newSparsityPlan analyses the mask (nil: no mask).
func newSparsityPlan(l *dsl.Lowered, bufs []BufferABI) sparsityPlan {
	if l == nil || l.Expr == nil {
		return sparsityPlan{kind: SparsityNone, reason: "no mask: every kv tile is visited and full"}
	}
	d, ok := maskDNF(l, bufs)
	if !ok {
		return sparsityPlan{kind: SparsityPrepass, reason: tooBigReason}
	}
	p := sparsityPlan{analysed: true, dnf: d, an: newAnalyzer(l, bufs)}
	p.kind, p.reason = choose(d, p.an)
	for _, c := range d {
		p.disjuncts = append(p.disjuncts, planDisjunct(c, p.an))
	}
	return p
}

// planDisjunct orders a conjunction's atoms into range steps and full tests.
func planDisjunct(c conj, an *analyzer) disjunctPlan {
	dp := disjunctPlan{text: conjText(c)}
	// Constraints on q alone first: they narrow the q range the kv bounds
	// are evaluated over.
	for _, a := range c {
		switch {
		case a.kind == atomFree:
			dp.rows = append(dp.rows, rangeStep{kind: stepLive, at: a})
		case a.kind == atomLinear && a.lin.kv == 0 && a.lin.q == 0:
			dp.rows = append(dp.rows, rangeStep{kind: stepLiveConst, at: a})
		case a.kind == atomLinear && a.lin.kv == 0:
			rest := a.lin
			rest.q = 0
			if a.lin.q > 0 {
				dp.rows = append(dp.rows, rangeStep{kind: stepQUpper, at: a, rest: rest, coef: a.lin.q})
			} else {
				dp.rows = append(dp.rows, rangeStep{kind: stepQLower, at: a, rest: rest, coef: -a.lin.q})
			}
		}
	}
	for _, a := range c {
		switch {
		case a.kind == atomLinear && a.lin.kv != 0:
			rest := a.lin
			rest.kv = 0
			// kv <= floor((-a*q - e) / c) is largest, and kv >= ceil((a*q +
			// e) / -c) smallest, at qa when a > 0, else at qb.
			s := rangeStep{at: a, rest: rest, atQLo: a.lin.q > 0}
			if a.lin.kv > 0 {
				s.kind, s.coef = stepKVUpper, a.lin.kv
			} else {
				s.kind, s.coef = stepKVLower, -a.lin.kv
			}
			dp.cols = append(dp.cols, s)
		case a.kind == atomSegment:
			dp.cols = append(dp.cols, rangeStep{kind: stepSegment, at: a})
		case a.kind == atomOpaque:
			if r, ok := an.blockOf(a); ok {
				dp.cols = append(dp.cols, rangeStep{kind: stepKVBlock, at: a, blk: r})
				continue
			}
			dp.cols = append(dp.cols, rangeStep{kind: stepOpaque, at: a})
		}
	}
	full := []fullTest{}
	for _, a := range c {
		switch a.kind {
		case atomFree:
			full = append(full, fullTest{kind: fullFree, at: a})
		case atomLinear: // the maximum of the linear form over the tile is at a corner
			full = append(full, fullTest{kind: fullLinear, at: a, qHi: a.lin.q > 0, kvHi: a.lin.kv > 0})
		case atomSegment:
			full = append(full, fullTest{kind: fullSegment, at: a})
		default:
			r, ok := an.blockOf(a)
			if !ok {
				return dp
			}
			full = append(full, fullTest{kind: fullBlock, at: a, blk: r})
		}
	}
	dp.full = full
	return dp
}

// segments lists the segments buffers the plan searches, in first-use
// order (their search functions precede the sparsity code).
func (p sparsityPlan) segments() []*BufferABI {
	var out []*BufferABI
	seen := map[*BufferABI]bool{}
	use := func(a atom) {
		if a.kind == atomSegment && !seen[a.seg] {
			seen[a.seg] = true
			out = append(out, a.seg)
		}
	}
	for _, d := range p.disjuncts {
		for _, s := range d.cols {
			use(s.at)
		}
	}
	for _, d := range p.disjuncts {
		for _, f := range d.full {
			use(f.at)
		}
	}
	return out
}
