package tilemap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/parser"
)

// mapCase is one attention block of testdata/*.flex at one shape.
type mapCase struct {
	file, attention string
	env             *eval.Env
	// sparsity is the strategy the kernel must have, so that every one is
	// covered.
	sparsity hipsrc.Sparsity
}

// docIDs returns the segment ids of documents of the given lengths.
func docIDs(lengths ...int) *eval.Tensor {
	var ids []int64
	for d, n := range lengths {
		for i := 0; i < n; i++ {
			ids = append(ids, int64(d))
		}
	}
	return eval.FromInts(ids...)
}

// groupIDs is n image-group ids: -1 (text) but for the spans given as
// (start, length) pairs, numbered from 0.
func groupIDs(n int, spans ...int) *eval.Tensor {
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = -1
	}
	for j := 0; j+1 < len(spans); j += 2 {
		for i := spans[j]; i < spans[j]+spans[j+1] && i < n; i++ {
			ids[i] = int64(j / 2)
		}
	}
	return eval.FromInts(ids...)
}

func env(b, h, sq, skv int64, bufs map[string]*eval.Tensor) *eval.Env {
	return &eval.Env{B: b, H: h, HKV: h, Q: sq, KV: skv, Buffers: bufs}
}

// mapCases cover a segments mask, a band, a disjunction, a pre-pass mask,
// block indices bounding kv and remainders the tile filter tests, with
// lengths that are not multiples of the tiles.
var mapCases = []mapCase{
	{"document.flex", "packed", env(1, 1, 1000, 1000, map[string]*eval.Tensor{"doc": docIDs(150, 420, 430)}), codegen.SparsityAnalytic},
	{"sliding_window.flex", "local", env(1, 1, 1000, 1000, nil), codegen.SparsityAnalytic},
	{"prefix.flex", "prefix_layer", env(1, 2, 900, 1100, nil), codegen.SparsityAnalytic},
	{"blocks.flex", "strided_layer", env(1, 1, 1000, 1000, nil), codegen.SparsityAnalytic},
	{"blocks.flex", "products_layer", env(1, 1, 700, 900, nil), codegen.SparsityPrepass},
	{"blocks.flex", "neighbourhood_layer", env(1, 1, 1000, 1000, nil), codegen.SparsityAnalytic},
	{"periodic.flex", "strided_layer", env(1, 1, 1000, 1000, nil), codegen.SparsityAnalytic},
	{"periodic.flex", "skew_layer", env(1, 1, 700, 900, nil), codegen.SparsityAnalytic},
	{"periodic.flex", "wrap_layer", env(1, 1, 900, 700, nil), codegen.SparsityAnalytic},
	{"periodic.flex", "checker_layer", env(1, 1, 1000, 1100, nil), codegen.SparsityAnalytic},
	{"periodic.flex", "slot_layer", env(1, 1, 1200, 1200, nil), codegen.SparsityAnalytic},
	{"groups.flex", "gemma_layer", env(1, 1, 1000, 1000, map[string]*eval.Tensor{"g": groupIDs(1000, 90, 300, 560, 130, 820, 50)}), codegen.SparsityPrepass},
	{"groups.flex", "multimodal_layer", env(1, 1, 1000, 1000, map[string]*eval.Tensor{"doc": docIDs(380, 300, 320), "g": groupIDs(1000, 50, 150, 420, 90, 700, 200)}), codegen.SparsityPrepass},
}

