package codegen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/normal"
)

// HostSparsity evaluates a kernel's block sparsity on the CPU: the same
// plan that maskc_kv_range and maskc_tile_full were printed from, and the
// pre-pass's per-tile logic (maskc_tile_flags) over the reference mask, for
// one set of sizes and buffers. It must not be used by two goroutines at
// once; make one per goroutine.
type HostSparsity struct {
	k     *Kernel
	env   *eval.Env
	mask  *eval.Bound                  // nil without a mask
	exprs map[dsl.Expr]*eval.BoundExpr // the plan's free terms and atoms
	segs  map[*BufferABI][]float64     // segments buffers' elements
	// unsorted are the segments buffers whose ids are not non-decreasing:
	// as maskc_seg_check reports them, their searches narrow nothing and
	// prove nothing full.
	unsorted map[*BufferABI]bool
	// filter is tileFilter of the kernel's plan, decided once for the
	// per-tile KVTileLive.
	filter bool
}

// HostSparsity binds the kernel's sparsity plan and mask to env's sizes
// and buffers. It fails when the mask cannot be evaluated with them (a
// missing or misshapen buffer). A `segments` buffer whose ids are not
// non-decreasing is taken as the kernel takes it (maskc_seg_check): its
// searches narrow nothing and prove no tile full, so the tiles are those
// of the mask as written; Unsorted names it.
func (k *Kernel) HostSparsity(env *eval.Env) (*HostSparsity, error) {
	if env == nil || env.Q < 1 || env.KV < 1 || env.B < 1 || env.H < 1 {
		return nil, fmt.Errorf("codegen: host sparsity needs positive sizes")
	}
	s := &HostSparsity{k: k, env: env, exprs: map[dsl.Expr]*eval.BoundExpr{}, segs: map[*BufferABI][]float64{}, unsorted: map[*BufferABI]bool{}, filter: tileFilter(k.sparsity)}
	if k.Mask == nil {
		return s, nil
	}
	fn, err := eval.Compile(k.Mask)
	if err != nil {
		return nil, err
	}
	if s.mask, err = fn.Bind(env); err != nil {
		return nil, err
	}
	bind := func(e dsl.Expr) error {
		if s.exprs[e] != nil {
			return nil
		}
		x, err := eval.CompileExpr(k.Mask, e)
		if err != nil {
			return err
		}
		s.exprs[e], err = x.Bind(env)
		return err
	}
	p := k.sparsity
	if !p.analysed {
		return s, nil
	}
	for _, e := range p.form.Extras {
		if e.Kind == normal.ExtraSymbol {
			if err := bind(e.Expr); err != nil {
				return nil, err
			}
		}
	}
	var segs []*BufferABI
	for _, d := range p.disjuncts {
		conds := append([]cond(nil), d.kv.live...)
		for _, f := range d.full {
			conds = append(conds, f.cond)
			if f.sel != nil {
				if err := bind(f.sel.val); err != nil {
					return nil, err
				}
			}
		}
		for _, c := range conds {
			if c.atom != nil && c.seg == nil {
				if err := bind(c.atom.Expr); err != nil {
					return nil, err
				}
			}
		}
		segs = append(segs, d.kv.segs...)
		if d.kv.sel != nil {
			if err := bind(d.kv.sel.val); err != nil {
				return nil, err
			}
		}
	}
	for _, b := range append(segs, p.segments()...) {
		if s.segs[b] != nil {
			continue
		}
		t := env.Buffers[b.Name]
		if t == nil || len(t.Dims) != 1 {
			return nil, fmt.Errorf("codegen: segments buffer %s is not given as a 1-D tensor", b.Name)
		}
		for i := 1; i < len(t.Data); i++ {
			if t.Data[i] < t.Data[i-1] {
				s.unsorted[b] = true
				break
			}
		}
		s.segs[b] = t.Data
	}
	return s, nil
}

// Unsorted names the segments buffers the plan searches whose ids are not
// non-decreasing, in plan order: the kernel's searches skip them (the
// mask as written is computed per element where they would have narrowed).
func (s *HostSparsity) Unsorted() []string {
	var out []string
	for _, b := range s.k.sparsity.segments() {
		if s.unsorted[b] {
			out = append(out, b.Name)
		}
	}
	return out
}

