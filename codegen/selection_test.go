package codegen

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
)

// TestSelectionIntervals checks that a block-selection term's kv
// intervals are the selected blocks exactly: every 128 x 32 tile the
// intervals meet holds a kept pair, for MoBA-style selection with values
// out of range (negative, past KV, huge i64) among them, which select
// nothing; that tiles inside a selected block below the diagonal are
// proven full (and no full tile masks a pair); and that the count of
// intervals is the one the kernel declares.
func TestSelectionIntervals(t *testing.T) {
	cases := []struct {
		name, decl, mask string
		count            int
		vals             func(h, i int) float64
		full             bool // a selected tile is proven full (one read per tile)
	}{
		{"moba", "buffer sel: i64[H, 16]\n", "kv <= q and (q // 128 == kv // 128 or sel[h, (q // 128) * 4] == kv // 128 or sel[h, (q // 128) * 4 + 1] == kv // 128 or sel[h, (q // 128) * 4 + 2] == kv // 128 or sel[h, (q // 128) * 4 + 3] == kv // 128)", 5,
			func(h, i int) float64 {
				return []float64{-5, 99, 1 << 40, -(1 << 40), 0, 1, 2, 3}[(h*7+i*3)%8]
			}, true},
		// the same selection, its natural 3-D spelling (issue 27): the walk
		// recognises sel[h, q // 128, j] as it does sel[h, (q // 128) * 4 + j]
		{"moba_3d", "buffer sel: i64[H, 4, 4]\n", "kv <= q and (q // 128 == kv // 128 or sel[h, q // 128, 0] == kv // 128 or sel[h, q // 128, 1] == kv // 128 or sel[h, q // 128, 2] == kv // 128 or sel[h, q // 128, 3] == kv // 128)", 5,
			func(h, i int) float64 {
				return []float64{-5, 99, 1 << 40, -(1 << 40), 0, 1, 2, 3}[(h*7+i*3)%8]
			}, true},
		// 64-row query blocks: two reads per 128-row tile
		{"nsa", "buffer sel: i32[32]\n", "kv <= q and (q // 64 == kv // 64 or sel[(q // 64) * 2] == kv // 64 or sel[(q // 64) * 2 + 1] == kv // 64)", 5,
			func(h, i int) float64 { return float64((i*5)%9 - 1) }, false},
		// BigBird (issue 27): selection terms with no other kv bound beside a
		// block window and global rows and columns: 3 + 2 * 3 intervals
		{"bigbird", "buffer sel: i32[H, 24]\n", "abs(q // 64 - kv // 64) <= 1 or q < 64 or kv < 64 or sel[h, (q // 64) * 3] == kv // 64 or sel[h, (q // 64) * 3 + 1] == kv // 64 or sel[h, (q // 64) * 3 + 2] == kv // 64", 9,
			func(h, i int) float64 { return float64((i*5+h*3)%11 - 1) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc := casesOf(t, tc.name+".flex", maskCaseSource(tc.decl, tc.mask, ""))[0]
			if want := fmt.Sprintf("constexpr int maskc_kv_interval_count = %d;", tc.count); !strings.Contains(hc.kernel.Generated, want) {
				t.Fatalf("the kernel does not declare %q", want)
			}
			env := &eval.Env{B: 1, H: 2, HKV: 2, Q: 512, KV: 512, Buffers: map[string]*eval.Tensor{}}
			hs := selSparsity(t, hc, env, tc.vals)
			visited, kept, fulls := 0, 0, 0
			for h := int64(0); h < env.H; h++ {
				for q0 := int64(0); q0 < env.Q; q0 += 128 {
					lo, hi, err := hs.KVIntervals(0, h, q0, q0+128)
					if err != nil {
						t.Fatal(err)
					}
					for k0 := int64(0); k0 < env.KV; k0 += 32 {
						in := false
						for i := range lo {
							in = in || lo[i] < k0+32 && k0 < hi[i]
						}
						some, all := false, true
						for q := q0; q < q0+128; q++ {
							for kv := k0; kv < k0+32; kv++ {
								m, err := hs.Mask(0, h, q, kv)
								if err != nil {
									t.Fatal(err)
								}
								some, all = some || m, all && m
							}
						}
						full, err := hs.TileFull(0, h, q0, q0+128, k0, k0+32)
						if err != nil {
							t.Fatal(err)
						}
						if full && !all {
							t.Fatalf("h=%d q tile %d: kv tile %d is proven full but masks a pair", h, q0, k0)
						}
						if full && in {
							fulls++
						}
						switch {
						case some && !in:
							t.Fatalf("h=%d q tile %d: kv tile %d holds a kept pair outside the intervals %v %v", h, q0, k0, lo, hi)
						case in && !some:
							t.Errorf("h=%d q tile %d: kv tile %d is visited without a kept pair (intervals %v %v)", h, q0, k0, lo, hi)
						}
						if in {
							visited++
						}
						if some {
							kept++
						}
					}
				}
			}
			if kept == 0 || visited != kept {
				t.Errorf("visited %d tiles, %d with a kept pair", visited, kept)
			}
			if tc.full && fulls == 0 {
				t.Errorf("no selected tile is proven full (%d visited)", visited)
			}
		})
	}
}

