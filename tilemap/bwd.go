package tilemap

import (
	"errors"
	"fmt"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
)

// BwdCounts counts, for each of ps, the tiles of the backward's column
// walk (maskc_attn_bwd in hipsrc/attn_bwd.h: dK, dV and dQ) over the
// launch, in the kernel's backward tile on that platform (its descriptor's
// BwdLaunch, hipsrc.BwdTileOf): Tiles, the (q tile, kv tile) pairs; Visited, the q
// tiles of each kv tile's closed-form q range (HostSparsity.QRange) that
// maskc_bwd_tile_class classes non-empty (HostSparsity.BwdTileClass); Full,
// those classed full; WithKept, the visited tiles holding a kept pair, and
// KeptPairs their kept pairs (a tile the walk skips holds none: the ranges
// and classes are sound). Pre-pass kernels, whose backward reads the
// forward's flags, are not counted (an error).
func BwdCounts(k *codegen.Kernel, env *eval.Env, ps []hipsrc.Platform) ([]Counts, error) {
	if env == nil || env.Q < 1 || env.KV < 1 || env.B < 1 || env.H < 1 {
		return nil, errors.New("tilemap: the sizes must be positive")
	}
	if err := CheckSize(1, 1, env.Q, env.KV); err != nil {
		return nil, fmt.Errorf("tilemap: %w", err)
	}
	if k.Sparsity == hipsrc.SparsityPrepass {
		return nil, errors.New("tilemap: the backward of a pre-pass kernel reads the forward's flags; its tiles are not counted")
	}
	hs, err := k.HostSparsity(env)
	if err != nil {
		return nil, err
	}
	nb, nh, rep := slices(k, env)
	out := make([]Counts, len(ps))
	for pi, p := range ps {
		tile, ok := k.BwdLaunch[p.String()]
		if !ok {
			return nil, fmt.Errorf("tilemap: kernel %s has no backward launch on %s", k.Name, p)
		}
		bm, bn := int64(tile.BlockM), int64(tile.BlockN)
		c := &out[pi]
		for b := int64(0); b < nb; b++ {
			for h := int64(0); h < nh; h++ {
				pc := newPairCounter(k, env, hs, b, h)
				c.Pairs += env.Q * env.KV
				c.Tiles += ceilDiv(env.Q, bm) * ceilDiv(env.KV, bn)
				for k0 := int64(0); k0 < env.KV; k0 += bn { // the column walk: kv tile major
					k1 := min(k0+bn, env.KV)
					lo, hi := int64(0), env.Q
					if k.Sparsity == hipsrc.SparsityAnalytic {
						if lo, hi, err = hs.QRange(b, h, k0, k1); err != nil {
							return nil, err
						}
						lo, hi = max(lo, 0), min(hi, env.Q)
					}
					for qt := lo / bm; lo < hi && qt < ceilDiv(hi, bm); qt++ {
						q0 := qt * bm
						q1 := min(q0+bm, env.Q)
						cls, err := hs.BwdTileClass(b, h, q0, q1, k0, k0+bn)
						if err != nil {
							return nil, err
						}
						if cls == 0 {
							continue
						}
						c.Visited++
						kept := (q1 - q0) * (k1 - k0)
						if cls == 2 {
							c.Full++
						} else if kept, err = pc.count(q0, q1, k0, k1); err != nil {
							return nil, err
						}
						c.KeptPairs += kept
						if kept > 0 {
							c.WithKept++
						}
					}
				}
			}
		}
		c.scale(rep)
		c.finish()
	}
	return out, nil
}
