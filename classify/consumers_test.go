package classify

import (
	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/eval"
)

// This file adds the normal form's other consumer to the random-expression
// property test (TestPropertyRandomMasks): the block sparsity codegen plans
// from the same normal form (codegen's HostSparsity evaluates the plan the
// kernel's maskc_kv_range, maskc_kv_intervals and maskc_tile_full were
// printed from). On the same random masks, shapes and buffers as the
// classifier's claims, every pair the evaluator keeps must lie in the kv
// range and in one of the kv intervals of its row's tile, and a tile the
// plan calls full must keep every pair.

// generateAll generates the kernel of every attention block of p that
// codegen accepts (nil where it refuses one, e.g. a float comparison it
// cannot compile exactly).
func generateAll(p *check.Program) []*codegen.Kernel {
	out := make([]*codegen.Kernel, len(p.Attentions))
	for i, a := range p.Attentions {
		if k, diags := codegen.Generate(p, a, codegen.Options{}); !diags.HasErrors() {
			out[i] = k
		}
	}
	return out
}

// verifySparsity checks kernel k's block sparsity for attention a against
// the evaluator's mask at every (b, h) of e on random tiles.
func (o *oracle) verifySparsity(a *check.Attention, k *codegen.Kernel, e *eval.Env, mask *eval.Bound) {
	hs, err := k.HostSparsity(e)
	if err != nil {
		o.failf("%s: HostSparsity: %v\n%s", a.Name, err, o.src(a))
		return
	}
	span := func(n int64) (int64, int64) {
		lo := o.rng.Int63n(n)
		return lo, lo + 1 + o.rng.Int63n(n-lo)
	}
	for b := int64(0); b < e.B; b++ {
		for h := int64(0); h < e.H; h++ {
			for range 3 {
				qlo, qhi := span(e.Q)
				kvlo, kvhi := span(e.KV)
				lo, hi, err1 := hs.KVRange(b, h, qlo, qhi)
				ilo, ihi, err2 := hs.KVIntervals(b, h, qlo, qhi)
				full, err3 := hs.TileFull(b, h, qlo, qhi, kvlo, kvhi)
				if err1 != nil || err2 != nil || err3 != nil {
					continue // the plan reads a symbol the evaluator cannot (an out-of-range read)
				}
				o.checked["sparsity tile"]++
				allKept := true
				for q := qlo; q < qhi; q++ {
					for kv := int64(0); kv < e.KV; kv++ {
						keep, err := mask.Mask(b, h, q, kv)
						if err != nil {
							continue // undefined here (an out-of-range read); the kernel reads 0
						}
						inTile := kv >= kvlo && kv < kvhi
						allKept = allKept && (keep || !inTile)
						if !keep {
							continue
						}
						in := false
						for i := range ilo {
							in = in || kv >= ilo[i] && kv < ihi[i]
						}
						if kv < lo || kv >= hi || !in {
							o.failf("%s: (b=%d h=%d q=%d kv=%d) is kept, but the kv range of rows [%d, %d) is [%d, %d), intervals %v %v (Q=%d KV=%d)\n%s",
								a.Name, b, h, q, kv, qlo, qhi, lo, hi, ilo, ihi, e.Q, e.KV, o.src(a))
						}
					}
				}
				if full && !allKept {
					o.failf("%s: tile q[%d, %d) kv[%d, %d) (b=%d h=%d) is called full but masks a pair (Q=%d KV=%d)\n%s",
						a.Name, qlo, qhi, kvlo, kvhi, b, h, e.Q, e.KV, o.src(a))
				}
			}
			if hs.QRangeMonotone() {
				o.verifyQRangeMonotone(a, hs, b, h, e)
			}
		}
	}
}

// verifyQRangeMonotone checks MASKC_Q_RANGE_MONOTONE's promise, on which
// the ordered dQ's turns rest: over kv tiles of every width the backward
// takes, the ends of the non-empty q ranges never fall.
func (o *oracle) verifyQRangeMonotone(a *check.Attention, hs *codegen.HostSparsity, b, h int64, e *eval.Env) {
	for _, bn := range []int64{1, 3, 64} {
		lastLo, lastHi := int64(-1), int64(-1)
		for k0 := int64(0); k0 < e.KV; k0 += bn {
			lo, hi, err := hs.QRange(b, h, k0, min(k0+bn, e.KV))
			if err != nil {
				return // an out-of-range read: the launch refuses it
			}
			if lo >= hi {
				continue
			}
			o.checked["q range monotone"]++
			if lo < lastLo || hi < lastHi {
				o.failf("%s: q range of kv [%d, %d) is [%d, %d), after [%d, %d) for an earlier kv tile (b=%d h=%d, tiles of %d), but MASKC_Q_RANGE_MONOTONE is defined\n%s",
					a.Name, k0, min(k0+bn, e.KV), lo, hi, lastLo, lastHi, b, h, bn, o.src(a))
				return
			}
			lastLo, lastHi = lo, hi
		}
	}
}
