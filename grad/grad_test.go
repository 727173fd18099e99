package grad_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/grad"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/parser"
)

// load parses and checks a .flex file, failing on errors.
func load(t testing.TB, path string) *check.Program {
	t.Helper()
	text, err := os.ReadFile(path)
	require.NoError(t, err)
	f, diags := parser.ParseFile(path, text)
	require.False(t, diags.HasErrors(), diags.Render())
	p, diags := check.Check(f, check.Options{})
	require.False(t, diags.HasErrors(), diags.Render())
	return p
}

// TestGoldenRules pins the printed derivative of one score per rule.
func TestGoldenRules(t *testing.T) {
	p := load(t, "testdata/scores.flex")
	var b strings.Builder
	for _, m := range p.Mods {
		if m.Kind != dsl.ScoreMod {
			continue
		}
		l, diags := p.LowerMod(m.Name)
		require.False(t, diags.HasErrors(), diags.Render())
		g, err := grad.Differentiate(l)
		require.NoError(t, err, m.Name)
		b.WriteString(g.String() + "\n")
	}
	golden.CheckString(t, "testdata/scores.golden", b.String())
}

// exampleScores are the examples with a score mod, pinned by name so that
// a new example does not change the golden file (eval's finite-difference
// tests cover every example).
var exampleScores = []string{"alibi.flex", "relative_bias.flex", "softcap.flex"}

// TestGoldenExamples pins the derivatives of the example scores.
func TestGoldenExamples(t *testing.T) {
	var files []string
	for _, f := range exampleScores {
		files = append(files, filepath.Join("../examples", f))
	}
	var b strings.Builder
	for _, path := range files {
		p := load(t, path)
		for _, a := range p.Attentions {
			if a.Score == nil {
				continue
			}
			g, err := grad.Differentiate(a.Score)
			require.NoError(t, err)
			b.WriteString("# " + filepath.Base(path) + ": attention " + a.Name + "\n" + g.String() + "\n")
		}
	}
	golden.CheckString(t, "testdata/examples.golden", b.String())
}

// TestReadsAndBuffers checks which reads are differentiable and that a
// read written twice is one Read.
func TestReadsAndBuffers(t *testing.T) {
	p := load(t, "testdata/scores.flex")
	for _, tc := range []struct {
		mod   string
		reads []string
		bufs  []string
	}{
		{"identity", nil, nil},
		{"add_sub", []string{"slopes[h]", "bias[h, q - kv + KV - 1]"}, []string{"bias", "slopes"}},
		{"shared", []string{"slopes[h]"}, []string{"slopes"}},
		{"int_doc", []string{"slopes[h]"}, []string{"slopes"}},
		{"clamp_all", []string{"lo[h]", "hi[h]"}, []string{"lo", "hi"}},
		{"no_score", []string{"slopes[h]"}, []string{"slopes"}},
	} {
		l, diags := p.LowerMod(tc.mod)
		require.False(t, diags.HasErrors(), diags.Render())
		g, err := grad.Differentiate(l)
		require.NoError(t, err)
		var reads, bufs []string
		for _, r := range g.Reads {
			reads = append(reads, format.Expr(r.Index))
			assert.Equal(t, dsl.TypeFloat, g.Types[r.D], "%s: %s", tc.mod, format.Expr(r.D))
		}
		for _, d := range g.Buffers() {
			bufs = append(bufs, d.Name.Name)
		}
		assert.Equal(t, tc.reads, reads, tc.mod)
		assert.ElementsMatch(t, tc.bufs, bufs, tc.mod)
	}
}

// TestNoScoreDependence: a score that ignores the score has d/d score = 0.
func TestNoScoreDependence(t *testing.T) {
	p := load(t, "testdata/scores.flex")
	for _, name := range []string{"constant", "no_score"} {
		l, _ := p.LowerMod(name)
		g, err := grad.Differentiate(l)
		require.NoError(t, err)
		assert.Equal(t, "0.0", format.Expr(g.DScore), name)
	}
}

// TestRefusesMasksAndHugeDerivatives covers the errors.
func TestRefusesMasksAndHugeDerivatives(t *testing.T) {
	_, err := grad.Differentiate(nil)
	assert.ErrorIs(t, err, grad.ErrNotScore)
	// tanh applied 2000 times: the derivative holds every inner tanh once
	// per level, more than MaxNodes nodes as a tree.
	var src strings.Builder
	src.WriteString("score deep(score, b, h, q, kv) {\n    let t0 = tanh(score)\n")
	for i := 1; i < 2000; i++ {
		fmt.Fprintf(&src, "    let t%d = tanh(t%d)\n", i, i-1)
	}
	src.WriteString("    t1999\n}\n")
	f, diags := parser.ParseFile("deep.flex", []byte(src.String()))
	require.False(t, diags.HasErrors(), diags.Render())
	p, diags := check.Check(f, check.Options{})
	require.False(t, diags.HasErrors(), diags.Render())
	l, _ := p.LowerMod("deep")
	_, err = grad.Differentiate(l)
	assert.True(t, errors.Is(err, grad.ErrTooLarge), "%v", err)
}

// TestEveryBuiltinHasARule: a built-in added to dsl.Builtins without a
// derivative rule (in dsl.GradOperands and here) would silently pass no
// gradient; this test names it. floor, ceil and int pass none on purpose.
func TestEveryBuiltinHasARule(t *testing.T) {
	zero := map[string]bool{"floor": true, "ceil": true, "int": true}
	for name, bi := range dsl.Builtins {
		args := make([]string, bi.MinArgs)
		for i := range args {
			args[i] = "score"
		}
		if name == "where" {
			args = []string{"score > 0", "score", "0.0"}
		}
		src := "score s(score, b, h, q, kv) = " + name + "(" + strings.Join(args, ", ") + ") + 0.0\n"
		f, diags := parser.ParseFile("b.flex", []byte(src))
		require.False(t, diags.HasErrors(), diags.Render())
		p, diags := check.Check(f, check.Options{})
		require.False(t, diags.HasErrors(), diags.Render())
		l, _ := p.LowerMod("s")
		g, err := grad.Differentiate(l)
		require.NoError(t, err)
		if zero[name] {
			assert.Equal(t, "0.0", format.Expr(g.DScore), name)
		} else {
			assert.NotEqual(t, "0.0", format.Expr(g.DScore), "%s has no derivative rule", name)
		}
	}
}