// Notes are remarks on the bound buffers for people: the reference
// evaluator's (a segments buffer whose ids are not sorted, evaluated as
// written), and for each searched buffer in Unsorted that the kernel's
// segment searches narrow nothing with these ids.
func (s *HostSparsity) Notes() []string {
	var out []string
	if s.mask != nil {
		out = append(out, s.mask.Notes()...)
	}
	for _, name := range s.Unsorted() {
		out = append(out, fmt.Sprintf("the kernel's searches of segments buffer %s narrow nothing with these ids (not sorted): its tiles are visited and the mask evaluated per element where sorted ids would skip them", name))
	}
	return out
}

// Sparsity is the kernel's strategy: SparsityAnalytic, SparsityPrepass or
// SparsityNone.
func (s *HostSparsity) Sparsity() hipsrc.Sparsity { return s.k.sparsity.kind }

// Mask evaluates the kernel's mask at (b, h, q, kv); true without a mask.
func (s *HostSparsity) Mask(b, h, q, kv int64) (bool, error) {
	if s.mask == nil {
		return true, nil
	}
	return s.mask.Mask(b, h, q, kv)
}

// KVRange returns what maskc_kv_range returns for (b, h) and the query
// rows [qLo, qHi): every kv outside [lo, hi) is masked for those rows.
func (s *HostSparsity) KVRange(b, h, qLo, qHi int64) (lo, hi int64, err error) {
	if !s.k.sparsity.analysed {
		return 0, s.env.KV, nil
	}
	loAll, hiAll := s.env.KV, int64(0)
	err = s.disjunctRanges(b, h, qLo, qHi, func(_ int, live bool, _, _, ka, kb int64) error {
		if live {
			loAll, hiAll = min(loAll, ka), max(hiAll, kb+1)
		}
		return nil
	})
	if err != nil || loAll >= hiAll {
		return 0, 0, err
	}
	return loAll, hiAll, nil
}

// KVIntervals returns what maskc_kv_intervals writes for (b, h) and the
// query rows [qLo, qHi): maskc_kv_interval_count half-open kv intervals,
// empty ones as lo >= hi, outside all of which every kv is masked for those
// rows.
func (s *HostSparsity) KVIntervals(b, h, qLo, qHi int64) (lo, hi []int64, err error) {
	p := s.k.sparsity
	if _, ok := selIntervals(p); ok {
		err = s.disjunctRanges(b, h, qLo, qHi, func(i int, live bool, qa, qb, ka, kb int64) error {
			sel := p.disjuncts[i].kv.sel
			if sel == nil {
				if !live {
					ka, kb = 0, -1
				}
				lo, hi = append(lo, ka), append(hi, kb+1)
				return nil
			}
			l, h, err := s.selRanges(sel, b, h, live, qa, qb, ka, kb)
			lo, hi = append(lo, l...), append(hi, h...)
			return err
		})
		return lo, hi, err
	}
	if !p.analysed || len(p.disjuncts) > maxKVIntervals || unionIsHull(p, dsl.VarKV) {
		l, h, err := s.KVRange(b, h, qLo, qHi)
		return []int64{l}, []int64{h}, err
	}
	if len(p.disjuncts) == 0 {
		return []int64{0}, []int64{0}, nil
	}
	err = s.disjunctRanges(b, h, qLo, qHi, func(_ int, live bool, _, _, ka, kb int64) error {
		if live {
			lo, hi = append(lo, ka), append(hi, kb+1)
		} else {
			lo, hi = append(lo, 0), append(hi, 0)
		}
		return nil
	})
	return lo, hi, err
}