// rewriteCases are masks whose walks use block selection (selection.go)
// or the rewrites of samequot.go; exact names those whose kv ranges and
// full tiles must be exact.
var rewriteCases = []struct {
	name, decls, mask string
	exact             bool // kv ranges and full tiles exact
	walked            bool // no condition left to the per-element test
}{
	// block selection (selection.go): kv blocks read from a buffer per block of q rows,
	// one read and several per tile, a divisor of no 128 rows, kv itself, extreme i8 values
	{"select_blocks", "buffer sel: i32[H, 8]\n", "kv <= q and (q // 32 == kv // 32 or sel[h, (q // 32) * 2] == kv // 3 or sel[h, (q // 32) * 2 + 1] == kv // 3)", false, false},
	{"select_only", "buffer sel: i32[H, 16]\n", "abs(q // 64 - kv // 64) <= 1 or q < 64 or kv < 8 or sel[h, (q // 64) * 3] == kv // 8 or sel[h, (q // 64) * 3 + 2] == kv // 8", false, false},
	{"select_shared", "buffer sel: i8[4]\n", "kv <= q + 40 and (sel[q // 48] == kv // 5 or sel[3] == kv or kv // 7 == sel[(q // 48) + 1])", false, false},
	// chunked relations through // and % (samequot.go): the remainders compare as q and kv
	{"chunk_mod", "", "q // 8 == kv // 8 and q % 8 >= kv % 8", true, true},
	{"chunk_mod_scaled", "", "kv // 5 == q // 5 and 2 * (kv % 5) <= q % 5 + 3 or kv // 5 == q // 5 and -3 * (q % 5) > kv % 5 - 9", false, false},
	// quotients the term pins (samequot.go): BD3-LM's halves, a pinned q block
	{"bd3lm_pinned", "", "(q // 16 == 0 and kv // 16 == 0 and q // 4 == kv // 4) or (q // 16 == 0 and kv // 16 == 1 and (kv % 16) // 4 < q // 4) or (q // 16 == 1 and kv // 16 == 1 and (kv % 16) // 4 <= (q % 16) // 4)", false, true},
	{"pinned_q_block", "", "q // 8 == 2 and (q % 8) // 3 + kv // 5 >= 3 and (q - 16) // 2 <= kv or kv // 10 == 3 and (kv % 10) // 4 == 1", false, true},
}

// TestHostRewrites runs the host semantics check (TestHostSemantics's) on
// rewriteCases: the compiled kv intervals, ranges and full tests are sound,
// exact where asked, and what HostSparsity computes; and it checks that
// each case's walk takes the selection or rewrite it is there for.
func TestHostRewrites(t *testing.T) {
	var cases []hostCase
	for _, rc := range rewriteCases {
		cs := casesOf(t, rc.name+".flex", maskCaseSource(rc.decls, rc.mask, ""))
		for i := range cs {
			cs[i].exact = rc.exact
			p := cs[i].kernel.sparsity
			sel := slices.ContainsFunc(p.disjuncts, func(d disjunctPlan) bool { return d.kv.sel != nil })
			if strings.HasPrefix(rc.name, "select") != (sel && selWalk(p)) {
				t.Errorf("%s: selection walk %v, want it for the select cases only", rc.name, sel && selWalk(p))
			}
			for _, d := range p.disjuncts {
				if rc.walked && (len(d.kv.loose) > 0 || len(d.q.loose) > 0) {
					t.Errorf("%s: term %s leaves %v %v to the per-element test: not rewritten into bounds the walks read", rc.name, d.text, d.kv.loose, d.q.loose)
				}
			}
		}
		cases = append(cases, cs...)
	}
	runProperty(t, cases, 200, 5)
}

