package check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/parser"
)

// dumpLowered prints what a consumer sees of a lowered expression: its
// text, each node's kind, span and recorded type in depth-first order, and
// the buffers read. (Not the number of entries in Types: a mod inlined
// twice shares its nodes, so it records them once.)
func dumpLowered(l *dsl.Lowered) string {
	if l == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s\n", l.Kind, l.Name, format.Expr(l.Expr))
	dsl.Inspect(l.Expr, func(e dsl.Expr) bool {
		fmt.Fprintf(&b, "  %T %v %v\n", e, e.Span(), l.TypeOf(e))
		return true
	})
	b.WriteString("  buffers:")
	for _, d := range l.Buffers {
		fmt.Fprintf(&b, " %s", d.Name.Name)
	}
	return b.String()
}

// reuseCases are files whose attention blocks inline plain mods in every
// way: directly, combined, twice, from other mods, inside the standard
// library, with lets, buffers, constants, scores, warnings and errors.
var reuseCases = map[string]string{
	"combined": `param W = 8
buffer doc: i32[KV] segments
mask c(b, h, q, kv) = q >= kv
mask w(b, h, q, kv) {
    let d = q - kv
    d >= 0 and d <= W
}
mask same(b, h, q, kv) = doc[q] == doc[kv]
mask local(b, h, q, kv) = c(b, h, q, kv) & w(b, h, kv, q)
attention a1 {
    mask = and_masks(c, w, same)
}
attention a2 {
    mask = or_masks(c, c, local)
}
attention a3 {
    mask = w
}
attention a4 {
    mask = and_masks(causal, same, sliding_window(W))
}
`,
	"scores": `param CAP = 30.0
buffer slopes: f32[H]
score cap(s, b, h, q, kv) = CAP * tanh(s / CAP)
score lin(s, b, h, q, kv) = kv - q
score both(s, b, h, q, kv) = cap(s, b, h, q, kv) + slopes[h] * lin(s, b, h, q, kv)
mask always(b, h, q, kv) = True
attention a1 {
    mask = always
    score = cap
}
attention a2 {
    score = both
}
attention a3 {
    score = lin
}
`,
	"warnings": `mask unusedlet(b, h, q, kv) {
    let d = q - kv
    q >= kv
}
mask prec(b, h, q, kv) = q >= kv & 1 < 2
mask cond(b, h, q, kv) = (q >= kv) if True else (q < kv)
attention a1 {
    mask = and_masks(unusedlet, prec, cond)
}
`,
	"errors": `mask bad(b, h, q, kv) = q + 1.5
mask ok(b, h, q, kv) = q >= kv
mask rec(b, h, q, kv) = rec(b, h, q, kv)
attention a1 {
    mask = and_masks(ok, bad)
}
attention a2 {
    mask = and_masks(ok, rec)
}
`,
}

// reuseDump checks src with or without reusing bodies and prints every
// attention's lowered mask and score, and the diagnostics.
func reuseDump(name, src string, reuse bool) (lowered, diags string) {
	f, _ := parser.ParseFile(name, []byte(src))
	p, ds := checkFile(f, Options{}, reuse)
	var b strings.Builder
	for _, a := range p.Attentions {
		fmt.Fprintf(&b, "attention %s\n%s\n%s\n", a.Name, dumpLowered(a.Mask), dumpLowered(a.Score))
	}
	return b.String(), ds.Render()
}

// TestReusedBodiesLowerIdentically checks that sharing the lowering of
// plain mods' bodies changes nothing a consumer sees: every attention's
// lowered mask and score, and the diagnostics, are the same as when each
// use builds its nodes again.
func TestReusedBodiesLowerIdentically(t *testing.T) {
	cases := map[string]string{}
	for name, text := range reuseCases {
		cases[name] = text
	}
	for _, path := range exampleFiles(t) {
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		cases[filepath.Base(path)] = string(text)
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			want, wantDiags := reuseDump(name, text, false)
			got, gotDiags := reuseDump(name, text, true)
			assert.Equal(t, want, got)
			assert.Equal(t, wantDiags, gotDiags)
		})
	}
}

// TestBodiesAreReused makes sure the equivalence test above compares
// something: a plain mod's body lowered by its own check is the very node
// an attention block that names it inlines.
func TestBodiesAreReused(t *testing.T) {
	f, diags := parser.ParseFile("combined", []byte(reuseCases["combined"]))
	require.False(t, diags.HasErrors(), diags.Render())
	p, diags := Check(f, Options{})
	require.False(t, diags.HasErrors(), diags.Render())
	w := p.Attention("a3").Mask
	a1 := p.Attention("a1").Mask.Expr.(*dsl.BinaryExpr) // (c & w) & same
	inner := a1.X.(*dsl.BinaryExpr)
	assert.Same(t, w.Expr, inner.Y, "a1 inlines w's kept body")

	f, _ = parser.ParseFile("combined", []byte(reuseCases["combined"]))
	p, _ = checkFile(f, Options{}, false)
	inner = p.Attention("a1").Mask.Expr.(*dsl.BinaryExpr).X.(*dsl.BinaryExpr)
	assert.NotSame(t, p.Attention("a3").Mask.Expr, inner.Y, "without reuse every use builds its own nodes")
}

// FuzzReusedBodies is TestReusedBodiesLowerIdentically on arbitrary files
// that parse.
func FuzzReusedBodies(f *testing.F) {
	for _, text := range reuseCases {
		f.Add(text)
	}
	for _, path := range exampleFiles(f) {
		text, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(text))
	}
	f.Fuzz(func(t *testing.T, src string) {
		if _, diags := parser.ParseFile("fuzz.flex", []byte(src)); diags.HasErrors() {
			return
		}
		want, wantDiags := reuseDump("fuzz.flex", src, false)
		got, gotDiags := reuseDump("fuzz.flex", src, true)
		if want != got || wantDiags != gotDiags {
			t.Fatalf("reusing bodies changes the result:\n%s\n%s\nwant:\n%s\n%s", got, gotDiags, want, wantDiags)
		}
	})
}
