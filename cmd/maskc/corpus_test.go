package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/tilemap"
)

// corpusLimit is issue 27's target for the tile-map corpus: the tiles a
// kernel visits over those holding a kept pair.
const corpusLimit = 1.05

// corpusOver are the corpus masks still above corpusLimit, and why: the
// test fails when one of them comes under it (take it off the list) or
// another goes over.
var corpusOver = map[string]string{}

// corpusSame are corpus masks that spell another one differently, with the
// same buffer contents (buffers.py's SAME), and must have its tile maps:
// moba_3d reads moba's selection as the natural 3-D [H, 256, 4] buffer.
var corpusSame = map[string]string{"moba_3d": "moba"}

// TestCorpusTileMaps pins the tile maps of testdata/tilemasks at 1x2xSxS
// for S = 8192 and 32768 with buffers.py's contents (buffers_2xS.txt.gz,
// `python3 buffers.py 2 S MASK... | gzip -9n`; BD3-LM's N is S/2), every
// platform, in tilemaps.golden (-update rewrites it), and holds every mask
// but corpusOver's to visited/kept <= corpusLimit; tilemap.VisitedTiles
// must count the visits LaunchAll does.
func TestCorpusTileMaps(t *testing.T) {
	files, err := filepath.Glob("../../testdata/tilemasks/*.flex")
	if err != nil || len(files) < 12 {
		t.Fatalf("found %d corpus masks (%v), want at least 12", len(files), err)
	}
	var out strings.Builder
	over := map[string]bool{}
	lines := map[string]string{} // the lines of each mask, without its name
	for _, s := range []int{8192, 32768} {
		real := corpusBuffers(t, fmt.Sprintf("../../testdata/tilemasks/buffers_2x%d.txt.gz", s))
		for _, path := range files {
			name := strings.TrimSuffix(filepath.Base(path), ".flex")
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defines := map[string]string{}
			if strings.Contains(string(text), "\nparam N = ") {
				defines["N"] = fmt.Sprint(s / 2)
			}
			e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
			u, cu, rc := buildPlan(e, path, "", defines)
			if rc != exitOK {
				t.Fatalf("%s: does not check (exit %d)", path, rc)
			}
			for _, d := range cu.Plan.Attentions {
				if !compiler.NeedsKernel(d) {
					t.Fatalf("%s %s: not a generated kernel", name, d.Name)
				}
				k, kd := cu.Kernel(d.Name)
				if kd.HasErrors() {
					t.Fatalf("%s %s: %s", name, d.Name, kd.Render())
				}
				cfg := runConfig{path: path, b: 1, h: 2, hkv: 2, sq: s, skv: s, buffers: real[name]}
				ev, err := sliceEnv(e, &cfg, u.prog, k, 7)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for _, b := range k.Buffers {
					if real[name][b.Name] == nil {
						t.Fatalf("%s: no realistic contents of buffer %s at S=%d", name, b.Name, s)
					}
				}
				counts, err := tilemap.LaunchAll(k, ev, hipsrc.Platforms)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				// The estimates' visit count without evaluating the mask.
				visited, err := tilemap.VisitedTiles(k, ev, hipsrc.Platforms)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for i := range counts {
					if visited[i] != counts[i].Visited {
						t.Errorf("%s at S=%d: VisitedTiles %d, LaunchAll visits %d", name, s, visited[i], counts[i].Visited)
					}
				}
				for i, p := range hipsrc.Platforms {
					c := counts[i]
					if c.WithKept == 0 {
						t.Fatalf("%s at S=%d on %s: keeps nothing", name, s, p)
					}
					r := float64(c.Visited) / float64(c.WithKept)
					line := fmt.Sprintf("S=%-5d %-12s %-8s visited %8d with_kept %8d full %8d  %.3f\n", s, p, k.Sparsity, c.Visited, c.WithKept, c.Full, r)
					lines[name] += line
					fmt.Fprintf(&out, "%-18s %s", name, line)
					if r > corpusLimit {
						over[name] = true
						if corpusOver[name] == "" {
							t.Errorf("%s at S=%d on %s visits %.3fx the tiles with a kept pair, over %.2f", name, s, p, r, corpusLimit)
						}
					}
				}
				if k.Sparsity == hipsrc.SparsityPrepass {
					continue // the backward reads the forward's flags (tilemap.BwdCounts)
				}
				bwd, err := tilemap.BwdCounts(k, ev, hipsrc.Platforms)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				sel, _ := k.TileList()
				for i, p := range hipsrc.Platforms {
					c := bwd[i]
					if c.WithKept == 0 || c.KeptPairs != counts[i].KeptPairs {
						t.Fatalf("%s at S=%d on %s: the backward's tiles keep %d pairs, the forward's %d", name, s, p, c.KeptPairs, counts[i].KeptPairs)
					}
					r := float64(c.Visited) / float64(c.WithKept)
					line := fmt.Sprintf("S=%-5d %-12s bwd      visited %8d with_kept %8d full %8d  %.3f\n", s, p, c.Visited, c.WithKept, c.Full, r)
					lines[name] += line
					fmt.Fprintf(&out, "%-18s %s", name, line)
					if sel == codegen.TileListDataDriven && c.Visited != c.WithKept {
						t.Errorf("%s at S=%d on %s: the backward visits %d tiles, %d holding a kept pair: the selections are not exact there", name, s, p, c.Visited, c.WithKept)
					}
				}
			}
		}
	}
	for name, same := range corpusSame {
		if lines[name] == "" || lines[name] != lines[same] {
			t.Errorf("%s's tile maps differ from %s's:\n%s\n%s", name, same, lines[name], lines[same])
		}
	}
	for name := range corpusOver {
		if !over[name] {
			t.Errorf("%s is at or under %.2f everywhere now: take it off corpusOver", name, corpusLimit)
		}
	}
	golden.CheckString(t, "../../testdata/tilemasks/tilemaps.golden", out.String())
}

// corpusBuffers reads buffers.py's lines (`MASK NAME=v0,v1,...`) from a
// gzipped file, by mask.
func corpusBuffers(t *testing.T, path string) map[string]bufferFlags {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bufferFlags{}
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		mask, flag, _ := strings.Cut(sc.Text(), " ")
		if out[mask] == nil {
			out[mask] = bufferFlags{}
		}
		if err := out[mask].Set(flag); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