// TestTileList checks the tile list each kind of mask gets: data-driven
// where a term selects blocks (its only kv bound or not), pre-pass where a
// term bounds no kv, none without a mask, analytic otherwise; and that
// WithoutSelection gives the analytic list back.
func TestTileList(t *testing.T) {
	cases := []struct {
		decls, mask string
		want        TileList
	}{
		{"buffer sel: i32[H, 8]\n", "kv <= q and (q // 128 == kv // 128 or sel[h, q // 128] == kv // 128)", TileListDataDriven},
		{"buffer sel: i32[H, 8]\n", "sel[h, q // 128] == kv // 128", TileListDataDriven}, // the selection is the only kv bound
		{"buffer sel: i32[H, 64]\n", "sel[h, q // 16] == kv // 128", TileListPrepass},    // 8 reads a tile: no selection, no kv bound
		{"", "q // 8 == kv // 8 and q % 8 >= kv % 8", TileListAnalytic},
		{"", "", TileListNone},
	}
	for _, tc := range cases {
		src := maskCaseSource(tc.decls, tc.mask, "")
		if tc.mask == "" {
			src = maskCaseSource("", "", "score")
		}
		k := casesOf(t, "tl.flex", src)[0].kernel
		got, why := k.TileList()
		if got != tc.want || why == "" {
			t.Errorf("%q: tile list %s (%q), want %s", tc.mask, got, why, tc.want)
		}
		alt, _ := k.WithoutSelection().TileList()
		if want := map[TileList]TileList{TileListDataDriven: TileListAnalytic}[got]; want != "" && alt != want || want == "" && alt != got {
			t.Errorf("%q: without selection %s", tc.mask, alt)
		}
	}
}

// TestSelectionBwdClasses checks the backward's tile classes
// (BwdTileClass, maskc_bwd_tile_class's logic) on block-selection masks:
// at every backward tile shape (hipsrc.BwdTileFor), a tile is classed
// non-empty exactly when it holds a kept pair, with selected values out of
// range (negative, past KV, huge) mixed in and grouped heads; a tile
// classed full keeps every pair; and the classes without the selection
// test (WithoutSelection) visit more tiles, the ones the column walk
// skips now.
// selectionCases are block selections of every shape selStep takes, with
// values out of range among them (which select nothing): per head and
// shared tables, q blocks of 128, 64 and 48 rows, kv itself selected.
var selectionCases = []struct {
	name, decl, mask string
	vals             func(h, i int) float64
}{
	{"moba", "buffer sel: i64[H, 16]\n", "kv <= q and (q // 128 == kv // 128 or sel[h, (q // 128) * 4] == kv // 128 or sel[h, (q // 128) * 4 + 1] == kv // 128 or sel[h, (q // 128) * 4 + 2] == kv // 128 or sel[h, (q // 128) * 4 + 3] == kv // 128)",
		func(h, i int) float64 { return []float64{-5, 99, 1 << 40, -(1 << 40), 0, 1, 2, 3}[(h*7+i*3)%8] }},
	{"nsa", "buffer sel: i32[32]\n", "kv <= q and (q // 64 == kv // 64 or sel[(q // 64) * 2] == kv // 64 or sel[(q // 64) * 2 + 1] == kv // 64)",
		func(h, i int) float64 { return float64((i*5)%9 - 1) }},
	{"bigbird", "buffer sel: i32[H, 24]\n", "abs(q // 64 - kv // 64) <= 1 or q < 64 or kv < 64 or sel[h, (q // 64) * 3] == kv // 64 or sel[h, (q // 64) * 3 + 1] == kv // 64 or sel[h, (q // 64) * 3 + 2] == kv // 64",
		func(h, i int) float64 { return float64((i*5+h*3)%11 - 1) }},
	// q blocks of 48 rows (no tile height's divisor), kv itself selected
	{"shared48", "buffer sel: i8[16]\n", "kv <= q + 40 and (sel[q // 48] == kv // 40 or sel[3] == kv)",
		func(h, i int) float64 { return []float64{-128, 127, 0, 5, 2, 11, 1, 3}[(i*3)%8] }},
}