// IntervalTerms names what each interval of KVIntervals bounds, in its
// order, as a phrase: the term of the mask's normal form whose kv range it
// is, as normal prints it, with the conditions its range leaves out; one entry for the hull of every term when the kernel
// walks them as one range (more terms than it walks one by one, or no
// analysed form).
func (s *HostSparsity) IntervalTerms() []string {
	p := s.k.sparsity
	switch {
	case !p.analysed:
		return []string{"the whole key range (the mask has no analysed normal form)"}
	case len(p.disjuncts) > maxKVIntervals && !selWalk(p):
		// The first terms only: a union past the walk's ranges is large, and
		// the message says how many there are.
		const shown, width = 2, 120
		texts := make([]string, 0, shown)
		for _, d := range p.disjuncts[:shown] {
			texts = append(texts, clipText(d.text, width))
		}
		return []string{fmt.Sprintf("the hull of the %d terms %s | ... (%d more; more than the %d ranges the kernel walks one by one)",
			len(p.disjuncts), strings.Join(texts, " | "), len(p.disjuncts)-shown, maxKVIntervals)}
	case len(p.disjuncts) == 0:
		return []string{"false"}
	case unionIsHull(p, dsl.VarKV):
		texts := make([]string, len(p.disjuncts))
		for i, d := range p.disjuncts {
			texts[i] = d.text
		}
		return []string{fmt.Sprintf("the union of the %d terms `%s`, which is their hull (every range starts at kv = 0 or every range runs to the last key)",
			len(p.disjuncts), clipText(strings.Join(texts, " | "), 240))}
	}
	_, sels := selIntervals(p)
	var out []string
	for _, d := range p.disjuncts {
		t := "term `" + d.text + "`"
		if sel := d.kv.sel; sels && sel != nil {
			for j := 0; j < sel.reads(); j++ {
				out = append(out, fmt.Sprintf("%s (kv block %d selected by `%s` over the tile's rows)", t, j, sel.text))
			}
			continue
		}
		if len(d.kv.loose) > 0 {
			t += " (its kv range leaves out `" + strings.Join(d.kv.loose, "`, `") + "`)"
		}
		out = append(out, t)
	}
	return out
}

// disjunctRanges runs each term's row walk over the query rows [qLo,
// qHi) and calls sink with the term's index, its liveness (live, a
// non-empty q range and a non-empty kv range), q range [qa, qb] and kv
// range [ka, kb], as the code walkDisjuncts prints does.
func (s *HostSparsity) disjunctRanges(b, h, qLo, qHi int64, sink func(i int, live bool, qa, qb, ka, kb int64) error) error {
	return s.walkRanges(dsl.VarKV, b, h, qLo, qHi, sink)
}

// QRange returns what maskc_q_range returns for (b, h) and the keys
// [kvLo, kvHi): every q outside [lo, hi) masks those keys (the backward's
// column walk visits the q tiles of that range).
func (s *HostSparsity) QRange(b, h, kvLo, kvHi int64) (lo, hi int64, err error) {
	if !s.k.sparsity.analysed {
		return 0, s.env.Q, nil
	}
	loAll, hiAll := s.env.Q, int64(0)
	err = s.walkRanges(dsl.VarQ, b, h, kvLo, kvHi, func(_ int, live bool, qa, qb, _, _ int64) error {
		if live {
			loAll, hiAll = min(loAll, qa), max(hiAll, qb+1)
		}
		return nil
	})
	if err != nil || loAll >= hiAll {
		return 0, 0, err
	}
	return loAll, hiAll, nil
}

// QRangeMonotone reports whether the kernel's source defines
// MASKC_Q_RANGE_MONOTONE: QRange's ends never fall from one kv tile to
// the next of those whose range is not empty (qRangeMonotone).
func (s *HostSparsity) QRangeMonotone() bool { return qRangeMonotone(s.k.sparsity) }

// walkRanges is walkDisjuncts on the host: each term's walk over the
// outer range [oLo, oHi) (q rows for inner kv, kv columns for inner q),
// passed to sink with the term's liveness and its q and kv ranges.
func (s *HostSparsity) walkRanges(inner dsl.Var, b, h, oLo, oHi int64, sink func(i int, live bool, qa, qb, ka, kb int64) error) error {
	p, Q, KV := s.k.sparsity, s.env.Q, s.env.KV
	for i, d := range p.disjuncts {
		w := d.kv
		qa, qb, ka, kb := oLo, oHi-1, int64(0), KV-1
		oa, ob, ia, ib, size := &qa, &qb, &ka, &kb, KV
		if inner == dsl.VarQ {
			w = d.q
			qa, qb, ka, kb = 0, Q-1, oLo, oHi-1
			oa, ob, ia, ib, size = &ka, &kb, &qa, &qb, Q
		}
		live := true
		for _, c := range w.live {
			if !live {
				break
			}
			v, err := s.cond(c, b, h, 0, 0, 0, 0)
			if err != nil {
				return err
			}
			live = v
		}
		// narrow applies steps to [*lo, *hi], each side evaluated with the
		// outer variable at its range's start or end (the outer steps
		// read neither q nor kv).
		narrow := func(steps []sideStep, lo, hi *int64) error {
			for _, st := range steps {
				o := *oa
				if st.atHi {
					o = *ob
				}
				q, kv := o, int64(0)
				if inner == dsl.VarQ {
					q, kv = 0, o
				}
				v, err := s.side(st, b, h, q, kv)
				if err != nil {
					return err
				}
				if st.upper {
					*hi = min(*hi, v)
				} else {
					*lo = max(*lo, v)
				}
			}
			return nil
		}
		if err := narrow(w.outerSteps, oa, ob); err != nil {
			return err
		}
		if err := narrow(w.innerSteps, ia, ib); err != nil {
			return err
		}
		for _, sb := range w.segs {
			seg := s.segs[sb]
			n := int64(len(seg))
			if !s.unsorted[sb] && *oa >= 0 && *oa <= *ob && *ob < n && size <= n {
				*ia = max(*ia, segSearch(seg, seg[*oa], false))
				*ib = min(*ib, segSearch(seg, seg[*ob], true)-1)
			}
		}
		if err := sink(i, live && qa <= qb && ka <= kb, qa, qb, ka, kb); err != nil {
			return err
		}
	}
	return nil
}

