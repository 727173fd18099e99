package codegen

import (
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
)

// The length at which longColumns estimates a mask's columns: the
// benchmark's (gpu/bwd_bench.py: 16 heads of 8192 queries and keys), where
// its threshold was measured.
const (
	bwdRefLen   = 8192
	bwdRefHeads = 16
	// longColumnRows is the mean number of query rows in full tiles of the
	// non-empty key blocks from which the warp-specialized backward beats
	// the 64 x 64 tiles (gpu/NOTES.md run 41): 1,800-3,100 rows won 6-35%
	// (head_windows, block diffusion, spec_decode); fewer lost or tied
	// (window_global, sliding1024), and so did a dilated window's 4,096
	// rows of partial tiles (dilated2048: the same atomic, 3% slower
	// deterministic).
	longColumnRows = 1536
)

// wideColumnRows is the mean number of query rows in the visited tiles of
// the non-empty key blocks from which a mask whose q range is monotone
// (qRangeMonotone) takes the warp-specialized backward with the ordered
// dQ (gpu/NOTES.md run 42): a 1024-key window (1,080 rows) and a dilated
// window of 2,048 (1,904) won in both modes, chunks of 512 (576) and a
// 2-D neighbourhood (628) lost 2-5% in the atomic mode.
const wideColumnRows = 1024

// columnStats is what columnRows measures of a mask's columns: the mean
// query rows per non-empty key block in visited and in full tiles; ok is
// false where the mask has no such measure.
type columnStats struct {
	visited, full int64
	ok            bool
}

// columnRows returns, for an analytic mask that does not read buffers, the
// mean over the key blocks of the warp-specialized backward that some pair
// of 16 heads at 8192 x 8192 keeps of the query rows in the q tiles of its
// column walk (the union of the terms' q intervals) and in those of them
// that the mask keeps whole (maskc_tile_full); not ok for block selections
// (their walk reads the buffer), remainder filters (the walk visits rows
// the filter skips), masks that read buffers and any error. Generate
// measures it once for both longColumns and monotoneColumns.
func columnRows(k *Kernel) columnStats {
	p := k.sparsity
	if !k.HasMask || p.kind != SparsityAnalytic || len(p.disjuncts) == 0 || selWalk(p) || tileFilter(p) {
		return columnStats{}
	}
	tile, err := hipsrc.NVIDIAWGMMA.BwdTileOf(k.HeadDim, hipsrc.BwdChoice{WarpSpecialized: true})
	if err != nil {
		return columnStats{}
	}
	hs, err := k.HostSparsity(&eval.Env{B: 1, H: bwdRefHeads, HKV: bwdRefHeads, Q: bwdRefLen, KV: bwdRefLen})
	if err != nil {
		return columnStats{} // a buffer read: the mask has no value without its contents
	}
	bm, bn := int64(tile.BlockM), int64(tile.BlockN)
	var rows, fullRows, blocks int64
	for h := int64(0); h < bwdRefHeads; h++ {
		for k0 := int64(0); k0 < bwdRefLen; k0 += bn {
			v, f, err := columnTiles(hs, h, k0, min(k0+bn, bwdRefLen), bm)
			if err != nil {
				return columnStats{}
			}
			if v > 0 {
				rows += v * bm
				fullRows += f * bm
				blocks++
			}
		}
	}
	if blocks == 0 {
		return columnStats{}
	}
	return columnStats{visited: rows / blocks, full: fullRows / blocks, ok: true}
}

// longColumns reports whether an analytic mask that does not read buffers
// keeps long columns on average without running each to the last row
// (openColumns): its columns' (columnRows) mean rows in full tiles is at
// least longColumnRows.
func longColumns(cols columnStats) bool {
	return cols.ok && cols.full >= longColumnRows
}

// monotoneColumns reports whether a mask whose q range is monotone
// (qRangeMonotone, so that its ordered dQ's envelope is each kv tile's own
// range) has columns wide enough for the warp-specialized backward: at
// least wideColumnRows rows visited on average in its columns (cols,
// columnRows), or a single term whose columns run to their document's end
// (segmentColumns).
func monotoneColumns(k *Kernel, cols columnStats) bool {
	if !k.HasMask || !qRangeMonotone(k.sparsity) {
		return false
	}
	return segmentColumns(k.sparsity) || cols.ok && cols.visited >= wideColumnRows
}

// segmentColumns reports whether a single-term plan bounds q only through
// segments equalities from above: each key's column runs to the end of its
// document (a document mask, causal inside each document or not). Documents
// of 256-2,047 tokens ran the same in the atomic mode on the
// warp-specialized backward as on the 64 x 64 tiles and 14% faster
// deterministic, with the ordered dQ (gpu/NOTES.md run 42b); a document
// mask with a window of its own lost 4% atomic there and keeps the 64 x 64
// tiles.
func segmentColumns(p sparsityPlan) bool {
	if p.kind != SparsityAnalytic || len(p.disjuncts) != 1 {
		return false
	}
	w := p.disjuncts[0].q
	if len(w.segs) == 0 || len(w.loose) > 0 || len(p.disjuncts[0].periods) > 0 {
		return false
	}
	for _, s := range w.innerSteps {
		if s.upper {
			return false
		}
	}
	return true
}

// columnTiles counts the q tiles of bm rows that the column walk of keys
// [kvLo, kvHi) of head h visits (those meeting some live term's q range),
// and those of them that the mask keeps whole.
func columnTiles(hs *HostSparsity, h, kvLo, kvHi, bm int64) (visited, full int64, err error) {
	seen := map[int64]bool{}
	err = hs.walkRanges(dsl.VarQ, 0, h, kvLo, kvHi, func(_ int, live bool, qa, qb, _, _ int64) error {
		if live {
			for t := qa / bm; t <= qb/bm; t++ {
				seen[t] = true
			}
		}
		return nil
	})
	for t := range seen {
		if err != nil {
			break
		}
		var whole bool
		whole, err = hs.TileFull(0, h, t*bm, min(t*bm+bm, hs.env.Q), kvLo, kvHi)
		if whole {
			full++
		}
	}
	return int64(len(seen)), full, err
}