func TestSelectionBwdClasses(t *testing.T) {
	cases := selectionCases
	shapes := map[[2]int64]bool{}
	for _, p := range []hipsrc.Platform{hipsrc.NVIDIA, hipsrc.NVIDIAWGMMA, hipsrc.AMD} {
		for _, d := range hipsrc.HeadDims {
			tile, err := p.BwdTileFor(d)
			if err != nil {
				t.Fatal(err)
			}
			shapes[[2]int64{int64(tile.BlockM), int64(tile.BlockN)}] = true
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hc := casesOf(t, tc.name+".flex", maskCaseSource(tc.decl, tc.mask, ""))[0]
			if !selWalk(hc.kernel.sparsity) || !strings.Contains(hc.kernel.Generated, "#define MASKC_KV_SELECTION 1") {
				t.Fatalf("the kernel takes no selection walk or does not define MASKC_KV_SELECTION")
			}
			env := &eval.Env{B: 1, H: 4, HKV: 2, Q: 448, KV: 480, Buffers: map[string]*eval.Tensor{}}
			hs := selSparsity(t, hc, env, tc.vals)
			wo, err := hc.kernel.WithoutSelection().HostSparsity(env)
			if err != nil {
				t.Fatal(err)
			}
			for shape := range shapes {
				bm, bn := shape[0], shape[1]
				visited, kept, before := 0, 0, 0
				for h := int64(0); h < env.H; h++ {
					for k0 := int64(0); k0 < env.KV; k0 += bn { // the column walk: kv tile major
						for q0 := int64(0); q0 < env.Q; q0 += bm {
							q1 := min(q0+bm, env.Q)
							cls, err := hs.BwdTileClass(0, h, q0, q1, k0, k0+bn)
							if err != nil {
								t.Fatal(err)
							}
							old, err := wo.BwdTileClass(0, h, q0, q1, k0, k0+bn)
							if err != nil {
								t.Fatal(err)
							}
							// keys past KV are out of every class: the kernels mask
							// them whatever the class (a full tile at the edge included)
							some, all := false, true
							for q := q0; q < q1; q++ {
								for kv := k0; kv < min(k0+bn, env.KV); kv++ {
									m, err := hs.Mask(0, h, q, kv)
									if err != nil {
										t.Fatal(err)
									}
									some, all = some || m, all && m
								}
							}
							switch {
							case some && cls == 0:
								t.Fatalf("%dx%d h=%d q tile %d kv tile %d: holds a kept pair, classed empty", bm, bn, h, q0, k0)
							case !some && cls != 0:
								t.Errorf("%dx%d h=%d q tile %d kv tile %d: classed %d without a kept pair", bm, bn, h, q0, k0, cls)
							case cls == 2 && !all:
								t.Fatalf("%dx%d h=%d q tile %d kv tile %d: classed full but masks a pair", bm, bn, h, q0, k0)
							case cls != 0 && !hullMeets(t, hs, h, q0, q1, k0, k0+bn):
								t.Fatalf("%dx%d h=%d q tile %d kv tile %d: the selected blocks reach outside maskc_kv_range's hull", bm, bn, h, q0, k0)
							case some && old == 0:
								t.Fatalf("%dx%d h=%d q tile %d kv tile %d: the analytic class drops a kept pair", bm, bn, h, q0, k0)
							}
							if cls != 0 {
								visited++
							}
							if some {
								kept++
							}
							if old != 0 {
								before++
							}
						}
					}
				}
				if kept == 0 || visited != kept || before <= visited {
					t.Errorf("%dx%d: visited %d tiles, %d with a kept pair, %d without the selection test", bm, bn, visited, kept, before)
				}
				t.Logf("%dx%d: %d tiles visited, %d with a kept pair (%d without the selection test)", bm, bn, visited, kept, before)
			}
		})
	}
}

