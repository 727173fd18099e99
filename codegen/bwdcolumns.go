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

// longColumns reports whether an analytic mask that does not read buffers
// keeps long columns on average without running each to the last row
// (openColumns): the mean, over the key blocks of the warp-specialized
// backward that some pair of 16 heads at 8192 x 8192 keeps, of the query
// rows in the full tiles (maskc_tile_full) of its column walk (the union of
// the terms' q intervals, in q tiles) is at least longColumnRows. Block
// selections (their walk reads the buffer), remainder filters (the walk
// visits rows the filter skips), masks that read buffers and any error
// leave it false.
func longColumns(k *Kernel) bool {
	p := k.sparsity
	if !k.HasMask || p.kind != SparsityAnalytic || len(p.disjuncts) == 0 || selWalk(p) || tileFilter(p) {
		return false
	}
	tile, err := hipsrc.NVIDIAWGMMA.BwdTileOf(k.HeadDim, hipsrc.BwdChoice{WarpSpecialized: true})
	if err != nil {
		return false
	}
	hs, err := k.HostSparsity(&eval.Env{B: 1, H: bwdRefHeads, HKV: bwdRefHeads, Q: bwdRefLen, KV: bwdRefLen})
	if err != nil {
		return false // a buffer read: the mask has no value without its contents
	}
	bm, bn := int64(tile.BlockM), int64(tile.BlockN)
	var rows, blocks int64
	for h := int64(0); h < bwdRefHeads; h++ {
		for k0 := int64(0); k0 < bwdRefLen; k0 += bn {
			visited, full, err := columnTiles(hs, h, k0, min(k0+bn, bwdRefLen), bm)
			if err != nil {
				return false
			}
			if visited > 0 {
				rows += full * bm
				blocks++
			}
		}
	}
	return blocks > 0 && rows >= longColumnRows*blocks
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