// selRanges is what selCode prints for a term with a selection: its
// reads() intervals over the rows [qa, qb] (half-open, empty as lo >= hi).
func (s *HostSparsity) selRanges(sel *selStep, b, h int64, some bool, qa, qb, ka, kb int64) (lo, hi []int64, err error) {
	k := sel.reads()
	lo, hi = make([]int64, k), make([]int64, k)
	fits := sel.qDiv == 0 || floorDiv(qb, sel.qDiv)-floorDiv(qa, sel.qDiv) < int64(k)
	if some && !fits {
		lo[0], hi[0] = ka, kb+1
	}
	if !some || !fits {
		return lo, hi, nil
	}
	for j := 0; j < k; j++ {
		q := qa
		if sel.qDiv != 0 {
			q = max(qa, (floorDiv(qa, sel.qDiv)+int64(j))*sel.qDiv)
		}
		if q > qb {
			continue
		}
		v, err := s.exprs[sel.val].Int(b, h, q, 0)
		if err != nil {
			return nil, nil, err
		}
		v = min(max(v, -1), s.env.KV/sel.blk+1)
		if a, e := max(ka, v*sel.blk), min(kb, v*sel.blk+sel.blk-1); a <= e {
			lo[j], hi[j] = a, e+1
		}
	}
	return lo, hi, nil
}

// side evaluates a side step at (b, h, q, kv) as the generated code does.
func (s *HostSparsity) side(st sideStep, b, h, q, kv int64) (int64, error) {
	sd := st.side
	n, err := s.lin(sd.Num, b, h, q, kv)
	if err != nil {
		return 0, err
	}
	r := floorDiv(n, sd.Den)
	if !st.upper && r*sd.Den != n {
		r++
	}
	return sd.Mul*r + sd.Off, nil
}

// TileFull returns what maskc_tile_full returns for (b, h) and the tile
// [qLo, qHi) x [kvLo, kvHi): true only if the mask keeps every pair.
func (s *HostSparsity) TileFull(b, h, qLo, qHi, kvLo, kvHi int64) (bool, error) {
	p := s.k.sparsity
	if !p.analysed {
		return p.kind == SparsityNone, nil
	}
	qa, qb, ka, kb := qLo, qHi-1, kvLo, kvHi-1
	pick := func(hi bool, a, b int64) int64 {
		if hi {
			return b
		}
		return a
	}
	for _, d := range p.disjuncts {
		if d.full == nil {
			continue
		}
		full := true
		for _, f := range d.full {
			if !full {
				break
			}
			switch {
			case f.sel != nil:
				v, err := s.selFull(f.sel, b, h, qa, qb, ka, kb)
				if err != nil {
					return false, err
				}
				full = v
			case f.seg != nil:
				seg := s.segs[f.seg]
				n := int64(len(seg))
				full = !s.unsorted[f.seg] && qa >= 0 && ka >= 0 && qb < n && kb < n && seg[qa] == seg[qb] && seg[ka] == seg[kb] && seg[qa] == seg[ka]
			default:
				v, err := s.cond(f.cond, b, h, pick(!f.qMax, qa, qb), pick(!f.kvMax, ka, kb), pick(f.qMax, qa, qb), pick(f.kvMax, ka, kb))
				if err != nil {
					return false, err
				}
				full = v
			}
		}
		if full {
			return true, nil
		}
	}
	return false, nil
}

