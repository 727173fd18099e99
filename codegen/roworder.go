package codegen

import (
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
)

// firstRowsLongest reports whether the forward starts a head's q tiles
// from the first (Kernel.FirstRowsLongest): at the reference
// size of the backward's estimates (bwdRefHeads heads of bwdRefLen, the
// host's sparsity), the first q tile of hipsrc.BlockM rows visits more
// than twice the key tiles of the last one, on some head, and no head the
// other way round. Global query rows (a window with global tokens,
// Longformer's analytic form) are such: started last, as the reverse order
// made for causal-like masks does, the launch ends on them. A mask whose
// rows depend on buffer contents (documents, selections, BigBird's random
// blocks beside its global rows) has no estimate here and keeps the
// reverse order.
func firstRowsLongest(k *Kernel) bool {
	p := k.sparsity
	if !k.HasMask || p.kind != SparsityAnalytic || len(p.disjuncts) == 0 {
		return false
	}
	hs, err := k.HostSparsity(&eval.Env{B: 1, H: bwdRefHeads, HKV: bwdRefHeads, Q: bwdRefLen, KV: bwdRefLen})
	if err != nil {
		return false
	}
	const bn = 64 // the narrower of the two NVIDIA forwards' key tiles
	bm := int64(hipsrc.BlockM)
	last := (int64(bwdRefLen) - 1) / bm * bm
	longer := false
	for h := int64(0); h < bwdRefHeads; h++ {
		first, err1 := rowTiles(hs, h, 0, min(bm, bwdRefLen), bn)
		end, err2 := rowTiles(hs, h, last, bwdRefLen, bn)
		if err1 != nil || err2 != nil || end > 2*first {
			return false
		}
		longer = longer || first > 2*end
	}
	return longer
}

// rowTiles counts the key tiles of bn keys that the rows [qLo, qHi) of
// head h visit: the union of their kv intervals (HostSparsity.KVIntervals).
func rowTiles(hs *HostSparsity, h, qLo, qHi, bn int64) (int64, error) {
	lo, hi, err := hs.KVIntervals(0, h, qLo, qHi)
	if err != nil {
		return 0, err
	}
	seen := map[int64]bool{}
	for i := range lo {
		a, b := max(lo[i], 0), min(hi[i], int64(bwdRefLen))
		for t := a / bn; a < b && t <= (b-1)/bn; t++ {
			seen[t] = true
		}
	}
	return int64(len(seen)), nil
}
