package codegen

import (
	"fmt"
	"strings"
	"testing"
)

// TestKeysLinearInTreeSize: the structural keys of a long `and` chain take
// memory linear in its size. Spelling each subtree out in its key made
// the keys of an n-term chain O(n²) bytes (20 000 terms: 13 GB).
func TestKeysLinearInTreeSize(t *testing.T) {
	const n = 5000
	terms := make([]string, n)
	for i := range terms {
		terms[i] = fmt.Sprintf("(q - kv != %d)", i)
	}
	p := checkSource(t, "k.flex", "mask m(b, h, q, kv) = "+strings.Join(terms, " and ")+"\nattention a {\n    mask = m\n}\n")
	l := p.Attentions[0].Mask
	w := newFuncWriter(nil, l, cDouble, nil, nil)
	w.count(l.Expr)
	total := 0
	for _, k := range w.keys {
		total += len(k)
	}
	if per := total / len(w.keys); per > 64 {
		t.Errorf("%d nodes, %d key bytes: %d bytes per node, want a constant bound (64)", len(w.keys), total, per)
	}
}

// BenchmarkGenerateLongAnd reports the cost of generating a mask of a
// 5 000-term `and` chain.
func BenchmarkGenerateLongAnd(b *testing.B) {
	terms := make([]string, 5000)
	for i := range terms {
		terms[i] = fmt.Sprintf("(q - kv != %d)", i)
	}
	p := checkSource(b, "k.flex", "mask m(b, h, q, kv) = "+strings.Join(terms, " and ")+"\nattention a {\n    mask = m\n}\n")
	l := p.Attentions[0].Mask
	for b.Loop() {
		w := newFuncWriter(nil, l, cDouble, nil, nil)
		w.count(l.Expr)
	}
}

// TestFloatLitIsTheFloat32Value: a float32 literal is the constant's real
// float32 value, inf where it overflows, never `+Inff` (invalid C++).
func TestFloatLitIsTheFloat32Value(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		t    cType
		want string
	}{
		{1e39, cFloat, "maskc_inf_f32()"},
		{-1e39, cFloat, "(-maskc_inf_f32())"},
		{1e-50, cFloat, "0.0f"},
		{1e39, cDouble, "1e+39"},
		{30, cFloat, "30.0f"},
		{0.1, cFloat, "0.1f"},
	} {
		if got := floatLit(tc.f, tc.t); got != tc.want {
			t.Errorf("floatLit(%v, %s) = %q, want %q", tc.f, tc.t, got, tc.want)
		}
	}
}
