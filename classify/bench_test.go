package classify

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/parser"
)

// bench50 is a 50-line file mixing every pattern, a prefix LM, a dilated
// window and scores.
const bench50 = `param W = 1024
param CAP = 30.0
buffer doc: i32[KV] segments
buffer slopes: f32[H]
buffer sinks: f32[H]
mask causal_m(b, h, q, kv) = q >= kv
mask win(b, h, q, kv) = q - kv < W
mask same(b, h, q, kv) = doc[q] == doc[kv]
mask near(b, h, q, kv) = abs(q - kv) <= 64
mask pre(b, h, q, kv) = kv < 2048 or q >= kv
mask dil(b, h, q, kv) {
    let d = abs(q - kv)
    d <= 2048 and d % 2 == 0
}
score alibi_s(s, b, h, q, kv) = s + slopes[h] * (kv - q)
score cap(s, b, h, q, kv) = CAP * tanh(s / CAP)
attention l0 {
    mask = and_masks(causal_m, win)
    sink = sinks
}
attention l1 {
    mask = causal_m
    score = alibi_s
}
attention l2 {
    mask = and_masks(causal_m, same)
}
attention l3 {
    mask = near
}
attention l4 {
    mask = pre
}
attention l5 {
    mask = and_masks(causal_m, dil)
}
attention l6 {
    mask = causal_m
    score = cap
}
attention l7 {
    causal = true
    window = (1023, 0)
}
attention l8 {
    mask = or_masks(and_masks(causal_m, win), pre)
    layout = bshd
    dtype = bf16
    head_dim = 128
}
`

func BenchmarkClassify50Lines(b *testing.B) {
	if n := strings.Count(bench50, "\n"); n != 50 {
		b.Fatalf("bench file has %d lines", n)
	}
	f, diags := parser.ParseFile("bench.flex", []byte(bench50))
	if diags.HasErrors() {
		b.Fatal(diags.Render())
	}
	p, diags := check.Check(f, check.Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Render())
	}
	b.ReportAllocs()
	for b.Loop() {
		Classify(p, Options{})
	}
}

// BenchmarkCompile50Lines includes parsing and checking, what
// `maskc classify` does end to end.
func BenchmarkCompile50Lines(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		f, _ := parser.ParseFile("bench.flex", []byte(bench50))
		p, _ := check.Check(f, check.Options{})
		Classify(p, Options{})
	}
}
