package codegen

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/normal"
)

// This file is the tile filter of masks with remainder conditions: a term
// such as `kv <= q and (q - kv) % 256 == 0` (every 256th key back, Sparse
// Transformer's strided pattern) keeps a periodic set of keys, which no
// list of a few kv intervals holds: its interval is every key up to q. A
// remainder's dividend n, linear in q, kv and floor quotients of one of
// them (`q // 256 - kv // 256`), lies over a tile (rows [qa, qb], keys [ka,
// kb]) between the sums of its parts' extremes, each at a tile end (exact
// and every value taken for q - kv and for block indices), so the tile can
// keep a pair of the term only if that range of n holds a value whose
// remainder is in the condition's range (maskc_period_meets). Where some term has such a
// condition that can fail on a whole tile, the kernel defines
// MASKC_KV_TILE_FILTER and maskc_g_kv_term_live: the forward's walk skips
// the tiles no term keeps (maskc_walk_next_live, hipsrc/tile_walk.h) and
// the backward classes them empty (maskc_kv_tile_meets). Kernels of other
// masks are unchanged.

// periodStep is one remainder condition `n % den` in [lo, hi] of a term,
// n linear in q, kv and floor quotients of one of them (with constants,
// sizes and symbols free of both).
type periodStep struct {
	num    normal.Linear
	den    int64
	lo, hi int64 // the remainders kept, 0 <= lo <= hi <= den-1
	text   string
	// covers is the text of the condition the step is equivalent to when
	// it was derived from one (an equality of two remainders, samequot.go).
	covers string
	// rest and parts split num (periodParts), once for the printer and the
	// host's per-tile test.
	rest  normal.Linear
	parts []periodPart
}

// newPeriodStep is the step `num % den` in [lo, hi] of f.
func newPeriodStep(f *normal.Form, num normal.Linear, den, lo, hi int64, text string) periodStep {
	rest, parts := periodParts(f, num)
	return periodStep{num: num, den: den, lo: lo, hi: hi, text: text, rest: rest, parts: parts}
}

// termPeriods returns the remainder conditions of t that a tile can fail
// whole: n reads q or kv, directly or through floor quotients of one of
// them (`q // 256 - kv // 256`), and has small coefficients.
func termPeriods(f *normal.Form, t *normal.Term) []periodStep {
	var out []periodStep
	for _, b := range t.Bounds {
		num, den, r, ok := b.Remainder()
		if !ok || !small(den) || !safeLinear(f, num) || !periodDividend(f, num) {
			continue
		}
		s := newPeriodStep(f, num, den, 0, den-1, b.String())
		if r.HasLo {
			s.lo = max(r.Lo, 0)
		}
		if r.HasHi {
			s.hi = min(r.Hi, den-1)
		}
		if s.lo > s.hi {
			continue // never holds: the term is dead, which its bounds say too
		}
		out = append(out, s)
	}
	return out
}

// periodDividend reports whether n reads q or kv, and every floor quotient
// it reads divides a form of exactly one of them (and no other quotient):
// each part of n is then monotone in one tile variable, so its extremes
// over a tile lie at the tile's ends.
func periodDividend(f *normal.Form, n normal.Linear) bool {
	uses := n.Uses(dsl.VarQ) || n.Uses(dsl.VarKV)
	for i, c := range n.X {
		if c == 0 {
			continue
		}
		e := f.Extras[i]
		if e.Kind != normal.ExtraDiv {
			continue
		}
		if _, _, ok := quotientOf(e); !ok {
			return false
		}
		uses = true
	}
	return uses
}

// quotientOf returns the tile variable (q or kv) a floor quotient's
// dividend reads and its coefficient there; ok is false unless it reads
// exactly one of them and no extra variable.
func quotientOf(e *normal.Extra) (dsl.Var, int64, bool) {
	q, kv := e.Num.Coef[dsl.VarQ], e.Num.Coef[dsl.VarKV]
	switch {
	case e.Num.UsesExtras() || (q != 0) == (kv != 0):
		return 0, 0, false
	case q != 0:
		return dsl.VarQ, q, true
	}
	return dsl.VarKV, kv, true
}

