// Package tilemap computes what a generated attention kernel does with each
// (query tile, key tile) pair of one launch: skip it, visit it without the
// mask (full), or visit it with the mask (partial), in the kernel's own
// tile sizes for a platform (hipsrc), together with the exact number of
// pairs the mask keeps.
//
// The tile states come from the kernel's own sparsity code evaluated on the
// host (codegen.HostSparsity): the closed-form kv intervals and full-tile test
// for analytic sparsity, the pre-pass's per-tile logic for pre-pass
// sparsity. What this package adds is the kernel's tile loop around them
// (hipsrc/attn_fwd.h, at its default per-block tile classification): the key
// tiles meeting one of the disjuncts' kv intervals (hipsrc/tile_walk.h) are
// visited; a tile is full when it lies inside Skv and the full-tile test (or
// the pre-pass flag) says so.
package tilemap

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
)

// State is what the kernel does with one tile.
type State uint8

const (
	// Skipped: the tile is never loaded.
	Skipped State = iota
	// Partial: the tile is visited and the mask is applied per element.
	Partial
	// Full: the tile is visited without per-element mask work.
	Full
)

// String returns "skipped", "partial" or "full".
func (s State) String() string {
	switch s {
	case Partial:
		return "partial"
	case Full:
		return "full"
	}
	return "skipped"
}

// Counts summarise a tile map.
type Counts struct {
	// Pairs is the number of (q, kv) pairs: Sq * Skv per (b, h).
	Pairs int64 `json:"pairs"`
	// KeptPairs is the number of pairs the mask keeps.
	KeptPairs int64 `json:"kept_pairs"`
	// Density is KeptPairs / Pairs.
	Density float64 `json:"density"`
	// Tiles is the number of (q tile, kv tile) pairs.
	Tiles int64 `json:"tiles"`
	// Visited is the number of tiles the kernel loads (partial or full).
	Visited int64 `json:"tiles_visited"`
	// WithKept is the number of tiles holding at least one kept pair.
	WithKept int64 `json:"tiles_with_kept_pairs"`
	// Full is the number of tiles visited without the mask.
	Full int64 `json:"full_tiles"`
}

// add accumulates o into c (Density is recomputed by finish).
func (c *Counts) add(o Counts) {
	c.Pairs += o.Pairs
	c.KeptPairs += o.KeptPairs
	c.Tiles += o.Tiles
	c.Visited += o.Visited
	c.WithKept += o.WithKept
	c.Full += o.Full
}

func (c *Counts) scale(n int64) {
	c.Pairs *= n
	c.KeptPairs *= n
	c.Tiles *= n
	c.Visited *= n
	c.WithKept *= n
	c.Full *= n
}

func (c *Counts) finish() {
	c.Density = 0
	if c.Pairs > 0 {
		c.Density = float64(c.KeptPairs) / float64(c.Pairs)
	}
}

// Grid is a raster over the (q, kv) plane: Rows cells down q, Cols across
// kv. Cell (r, c) covers q in [r*Sq/Rows, (r+1)*Sq/Rows) and kv likewise.
type Grid struct {
	Rows, Cols int
}

// Options select the slice, the platform and the raster of Build.
type Options struct {
	// Platform decides the key tile (hipsrc.Platform.BlockN).
	Platform hipsrc.Platform
	// B and H are the batch and head of the slice.
	B, H int64
	// Grid, when not nil, asks for the kept pairs per raster cell.
	Grid *Grid
	// Progress, when not nil, is called with the q tiles done and their
	// total as the work proceeds, from one goroutine.
	Progress func(done, total int)
	// Context, when not nil, stops Build between q tiles once it is done
	// (Build then returns its error).
	Context context.Context
	// Exhaustive evaluates the pre-pass over every tile, even those outside
	// the kernel's kv intervals: the pair-by-pair reference that LaunchAll
	// is tested against.
	Exhaustive bool
}

// Map is the tile map of one (b, h) slice of a launch.
type Map struct {
	// Sq and Skv are the query and key lengths.
	Sq, Skv int64
	// BlockM and BlockN are the kernel's tile sizes on Platform.
	BlockM, BlockN int64
	// Platform is the platform whose tile sizes are used.
	Platform hipsrc.Platform
	// Sparsity is the kernel's strategy.
	Sparsity hipsrc.Sparsity
	// B and H are the slice.
	B, H int64
	// QTiles and KVTiles are the numbers of query and key tiles.
	QTiles, KVTiles int
	// States are the tiles' states, row-major by q tile.
	States []State
	// Kept are the kept pairs per tile, row-major by q tile.
	Kept []int64
	// Counts summarise the slice.
	Counts Counts
	// Grid and Raster are the raster asked for and its kept pairs per
	// cell, row-major (nil without Options.Grid).
	Grid   *Grid
	Raster []int64
	// Notes are remarks on the buffers (codegen.HostSparsity.Notes): ids
	// of a segments buffer out of order, evaluated as written.
	Notes []string
}