// hullMeets reports whether KVRange of the rows [q0, q1) meets the keys
// [k0, k1): the backward's selection test (KVTileMeets) must imply it, as
// maskc_bwd_tile_class takes it in place of the hull test.
func hullMeets(t *testing.T, hs *HostSparsity, h, q0, q1, k0, k1 int64) bool {
	t.Helper()
	lo, hi, err := hs.KVRange(0, h, q0, q1)
	if err != nil {
		t.Fatal(err)
	}
	return lo < hi && lo < k1 && k0 < hi
}

// selSparsity fills env's buffer sel, at the extents hc's declaration
// gives at env's sizes, with vals(row, column) of its last axis, and
// returns hc's kernel's host sparsity at env.
func selSparsity(t *testing.T, hc hostCase, env *eval.Env, vals func(h, i int) float64) *HostSparsity {
	t.Helper()
	var dims []int
	for _, d := range hc.prog.Buffer("sel").Dims {
		dims = append(dims, int(d.Eval(sizeMap(env))))
	}
	tn := eval.NewTensor(dims...)
	// vals(h, i): i is the position within head h's entries, row-major,
	// for a [H, ...] table of any rank (a 1-D table is one head's).
	per := len(tn.Data)
	if len(dims) >= 2 {
		per /= dims[0]
	}
	for i := range tn.Data {
		tn.Data[i] = vals(i/per, i%per)
	}
	env.Buffers["sel"] = tn
	hs, err := hc.kernel.HostSparsity(env)
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// TestTileFullRows checks maskc_tile_full_rows (the full test with each
// block selection answered from the rows' kv intervals, no buffer read)
// against maskc_tile_full compiled on the host, on every aligned tile of
// the selection cases at the kernels' tile shapes: never full where
// maskc_tile_full is not (checkTiles: never where a pair is masked), and
// full wherever it is on the tiles inside the keys, so that the kernels
// asking it lose no full tile.
func TestTileFullRows(t *testing.T) {
	var cases []hostCase
	for _, tc := range selectionCases {
		c := casesWith(t, tc.name+".flex", maskCaseSource(tc.decl, tc.mask, ""), Options{})[0]
		if !strings.Contains(c.kernel.Generated, "#define MASKC_TILE_FULL_ROWS 1\n") {
			t.Fatalf("%s: a block selection without MASKC_TILE_FULL_ROWS", tc.name)
		}
		cases = append(cases, c)
	}
	exe := buildHost(t, cases)
	var tiles []tileCase
	for i, tc := range selectionCases {
		env := &eval.Env{B: 1, H: 4, HKV: 4, Q: 448, KV: 480, Buffers: map[string]*eval.Tensor{}}
		selSparsity(t, cases[i], env, tc.vals)
		bits := map[string][]float64{"sel": env.Buffers["sel"].Data}
		for _, shape := range [][2]int64{{128, 64}, {128, 128}, {64, 64}} {
			bm, bn := shape[0], shape[1]
			for h := int64(0); h < env.H; h++ {
				for q0 := int64(0); q0 < env.Q; q0 += bm {
					for k0 := int64(0); k0 < env.KV; k0 += bn {
						tiles = append(tiles, tileCase{idx: i, env: env, bits: bits, h: h, qlo: q0, qhi: min(q0+bm, env.Q), kvlo: k0, kvhi: min(k0+bn, env.KV)})
					}
				}
			}
		}
	}
	res := runHost(t, exe, cases, tiles)
	checkTiles(t, cases, tiles, res)
	full := make([]int, len(cases))
	for i, tc := range tiles {
		r := res[i]
		if r.full != r.fullRows {
			t.Errorf("%s h=%d rows [%d, %d) keys [%d, %d): maskc_tile_full %v, maskc_tile_full_rows %v",
				selectionCases[tc.idx].name, tc.h, tc.qlo, tc.qhi, tc.kvlo, tc.kvhi, r.full, r.fullRows)
		}
		if r.fullRows {
			full[tc.idx]++
		}
	}
	for i, n := range full {
		if n == 0 && selectionCases[i].name != "shared48" {
			t.Errorf("%s: no tile full: the rows' test is not exercised", selectionCases[i].name)
		}
		t.Logf("%s: %d full tiles", selectionCases[i].name, n)
	}
}