// PrepassFlag returns the flag maskc_tile_flags writes (hipsrc.TileEmpty,
// TilePartial or TileFull) for (b, h) and the
// tile of rows [qLo, min(qHi, Q)) and keys [kvLo, kvHi), where keys at or
// past KV count as masked, and the number of kept pairs it saw; onKept,
// when not nil, is called with each of them.
func (s *HostSparsity) PrepassFlag(b, h, qLo, qHi, kvLo, kvHi int64, onKept func(q, kv int64)) (int, int64, error) {
	anyKept, all := false, true
	var kept int64
	for q := qLo; q < min(qHi, s.env.Q); q++ {
		for kv := kvLo; kv < kvHi; kv++ {
			keep := kv < s.env.KV
			if keep {
				var err error
				if keep, err = s.Mask(b, h, q, kv); err != nil {
					return 0, 0, err
				}
			}
			if keep {
				kept++
				if onKept != nil {
					onKept(q, kv)
				}
			}
			anyKept = anyKept || keep
			all = all && keep
		}
	}
	switch {
	case !anyKept:
		return hipsrc.TileEmpty, kept, nil
	case all:
		return hipsrc.TileFull, kept, nil
	}
	return hipsrc.TilePartial, kept, nil
}

// cond evaluates a bound (its lower side with the direction at (qLo,
// kvLo), its upper side at (qHi, kvHi)) or an atom free of q and kv.
func (s *HostSparsity) cond(c cond, b, h, qLo, kvLo, qHi, kvHi int64) (bool, error) {
	if c.atom != nil {
		v, err := s.exprs[c.atom.Expr].Bool(b, h, 0, 0)
		return v != c.atom.Neg, err
	}
	bd := c.bound
	if bd.HasLo {
		v, err := s.lin(bd.Dir, b, h, qLo, kvLo)
		if err != nil || v < bd.Lo {
			return false, err
		}
	}
	if bd.HasHi {
		v, err := s.lin(bd.Dir, b, h, qHi, kvHi)
		if err != nil || v > bd.Hi {
			return false, err
		}
	}
	return true, nil
}

// lin evaluates a linear form of the plan's normal form at (b, h, q, kv)
// with int64 arithmetic, as the generated code does.
func (s *HostSparsity) lin(l normal.Linear, b, h, q, kv int64) (int64, error) {
	var pt normal.Point
	pt[dsl.VarB], pt[dsl.VarH], pt[dsl.VarQ], pt[dsl.VarKV] = b, h, q, kv
	pt[dsl.SizeB], pt[dsl.SizeH], pt[dsl.SizeHKV], pt[dsl.SizeQ], pt[dsl.SizeKV] = s.env.B, s.env.H, s.env.HKV, s.env.Q, s.env.KV
	ex := s.k.sparsity.form.Extras
	// Only the extras l reads, directly or through a quotient's dividend,
	// are evaluated: the generated code reads no other symbol.
	need := make([]bool, len(ex))
	for i := len(ex) - 1; i >= 0; i-- {
		need[i] = need[i] || l.X[i] != 0
		if need[i] && ex[i].Kind == normal.ExtraDiv {
			for j, c := range ex[i].Num.X {
				if c != 0 {
					need[j] = true
				}
			}
		}
	}
	x := make([]int64, len(ex))
	for i, e := range ex {
		if !need[i] {
			continue
		}
		if e.Kind == normal.ExtraDiv {
			x[i] = floorDiv(normal.Value(e.Num, pt, x), e.Den)
			continue
		}
		v, err := s.exprs[e.Expr].Int(b, h, 0, 0)
		if err != nil {
			return 0, err
		}
		x[i] = v
	}
	return normal.Value(l, pt, x), nil
}

// floorDiv is maskc_py_floordiv for d > 0.
func floorDiv(a, d int64) int64 {
	q := a / d
	if a%d != 0 && a < 0 {
		q--
	}
	return q
}

// segSearch is maskc_seg_first (after false: the first index with
// seg[i] >= v) or maskc_seg_end (after true: the first with seg[i] > v) on
// a non-decreasing buffer.
func segSearch(seg []float64, v float64, after bool) int64 {
	return int64(sort.Search(len(seg), func(i int) bool {
		if after {
			return seg[i] > v
		}
		return seg[i] >= v
	}))
}

// clipText is text cut to at most n bytes, ending in "..." where cut.
func clipText(text string, n int) string {
	if len(text) <= n {
		return text
	}
	return text[:n-3] + "..."
}
