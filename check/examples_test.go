package check

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/parser"
)

// exampleFiles lists ../examples/*.flex, failing when there are none.
func exampleFiles(t testing.TB) []string {
	files, err := filepath.Glob("../examples/*.flex")
	require.NoError(t, err)
	require.NotEmpty(t, files, "no examples found")
	return files
}

func TestExamplesCheckClean(t *testing.T) {
	for _, path := range exampleFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			text, err := os.ReadFile(path)
			require.NoError(t, err)
			f, diags := parser.ParseFile(path, text)
			require.False(t, diags.HasErrors(), diags.Render())
			p, diags := Check(f, Options{})
			assert.False(t, diags.HasErrors(), diags.Render())
			if len(diags) > 0 {
				t.Logf("warnings:\n%s", diags.Render())
			}
			for _, a := range p.Attentions {
				if a.Mask != nil {
					assert.Empty(t, loweredInvariants(p, a.Mask), "%s mask", a.Name)
				} else {
					assert.Nil(t, a.Setting("mask"), "%s: a mask setting that did not lower", a.Name)
				}
				if a.Score != nil {
					assert.Empty(t, loweredInvariants(p, a.Score), "%s score", a.Name)
				} else {
					assert.Nil(t, a.Setting("score"), "%s: a score setting that did not lower", a.Name)
				}
			}
		})
	}
}

// BenchmarkCheckExamples measures parse + check of each example.
func BenchmarkCheckExamples(b *testing.B) {
	for _, path := range exampleFiles(b) {
		text, err := os.ReadFile(path)
		require.NoError(b, err)
		b.Run(filepath.Base(path), func(b *testing.B) {
			for b.Loop() {
				f, _ := parser.ParseFile(path, text)
				if _, diags := Check(f, Options{}); diags.HasErrors() {
					b.Fatal(diags.Render())
				}
			}
		})
	}
}

// BenchmarkCheckOnlyExamples measures the checker alone on each example.
func BenchmarkCheckOnlyExamples(b *testing.B) {
	for _, path := range exampleFiles(b) {
		text, err := os.ReadFile(path)
		require.NoError(b, err)
		f, _ := parser.ParseFile(path, text)
		b.Run(filepath.Base(path), func(b *testing.B) {
			for b.Loop() {
				Check(f, Options{})
			}
		})
	}
}
