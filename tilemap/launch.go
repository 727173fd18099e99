package tilemap

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
)

// LaunchAll returns Launch's counts for each of ps, in their order, from
// one pass over the launch: the mask is evaluated at most once per (q, kv)
// pair for all platforms (in key granules of the greatest common divisor
// of their tile widths, summed into each platform's tiles), and only in the
// granules that meet one of the kernel's kv intervals for the q tile (the
// intervals are sound: every key outside them is masked, so a granule
// outside them keeps nothing and is not evaluated). The counts are those
// Build gives slice by slice.
func LaunchAll(k *codegen.Kernel, env *eval.Env, ps []hipsrc.Platform) ([]Counts, error) {
	cs, _, err := LaunchWaste(k, env, ps)
	return cs, err
}

// Waste says, for one platform, where a launch's visited tiles that hold
// no kept pair come from.
type Waste struct {
	// Terms name the kernel's kv intervals (codegen.HostSparsity's
	// IntervalTerms): phrases naming the terms of the mask's normal form
	// and what their ranges leave out, or their hull.
	Terms []string
	// Empty counts, per interval of Terms, the visited tiles without a
	// kept pair that the interval reaches (a tile reached by two counts
	// for both).
	Empty []int64
}

// LaunchWaste is LaunchAll with each platform's Waste.
func LaunchWaste(k *codegen.Kernel, env *eval.Env, ps []hipsrc.Platform) ([]Counts, []Waste, error) {
	cs, waste, err := launchAll(k, env, ps)
	return cs, waste, err
}

func launchAll(k *codegen.Kernel, env *eval.Env, ps []hipsrc.Platform) ([]Counts, []Waste, error) {
	if env == nil || env.Q < 1 || env.KV < 1 || env.B < 1 || env.H < 1 {
		return nil, nil, errors.New("tilemap: the sizes must be positive")
	}
	if err := CheckSize(1, 1, env.Q, env.KV); err != nil {
		return nil, nil, fmt.Errorf("tilemap: %w", err)
	}
	if len(ps) == 0 {
		return nil, nil, nil
	}
	hs, err := k.HostSparsity(env)
	if err != nil {
		return nil, nil, err
	}
	terms := hs.IntervalTerms()
	waste := make([]Waste, len(ps))
	for i := range waste {
		waste[i] = Waste{Terms: terms, Empty: make([]int64, len(terms))}
	}
	g := int64(ps[0].BlockN())
	for _, p := range ps[1:] {
		g = gcd(g, int64(p.BlockN()))
	}
	nb, nh, rep := slices(k, env)
	total := make([]Counts, len(ps))
	for b := int64(0); b < nb; b++ {
		for h := int64(0); h < nh; h++ {
			cs, ws, err := launchSlice(k, env, ps, g, b, h, len(terms))
			if err != nil {
				return nil, nil, err
			}
			for i := range total {
				total[i].add(cs[i])
				for t := range terms {
					waste[i].Empty[t] += ws[i][t]
				}
			}
		}
	}
	for i := range total {
		total[i].scale(rep)
		total[i].finish()
		for t := range terms {
			waste[i].Empty[t] *= rep
		}
	}
	return total, waste, nil
}

// launchSlice counts slice (b, h) for every platform, one q tile at a time
// over up to GOMAXPROCS workers.
func launchSlice(k *codegen.Kernel, env *eval.Env, ps []hipsrc.Platform, g, b, h int64, terms int) ([]Counts, [][]int64, error) {
	qTiles := int(ceilDiv(env.Q, hipsrc.BlockM))
	workers := min(runtime.GOMAXPROCS(0), qTiles, 8)
	jobs := make(chan int)
	sums := make([][]Counts, workers)
	empties := make([][][]int64, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		hs, err := k.HostSparsity(env)
		if err != nil {
			close(jobs)
			wg.Wait()
			return nil, nil, err
		}
		s := &sliceWorker{k: k, env: env, hs: hs, pc: newPairCounter(k, env, hs, b, h), ps: ps, g: g, b: b, h: h,
			cnt: make([]int64, ceilDiv(env.KV, g)), sum: make([]Counts, len(ps)), empty: make([][]int64, len(ps))}
		for i := range s.empty {
			s.empty[i] = make([]int64, terms)
		}
		sums[w], empties[w] = s.sum, s.empty
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for qt := range jobs {
				if errs[w] == nil {
					errs[w] = s.row(qt)
				}
			}
		}(w)
	}
	for qt := 0; qt < qTiles; qt++ {
		jobs <- qt
	}
	close(jobs)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	out := make([]Counts, len(ps))
	empty := make([][]int64, len(ps))
	for i := range empty {
		empty[i] = make([]int64, terms)
	}
	for w, s := range sums {
		for i := range out {
			out[i].add(s[i])
			for t := range empty[i] {
				empty[i][t] += empties[w][i][t]
			}
		}
	}
	return out, empty, nil
}

