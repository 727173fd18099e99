package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/tilemap"
)

// TestLaunchAllMatchesPairs compares the tile counts classify --shape
// prints (tilemap.LaunchAll: one pass for all platforms, granules inside the
// kernel's kv intervals only, boxes decided whole) and the maps draw and the
// language server show (tilemap.Build: states, kept pairs, raster) with the
// pair-by-pair reference (tilemap.Build with Exhaustive, every slice, every
// platform) on every example, every
// extended benchmark mask and the tile-map corpus, at shapes whose lengths
// are not multiples of the tiles, with seeded random buffers as classify
// draws them.
func TestLaunchAllMatchesPairs(t *testing.T) {
	var files []string
	for _, glob := range []string{"../../examples/*.flex", "../../gpu/bench_cases_ext/*.flex", "../../testdata/tilemasks/*.flex"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("found %d masks, want the examples, bench_ext and the corpus", len(files))
	}
	// Masks pasted from public code whose plans reach the kernels' limits
	// (nine terms with 16 buffer symbols; a union with a pre-pass).
	files = append(files, "../../testdata/ported/transfusion.flex", "../../testdata/ported/gemma4_sliding.flex",
		"../../testdata/ported/hf_masking_utils.flex")
	// The corpus's realistic buffers at 1x3x640 (buffers.py 3 640 ...).
	real := map[string]bufferFlags{}
	text, err := os.ReadFile("../../testdata/tilemasks/buffers_3x640.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(text)), "\n") {
		mask, flag, _ := strings.Cut(line, " ")
		if real[mask] == nil {
			real[mask] = bufferFlags{}
		}
		if err := real[mask].Set(flag); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range files {
		shapes := []runConfig{{b: 2, h: 3, sq: 300, skv: 300}, {b: 1, h: 2, sq: 200, skv: 450}}
		if bufs := real[strings.TrimSuffix(filepath.Base(path), ".flex")]; bufs != nil {
			shapes = append(shapes, runConfig{b: 1, h: 3, sq: 640, skv: 640, buffers: bufs})
		}
		e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
		u, cu, rc := buildPlan(e, path, "", nil)
		if rc != exitOK {
			t.Fatalf("%s: does not check (exit %d)", path, rc)
		}
		plan, unit := cu.Plan, cu
		for _, d := range plan.Attentions {
			if !compiler.NeedsKernel(d) {
				continue
			}
			k, kd := unit.Kernel(d.Name)
			if kd.HasErrors() {
				t.Fatalf("%s %s: %s", path, d.Name, kd.Render())
			}
			for _, cfg := range shapes {
				cfg.path, cfg.hkv = path, cfg.h
				if k.KVHeads > 0 {
					cfg.hkv = k.KVHeads
				}
				ev, err := sliceEnv(e, &cfg, u.prog, k, 7)
				if err != nil {
					t.Fatalf("%s %s: %v", path, d.Name, err)
				}
				got, err := tilemap.LaunchAll(k, ev, hipsrc.Platforms)
				if err != nil {
					t.Fatalf("%s %s: %v", path, d.Name, err)
				}
				for i, p := range hipsrc.Platforms {
					var want tilemap.Counts
					for b := int64(0); b < ev.B; b++ {
						for h := int64(0); h < ev.H; h++ {
							grid := &tilemap.Grid{Rows: 7, Cols: 5}
							m, err := tilemap.Build(k, ev, tilemap.Options{Platform: p, B: b, H: h, Grid: grid, Exhaustive: true})
							if err != nil {
								t.Fatalf("%s %s: %v", path, d.Name, err)
							}
							want = sumCounts(want, m.Counts)
							fast, err := tilemap.Build(k, ev, tilemap.Options{Platform: p, B: b, H: h, Grid: grid})
							if err != nil {
								t.Fatalf("%s %s: %v", path, d.Name, err)
							}
							if !slices.Equal(fast.States, m.States) || !slices.Equal(fast.Kept, m.Kept) || !slices.Equal(fast.Raster, m.Raster) || fast.Counts != m.Counts {
								t.Errorf("%s %s b=%d h=%d on %s: Build's map differs from the pair-by-pair one", filepath.Base(path), d.Name, b, h, p)
							}
						}
					}
					g := got[i]
					g.Density, want.Density = 0, 0
					if g != want {
						t.Errorf("%s %s %dx%dx%dx%d on %s:\n LaunchAll %+v\n pairs     %+v", filepath.Base(path), d.Name, cfg.b, cfg.h, cfg.sq, cfg.skv, p, g, want)
					}
					if want.KeptPairs == 0 && want.Visited == 0 && strings.Contains(path, "tilemasks") {
						t.Errorf("%s %s: keeps nothing at %dx%d: the comparison proves little", path, d.Name, cfg.sq, cfg.skv)
					}
				}
			}
		}
	}
}

func sumCounts(a, b tilemap.Counts) tilemap.Counts {
	a.Pairs += b.Pairs
	a.KeptPairs += b.KeptPairs
	a.Tiles += b.Tiles
	a.Visited += b.Visited
	a.WithKept += b.WithKept
	a.Full += b.Full
	return a
}
