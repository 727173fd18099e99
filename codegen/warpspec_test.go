package codegen

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
)

// TestWarpSpecializedRule pins which benchmark masks get the
// warp-specialized sm_90a forward (warpSpecialized): those the H200
// measured ahead, and not the ones it measured behind (run 18), among them
// masks whose rows are not one interval (the kernel walks the hull); and
// which take it walking their intervals (WSWalk): block selections, which
// measured 1.5-2.2x faster there (run 29), and masks with long runs of full
// tiles (1.17-1.39x of Flex there against 0.99-1.13x, run 45b), not the
// other walked masks (0.70-0.92x of their attn_fwd.h times there).
func TestWarpSpecializedRule(t *testing.T) {
	for _, tc := range []struct {
		file       string
		want, walk bool
	}{
		{"../testdata/tilemasks/moba.flex", true, true},
		{"../testdata/tilemasks/moba_k16_shared.flex", true, true},
		{"../testdata/tilemasks/bigbird.flex", true, true}, // selections as the only kv bound
		{"../testdata/tilemasks/nsa_shared.flex", true, true},
		{"../testdata/tilemasks/strided.flex", false, false},       // a remainder filter
		{"bench_cases_ext/spec_decode.flex", true, true},           // a union of block relations, long runs of full tiles
		{"bench_cases_ext/block_causal.flex", true, true},          // q // B >= kv // B: long runs of full tiles
		{"bench_cases_ext/block_diffusion.flex", true, true},       // long runs of full tiles
		{"../testdata/tilemasks/bd3lm_mod.flex", true, true},       // long runs of full tiles
		{"bench_cases_ext/chunked_causal.flex", false, false},      // short runs: chunks of 512
		{"../testdata/tilemasks/window_global.flex", false, false}, // short runs: a window of 256 and 64 global keys
		{"../testdata/tilemasks/multimodal.flex", false, false},    // pre-pass
		{"bench_cases/full.flex", true, false},
		{"bench_cases/causal.flex", true, false},
		{"bench_cases/sliding1024.flex", true, false},
		{"bench_cases/prefix2048.flex", true, false},           // kv <= q or kv < 2048: both start at 0
		{"../examples/prefix_lm_per_batch.flex", true, false},  // kv < plen[b]: a bound through a buffer value
		{"../testdata/ported/transfusion.flex", true, false},   // nine prefixes, ends read from a buffer
		{"../testdata/tilemasks/chunk_mod.flex", false, false}, // bounds through floor quotients
		{"bench_cases_ext/head_windows.flex", true, false},
		{"bench_cases_ext/sliding_global_prefix.flex", false, false}, // [q-W, q] and [0, G): a gap
		{"bench_cases/document.flex", false, false},                  // segments
		{"bench_cases_ext/document_sliding.flex", false, false},
		{"bench_cases/dilated2048.flex", false, false},    // opaque
		{"bench_cases/causal_softcap.flex", false, false}, // a heavy score (tanh)
		{"bench_cases/causal_alibi.flex", true, false},    // a light score (slopes[h] * (kv - q))
		{"../examples/relative_bias.flex", true, false},   // a light score (a buffer read)
		{"../examples/t5_bias.flex", false, false},        // a heavy score (log buckets)
		{"bench_cases_ext/longformer.flex", false, false}, // pre-pass
	} {
		k := generateAttention(t, filepath.Join("..", "gpu", tc.file), "", Options{})
		if k.WarpSpecialized != tc.want || k.WSWalk != tc.walk {
			t.Errorf("%s: warp-specialized %v walking %v, want %v, %v (sparsity %s: %s)", tc.file, k.WarpSpecialized, k.WSWalk, tc.want, tc.walk, k.Sparsity, k.SparsityReason)
		}
	}
	// Head dim 256: the same masks and scores (full and causal timed there,
	// run 33f), but no walk of a mask's intervals (untimed there); the
	// launch is the warp-specialized kernel's (192 KiB of shared memory).
	for _, tc := range []struct {
		file    string
		headDim int // 0: the file's
		want    bool
	}{
		{"../gpu/dense_cases/full_d256.flex", 0, true},
		{"../gpu/dense_cases/causal_d256.flex", 0, true},
		{"../gpu/bwd_cases/softcap_d256.flex", 0, false},  // a heavy score (tanh)
		{"../gpu/bwd_cases/document_d256.flex", 0, false}, // segments
		{"../testdata/tilemasks/moba.flex", 256, false},   // a block selection: the walk stays at 64 and 128
		{"../gpu/bench_cases_ext/block_causal.flex", 256, false},
	} {
		k := generateAttention(t, tc.file, "", Options{HeadDim: tc.headDim})
		if k.HeadDim != 256 || k.WarpSpecialized != tc.want || k.WSWalk {
			t.Errorf("%s at head dim %d: warp-specialized %v walking %v, want %v", tc.file, k.HeadDim, k.WarpSpecialized, k.WSWalk, tc.want)
		}
		if c := k.Launch[hipsrc.NVIDIAWGMMA.String()]; tc.want && (c.Threads != hipsrc.WSThreads || c.SharedMemBytes != hipsrc.WSSharedMemBytes(256)) {
			t.Errorf("%s: sm_90a launch %+v", tc.file, c)
		}
	}
}

