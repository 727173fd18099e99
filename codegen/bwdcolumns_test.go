package codegen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLongColumns pins which masks longColumns gives the warp-specialized
// backward (long full columns on average at 16 x 8192, not short windows,
// partial tiles, remainder filters, selections or buffer reads) and which
// monotoneColumns gives it (a monotone q range over about a thousand rows
// per column, or a document's column).
func TestLongColumns(t *testing.T) {
	for _, tc := range []struct {
		name, mask string
		long, wide bool // longColumns; monotoneColumns
	}{
		{"window of 4096", "mask m(b, h, q, kv) = 0 <= q - kv < 4096", true, true},
		{"window of 1024", "mask m(b, h, q, kv) = 0 <= q - kv < 1024", false, true},
		{"window of 512", "mask m(b, h, q, kv) = 0 <= q - kv < 512", false, false},
		{"two-sided window of 1024", "mask m(b, h, q, kv) = abs(q - kv) <= 1024", true, true},
		{"windows per head", "mask m(b, h, q, kv) = kv <= q and q - kv < 256 * (h + 1)", true, true},
		{"dilated window", "mask m(b, h, q, kv) = abs(q - kv) <= 2048 and (q - kv) % 2 == 0", false, true},
		{"window and global keys", "mask m(b, h, q, kv) = abs(q - kv) <= 256 or q < 64 or kv < 64", false, false},
		{"chunks of 256", "mask m(b, h, q, kv) = q // 256 == kv // 256 and kv <= q", false, false},
		{"prompt and drafts", "mask m(b, h, q, kv) = (q < 4096 and kv <= q) or (q >= 4096 and kv < 4096) or (q >= 4096 and kv >= 4096 and (q - 4096) // 256 == (kv - 4096) // 256 and kv <= q)", true, false},
		{"documents", "buffer doc: i32[KV]\nmask m(b, h, q, kv) = doc[q] == doc[kv]", false, false},
		{"sorted documents", "buffer doc: i32[KV] segments\nmask m(b, h, q, kv) = doc[q] == doc[kv] and kv <= q", false, true},
		{"sorted documents with a window", "buffer doc: i32[KV] segments\nmask m(b, h, q, kv) = doc[q] == doc[kv] and 0 <= q - kv < 512", false, false},
		{"causal (open columns instead)", "mask m(b, h, q, kv) = kv <= q", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := maskKernel(t, tc.mask)
			cols := columnRows(k)
			assert.Equal(t, tc.long, longColumns(cols), "longColumns")
			assert.Equal(t, tc.wide, monotoneColumns(k, cols), "monotoneColumns")
			assert.Equal(t, tc.long || tc.wide || openColumns(k.sparsity), bwdChoice(k, Options{}).WarpSpecialized)
		})
	}
}

// TestQRangeMonotone pins which masks define MASKC_Q_RANGE_MONOTONE, the
// ordered dQ's shortcut to a kv tile's own q range: single terms whose q
// sides grow with kv (and sorted documents), not unions, sides that fall
// as kv grows, or ranges the data narrows. classify's property test checks
// the promise on random masks (verifyQRangeMonotone).
func TestQRangeMonotone(t *testing.T) {
	for _, tc := range []struct {
		name, mask string
		want       bool
	}{
		{"causal", "mask m(b, h, q, kv) = kv <= q", true},
		{"window", "mask m(b, h, q, kv) = 0 <= q - kv < 1024", true},
		{"dilated window", "mask m(b, h, q, kv) = abs(q - kv) <= 2048 and (q - kv) % 2 == 0", true},
		{"chunks", "mask m(b, h, q, kv) = q // 256 == kv // 256 and kv <= q", true},
		{"documents", "buffer doc: i32[KV] segments\nmask m(b, h, q, kv) = doc[q] == doc[kv] and kv <= q", true},
		{"anti-diagonal", "mask m(b, h, q, kv) = q + kv < 8192", false},
		{"prefix (a union)", "mask m(b, h, q, kv) = kv < 2048 or kv <= q", false},
		{"window and global keys", "mask m(b, h, q, kv) = abs(q - kv) <= 256 or q < 64 or kv < 64", false},
		{"ids not declared segments", "buffer img: i32[KV]\nmask m(b, h, q, kv) = img[q] == img[kv] and kv <= q", false},
		{"no mask", "mask m(b, h, q, kv) = q >= 0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := maskKernel(t, tc.mask)
			assert.Equal(t, tc.want, qRangeMonotone(k.sparsity))
			assert.Equal(t, tc.want, strings.Contains(k.BwdSource, "#define MASKC_Q_RANGE_MONOTONE 1"))
		})
	}
}

// maskKernel generates the kernel of an attention block at head dim 128
// whose mask is m, declared (with its buffers) by decls.
func maskKernel(t *testing.T, decls string) *Kernel {
	t.Helper()
	p := checkSource(t, "in.flex", decls+"\nattention a {\n    mask = m\n    head_dim = 128\n}\n")
	k, diags := Generate(p, p.Attentions[0], Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	return k
}

// TestPairSteps pins which kernels' backward takes two q tiles a step
// (pairSteps, hipsrc.BwdTile.PairQTiles): at head dim 64 the kernels
// without a score whose columns run to the last row or that have no mask;
// not documents, windows or scores, and no kernel at head dim 128, whose
// warp-specialized tile has one-tile steps.
func TestPairSteps(t *testing.T) {
	for _, tc := range []struct {
		file, attention string
		headDim         int
		want            bool
	}{
		{"../examples/full.flex", "", 64, true},
		{"../examples/causal.flex", "", 64, true},
		{"../gpu/bench_cases/prefix2048.flex", "", 64, true},
		{"../examples/full.flex", "", 128, false},
		{"../examples/causal.flex", "", 128, false},
		{"../examples/softcap.flex", "capped_layer", 64, false},
		{"../examples/alibi.flex", "alibi_layer", 64, false},
		{"../examples/document_causal.flex", "packed_layer", 64, false},
		{"../gpu/bench_cases/sliding1024.flex", "", 64, false},
	} {
		k := generateAttention(t, tc.file, tc.attention, Options{HeadDim: tc.headDim})
		got := strings.Contains(k.BwdSource, "#define MASKC_BWD_WS_PAIR 1")
		assert.Equal(t, tc.want, got, "%s at head dim %d", tc.file, tc.headDim)
		if got {
			assert.Contains(t, k.BwdSource, "#define MASKC_BWD_WS 1", "%s: two-tile steps are the warp-specialized kernel's", tc.file)
		}
	}
}
