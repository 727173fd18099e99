package check

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
)

// TestBufferDimForms checks which extents a buffer may declare: constants,
// linear forms of the sizes and such a form floor-divided by a positive
// int constant (a per-block table's Q // 64, its ceiling (Q + 63) // 64),
// each reduced to one canonical text (params folded) that the manifest
// carries; and E033, with its reason, for everything else.
func TestBufferDimForms(t *testing.T) {
	for _, tc := range []struct {
		dim, text, err string
	}{
		{dim: "KV", text: "KV"},
		{dim: "KV * 2 - 1", text: "2 * KV - 1"},
		{dim: "N * 2", text: "16"},
		{dim: "Q // 64", text: "Q // 64"},
		{dim: "Q // N", text: "Q // 8"},
		{dim: "(Q + 127) // 128", text: "(Q + 127) // 128"},
		{dim: "(2 * Q) // 2", text: "Q"},
		{dim: "(2 * Q + 2) // 4", text: "(Q + 1) // 2"},
		{dim: "(Q // 2) // 32", text: "Q // 64"},
		{dim: "(B + H - 1) // 3", text: "(B + H - 1) // 3"},
		{dim: "(KV - Q) // 2", text: "(-Q + KV) // 2"},
		{dim: "(3 * KV) // 2", text: "(3 * KV) // 2"},
		{dim: "100 // 7", text: "14"},
		{dim: "Q * KV", err: "cannot multiply sizes together"},
		{dim: "Q // H", err: "floor-divide only by an int constant, not by H"},
		{dim: "Q // -64", err: "must floor-divide by a positive int constant, got -64"},
		{dim: "Q // (N - 9)", err: "must floor-divide by a positive int constant, got -1"},
		{dim: "Q % 64", err: "cannot take a modulo"},
		{dim: "Q // 64 + 1", err: "floor-divide only as its outermost operation"},
		{dim: "(Q * Q) // 2", err: "cannot multiply sizes together"},
		{dim: "(Q // 64) * 2", err: "floor-divide only as its outermost operation"},
		{dim: "0", err: "must be positive, got 0"},
	} {
		src := "param N = 8\nbuffer t: f32[" + tc.dim + "]\nmask m(b, h, q, kv) = t[0] > 0\n"
		p, diags := checkSource(t, src, nil)
		if tc.err != "" {
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.err) || !strings.Contains(diags.Error(), "E033") {
				t.Errorf("%s: diagnostics %v, want E033 %q", tc.dim, diags, tc.err)
			}
			continue
		}
		if diags.HasErrors() {
			t.Errorf("%s: %v", tc.dim, diags)
			continue
		}
		b := p.Buffers[0]
		if got := b.Dims[0].Text; got != tc.text {
			t.Errorf("%s: text %q, want %q", tc.dim, got, tc.text)
		}
		if got := b.Decl.Extents; len(got) != 1 || got[0] != tc.text {
			t.Errorf("%s: Decl.Extents %q, want [%q]", tc.dim, got, tc.text)
		}
	}
}