// TestScoreHeavyFact: a score calling a transcendental built-in (the same
// rule, lightScore) is marked MASKC_SCORE_HEAVY in the generated source, on
// which the CDNA forward makes each logit before the next one's; a light
// score, or none, is not.
func TestScoreHeavyFact(t *testing.T) {
	for _, tc := range []struct {
		file string
		want bool
	}{
		{"../gpu/bench_cases/causal_softcap.flex", true}, // tanh
		{"../examples/t5_bias.flex", true},               // log
		{"testdata/golden/trig.flex", true},              // sin, cos, tan, erf
		{"../gpu/bench_cases/causal_alibi.flex", false},  // arithmetic
		{"../examples/relative_bias.flex", false},        // a buffer read
		{"../gpu/bench_cases/causal.flex", false},        // no score
	} {
		k := generateAttention(t, tc.file, "", Options{})
		if got := strings.Contains(k.Source, "\n#define MASKC_SCORE_HEAVY 1\n"); got != tc.want {
			t.Errorf("%s: MASKC_SCORE_HEAVY %v, want %v", tc.file, got, tc.want)
		}
	}
}

// TestLongRunsWalkAt128: the masks with long runs of full tiles take the
// warp-specialized forward's walk at head dim 128, where run 45b timed
// them, and keep attn_fwd.h at 64 (untimed there).
func TestLongRunsWalkAt128(t *testing.T) {
	for _, d := range []int{64, 128} {
		k := generateAttention(t, "../gpu/bench_cases_ext/block_causal.flex", "", Options{HeadDim: d})
		if want := d == 128; k.WarpSpecialized != want || k.WSWalk != want {
			t.Errorf("block_causal at head dim %d: warp-specialized %v walking %v, want %v", d, k.WarpSpecialized, k.WSWalk, want)
		}
	}
}

// TestFirstRowsLongest pins the estimate behind Kernel.FirstRowsLongest:
// a window with global query rows starts its first q tile first; masks whose
// last rows are as long or longer (causal, a window, a prefix) and masks
// whose rows depend on buffer contents (documents, selections) do not.
func TestFirstRowsLongest(t *testing.T) {
	for _, tc := range []struct {
		file string
		want bool
	}{
		{"../testdata/tilemasks/window_global.flex", true}, // rows 0-63 see every key
		{"../gpu/bench_cases/causal.flex", false},
		{"../gpu/bench_cases/sliding1024.flex", false},
		{"../gpu/bench_cases/prefix2048.flex", false},
		{"../gpu/bench_cases_ext/sliding_global_prefix.flex", false}, // global keys, not rows
		{"../gpu/bench_cases/document.flex", false},                  // segments: no estimate without contents
		{"../testdata/tilemasks/bigbird.flex", false},                // a selection buffer: the same
	} {
		k := generateAttention(t, tc.file, "", Options{})
		if k.FirstRowsLongest != tc.want {
			t.Errorf("%s: first rows longest %v, want %v", tc.file, k.FirstRowsLongest, tc.want)
		}
		if got := strings.Contains(k.Source, "#define MASKC_FIRST_ROWS_LONGEST 1"); got != tc.want {
			t.Errorf("%s: source defines MASKC_FIRST_ROWS_LONGEST: %v, want %v", tc.file, got, tc.want)
		}
	}
}

// TestWSOverlap pins which forwards run the intra-warpgroup overlap: every
// warp-specialized one, walking its key tiles (a block selection, a
// long-column mask) or not (full attention, causal, a window, ALiBi); a
// pre-pass mask's forward (attn_fwd.h) never. The source's define leaves
// -DMASKC_WS_OVERLAP=0 to experiments.
func TestWSOverlap(t *testing.T) {
	for _, tc := range []struct {
		file      string
		ws, walks bool
	}{
		{"../examples/full.flex", true, false},
		{"../gpu/bench_cases/causal.flex", true, false},
		{"../gpu/bench_cases/sliding1024.flex", true, false},
		{"../gpu/bench_cases/causal_alibi.flex", true, false},
		{"../testdata/tilemasks/moba.flex", true, true},
		{"../gpu/bench_cases_ext/block_causal.flex", true, true},
		{"../gpu/bench_cases_ext/longformer.flex", false, false},
	} {
		const def = "#ifndef MASKC_WS_OVERLAP\n#define MASKC_WS_OVERLAP 1\n#endif\n"
		k := generateAttention(t, tc.file, "", Options{})
		if k.WarpSpecialized != tc.ws || k.WSWalk != tc.walks {
			t.Fatalf("%s: warp-specialized %v, walks %v; want %v, %v", tc.file, k.WarpSpecialized, k.WSWalk, tc.ws, tc.walks)
		}
		if got := strings.Contains(k.Source, def); got != tc.ws {
			t.Errorf("%s: source defines the overlap %v, want %v", tc.file, got, tc.ws)
		}
	}
}
