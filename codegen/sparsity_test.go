package codegen

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
)

// TestSparsityChoice pins which block-sparsity strategy each kind of mask
// gets and that the reason names what decided it.
func TestSparsityChoice(t *testing.T) {
	tests := []struct {
		name, decls, mask string
		kind              hipsrc.Sparsity
		reason            string
	}{
		{"no mask", "", "", SparsityNone, "no mask"},
		{"causal", "", "q >= kv", SparsityAnalytic, "1 linear constraint(s) in 1 disjunct(s)"},
		{"prefix", "", "kv < 64 or q >= kv", SparsityAnalytic, "2 disjunct(s)"},
		{"dilated", "", "q >= kv and q - kv < 64 and (q - kv) % 2 == 0", SparsityAnalytic, "evaluated per element: (q - kv) % 2 == 0"},
		{"document", "buffer doc: i32[KV] segments\n", "doc[q] == doc[kv]", SparsityAnalytic, "a search of the segments buffer"},
		{"undeclared segments", "buffer doc: i32[KV]\n", "doc[q] == doc[kv]", SparsityPrepass, "`doc[q] == doc[kv]` bounds no kv range"},
		{"lookup", "buffer allow: bool[Q, KV]\n", "allow[q, kv]", SparsityPrepass, "`allow[q, kv]` bounds no kv range"},
		// A relation of q and kv through buffer values leaves tiles of its
		// range empty that only the data shows: the pre-pass's loss is
		// bounded (PrepassTileCost a tile), the analytic list's is not.
		{"bounded lookup", "buffer allow: bool[Q, KV]\n", "allow[q, kv] and kv <= q", SparsityPrepass, "`allow[q, kv]` relates q and kv through buffer values"},
		{"image spans", "buffer doc: i32[KV] segments\nbuffer img: i32[KV]\n", "doc[q] == doc[kv] and (q >= kv or (img[q] >= 0 and img[q] == img[kv]))", SparsityPrepass, "`img[q] == img[kv]` relates q and kv through buffer values"},
		{"arithmetic per element", "", "abs(q // 160 - kv // 160) <= 1 and abs(q % 160 - kv % 160) <= 40", SparsityAnalytic, "block-index bound(s)"},
		{"strided", "", "kv <= q and (q - kv < 256 or (q - kv) % 256 == 0)", SparsityAnalytic, "tiles filtered by the remainder condition(s) `(q - kv) % 256 == 0`"},
		{"remainder alone", "", "(kv - q + 13) % 400 >= 390", SparsityAnalytic, "tiles filtered by the remainder condition(s)"},
		{"non-linear", "", "q * kv < 100", SparsityPrepass, "`q * kv < 100` bounds no kv range"},
		{"head choice", "", "q >= kv if h < 4 else kv < 10", SparsityAnalytic, "2 disjunct(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			score := ""
			if tt.mask == "" {
				score = "score"
			}
			cs := casesOf(t, "s.flex", maskCaseSource(tt.decls, tt.mask, score))
			k := cs[0].kernel
			if k.Sparsity != tt.kind || !strings.Contains(k.SparsityReason, tt.reason) {
				t.Errorf("got %s (%s), want %s with %q", k.Sparsity, k.SparsityReason, tt.kind, tt.reason)
			}
			if !strings.Contains(k.Generated, "#define MASKC_SPARSITY_"+strings.ToUpper(string(tt.kind))+" 1\n") {
				t.Errorf("generated part does not define MASKC_SPARSITY_%s", strings.ToUpper(string(tt.kind)))
			}
			if (k.FlagsEntry != "") != (tt.kind == SparsityPrepass) {
				t.Errorf("FlagsEntry %q with sparsity %s", k.FlagsEntry, k.Sparsity)
			}
		})
	}
}

// TestPartialTileFacts pins the facts codegen gives attn_fwd.h about a
// mask's partial tiles on the extended benchmark's masks (docs/kernel-decisions.md run
// 19x measured the choices they drive): MASKC_KV_ROWS_EXACT (a row's kept
// keys are its intervals: the forward's MASKC_ROW_BITS) and
// MASKC_MASK_PER_ELEMENT (no tile full, no floor-division bound: keep bits
// before the MMA on sm_90a).
func TestPartialTileFacts(t *testing.T) {
	for _, tc := range []struct {
		file             string
		rows, perElement bool
	}{
		{"bench_cases/document.flex", true, false},
		{"bench_cases_ext/document_sliding.flex", true, false},
		{"bench_cases/causal.flex", true, false},
		{"bench_cases_ext/spec_decode.flex", true, false},       // three intervals, block relations
		{"bench_cases/dilated2048.flex", false, true},           // (q - kv) % 2 per element
		{"bench_cases_ext/neighbourhood_2d.flex", false, false}, // per element, but block-index bounds
		{"bench_cases_ext/longformer.flex", false, false},       // pre-pass
		{"bench_cases/full.flex", false, false},                 // no mask
	} {
		k := generateAttention(t, filepath.Join("..", "gpu", tc.file), "", Options{})
		rows := strings.Contains(k.Generated, "#define MASKC_KV_ROWS_EXACT 1\n")
		pe := strings.Contains(k.Generated, "#define MASKC_MASK_PER_ELEMENT 1\n")
		if rows != tc.rows || pe != tc.perElement {
			t.Errorf("%s: MASKC_KV_ROWS_EXACT %v (want %v), MASKC_MASK_PER_ELEMENT %v (want %v); %s", tc.file, rows, tc.rows, pe, tc.perElement, k.SparsityReason)
		}
		if rows && !strings.Contains(k.Generated, "maskc_g_kv_intervals_lane(") {
			t.Errorf("%s: exact rows without maskc_g_kv_intervals_lane", tc.file)
		}
	}
}

