package codegen

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
)

// TestBwdDQOrdered: the ordered deterministic dQ (bwdDQOrdered) is written
// for every kernel on the warp-specialized backward without a mask, with
// open columns (causal, prefixes) or with a monotone q range (windows of
// a thousand keys and more, documents: monotoneColumns), and where a mask's
// every column starts on a diagonal and its score is transcendental, at a
// head dim where sm_90a orders dQ (the source's define, the entry point and
// bwd_launch together); for every diagonal mask and every warp-specialized
// kernel under Options.BwdDQOrder. At head dim 64 the warp-specialized
// backward is the two-tile steps' (pairSteps: no mask, or open columns
// without a score).
func TestBwdDQOrdered(t *testing.T) {
	for _, tc := range []struct {
		file, attention             string
		headDim                     int  // 0: the block's
		diagonal, open, ws, ordered bool // diagonalColumns; openColumns; the warp-specialized backward; bwdDQOrdered by default
	}{
		{"../gpu/bench_cases/causal_softcap.flex", "causal_softcap", 0, true, true, true, true},
		{"../gpu/bench_cases/causal.flex", "causal", 0, true, true, true, true},
		{"../gpu/bench_cases/sliding1024.flex", "sliding1024", 0, true, false, true, true},
		{"../gpu/bench_cases/document.flex", "document", 0, true, false, true, true},
		{"../gpu/bench_cases/dilated2048.flex", "dilated2048", 0, true, false, true, true},
		{"../gpu/bench_cases_ext/chunked_causal.flex", "chunked_causal", 0, true, false, false, false}, // short columns
		{"../gpu/bench_cases/causal_alibi.flex", "causal_alibi", 0, true, true, true, true},
		{"../gpu/bench_cases/prefix2048.flex", "prefix2048", 0, false, true, true, true},       // open columns, some from row 0
		{"../gpu/bench_cases/full.flex", "full", 0, false, false, true, true},                  // no mask
		{"../gpu/bwd_cases/softcap_d256.flex", "softcap_d256", 0, true, true, false, false},    // no platform orders dQ at head dim 256
		{"../gpu/bench_cases/full.flex", "full", 64, false, false, true, true},                 // two-tile steps
		{"../gpu/bench_cases/causal.flex", "causal", 64, true, true, true, true},               // two-tile steps
		{"../gpu/bench_cases/causal_alibi.flex", "causal_alibi", 64, true, true, false, false}, // a score: 64 x 64 tiles
		{"../gpu/bench_cases/sliding1024.flex", "sliding1024", 64, true, false, false, false},  // 64 x 64 tiles
	} {
		for _, all := range []bool{false, true} {
			k := generateAttention(t, tc.file, tc.attention, Options{BwdDQOrder: all, HeadDim: tc.headDim})
			ws := tc.ws
			want := tc.ordered || all && (tc.diagonal || ws) && k.HeadDim <= hipsrc.BwdDQOrderMaxHeadDim
			if got := diagonalColumns(k.sparsity); got != tc.diagonal {
				t.Errorf("%s: diagonalColumns %v, want %v", tc.attention, got, tc.diagonal)
			}
			if got := openColumns(k.sparsity); got != tc.open {
				t.Errorf("%s: openColumns %v, want %v", tc.attention, got, tc.open)
			}
			if got := strings.Contains(k.BwdSource, "#define MASKC_BWD_WS 1"); got != ws {
				t.Errorf("%s: the warp-specialized backward %v, want %v", tc.attention, got, ws)
			}
			if got := strings.Contains(k.BwdSource, hipsrc.BwdDQOrderDefine); got != want {
				t.Errorf("%s (BwdDQOrder %v): source asks for the ordered dQ %v, want %v", tc.attention, all, got, want)
			}
			if strings.Join(k.BwdEntries, " ") != strings.Join(hipsrc.BwdEntryNamesFor(want), " ") {
				t.Errorf("%s (BwdDQOrder %v): entries %v", tc.attention, all, k.BwdEntries)
			}
			for name, c := range k.BwdLaunch {
				p := hipsrc.NVIDIAWGMMA.String()
				if c.DQOrdered != (want && name == p) {
					t.Errorf("%s (BwdDQOrder %v): %s dq_ordered %v", tc.attention, all, name, c.DQOrdered)
				}
			}
		}
	}
}
