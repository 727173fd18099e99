package codegen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/parser"
)

// FuzzGenerate feeds arbitrary .flex text through the parser, the checker
// and Generate: generation never panics, and it either reports an error or
// produces all four device functions.
//
//	go test ./codegen -run '^$' -fuzz FuzzGenerate -fuzztime 60s
func FuzzGenerate(f *testing.F) {
	files, _ := filepath.Glob("testdata/golden/*.flex")
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(string(b))
		}
	}
	for _, mc := range maskCases {
		f.Add(maskCaseSource(mc.decls, mc.mask, mc.score))
	}
	f.Fuzz(func(t *testing.T, text string) {
		file, diags := parser.ParseFile("fuzz.flex", []byte(text))
		if diags.HasErrors() {
			return
		}
		p, diags := check.Check(file, check.Options{})
		if diags.HasErrors() || p == nil {
			return
		}
		for _, a := range p.Attentions {
			k, diags := Generate(p, a, Options{})
			if diags.HasErrors() {
				if k != nil {
					t.Fatalf("Generate returned a kernel and errors: %s", diags.Render())
				}
				continue
			}
			for _, fn := range []string{"maskc_g_mask(", "maskc_g_score(", "maskc_g_kv_range(", "maskc_g_tile_full("} {
				if !strings.Contains(k.Generated, fn) {
					t.Fatalf("generated part lacks %s", fn)
				}
			}
			_ = TorchExpr(a.Mask) + TorchExpr(a.Score)
		}
	})
}