// rejects reports whether some tile of bm rows and bn keys can miss every
// remainder s keeps: over the best-placed tile n takes span+1 consecutive
// values (v times c spans |c| * (tile - 1); a quotient (a v + k) // d at
// least ceil((|a| (tile - 1) + 1) / d) values), which miss the kept
// remainders when span+1 plus their count is at most den.
func (s periodStep) rejects(f *normal.Form, bm, bn int64) bool {
	width := map[dsl.Var]int64{dsl.VarQ: bm - 1, dsl.VarKV: bn - 1}
	span := abs64(s.num.Coef[dsl.VarQ])*width[dsl.VarQ] + abs64(s.num.Coef[dsl.VarKV])*width[dsl.VarKV]
	for i, c := range s.num.X {
		if c == 0 || f.Extras[i].Kind != normal.ExtraDiv {
			continue
		}
		e := f.Extras[i]
		v, a, _ := quotientOf(e)
		values := (abs64(a)*width[v] + 1 + e.Den - 1) / e.Den
		span += abs64(c) * (values - 1)
	}
	return span+1+(s.hi-s.lo+1) <= s.den
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// filterTiles are the (rows, keys) tiles the filter is asked about: every
// platform's forward tile and backward tile at every head dim (the narrow
// ones: the warp-specialized backward's 128-key tile is for kernels without a
// mask, with open columns (openColumns), which have no remainder to filter,
// or with long columns (longColumns), which leaves out filtered masks).
func filterTiles() [][2]int64 {
	var out [][2]int64
	for _, p := range hipsrc.Platforms {
		out = append(out, [2]int64{hipsrc.BlockM, int64(p.BlockN())})
		for _, d := range hipsrc.HeadDims {
			if t, err := p.BwdTileFor(d); err == nil {
				out = append(out, [2]int64{int64(t.BlockM), int64(t.BlockN)})
			}
		}
	}
	return out
}

// tileFilter reports whether the kernel filters its tiles by the terms'
// remainder conditions: an analytic plan that is filterable.
func tileFilter(p sparsityPlan) bool {
	return p.kind == SparsityAnalytic && filterable(p)
}

// filterable reports whether the plan's kv intervals are one per term (at
// most maxKVIntervals terms, no block selections) and some term has a
// remainder condition that rejects some tile.
func filterable(p sparsityPlan) bool {
	if !p.analysed || len(p.disjuncts) == 0 || len(p.disjuncts) > maxKVIntervals || selWalk(p) {
		return false
	}
	tiles := filterTiles()
	for _, d := range p.disjuncts {
		for _, s := range d.periods {
			for _, t := range tiles {
				if s.rejects(p.form, t[0], t[1]) {
					return true
				}
			}
		}
	}
	return false
}

// periodMeetsC is maskc_period_meets, printed with the filter (periodMeets
// is its host twin).
const periodMeetsC = `// Whether some n in [n_lo, n_hi] has the floor remainder n % d (d > 0) in
// [r_lo, r_hi] (0 <= r_lo <= r_hi < d): the tile test of a remainder
// condition (maskc_g_kv_term_live). A range of d - 1 or more steps holds
// every remainder; a shorter one holds the remainders r .. e of its first
// value r, where past d - 1 they wrap to 0 .. e - d.
__device__ __forceinline__ bool maskc_period_meets(long long n_lo, long long n_hi, long long d, long long r_lo,
                                                   long long r_hi) {
  if (n_hi < n_lo) return false;
  if (n_hi - n_lo >= d - 1) return true;
  const long long r = maskc_py_floormod_pos(n_lo, d), e = r + (n_hi - n_lo);
  return (r <= r_hi && r_lo <= e) || r_lo + d <= e;
}
`

const termLiveSig = `__device__ __forceinline__ bool maskc_g_kv_term_live(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                                     int i, long long b, long long h, long long q_lo, long long q_hi, long long kv_lo, long long kv_hi)`

// termLive prints MASKC_KV_TILE_FILTER and maskc_g_kv_term_live where
// tileFilter holds, else "".
func (g *sparsityWriter) termLive(p sparsityPlan) string {
	if !tileFilter(p) {
		return ""
	}
	g.reset()
	g.line("(void)buf, (void)B, (void)H, (void)HKV, (void)Q, (void)KV, (void)b, (void)h;")
	g.line("const long long qa = q_lo, qb = q_hi - 1, ka = kv_lo, kb = kv_hi - 1;")
	g.line("(void)qa, (void)qb, (void)ka, (void)kb;")
	for i, d := range p.disjuncts {
		if len(d.periods) == 0 {
			continue
		}
		// The block opens first: the dividends' symbols are read inside it.
		g.line("if (i == %d) {  // %s", i, d.text)
		saved := g.w.indent
		g.w.indent = "    "
		var conds []string
		for _, s := range d.periods {
			lo, hi := g.periodRange(s)
			conds = append(conds, fmt.Sprintf("maskc_period_meets(%s, %s, %s, %s, %s)  // %s", lo, hi, intLit(s.den), intLit(s.lo), intLit(s.hi), s.text))
		}
		g.w.indent = saved
		g.w.temps = map[string]cExpr{}
		for j, c := range conds {
			end := ";"
			if j < len(conds)-1 {
				end = " &&"
			}
			c = strings.Replace(c, ")  // ", ")"+end+"  // ", 1)
			if j == 0 {
				g.line("  return %s", c)
			} else {
				g.line("         %s", c)
			}
		}
		g.line("}")
	}
	g.line("return true;  // a term without remainder conditions")
	return "// Where some term keeps a periodic set of keys (a remainder condition), the forward's walk\n" +
		"// skips the tiles no term keeps and the backward classes them empty (maskc_kv_tile_live).\n" +
		"#define MASKC_KV_TILE_FILTER 1\n" + periodMeetsC + "\n" +
		"// Whether term i can keep a pair of the rows [q_lo, q_hi) and keys [kv_lo, kv_hi): each of its\n" +
		"// remainder conditions holds for some value of its dividend over the tile.\n" +
		termLiveSig + " {\n" + g.w.body.String() + "}\n\n"
}

// periodRange prints the smallest and largest value of s's dividend over
// the tile [qa, qb] x [ka, kb] (periodParts).
func (g *sparsityWriter) periodRange(s periodStep) (lo, hi string) {
	end := func(upper bool) string {
		ts := g.linTerms(s.rest, "", "")
		for _, pt := range s.parts {
			qv, kvv := pt.at(upper)
			ts = append(ts, term{pt.coef, g.linCode(pt.base, qv, kvv)})
		}
		return sumCode(ts, s.rest.K, intLit)
	}
	return end(false), end(true)
}

// periodPart is one part of a remainder's dividend that reads a tile
// variable: c times q or kv, or c times a floor quotient of one of them.
type periodPart struct {
	coef int64         // c
	base normal.Linear // q, kv or the quotient, with coefficient 1
	v    dsl.Var       // the tile variable it reads
	up   bool          // c times base grows with v
}

// at names the tile end where the part is largest (upper) or smallest:
// qa / qb for q, ka / kb for kv, as (q, kv) arguments of linCode.
func (pt periodPart) at(upper bool) (qv, kvv string) {
	hi := pt.up == upper
	if pt.v == dsl.VarQ {
		return corner(hi, "q"), ""
	}
	return "", corner(hi, "k")
}

// periodParts splits a dividend into the parts reading q or kv (each
// monotone in its variable, periodDividend) and the rest (constants, sizes,
// b, h and symbols), fixed over a tile.
func periodParts(f *normal.Form, n normal.Linear) (normal.Linear, []periodPart) {
	rest := n
	var parts []periodPart
	for _, v := range []dsl.Var{dsl.VarQ, dsl.VarKV} {
		if c := n.Coef[v]; c != 0 {
			var l normal.Linear
			l.Coef[v] = 1
			parts = append(parts, periodPart{coef: c, base: l, v: v, up: c > 0})
			rest.Coef[v] = 0
		}
	}
	for i, c := range n.X {
		if c == 0 || f.Extras[i].Kind != normal.ExtraDiv {
			continue
		}
		v, a, _ := quotientOf(f.Extras[i])
		var l normal.Linear
		l.X[i] = 1
		parts = append(parts, periodPart{coef: c, base: l, v: v, up: (c > 0) == (a > 0)})
		rest.X[i] = 0
	}
	return rest, parts
}

// periodMeets is maskc_period_meets (periodMeetsC): whether some n in
// [nLo, nHi] has n mod d (floored) in [rLo, rHi].
func periodMeets(nLo, nHi, d, rLo, rHi int64) bool {
	if nHi < nLo {
		return false
	}
	if nHi-nLo >= d-1 {
		return true
	}
	r := nLo - d*floorDiv(nLo, d)
	e := r + (nHi - nLo)
	return r <= rHi && rLo <= e || rLo+d <= e
}

// termLive is maskc_g_kv_term_live on the host, with the tile [qa, qb] x
// [ka, kb] in the mask's coordinates.
func (s *HostSparsity) termLive(i int, b, h, qa, qb, ka, kb int64) (bool, error) {
	for _, st := range s.k.sparsity.disjuncts[i].periods {
		base, err := s.lin(st.rest, b, h, 0, 0)
		if err != nil {
			return false, err
		}
		lo, hi := base, base
		for _, pt := range st.parts {
			at := func(upper bool) (int64, error) {
				q, kv := qa, ka
				if pt.up == upper {
					q, kv = qb, kb
				}
				x, err := s.lin(pt.base, b, h, q, kv)
				return pt.coef * x, err
			}
			l, err := at(false)
			if err != nil {
				return false, err
			}
			u, err := at(true)
			if err != nil {
				return false, err
			}
			lo, hi = lo+l, hi+u
		}
		if !periodMeets(lo, hi, st.den, st.lo, st.hi) {
			return false, nil
		}
	}
	return true, nil
}

// Filters reports whether the kernel filters its walk's tiles by the
// terms' remainder conditions (MASKC_KV_TILE_FILTER): KVTileLive then
// decides the forward's visits and KVTileMeets the backward's classes.
func (s *HostSparsity) Filters() bool { return s.filter }

// KVTileLive returns what maskc_kv_tile_live (hipsrc/frame.h) returns: for
// the rows [qLo, qHi) of (b, h), whose KVIntervals are los, his, whether
// some term's interval meets the keys [kvLo, kvHi) and, where the kernel
// filters tiles (Filters), the term's remainder conditions can hold on the
// pairs there. The forward's walk visits a tile of its intervals only
// where this holds.
func (s *HostSparsity) KVTileLive(b, h, qLo, qHi, kvLo, kvHi int64, los, his []int64) (bool, error) {
	for i := range los {
		a, z := max(los[i], kvLo), min(his[i], kvHi)
		if a >= z {
			continue
		}
		if !s.filter {
			return true, nil
		}
		live, err := s.termLive(i, b, h, qLo, qHi-1, a, z-1)
		if err != nil || live {
			return live, err
		}
	}
	return false, nil
}

// periodsCover reports whether every condition d's kv walk leaves out is a
// remainder condition the tile filter tests: a term bounded by nothing
// else (`(q - kv) % 64 == 0` alone) is then walked over every key and
// filtered per tile, which visits the tiles the pre-pass would flag
// without its pass over every pair.
func periodsCover(d disjunctPlan) bool {
	if len(d.periods) == 0 {
		return false
	}
	tested := map[string]bool{}
	for _, s := range d.periods {
		tested[s.text] = true
		if s.covers != "" {
			tested[s.covers] = true
		}
	}
	for _, l := range d.kv.loose {
		if !tested[l] {
			return false
		}
	}
	return true
}
