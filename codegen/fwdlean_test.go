package codegen

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFwdLoopLeanResolves checks, through clang's preprocessor, where
// hipsrc/attn_fwd.h's MASKC_LOOP_LEAN is on in the generated forwards: with
// row bits (the documents, whose sm_90a loop it takes from 172 bytes of
// spill stores to none with ptxas 12.4, docs/kernel-decisions.md run 21x (docfwd)), on
// the sm_90a and the mma.sync builds, and nowhere else (their SASS stays
// main's). A renamed generated define would silently turn it off.
func TestFwdLoopLeanResolves(t *testing.T) {
	clang, shim := needClang(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		file, attention string
		lean            string
	}{
		{"../gpu/bench_cases/document.flex", "document", "1"},
		{"../gpu/bench_cases_ext/document_sliding.flex", "document_sliding", "1"},
		{"../gpu/bench_cases_ext/longformer.flex", "longformer", "0"},
		{"../gpu/bench_cases_ext/neighbourhood_2d.flex", "neighbourhood_2d", "0"},
		{"../gpu/bench_cases/dilated2048.flex", "dilated2048", "0"},
		{"../gpu/bench_cases/causal.flex", "causal", "0"},
	} {
		k := generateAttention(t, tc.file, tc.attention, Options{})
		src := filepath.Join(dir, tc.attention+".cu")
		if err := os.WriteFile(src, []byte(k.Source), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, wg := range []string{"0", "1"} {
			got := resolvedDefines(t, clang, shim, src, wg)["MASKC_LOOP_LEAN"]
			if got != tc.lean {
				t.Errorf("%s (MASKC_NV_WGMMA=%s): MASKC_LOOP_LEAN = %q, want %s", tc.attention, wg, got, tc.lean)
			}
		}
	}
}
