package lsp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
)

// TestExamples opens every file of examples/: each must analyse without
// errors, and every attention block must hover with its classification
// and carry a code lens.
func TestExamples(t *testing.T) {
	files, _ := filepath.Glob("../examples/*.flex")
	if len(files) == 0 {
		t.Fatal("no examples in ../examples")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			a := analyze(path, text, &parseCache{})
			if len(a.panics) > 0 || a.diags.HasErrors() {
				t.Fatalf("panics %v, diagnostics:\n%s", a.panics, a.diags.Render())
			}
			blocks := 0
			for _, d := range a.file.Decls {
				at, ok := d.(*dsl.AttentionDecl)
				if !ok {
					continue
				}
				blocks++
				dec := a.decisions[at]
				if dec == nil {
					t.Fatalf("attention %s: no decision", at.Name.Name)
				}
				hover := a.attentionHover(at)
				if want := "**" + dec.Pattern + "**"; !strings.Contains(hover, want) {
					t.Errorf("attention %s: hover %q lacks %q", at.Name.Name, hover, want)
				}
			}
			if blocks == 0 {
				t.Errorf("no attention block")
			}
		})
	}
}