// At returns the state of tile (qt, kt).
func (m *Map) At(qt, kt int) State { return m.States[qt*m.KVTiles+kt] }

// CellRange returns the half-open range [lo, hi) of indices of n that cell
// i of cells covers.
func CellRange(i, cells int, n int64) (lo, hi int64) {
	return int64(i) * n / int64(cells), int64(i+1) * n / int64(cells)
}

// CellPairs returns the number of (q, kv) pairs raster cell (r, c) covers.
func (m *Map) CellPairs(r, c int) int64 {
	q0, q1 := CellRange(r, m.Grid.Rows, m.Sq)
	k0, k1 := CellRange(c, m.Grid.Cols, m.Skv)
	return (q1 - q0) * (k1 - k0)
}

// Limits on one host-side evaluation of a mask (maskc draw, classify
// --shape, the language server's pictures; maskc eval draws at most 512 x
// 512): Build and the commands check them with CheckSize before anything
// is allocated, so a size given on the command line costs bounded memory
// (arrays indexed by a length, tiles) and time (pairs evaluated).
const (
	// MaxPairs bounds B * H * Sq * Skv.
	MaxPairs = 1 << 36
	// MaxLength bounds Sq and Skv each.
	MaxLength = 1 << 24
)

// CheckSize checks a launch's sizes against MaxLength and MaxPairs without
// overflowing int64, naming the product as the factors it is of.
func CheckSize(b, h, sq, skv int64) error {
	if b < 1 || h < 1 || sq < 1 || skv < 1 {
		return fmt.Errorf("B = %d, H = %d, Sq = %d, Skv = %d: the sizes must be positive", b, h, sq, skv)
	}
	if sq > MaxLength || skv > MaxLength {
		return fmt.Errorf("Sq = %d, Skv = %d: a sequence evaluated on the host may be at most %d long", sq, skv, int64(MaxLength))
	}
	prod := int64(1)
	for _, x := range []int64{b, h, sq, skv} {
		if prod > MaxPairs/x {
			return fmt.Errorf("B*H*Sq*Skv = %d*%d*%d*%d is above the %d pairs evaluated on the host", b, h, sq, skv, int64(MaxPairs))
		}
		prod *= x
	}
	return nil
}

// Build computes the tile map of slice (opts.B, opts.H) of kernel k for
// env's sizes and buffers.
func Build(k *codegen.Kernel, env *eval.Env, opts Options) (*Map, error) {
	if env == nil || env.Q < 1 || env.KV < 1 {
		return nil, errors.New("tilemap: the sizes must be positive")
	}
	if err := CheckSize(1, 1, env.Q, env.KV); err != nil {
		return nil, fmt.Errorf("tilemap: %w", err)
	}
	if opts.B < 0 || opts.B >= env.B || opts.H < 0 || opts.H >= env.H {
		return nil, fmt.Errorf("tilemap: slice b=%d h=%d outside B=%d H=%d", opts.B, opts.H, env.B, env.H)
	}
	if g := opts.Grid; g != nil && (g.Rows < 1 || g.Cols < 1 || int64(g.Rows) > env.Q || int64(g.Cols) > env.KV) {
		return nil, fmt.Errorf("tilemap: a %dx%d raster does not fit %dx%d pairs", g.Rows, g.Cols, env.Q, env.KV)
	}
	m := &Map{
		Sq: env.Q, Skv: env.KV, BlockM: hipsrc.BlockM, BlockN: int64(opts.Platform.BlockN()), Platform: opts.Platform,
		Sparsity: k.Sparsity, B: opts.B, H: opts.H, Grid: opts.Grid,
	}
	m.QTiles, m.KVTiles = int(ceilDiv(m.Sq, m.BlockM)), int(ceilDiv(m.Skv, m.BlockN))
	m.States = make([]State, m.QTiles*m.KVTiles)
	m.Kept = make([]int64, len(m.States))

	workers := min(runtime.GOMAXPROCS(0), m.QTiles, 8)
	jobs := make(chan int)
	done := make(chan error, m.QTiles)
	rasters := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		hs, err := k.HostSparsity(env)
		if err != nil {
			close(jobs)
			wg.Wait()
			return nil, err
		}
		if w == 0 {
			m.Notes = hs.Notes()
		}
		r := &rowWorker{m: m, hs: hs, ctx: opts.Context, exhaustive: opts.Exhaustive, pc: newPairCounter(k, env, hs, opts.B, opts.H)}
		r.pc.onRect, r.pc.onPair = r.addRect, r.addPair
		if m.Grid != nil {
			r.raster = make([]int64, m.Grid.Rows*m.Grid.Cols)
			rasters[w] = r.raster
			r.rowCell, r.colCell = cellIndex(m.Grid.Rows, m.Sq), cellIndex(m.Grid.Cols, m.Skv)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for qt := range jobs {
				if opts.Context != nil && opts.Context.Err() != nil {
					done <- opts.Context.Err()
					continue
				}
				done <- r.row(qt)
			}
		}()
	}
	var firstErr error
	go func() {
		for qt := 0; qt < m.QTiles; qt++ {
			jobs <- qt
		}
		close(jobs)
	}()
	for i := 1; i <= m.QTiles; i++ {
		if err := <-done; err != nil && firstErr == nil {
			firstErr = err
		}
		if opts.Progress != nil {
			opts.Progress(i, m.QTiles)
		}
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if m.Grid != nil {
		m.Raster = rasters[0]
		for _, r := range rasters[1:] {
			for i, v := range r {
				m.Raster[i] += v
			}
		}
	}
	c := &m.Counts
	c.Pairs, c.Tiles = m.Sq*m.Skv, int64(len(m.States))
	for i, s := range m.States {
		c.KeptPairs += m.Kept[i]
		if s != Skipped {
			c.Visited++
		}
		if s == Full {
			c.Full++
		}
		if m.Kept[i] > 0 {
			c.WithKept++
		}
	}
	c.finish()
	return m, nil
}

