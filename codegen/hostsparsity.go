package codegen

import (
	"errors"
	"fmt"
	"sort"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
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
}

// HostSparsity binds the kernel's sparsity plan and mask to env's sizes
// and buffers. It fails when the mask cannot be evaluated with them (a
// missing or misshapen buffer), or when a `segments` buffer is not
// non-decreasing (the kernel's searches would then be undefined).
func (k *Kernel) HostSparsity(env *eval.Env) (*HostSparsity, error) {
	if env == nil || env.Q < 1 || env.KV < 1 || env.B < 1 || env.H < 1 {
		return nil, fmt.Errorf("codegen: host sparsity needs positive sizes")
	}
	s := &HostSparsity{k: k, env: env, exprs: map[dsl.Expr]*eval.BoundExpr{}, segs: map[*BufferABI][]float64{}}
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
	bindAtom := func(a atom) error {
		switch a.kind {
		case atomFree:
			return bind(a.e)
		case atomLinear:
			for _, t := range a.lin.terms {
				if err := bind(t.e); err != nil {
					return err
				}
			}
		case atomSegment:
			if s.segs[a.seg] != nil {
				return nil
			}
			t := env.Buffers[a.seg.Name]
			if t == nil || len(t.Dims) != 1 {
				return fmt.Errorf("codegen: segments buffer %s is not given as a 1-D tensor", a.seg.Name)
			}
			for i := 1; i < len(t.Data); i++ {
				if t.Data[i] < t.Data[i-1] {
					return fmt.Errorf("buffer %s is declared segments but decreases at index %d (%g after %g)", a.seg.Name, i, t.Data[i], t.Data[i-1])
				}
			}
			s.segs[a.seg] = t.Data
		}
		return nil
	}
	for _, d := range k.sparsity.disjuncts {
		for _, st := range append(append([]rangeStep(nil), d.rows...), d.cols...) {
			if err := bindAtom(st.at); err != nil {
				return nil, err
			}
			if st.kind == stepKVBlock {
				for _, t := range append(append([]freeTerm(nil), st.blk.fq.terms...), st.blk.fk.terms...) {
					if err := bind(t.e); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	return s, nil
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
	err = s.disjunctRanges(b, h, qLo, qHi, func(live bool, ka, kb int64) {
		if live {
			loAll, hiAll = min(loAll, ka), max(hiAll, kb+1)
		}
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
	if !p.analysed || len(p.disjuncts) > maxKVIntervals {
		l, h, err := s.KVRange(b, h, qLo, qHi)
		return []int64{l}, []int64{h}, err
	}
	if len(p.disjuncts) == 0 {
		return []int64{0}, []int64{0}, nil
	}
	err = s.disjunctRanges(b, h, qLo, qHi, func(live bool, ka, kb int64) {
		if live {
			lo, hi = append(lo, ka), append(hi, kb+1)
		} else {
			lo, hi = append(lo, 0), append(hi, 0)
		}
	})
	return lo, hi, err
}

// disjunctRanges runs each disjunct's range steps over the query rows
// [qLo, qHi) and calls sink with its liveness (live, a non-empty q range
// and a non-empty kv range) and kv range [ka, kb].
func (s *HostSparsity) disjunctRanges(b, h, qLo, qHi int64, sink func(live bool, ka, kb int64)) error {
	p, KV := s.k.sparsity, s.env.KV
	for _, d := range p.disjuncts {
		qa, qb, ka, kb := qLo, qHi-1, int64(0), KV-1
		live := true
		for _, st := range d.rows {
			switch st.kind {
			case stepLive:
				if live {
					v, err := s.free(st.at, b, h)
					if err != nil {
						return err
					}
					live = v
				}
			case stepLiveConst:
				if live {
					v, err := s.lin(st.at.lin, b, h, 0, 0)
					if err != nil {
						return err
					}
					live = v <= 0
				}
			case stepQUpper, stepQLower:
				r, err := s.lin(st.rest, b, h, 0, 0)
				if err != nil {
					return err
				}
				if st.kind == stepQUpper {
					qb = min(qb, floorDiv(-r, st.coef))
				} else {
					qa = max(qa, -floorDiv(-r, st.coef))
				}
			}
		}
		for _, st := range d.cols {
			qStar := qb
			if st.atQLo {
				qStar = qa
			}
			switch st.kind {
			case stepKVUpper, stepKVLower:
				r, err := s.lin(st.rest, b, h, qStar, 0)
				if err != nil {
					return err
				}
				if st.kind == stepKVUpper {
					kb = min(kb, floorDiv(-r, st.coef))
				} else {
					ka = max(ka, -floorDiv(-r, st.coef))
				}
			case stepSegment:
				seg := s.segs[st.at.seg]
				n := int64(len(seg))
				if qa >= 0 && qa <= qb && qb < n && KV <= n {
					ka = max(ka, segSearch(seg, seg[qa], false))
					kb = min(kb, segSearch(seg, seg[qb], true)-1)
				}
			case stepKVBlock:
				r := st.blk
				fmin, err1 := s.blockIndex(r.fq, r.cq, b, h, qa, 0)
				fmax, err2 := s.blockIndex(r.fq, r.cq, b, h, qb, 0)
				rest := r.fk
				rest.kv = 0
				rv, err3 := s.lin(rest, b, h, 0, 0)
				if err := errors.Join(err1, err2, err3); err != nil {
					return err
				}
				gLo, gHi, hasLo, hasHi := r.gBounds(fmin, fmax)
				if hasHi { // fk(kv) <= ck*gHi + ck - 1
					kb = min(kb, floorDiv(r.ck*gHi+r.ck-1-rv, r.fk.kv))
				}
				if hasLo { // fk(kv) >= ck*gLo
					ka = max(ka, -floorDiv(rv-r.ck*gLo, r.fk.kv))
				}
			}
		}
		sink(live && qa <= qb && ka <= kb, ka, kb)
	}
	return nil
}

// blockIndex evaluates floor(l(q, kv) / c) as the generated code does.
func (s *HostSparsity) blockIndex(l linear, c, b, h, q, kv int64) (int64, error) {
	v, err := s.lin(l, b, h, q, kv)
	return floorDiv(v, c), err
}

// TileFull returns what maskc_tile_full returns for (b, h) and the tile
// [qLo, qHi) x [kvLo, kvHi): true only if the mask keeps every pair.
func (s *HostSparsity) TileFull(b, h, qLo, qHi, kvLo, kvHi int64) (bool, error) {
	p := s.k.sparsity
	if !p.analysed {
		return p.kind == SparsityNone, nil
	}
	qa, qb, ka, kb := qLo, qHi-1, kvLo, kvHi-1
	for _, d := range p.disjuncts {
		if d.full == nil {
			continue
		}
		full := true
		for _, f := range d.full {
			if !full {
				break
			}
			switch f.kind {
			case fullFree:
				v, err := s.free(f.at, b, h)
				if err != nil {
					return false, err
				}
				full = v
			case fullLinear:
				q, kv := qa, ka
				if f.qHi {
					q = qb
				}
				if f.kvHi {
					kv = kb
				}
				v, err := s.lin(f.at.lin, b, h, q, kv)
				if err != nil {
					return false, err
				}
				full = v <= 0
			case fullBlock:
				r := f.blk
				gmin, err1 := s.blockIndex(r.fk, r.ck, b, h, 0, ka)
				gmax, err2 := s.blockIndex(r.fk, r.ck, b, h, 0, kb)
				fmin, err3 := s.blockIndex(r.fq, r.cq, b, h, qa, 0)
				fmax, err4 := s.blockIndex(r.fq, r.cq, b, h, qb, 0)
				if err := errors.Join(err1, err2, err3, err4); err != nil {
					return false, err
				}
				full = r.holdsAll(gmin, gmax, fmin, fmax)
			case fullSegment:
				seg := s.segs[f.at.seg]
				n := int64(len(seg))
				full = qa >= 0 && ka >= 0 && qb < n && kb < n && seg[qa] == seg[qb] && seg[ka] == seg[kb] && seg[qa] == seg[ka]
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

// free evaluates a free atom at (b, h).
func (s *HostSparsity) free(a atom, b, h int64) (bool, error) {
	v, err := s.exprs[a.e].Bool(b, h, 0, 0)
	return v != a.neg, err
}

// lin evaluates a linear form at (b, h, q, kv) with int64 arithmetic, as
// the generated code does.
func (s *HostSparsity) lin(l linear, b, h, q, kv int64) (int64, error) {
	v := l.q*q + l.kv*kv + l.c
	for _, t := range l.terms {
		x, err := s.exprs[t.e].Int(b, h, 0, 0)
		if err != nil {
			return 0, err
		}
		v += t.coef * x
	}
	return v, nil
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
