package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/parser"
)

// ported is the corpus of mods written in the shapes public FlexAttention
// code takes (attention-gym's catalog, the FlexAttention docs and blog):
// Python defs with reassignment, tensor methods, torch calls and factories.
const ported = "../testdata/ported/"

// TestPortedCorpus checks that every file of the corpus checks without a
// diagnostic, is already in `maskc fmt` form (so fmt keeps the def form),
// is written in the def form, classifies as pinned in
// testdata/ported/classify.golden, and compiles: every block whose plan
// needs a generated kernel gets one.
func TestPortedCorpus(t *testing.T) {
	files, err := filepath.Glob(ported + "*.flex")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("the ported corpus has %d files, want at least 30", len(files))
	}
	var plans strings.Builder
	for _, path := range files {
		name := filepath.Base(path)
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, diags := parser.ParseFile(name, text)
		if len(diags) > 0 {
			t.Errorf("%s:\n%s", name, diags.Render())
			continue
		}
		if got := format.Source(f); string(got) != string(text) {
			t.Errorf("%s is not in maskc fmt form; fmt gives:\n%s", name, got)
		}
		defs := 0
		for _, d := range f.Decls {
			if m, ok := d.(*dsl.ModDecl); ok {
				if !m.Def {
					t.Errorf("%s: mod %s is not written as a Python def", name, m.Name.Name)
				}
				defs++
			}
		}
		if defs == 0 {
			t.Errorf("%s declares no def", name)
		}
		u, cdiags := Compile(name, text, Options{})
		if cdiags.HasErrors() {
			t.Errorf("%s:\n%s", name, cdiags.Render())
			continue
		}
		if len(u.Warnings) > 0 {
			t.Errorf("%s: warnings:\n%s", name, u.Warnings.Render())
		}
		for _, d := range u.Plan.Attentions {
			if _, generated := u.kernels[d.Name]; generated != NeedsKernel(d) {
				t.Errorf("%s: %s: kernel generated = %v, needed = %v", name, d.Name, generated, NeedsKernel(d))
			}
			if k := u.kernels[d.Name]; k != nil && !strings.Contains(k.Source, "maskc_attn_fwd") {
				t.Errorf("%s: %s: the kernel source has no maskc_attn_fwd", name, d.Name)
			}
		}
		plans.WriteString("===== " + name + "\n" + u.Plan.Explain() + "\n")
	}
	golden.CheckString(t, ported+"classify.golden", plans.String())
}