// rowWorker computes the tiles of q tiles, with its own evaluator and
// raster.
type rowWorker struct {
	m                *Map
	hs               *codegen.HostSparsity
	raster           []int64
	rowCell, colCell []int32
	ctx              context.Context // nil: never stopped
	exhaustive       bool
	pc               *pairCounter
}

// stopped is the context's error once it is done, checked per tile.
func (r *rowWorker) stopped() error {
	if r.ctx == nil {
		return nil
	}
	return r.ctx.Err()
}

// row computes the states and kept pairs of q tile qt.
func (r *rowWorker) row(qt int) error {
	m := r.m
	b, h := m.B, m.H
	q0 := int64(qt) * m.BlockM
	qEnd := min(q0+m.BlockM, m.Sq)
	states, kept := m.States[qt*m.KVTiles:(qt+1)*m.KVTiles], m.Kept[qt*m.KVTiles:(qt+1)*m.KVTiles]
	inKV := func(kt int) bool { return (int64(kt)+1)*m.BlockN <= m.Skv }
	switch m.Sparsity {
	case hipsrc.SparsityPrepass:
		// Tiles outside every kv interval keep nothing (the intervals are
		// sound): their flags are empty without evaluating them.
		los, his, err := r.hs.KVIntervals(b, h, q0, qEnd)
		if err != nil {
			return err
		}
		for kt := range states {
			if err := r.stopped(); err != nil {
				return err
			}
			kv0 := int64(kt) * m.BlockN
			if !r.exhaustive && !meets(los, his, kv0, min(kv0+m.BlockN, m.Skv)) {
				continue
			}
			flag, n, err := r.prepassFlag(q0, qEnd, kv0)
			if err != nil {
				return err
			}
			kept[kt] = n
			switch {
			case flag == hipsrc.TileFull && inKV(kt):
				states[kt] = Full
			case flag != hipsrc.TileEmpty:
				states[kt] = Partial
			}
		}
		return nil
	case hipsrc.SparsityAnalytic:
		// The tiles meeting some disjunct's kv interval (hipsrc/tile_walk.h).
		los, his, err := r.hs.KVIntervals(b, h, q0, qEnd)
		if err != nil {
			return err
		}
		for i := range los {
			lo, hi := max(los[i], 0), min(his[i], m.Skv)
			for kt := int(lo / m.BlockN); lo < hi && kt < int(ceilDiv(hi, m.BlockN)); kt++ {
				if states[kt] != Skipped {
					continue
				}
				kv0 := int64(kt) * m.BlockN
				if live, err := r.hs.KVTileLive(b, h, q0, qEnd, kv0, min(kv0+m.BlockN, m.Skv), los, his); err != nil || !live {
					if err != nil {
						return err
					}
					continue // the tile filter skips it (maskc_walk_next_live)
				}
				full := inKV(kt)
				if full {
					if full, err = r.hs.TileFull(b, h, q0, qEnd, kv0, kv0+m.BlockN); err != nil {
						return err
					}
				}
				states[kt] = Partial
				if full {
					states[kt] = Full
				}
			}
		}
	default: // no mask: every tile is visited, full inside Skv
		for kt := range states {
			states[kt] = Partial
			if inKV(kt) {
				states[kt] = Full
			}
		}
	}
	// Kept pairs: a skipped tile has none (the kv range is sound), a full
	// one all, a partial one is counted pair by pair.
	for kt, s := range states {
		kv0 := int64(kt) * m.BlockN
		kv1 := min(kv0+m.BlockN, m.Skv)
		switch s {
		case Full:
			kept[kt] = (qEnd - q0) * (kv1 - kv0)
			r.addRect(q0, qEnd, kv0, kv1)
		case Partial:
			if err := r.stopped(); err != nil {
				return err
			}
			if !r.exhaustive {
				n, err := r.pc.count(q0, qEnd, kv0, kv1)
				if err != nil {
					return err
				}
				kept[kt] = n
				continue
			}
			for q := q0; q < qEnd; q++ {
				for kv := kv0; kv < kv1; kv++ {
					keep, err := r.hs.Mask(b, h, q, kv)
					if err != nil {
						return err
					}
					if keep {
						kept[kt]++
						r.addPair(q, kv)
					}
				}
			}
		}
	}
	return nil
}