// TestDimEvalAgreesWithForm checks, at random sizes, that Dim.EvalExact
// (hipsrc.EvalDims of the canonical text, what every consumer evaluates)
// is the reduced form floor((Const + sum Coef*v) / Div) and the value of
// the extent as written, evaluated as Python would.
func TestDimEvalAgreesWithForm(t *testing.T) {
	dims := []string{"KV", "2 * KV - 1", "Q // 64", "(Q + 127) // 128", "(2 * Q + 2) // 4", "(Q // 2) // 32",
		"(KV - Q + 4096) // 3", "(B + H - 1) // 3", "(3 * KV) // 2", "H + 8", "N * 4"}
	src := "param N = 8\n"
	for i, d := range dims {
		src += "buffer t" + string(rune('a'+i)) + ": f32[" + d + "]\n"
	}
	p, diags := checkSource(t, src, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rng := rand.New(rand.NewSource(1))
	floorDiv := func(a, b int64) int64 {
		q := a / b
		if a%b != 0 && (a < 0) != (b < 0) {
			q--
		}
		return q
	}
	for trial := 0; trial < 300; trial++ {
		sizes := map[dsl.Var]int64{dsl.SizeB: 1 + rng.Int63n(8), dsl.SizeH: 1 + rng.Int63n(64), dsl.SizeHKV: 1,
			dsl.SizeQ: 1 + rng.Int63n(10000), dsl.SizeKV: 1 + rng.Int63n(10000)}
		B, H, Q, KV := sizes[dsl.SizeB], sizes[dsl.SizeH], sizes[dsl.SizeQ], sizes[dsl.SizeKV]
		want := []int64{KV, 2*KV - 1, floorDiv(Q, 64), floorDiv(Q+127, 128), floorDiv(2*Q+2, 4), floorDiv(floorDiv(Q, 2), 32),
			floorDiv(KV-Q+4096, 3), floorDiv(B+H-1, 3), floorDiv(3*KV, 2), H + 8, 32}
		for i, b := range p.Buffers {
			d := b.Dims[0]
			got, ok := d.EvalExact(sizes)
			n := d.Const
			for v, c := range d.Coef {
				n += c * sizes[v]
			}
			if d.Div > 1 {
				n = floorDiv(n, d.Div)
			}
			if !ok || got != want[i] || n != want[i] || d.Eval(sizes) != want[i] {
				t.Fatalf("%s at %v: EvalExact %d (ok %v), form %d, want %d", dims[i], sizes, got, ok, n, want[i])
			}
		}
	}
}

// TestZeroDBuffers: a 0-d buffer (`buffer offset: i32[]`, a captured
// scalar tensor) checks read as its bare name, offset.item(), offset[()]
// and with an element method (offset.abs()); the lowered read is an index
// of no indices. Indexing it with an index, .item() of a buffer with
// dimensions and `segments` on it are positioned errors.
func TestZeroDBuffers(t *testing.T) {
	for _, body := range []string{"kv <= q + offset", "kv <= q + offset.item()", "kv <= q + offset[()]",
		"kv <= q + offset.abs()", "kv <= q + offset.long()", "kv <= q + offset * offset.numel()"} {
		p, diags := checkSource(t, "buffer offset: i32[]\nmask m(b, h, q, kv) = "+body+"\nattention a {\n    mask = m\n}\n", nil)
		if diags.HasErrors() {
			t.Errorf("%s: %s", body, diags.Render())
			continue
		}
		reads := 0
		dsl.Inspect(p.Attentions[0].Mask.Expr, func(e dsl.Expr) bool {
			if x, ok := e.(*dsl.IndexExpr); ok {
				reads++
				if len(x.Indices) != 0 {
					t.Errorf("%s: read %v has indices", body, x)
				}
			}
			return true
		})
		if reads == 0 || len(p.Buffers[0].Decl.Extents) != 0 || p.Buffers[0].Decl.Extents == nil {
			t.Errorf("%s: %d reads, extents %#v", body, reads, p.Buffers[0].Decl.Extents)
		}
	}
	for _, tc := range []struct{ src, want string }{
		{"buffer offset: i32[]\nmask m(b, h, q, kv) = kv <= q + offset[0]\n",
			"2:33: error[E030]: buffer offset has 0 dimensions (i32[], a scalar tensor), got 1 index"},
		{"buffer offset: i32[]\nmask m(b, h, q, kv) = kv <= q + offset[h, 0]\n", "got 2 indices"},
		{"buffer doc: i32[KV]\nmask m(b, h, q, kv) = kv <= q + doc.item()\n",
			"2:37: error[E074]: doc.item() reads a 0-d buffer; doc has 1 dimension [KV]"},
		{"buffer offset: i32[] segments\nmask m(b, h, q, kv) = kv <= q + offset\n", "error[E036]: segments needs a 1-D integer buffer"},
	} {
		_, diags := checkSource(t, tc.src, nil)
		if !strings.Contains(diags.Render(), tc.want) {
			t.Errorf("%q:\n%s\nwant %q", tc.src, diags.Render(), tc.want)
		}
	}
}
