package codegen

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/parser"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// loadProgram parses and checks a .flex file, failing the test on errors.
func loadProgram(t testing.TB, path string) *check.Program {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return checkSource(t, filepath.ToSlash(path), string(text))
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
			golden := strings.TrimSuffix(file, ".flex") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got.String() != string(want) {
				t.Errorf("generated part differs from %s (run with -update and review the diff):\n%s", golden, firstDiff(string(want), got.String()))
			}
		})
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, w, g)
		}
	}
	return "(texts equal)"
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