// sliceWorker counts q tiles of one slice for every platform.
type sliceWorker struct {
	k    *codegen.Kernel
	env  *eval.Env
	hs   *codegen.HostSparsity
	pc   *pairCounter
	ps   []hipsrc.Platform
	g    int64
	b, h int64
	// cnt are the kept pairs per key granule of the current q tile, -1
	// until evaluated.
	cnt []int64
	// in marks the granules meeting a kv interval of the current q tile.
	in  []bool
	sum []Counts
	// empty counts per platform and kv interval the visited tiles without
	// a kept pair the interval reaches.
	empty [][]int64
}

// granule returns the kept pairs of granule j for rows [q0, qEnd),
// evaluating them once per q tile; 0 outside the kv intervals.
func (s *sliceWorker) granule(j int, q0, qEnd int64) (int64, error) {
	if !s.in[j] {
		return 0, nil
	}
	if s.cnt[j] >= 0 {
		return s.cnt[j], nil
	}
	kv0 := int64(j) * s.g
	kv1 := min(kv0+s.g, s.env.KV)
	n, err := s.pc.count(q0, qEnd, kv0, kv1)
	if err != nil {
		return 0, err
	}
	s.cnt[j] = n
	return n, nil
}

// pairCounter counts the kept pairs of boxes of one slice (b, h), deciding
// whole boxes where it can; onRect and onPair, when not nil, are told of
// each kept box decided whole and each kept pair evaluated.
type pairCounter struct {
	hs     *codegen.HostSparsity
	box    *boxEval
	b, h   int64
	onRect func(q0, q1, kv0, kv1 int64)
	onPair func(q, kv int64)
}

func newPairCounter(k *codegen.Kernel, env *eval.Env, hs *codegen.HostSparsity, b, h int64) *pairCounter {
	box := newBoxEval(k.Mask, env)
	box.setSlice(b, h)
	return &pairCounter{hs: hs, box: box, b: b, h: h}
}

// count returns the kept pairs of rows [q0, q1) x keys [kv0, kv1): the
// box decided whole where it can be, else its halves (the longer side
// split), else pair by pair once it holds at most minBox pairs.
func (s *pairCounter) count(q0, q1, kv0, kv1 int64) (int64, error) {
	switch s.box.decide(q0, q1-1, kv0, kv1-1) {
	case 0:
		return 0, nil
	case 1:
		if s.onRect != nil {
			s.onRect(q0, q1, kv0, kv1)
		}
		return (q1 - q0) * (kv1 - kv0), nil
	}
	if (q1-q0)*(kv1-kv0) > minBox {
		var a, b int64
		var err error
		if q1-q0 >= kv1-kv0 {
			m := (q0 + q1) / 2
			if a, err = s.count(q0, m, kv0, kv1); err == nil {
				b, err = s.count(m, q1, kv0, kv1)
			}
		} else {
			m := (kv0 + kv1) / 2
			if a, err = s.count(q0, q1, kv0, m); err == nil {
				b, err = s.count(q0, q1, m, kv1)
			}
		}
		return a + b, err
	}
	var n int64
	for q := q0; q < q1; q++ {
		for kv := kv0; kv < kv1; kv++ {
			keep, err := s.hs.Mask(s.b, s.h, q, kv)
			if err != nil {
				return 0, err
			}
			if keep {
				n++
				if s.onPair != nil {
					s.onPair(q, kv)
				}
			}
		}
	}
	return n, nil
}

