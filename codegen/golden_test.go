package codegen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/parser"
)

// loadProgram parses and checks a .flex file, failing the test on errors.
func loadProgram(t testing.TB, path string) *check.Program {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return checkSource(t, filepath.ToSlash(path), string(text))
}

// generateAttention generates the kernel of attention block name (the
// file's first block when name is empty) of the .flex file at path,
// failing the test on errors.
func generateAttention(t testing.TB, path, name string, opts Options) *Kernel {
	t.Helper()
	p := loadProgram(t, path)
	a := p.Attentions[0]
	if name != "" {
		if a = p.Attention(name); a == nil {
			t.Fatalf("%s has no attention %s", path, name)
		}
	}
	k, diags := Generate(p, a, opts)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", path, diags.Render())
	}
	return k
}

// checkSource parses and checks .flex text, failing the test on errors.
func checkSource(t testing.TB, name, text string) *check.Program {
	t.Helper()
	f, diags := parser.ParseFile(name, []byte(text))
	if diags.HasErrors() {
		t.Fatalf("parse %s:\n%s", name, diags.Render())
	}
	p, diags := check.Check(f, check.Options{})
	if diags.HasErrors() {
		t.Fatalf("check %s:\n%s", name, diags.Render())
	}
	return p
}

// TestGolden pins the generated part of every attention block of
// testdata/golden/*.flex. Run `go test ./codegen -run TestGolden -update`
// after an intended change and review the diff.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.flex")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".flex"), func(t *testing.T) {
			p := loadProgram(t, file)
			var got strings.Builder
			for i, a := range p.Attentions {
				k, diags := Generate(p, a, Options{})
				if diags.HasErrors() {
					t.Fatalf("%s:\n%s", a.Name, diags.Render())
				}
				if i > 0 {
					got.WriteString("\n// ======================================================================\n\n")
				}
				got.WriteString(k.Generated)
			}
			golden.CheckString(t, strings.TrimSuffix(file, ".flex")+".golden", got.String())
		})
	}
}

// BenchmarkGenerate measures generating the kernel of each golden input's
// first attention block (parse and check excluded).
func BenchmarkGenerate(b *testing.B) {
	files, _ := filepath.Glob("testdata/golden/*.flex")
	for _, file := range files {
		p := loadProgram(b, file)
		b.Run(strings.TrimSuffix(filepath.Base(file), ".flex"), func(b *testing.B) {
			for b.Loop() {
				if _, diags := Generate(p, p.Attentions[0], Options{}); diags.HasErrors() {
					b.Fatal(diags.Render())
				}
			}
		})
	}
}