// prepassFlag returns the pre-pass flag of the tile of rows [q0, qEnd)
// and keys [kv0, kv0+BlockN) (keys past Skv masked) and its kept pairs:
// HostSparsity.PrepassFlag's pair by pair with Exhaustive, else from the
// pairs pairCounter counts.
func (r *rowWorker) prepassFlag(q0, qEnd, kv0 int64) (int, int64, error) {
	m := r.m
	if r.exhaustive {
		return r.hs.PrepassFlag(m.B, m.H, q0, q0+m.BlockM, kv0, kv0+m.BlockN, r.addPair)
	}
	n, err := r.pc.count(q0, qEnd, kv0, min(kv0+m.BlockN, m.Skv))
	switch {
	case err != nil:
		return 0, 0, err
	case n == 0:
		return hipsrc.TileEmpty, 0, nil
	case n == (qEnd-q0)*m.BlockN:
		return hipsrc.TileFull, n, nil
	}
	return hipsrc.TilePartial, n, nil
}

// addPair counts one kept pair in the raster.
func (r *rowWorker) addPair(q, kv int64) {
	if r.raster != nil {
		r.raster[int(r.rowCell[q])*r.m.Grid.Cols+int(r.colCell[kv])]++
	}
}

// addRect counts the kept rectangle [q0, q1) x [kv0, kv1) in the raster.
func (r *rowWorker) addRect(q0, q1, kv0, kv1 int64) {
	if r.raster == nil {
		return
	}
	g := r.m.Grid
	for rc := int(r.rowCell[q0]); rc <= int(r.rowCell[q1-1]); rc++ {
		a, b := CellRange(rc, g.Rows, r.m.Sq)
		rows := min(b, q1) - max(a, q0)
		for cc := int(r.colCell[kv0]); cc <= int(r.colCell[kv1-1]); cc++ {
			c0, c1 := CellRange(cc, g.Cols, r.m.Skv)
			r.raster[rc*g.Cols+cc] += rows * (min(c1, kv1) - max(c0, kv0))
		}
	}
}

// cellIndex maps each index of n to its cell of cells.
func cellIndex(cells int, n int64) []int32 {
	out := make([]int32, n)
	for c := 0; c < cells; c++ {
		lo, hi := CellRange(c, cells, n)
		for i := lo; i < hi; i++ {
			out[i] = int32(c)
		}
	}
	return out
}

// meets reports whether [kv0, kv1) meets one of the intervals [los[i],
// his[i]).
func meets(los, his []int64, kv0, kv1 int64) bool {
	for i := range los {
		if max(los[i], kv0) < min(his[i], kv1) {
			return true
		}
	}
	return false
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// Notes returns the remarks on env's buffers that Build puts in Map.Notes
// (codegen.HostSparsity.Notes), without building a map.
func Notes(k *codegen.Kernel, env *eval.Env) ([]string, error) {
	hs, err := k.HostSparsity(env)
	if err != nil {
		return nil, err
	}
	return hs.Notes(), nil
}

// Launch returns the counts of a whole launch: every (b, h) slice, each
// computed once per distinct mask (a mask that ignores b or h is computed
// for b = 0 or h = 0 and counted B or H times).
func Launch(k *codegen.Kernel, env *eval.Env, p hipsrc.Platform) (Counts, error) {
	cs, err := LaunchAll(k, env, []hipsrc.Platform{p})
	if err != nil {
		return Counts{}, err
	}
	return cs[0], nil
}