// minBox is the most pairs count evaluates one by one rather than split.
const minBox = 64

// tileKept sums the granules of key tile [kv0, kv0+bn).
func (s *sliceWorker) tileKept(kv0, bn, q0, qEnd int64) (int64, error) {
	var n int64
	for j := kv0 / s.g; j < ceilDiv(min(kv0+bn, s.env.KV), s.g); j++ {
		c, err := s.granule(int(j), q0, qEnd)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// row counts q tile qt for every platform, as Build's rowWorker.row does.
func (s *sliceWorker) row(qt int) error {
	Q, KV := s.env.Q, s.env.KV
	q0 := int64(qt) * hipsrc.BlockM
	qEnd := min(q0+hipsrc.BlockM, Q)
	rows := qEnd - q0
	for i := range s.cnt {
		s.cnt[i] = -1
	}
	if s.in == nil {
		s.in = make([]bool, len(s.cnt))
	}
	kind := s.k.Sparsity
	var los, his []int64
	if kind == hipsrc.SparsityAnalytic || kind == hipsrc.SparsityPrepass {
		var err error
		if los, his, err = s.hs.KVIntervals(s.b, s.h, q0, qEnd); err != nil {
			return err
		}
	} else {
		los, his = []int64{0}, []int64{KV}
	}
	for i := range s.in {
		s.in[i] = false
	}
	for i := range los {
		lo, hi := max(los[i], 0), min(his[i], KV)
		for j := lo / s.g; lo < hi && j < ceilDiv(hi, s.g); j++ {
			s.in[j] = true
		}
	}
	for pi, p := range s.ps {
		bn := int64(p.BlockN())
		kvTiles := ceilDiv(KV, bn)
		c := &s.sum[pi]
		c.Pairs += rows * KV
		c.Tiles += kvTiles
		// A walk's tile meets a kv interval, and passes the tile filter
		// where the kernel has one: KVTileLive decides both.
		visited := func(kt int64) (bool, error) {
			return s.hs.KVTileLive(s.b, s.h, q0, qEnd, kt*bn, min(kt*bn+bn, KV), los, his)
		}
		for kt := int64(0); kt < kvTiles; kt++ {
			kv0 := kt * bn
			inKV := kv0+bn <= KV
			var state State
			var kept int64
			switch kind {
			case hipsrc.SparsityPrepass:
				n, err := s.tileKept(kv0, bn, q0, qEnd)
				if err != nil {
					return err
				}
				kept = n
				switch {
				case n == rows*bn && inKV:
					state = Full
				case n > 0:
					state = Partial
				}
			case hipsrc.SparsityAnalytic:
				if in, err := visited(kt); err != nil || !in {
					if err != nil {
						return err
					}
					continue
				}
				state = Partial
				if inKV {
					full, err := s.hs.TileFull(s.b, s.h, q0, qEnd, kv0, kv0+bn)
					if err != nil {
						return err
					}
					if full {
						state = Full
					}
				}
			default:
				state = Partial
				if inKV {
					state = Full
				}
			}
			switch {
			case state == Full:
				kept = rows * (min(kv0+bn, KV) - kv0)
			case state == Partial && kind != hipsrc.SparsityPrepass:
				n, err := s.tileKept(kv0, bn, q0, qEnd)
				if err != nil {
					return err
				}
				kept = n
			}
			c.KeptPairs += kept
			if state != Skipped {
				c.Visited++
			}
			if state == Full {
				c.Full++
			}
			if kept > 0 {
				c.WithKept++
			} else if state != Skipped && len(los) == len(s.empty[pi]) {
				for i := range los {
					if lo, hi := max(los[i], 0), min(his[i], KV); lo < hi && kt >= lo/bn && kt < ceilDiv(hi, bn) {
						s.empty[pi][i]++
					}
				}
			}
		}
	}
	return nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// MaxVisitRatio is the most tiles a launch may visit per tile holding a
// kept pair before Loose warns.
const MaxVisitRatio = 1.25

// Loose returns, when c visits more than MaxVisitRatio times the tiles
// holding a kept pair, a sentence saying so and naming the term whose kv
// interval reaches the most visited tiles without one; "" otherwise.
func (w Waste) Loose(c Counts) string {
	if c.Visited <= 0 || float64(c.Visited) <= MaxVisitRatio*float64(c.WithKept) {
		return ""
	}
	empty := c.Visited - c.WithKept
	msg := fmt.Sprintf("visits %d tiles, ", c.Visited)
	if c.WithKept > 0 {
		msg += fmt.Sprintf("%.2fx the %d holding a kept pair (over %.2fx)", float64(c.Visited)/float64(c.WithKept), c.WithKept, MaxVisitRatio)
	} else {
		msg += "none of them holding a kept pair"
	}
	worst := -1
	for i, n := range w.Empty {
		if n > 0 && (worst < 0 || n > w.Empty[worst]) {
			worst = i
		}
	}
	if worst >= 0 {
		msg += fmt.Sprintf(": the kv range walked for %s reaches %d of the %d visited without one", w.Terms[worst], w.Empty[worst], empty)
		ties := 0
		for i, n := range w.Empty {
			if i != worst && n == w.Empty[worst] {
				ties++
			}
		}
		if ties > 0 {
			msg += fmt.Sprintf(", as do %d other terms", ties)
		}
	}
	return msg
}

// VisitedTiles counts, for each of ps, the tiles an analytic kernel's walk
// visits over the launch (those meeting its kv intervals), without
// evaluating the mask: LaunchAll's Visited at a fraction of its cost, for
// cost estimates (classify --shape, draw: the analytic tile list beside a
// data-driven one, codegen.Kernel.WithoutSelection).
func VisitedTiles(k *codegen.Kernel, env *eval.Env, ps []hipsrc.Platform) ([]int64, error) {
	if k.Sparsity != hipsrc.SparsityAnalytic {
		cs, err := LaunchAll(k, env, ps)
		if err != nil {
			return nil, err
		}
		out := make([]int64, len(cs))
		for i, c := range cs {
			out[i] = c.Visited
		}
		return out, nil
	}
	hs, err := k.HostSparsity(env)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(ps))
	for b := int64(0); b < env.B; b++ {
		for h := int64(0); h < env.H; h++ {
			for q0 := int64(0); q0 < env.Q; q0 += hipsrc.BlockM {
				los, his, err := hs.KVIntervals(b, h, q0, min(q0+hipsrc.BlockM, env.Q))
				if err != nil {
					return nil, err
				}
				for pi, p := range ps {
					bn := int64(p.BlockN())
					seen := map[int64]bool{}
					for i := range los {
						lo, hi := max(los[i], 0), min(his[i], env.KV)
						for kt := lo / bn; lo < hi && kt < ceilDiv(hi, bn); kt++ {
							if seen[kt] {
								continue
							}
							live, err := hs.KVTileLive(b, h, q0, min(q0+hipsrc.BlockM, env.Q), kt*bn, min(kt*bn+bn, env.KV), los, his)
							if err != nil {
								return nil, err
							}
							seen[kt] = live
						}
					}
					n := int64(0)
					for _, live := range seen {
						if live {
							n++
						}
					}
					out[pi] += n
				}
			}
		}
	}
	return out, nil
}

// SharedSlices returns how many (b, h) slices of the launch share one
// tile map, and so one set of pre-pass flags (maskc_tile_flags flags a
// mask that reads neither b nor h once for all B x H): a pre-pass flags
// Counts.Tiles / SharedSlices tiles.
func SharedSlices(k *codegen.Kernel, env *eval.Env) int64 {
	_, _, rep := slices(k, env)
	return rep
}

// slices returns the (b, h) slices whose tiles differ for k at env, nb x
// nh, and rep, how many slices of the launch each stands for: a mask that
// reads neither b nor h has one slice standing for all B x H.
func slices(k *codegen.Kernel, env *eval.Env) (nb, nh, rep int64) {
	nb, nh, rep = env.B, env.H, 1
	if !k.MaskUsesB {
		rep, nb = rep*env.B, 1
	}
	if !k.MaskUsesH {
		rep, nh = rep*env.H, 1
	}
	return nb, nh, rep
}
