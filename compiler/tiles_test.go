package compiler

import (
	"testing"

	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/tilemap"
)

// TestTileCounts checks the tile-count entry against counts worked out by
// hand: a causal mask keeps S(S+1)/2 pairs per slice and a tile holds a kept
// pair when its first key is at most its last query; a full mask keeps every
// pair and every tile. The kernel never skips a tile with a kept pair.
func TestTileCounts(t *testing.T) {
	const b, h, s = 2, 3, 300 // s is no multiple of any tile size
	ceil := func(a, d int64) int64 { return (a + d - 1) / d }
	tests := []struct {
		name, text string
		kept       int64                        // kept pairs of the launch
		withKept   func(bm, bn int64) (n int64) // tiles with a kept pair, one slice
	}{
		{"causal", "mask causal(b, h, q, kv) = q >= kv\nattention causal { mask = causal }\n", b * h * s * (s + 1) / 2,
			func(bm, bn int64) (n int64) {
				for i := int64(0); i < ceil(s, bm); i++ {
					last := min((i+1)*bm, s) - 1
					n += min(last/bn+1, ceil(s, bn))
				}
				return n
			}},
		{"full", "mask full(b, h, q, kv) = true\nattention full { mask = full }\n", b * h * s * s,
			func(bm, bn int64) int64 { return ceil(s, bm) * ceil(s, bn) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, diags := Compile(tt.name+".flex", []byte(tt.text), Options{})
			if diags.HasErrors() {
				t.Fatal(diags.Render())
			}
			env := &eval.Env{B: b, H: h, HKV: h, Q: s, KV: s, Buffers: map[string]*eval.Tensor{}}
			r, kd, err := u.TileCounts(tt.name, env, hipsrc.Platforms...)
			if err != nil || kd.HasErrors() {
				t.Fatal(err, kd.Render())
			}
			if len(r.Counts) != len(hipsrc.Platforms) {
				t.Fatalf("%d counts for %d platforms", len(r.Counts), len(hipsrc.Platforms))
			}
			for i, c := range r.Counts {
				bm, bn := int64(hipsrc.BlockM), int64(c.Platform.BlockN())
				if c.Platform != hipsrc.Platforms[i] {
					t.Errorf("count %d is of %v, want %v", i, c.Platform, hipsrc.Platforms[i])
				}
				if c.Pairs != b*h*s*s || c.KeptPairs != tt.kept {
					t.Errorf("%v: pairs %d kept %d, want %d %d", c.Platform, c.Pairs, c.KeptPairs, b*h*s*s, tt.kept)
				}
				if want := b * h * ceil(s, bm) * ceil(s, bn); c.Tiles != want {
					t.Errorf("%v: %d tiles, want %d", c.Platform, c.Tiles, want)
				}
				if want := b * h * tt.withKept(bm, bn); c.WithKept != want {
					t.Errorf("%v: %d tiles with kept pairs, want %d", c.Platform, c.WithKept, want)
				}
				if c.Visited < c.WithKept || c.Visited > c.Tiles {
					t.Errorf("%v: %d tiles visited, outside [%d, %d]", c.Platform, c.Visited, c.WithKept, c.Tiles)
				}
			}
			m, _, err := u.TileMap(tt.name, env, tilemap.Options{Platform: hipsrc.AMD, B: 1, H: 2})
			if err != nil {
				t.Fatal(err)
			}
			if m.Counts.KeptPairs != tt.kept/(b*h) || m.B != 1 || m.H != 2 {
				t.Errorf("slice (1, 2): kept %d at (%d, %d), want %d", m.Counts.KeptPairs, m.B, m.H, tt.kept/(b*h))
			}
		})
	}
}

// TestTileCountsNoBlock: a block the file does not declare is the
// diagnostic E500, with no report.
func TestTileCountsNoBlock(t *testing.T) {
	u, diags := Compile("c.flex", []byte("mask causal(b, h, q, kv) = q >= kv\nattention causal { mask = causal }\n"), Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	env := &eval.Env{B: 1, H: 1, HKV: 1, Q: 16, KV: 16}
	r, kd, err := u.TileCounts("nope", env, hipsrc.AMD)
	if r != nil || err != nil || len(kd) != 1 || kd[0].Code != CodeNoAttention {
		t.Errorf("report %v, error %v, diagnostics %s; want E500 alone", r, err, kd.Render())
	}
	m, kd, err := u.TileMap("nope", env, tilemap.Options{Platform: hipsrc.AMD})
	if m != nil || err != nil || len(kd) != 1 || kd[0].Code != CodeNoAttention {
		t.Errorf("map %v, error %v, diagnostics %s; want E500 alone", m, err, kd.Render())
	}
}