// kernelOf generates the kernel of one attention block of testdata/file.
func kernelOf(t testing.TB, file, attention string) *codegen.Kernel {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	f, diags := parser.ParseFile(file, text)
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	p, diags := check.Check(f, check.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	a := p.Attention(attention)
	if a == nil {
		t.Fatalf("%s has no attention %s", file, attention)
	}
	k, diags := codegen.Generate(p, a, codegen.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	return k
}

// render prints a map's counts and its tiles, one row per q tile.
func render(m *Map) string {
	var b strings.Builder
	c := m.Counts
	fmt.Fprintf(&b, "%s b=%d h=%d Sq=%d Skv=%d tiles %dx%d (%d x %d) sparsity %s\n", m.Platform, m.B, m.H, m.Sq, m.Skv, m.BlockM, m.BlockN, m.QTiles, m.KVTiles, m.Sparsity)
	fmt.Fprintf(&b, "kept pairs %d of %d (density %.6f); tiles %d, visited %d, with kept pairs %d, full %d\n", c.KeptPairs, c.Pairs, c.Density, c.Tiles, c.Visited, c.WithKept, c.Full)
	for qt := 0; qt < m.QTiles; qt++ {
		for kt := 0; kt < m.KVTiles; kt++ {
			b.WriteByte(".#F"[m.At(qt, kt)])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestGoldenCounts pins the counts and tile maps of the cases on the
// mma.sync/MFMA and the wgmma tile sizes (`go test ./tilemap -update`
// rewrites testdata/counts.golden). `.` is a skipped tile, `#` a partial
// one, `F` a full one.
func TestGoldenCounts(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Tile maps of testdata/*.flex: . skipped, # partial, F full.\n")
	for _, c := range mapCases {
		k := kernelOf(t, c.file, c.attention)
		if k.Sparsity != c.sparsity {
			t.Errorf("%s: sparsity %s, want %s", c.file, k.Sparsity, c.sparsity)
		}
		for _, p := range []hipsrc.Platform{hipsrc.AMD, hipsrc.NVIDIAWGMMA} {
			m, err := Build(k, c.env, Options{Platform: p, H: c.env.H - 1})
			if err != nil {
				t.Fatalf("%s: %v", c.file, err)
			}
			fmt.Fprintf(&b, "\n== %s %s\n%s", c.file, c.attention, render(m))
		}
	}
	golden.CheckString(t, filepath.Join("testdata", "counts.golden"), b.String())
}

// boundMask is k's reference mask bound to env.
func boundMask(t *testing.T, k *codegen.Kernel, env *eval.Env) *eval.Bound {
	t.Helper()
	fn, err := eval.Compile(k.Mask)
	if err != nil {
		t.Fatal(err)
	}
	bd, err := fn.Bind(env)
	if err != nil {
		t.Fatal(err)
	}
	return bd
}

// TestAgainstBruteForce checks every tile's kept pairs and every raster
// cell against the reference mask evaluated pair by pair, and the kernel's
// promises: a skipped tile keeps nothing, a full one keeps everything.
func TestAgainstBruteForce(t *testing.T) {
	for _, c := range mapCases {
		k := kernelOf(t, c.file, c.attention)
		bd := boundMask(t, k, c.env)
		for _, p := range hipsrc.Platforms {
			grid := &Grid{Rows: 37, Cols: 53}
			calls := 0
			m, err := Build(k, c.env, Options{Platform: p, H: c.env.H - 1, Grid: grid, Progress: func(done, total int) {
				calls++
				if done != calls || total != m0(c.env.Q) {
					t.Errorf("progress %d/%d after %d calls", done, total, calls)
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			if calls != m.QTiles {
				t.Errorf("%s: %d progress calls for %d q tiles", c.file, calls, m.QTiles)
			}
			rowCell, colCell := cells(grid.Rows, c.env.Q), cells(grid.Cols, c.env.KV)
			kept := make([]int64, len(m.Kept))
			raster := make([]int64, grid.Rows*grid.Cols)
			var total int64
			for q := int64(0); q < c.env.Q; q++ {
				for kv := int64(0); kv < c.env.KV; kv++ {
					keep, err := bd.Mask(0, c.env.H-1, q, kv)
					if err != nil {
						t.Fatal(err)
					}
					if keep {
						total++
						kept[int(q/m.BlockM)*m.KVTiles+int(kv/m.BlockN)]++
						raster[rowCell[q]*grid.Cols+colCell[kv]]++
					}
				}
			}
			where := fmt.Sprintf("%s on %s", c.file, p)
			if m.Counts.KeptPairs != total {
				t.Errorf("%s: kept pairs %d, brute force %d", where, m.Counts.KeptPairs, total)
			}
			for i := range kept {
				qt, kt := i/m.KVTiles, i%m.KVTiles
				rows := min(m.BlockM, m.Sq-int64(qt)*m.BlockM)
				if m.Kept[i] != kept[i] {
					t.Errorf("%s: tile (%d, %d) kept %d, brute force %d", where, qt, kt, m.Kept[i], kept[i])
				}
				if m.States[i] == Skipped && kept[i] != 0 {
					t.Errorf("%s: tile (%d, %d) is skipped but keeps %d pairs", where, qt, kt, kept[i])
				}
				if m.States[i] == Full && kept[i] != rows*m.BlockN {
					t.Errorf("%s: tile (%d, %d) is full but keeps %d of %d pairs", where, qt, kt, kept[i], rows*m.BlockN)
				}
			}
			for i := range raster {
				if m.Raster[i] != raster[i] {
					t.Errorf("%s: raster cell %d has %d, brute force %d", where, i, m.Raster[i], raster[i])
					break
				}
			}
		}
	}
}

// cells maps each index of n to its raster cell, by CellRange.
func cells(n int, size int64) map[int64]int {
	out := map[int64]int{}
	for c := 0; c < n; c++ {
		lo, hi := CellRange(c, n, size)
		for i := lo; i < hi; i++ {
			out[i] = c
		}
	}
	return out
}

// m0 is the number of q tiles of a length.
func m0(q int64) int { return int(ceilDiv(q, hipsrc.BlockM)) }

// TestLaunch checks that the launch counts are the sum over its slices,
// computed once for masks that ignore b and h.
func TestLaunch(t *testing.T) {
	c := mapCases[2] // prefix: ignores b and h
	k := kernelOf(t, c.file, c.attention)
	e := *c.env
	e.B, e.H, e.HKV = 3, 2, 2
	got, err := Launch(k, &e, hipsrc.AMD)
	if err != nil {
		t.Fatal(err)
	}
	var want Counts
	for b := int64(0); b < e.B; b++ {
		for h := int64(0); h < e.H; h++ {
			m, err := Build(k, &e, Options{Platform: hipsrc.AMD, B: b, H: h})
			if err != nil {
				t.Fatal(err)
			}
			want.add(m.Counts)
		}
	}
	want.finish()
	if got != want {
		t.Errorf("Launch = %+v, sum of slices %+v", got, want)
	}
	if got.KeptPairs == 0 || got.Full == 0 || got.Visited == got.Tiles {
		t.Errorf("the prefix case should keep pairs, have full tiles and skip some: %+v", got)
	}
}

// TestBadInput checks that a slice or raster outside the shape is an error.
func TestBadInput(t *testing.T) {
	k := kernelOf(t, "sliding_window.flex", "local")
	e := env(1, 1, 100, 100, nil)
	for _, o := range []Options{{B: 1}, {H: -1}, {Grid: &Grid{Rows: 101, Cols: 1}}, {Grid: &Grid{Rows: 0, Cols: 5}}} {
		if _, err := Build(k, e, o); err == nil {
			t.Errorf("Build with %+v: no error", o)
		}
	}
	if _, err := Build(k, env(1, 1, 0, 5, nil), Options{}); err == nil {
		t.Error("Build with Sq = 0: no error")
	}
	doc := kernelOf(t, "document.flex", "packed")
	bad := env(1, 1, 4, 4, map[string]*eval.Tensor{"doc": eval.FromInts(0, 0, 1<<40, 1<<40)})
	if _, err := Build(doc, bad, Options{}); err == nil || !strings.Contains(err.Error(), "segments") {
		t.Errorf("a segments buffer holding an id its i32 cannot: %v", err)
	}
}

// TestUnsortedSegments: ids out of order are mapped as the kernel computes
// them, the mask as written (doc[0] == doc[2] attend), with notes; the
// kept pairs equal the reference's count.
func TestUnsortedSegments(t *testing.T) {
	doc := kernelOf(t, "document.flex", "packed")
	e := env(1, 1, 300, 300, map[string]*eval.Tensor{})
	ids := make([]int64, 300)
	for i := range ids {
		ids[i] = int64([]int{2, 0, 1, 0}[i*4/300]) // documents in shuffled order, id 0 reused
	}
	e.Buffers["doc"] = eval.FromInts(ids...)
	m, err := Build(doc, e, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for q := range ids {
		for kv := 0; kv <= q; kv++ {
			if ids[q] == ids[kv] {
				want++
			}
		}
	}
	if m.Counts.KeptPairs != want || len(m.Notes) != 2 || !strings.Contains(m.Notes[0], "not sorted") {
		t.Errorf("kept pairs %d, want %d; notes %q", m.Counts.KeptPairs, want, m.Notes)
	}
	e.Buffers["doc"] = eval.FromInts(0, 0, 1, 1)
	e.Q, e.KV = 4, 4
	if m, err := Build(doc, e, Options{}); err != nil || len(m.Notes) != 0 {
		t.Errorf("sorted ids: %v, notes %q", err, m.Notes)
	}
}

// TestBwdAgainstBruteForce checks the backward's column walk on the
// analytic cases: the tiles it skips (outside the q ranges, or classed
// empty, filtered by a remainder included) keep no pair, so its kept
// pairs are the reference mask's.
func TestBwdAgainstBruteForce(t *testing.T) {
	for _, c := range mapCases {
		if c.sparsity != codegen.SparsityAnalytic {
			continue
		}
		k := kernelOf(t, c.file, c.attention)
		bd := boundMask(t, k, c.env)
		var total int64
		for b := int64(0); b < c.env.B; b++ {
			for h := int64(0); h < c.env.H; h++ {
				for q := int64(0); q < c.env.Q; q++ {
					for kv := int64(0); kv < c.env.KV; kv++ {
						keep, err := bd.Mask(b, h, q, kv)
						if err != nil {
							t.Fatal(err)
						}
						if keep {
							total++
						}
					}
				}
			}
		}
		counts, err := BwdCounts(k, c.env, hipsrc.Platforms)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range hipsrc.Platforms {
			if counts[i].KeptPairs != total {
				t.Errorf("%s %s on %s: the backward's tiles keep %d pairs, brute force %d", c.file, c.attention, p, counts[i].KeptPairs, total)
			}
			if counts[i].WithKept == 0 || counts[i].Visited < counts[i].WithKept {
				t.Errorf("%s %s on %s: visits %d tiles, %d with a kept pair", c.file, c.attention, p, counts[i].Visited, counts[i].WithKept)
			}
		}
	}
}
