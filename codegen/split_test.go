package codegen

import (
	"strings"
	"testing"
)

// TestSplitReads pins which buffer reads of a mask or score the kernel
// reads once per row (no kv in the index), once per column (no q), or at
// every element. The host tests (hostcc_test.go) check that the composed
// maskc_mask and maskc_score compute the mod either way.
func TestSplitReads(t *testing.T) {
	tests := []struct {
		name, decls, mask, score string
		row, col                 string // the fields of MaskcMaskRow/Col (or Score)
	}{
		{"document", "buffer doc: i32[KV] segments\n", "doc[q] == doc[kv] and q >= kv", "",
			"{ int doc_0; }", "{ int doc_0; }"},
		{"per head", "buffer slopes: f32[H]\n", "", "score + slopes[h] * (kv - q)", "{ float slopes_0; }", "{}"},
		{"pair lookup", "buffer allow: bool[Q, KV]\n", "allow[q, kv]", "", "{}", "{}"},
		{"block lookup", "buffer allow: bool[Q, KV]\n", "allow[q // 64, kv // 64] or q == kv", "", "{}", "{}"},
		{"nested", "buffer doc: i32[KV]\nbuffer perm: i32[KV]\n", "doc[perm[q]] == doc[kv]", "",
			"{ int perm_0; int doc_1; }", "{ int doc_0; }"},
		{"no buffers", "", "q >= kv", "", "{}", "{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := casesOf(t, "s.flex", maskCaseSource(tt.decls, tt.mask, tt.score))[0].kernel
			kind := "Mask"
			if tt.score != "" {
				kind = "Score"
			}
			for part, want := range map[string]string{"Row": tt.row, "Col": tt.col} {
				decl := "struct Maskc" + kind + part + " " + want + ";"
				if !strings.Contains(k.Generated, decl) {
					t.Errorf("no %q in\n%s", decl, k.Generated)
				}
			}
			if !strings.Contains(k.Generated, "#define MASKC_SPLIT_MODS 1\n") {
				t.Error("the generated part does not announce its row and column parts")
			}
		})
	}
}

// TestScoreGradReadAxes pins which of q (1) and kv (2) each differentiable
// read's element depends on (maskc_score_grad_read_axes) and its buffer
// slot: the backward sums a read of axes 0 over whole tiles.
func TestScoreGradReadAxes(t *testing.T) {
	tests := []struct {
		name, decls, score string
		axes, slots        string // the bodies of the two constant functions
	}{
		{"per head", "buffer slopes: f32[H]\n", "score + slopes[h] * (kv - q)", "r == 0 ? 0 : 3", "r == 0 ? 0 : -1"},
		{"per row", "buffer t: f32[Q]\n", "score * t[q]", "r == 0 ? 1 : 3", "r == 0 ? 0 : -1"},
		{"per column", "buffer t: f32[KV]\n", "score + t[kv]", "r == 0 ? 2 : 3", "r == 0 ? 0 : -1"},
		{"relative", "buffer t: f32[64]\n", "score + t[(q - kv) % 64]", "r == 0 ? 3 : 3", "r == 0 ? 0 : -1"},
		{"two buffers", "buffer a: f32[H]\nbuffer t: f32[KV]\n", "score * a[h] + t[kv]",
			"r == 0 ? 0 : r == 1 ? 2 : 3", "r == 0 ? 0 : r == 1 ? 1 : -1"},
		{"no reads", "", "score * 2", "3", "-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := casesOf(t, "s.flex", maskCaseSource(tt.decls, "", tt.score))[0].kernel
			for fn, want := range map[string]string{"axes": tt.axes, "slot": tt.slots} {
				decl := "constexpr int maskc_score_grad_read_" + fn + "(int r) { return " + want + "; }"
				if !strings.Contains(k.Generated, decl) {
					t.Errorf("no %q in\n%s", decl, k.Generated)
				}
			}
		})
	}
}
