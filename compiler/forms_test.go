package compiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/normal"
)

// TestCarriedFormsChangeNothing: a kernel generated with the classifier's
// normal forms carried in (Unit.Kernel, KernelDiagnostics) is the kernel
// the code generator writes on its own, computing every form again, for
// every example and codegen golden file, and the carried forms are the
// ones used: the plan holds a form for every masked block.
func TestCarriedFormsChangeNothing(t *testing.T) {
	var files []string
	for _, glob := range []string{examples + "*.flex", "../codegen/testdata/golden/*.flex"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("only %d files", len(files))
	}
	kernels := 0
	for _, path := range files {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		u, diags := Prepare(path, text, Options{})
		if u == nil || diags.HasErrors() {
			continue // files of refusals; compiler_test covers those
		}
		for _, name := range u.Names() {
			a := u.Program.Attention(name)
			if a.Mask != nil && u.Plan.Forms[a.Mask] == nil {
				t.Errorf("%s: %s: the plan carries no normal form for the mask", path, name)
			}
			got, gd := u.Kernel(name)
			want, wd := codegen.Generate(u.Program, a, codegen.Options{})
			if gd.Render() != wd.Render() {
				t.Errorf("%s: %s: diagnostics differ:\n%s\nwant:\n%s", path, name, gd.Render(), wd.Render())
				continue
			}
			if (got == nil) != (want == nil) || got != nil && (got.Source != want.Source || got.BwdSource != want.BwdSource || got.Sparsity != want.Sparsity) {
				t.Errorf("%s: %s: the kernel differs with the carried forms", path, name)
			}
			if got != nil {
				kernels++
			}
		}
		if kd, wd := KernelDiagnostics(u.Program, u.Plan, Options{}), KernelDiagnostics(u.Program, u.Plan, Options{Kernel: codegen.Options{Forms: map[*dsl.Lowered]*normal.Form{}}}); kd.Render() != wd.Render() {
			t.Errorf("%s: KernelDiagnostics differ with the carried forms:\n%s\nwant:\n%s", path, kd.Render(), wd.Render())
		}
	}
	if kernels < 10 {
		t.Errorf("only %d kernels compared", kernels)
	}
}