// TestUnionIntervalCounts pins how many intervals each walk lists for a
// union of n bounded squares (`kv == c and c <= q < c + 50`): one a term on
// the forward's kv walk up to maxKVIntervals, then their hull; the
// backward's column walk one a term up to maxQIntervals, then its hull.
func TestUnionIntervalCounts(t *testing.T) {
	for _, tt := range []struct{ terms, kv, q int }{
		{2, 2, 2}, {maxQIntervals, maxQIntervals, maxQIntervals}, {maxQIntervals + 1, maxQIntervals + 1, 1},
		{maxKVIntervals, maxKVIntervals, 1}, {maxKVIntervals + 1, 1, 1},
	} {
		cols := make([]string, tt.terms)
		for i := range cols {
			cols[i] = fmt.Sprintf("kv == %d and %d <= q < %d", 100*i, 100*i, 100*i+50)
		}
		k := casesOf(t, "u.flex", maskCaseSource("", strings.Join(cols, " or "), ""))[0].kernel
		checkIntervalCounts(t, fmt.Sprintf("%d terms", tt.terms), k, tt.kv, tt.q)
	}
}

// checkIntervalCounts reports where k's walks list other than kv and q
// intervals.
func checkIntervalCounts(t *testing.T, name string, k *Kernel, kv, q int) {
	t.Helper()
	for _, w := range []struct {
		name string
		want int
	}{{"maskc_kv_interval_count", kv}, {"maskc_q_interval_count", q}} {
		if !strings.Contains(k.Generated, fmt.Sprintf("constexpr int %s = %d;\n", w.name, w.want)) {
			t.Errorf("%s: want %s = %d", name, w.name, w.want)
		}
	}
}

// TestUnionIsHull pins which unions each walk takes as one interval (their
// ranges all prefixes or all suffixes of the walked variable) and that the
// rows stay exact where they were.
func TestUnionIsHull(t *testing.T) {
	spans := make([]string, 8)
	for i := range spans {
		spans[i] = fmt.Sprintf("q >= sp[b, %d, 0] and kv < sp[b, %d, 0] + sp[b, %d, 1]", i, i, i)
	}
	for _, tt := range []struct {
		name, decls, mask string
		kv, q             int
		rowsExact         bool
	}{
		// kv: prefixes [0, q], [0, P); q: suffixes [kv, Q), [0, Q).
		{"prefix_lm", "", "q >= kv or kv < 100", 1, 1, true},
		// Transfusion's nine terms (past maxQIntervals): one interval, exact rows.
		{"spans", "buffer sp: i32[B, 8, 2]\n", "q >= kv or " + strings.Join(spans, " or "), 1, 1, true},
		// kv: suffixes [q, KV), [40, KV); q: prefixes [0, kv], [0, Q).
		{"suffixes", "", "kv >= q or kv >= 40", 1, 1, true},
		// A window's kv range has both ends; a global prefix has one: two
		// intervals on each walk.
		{"window_and_globals", "", "0 <= q - kv < 64 or kv < 16", 2, 2, true},
		// kv: prefixes; q: the second term's q range ends (q < 3): two.
		{"mixed", "", "q >= kv or q < 3 and kv < 9", 1, 2, true},
		// Documents: a segment search ties each range to its term.
		{"documents", "buffer doc: i32[KV] segments\n", "doc[q] == doc[kv] and q >= kv or kv < 4", 2, 2, true},
	} {
		k := casesOf(t, tt.name+".flex", maskCaseSource(tt.decls, tt.mask, ""))[0].kernel
		checkIntervalCounts(t, tt.name, k, tt.kv, tt.q)
		if got := strings.Contains(k.Generated, "#define MASKC_KV_ROWS_EXACT 1\n"); got != tt.rowsExact {
			t.Errorf("%s: MASKC_KV_ROWS_EXACT %v, want %v", tt.name, got, tt.rowsExact)
		}
	}
}

// TestPrepassTermTests pins which pre-pass kernels test a tile term by term
// before its pairs (prepassTermTests, MASKC_PREPASS_TERMS): a mask whose
// terms each narrow the tiles by closed-form ranges or conditions on q
// does; one whose ranges are searches of a segments buffer, one with a
// term that meets every tile, one without an analysed form and an analytic
// mask do not.
func TestPrepassTermTests(t *testing.T) {
	for _, tc := range []struct {
		file, attention string
		want            bool
	}{
		{"../testdata/ported/gemma4_sliding.flex", "sliding_layer", true}, // a window or image groups
		{"../testdata/tilemasks/multimodal.flex", "multimodal", false},    // documents: segment searches
		{"testdata/golden/lookup.flex", "per_head", false},                // a term on every key of its heads
		{"testdata/golden/lookup.flex", "block_lookup", false},            // no analysed form
		{"../gpu/bench_cases_ext/longformer.flex", "", false},             // is_global[kv] meets every tile
		{"../gpu/bench_cases/causal.flex", "", false},                     // analytic: no pre-pass
	} {
		k := generateAttention(t, tc.file, tc.attention, Options{})
		got := strings.Contains(k.Generated, "#define MASKC_PREPASS_TERMS 1\n")
		if got != tc.want || got && k.Sparsity != SparsityPrepass {
			t.Errorf("%s: tests per term %v (sparsity %s), want %v", tc.file, got, k.Sparsity, tc.want)
		}
	}
}
