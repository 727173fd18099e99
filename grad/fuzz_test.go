package grad_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/grad"
	"github.com/maskc/maskc/parser"
)

// FuzzDifferentiate feeds arbitrary text through the parser and the
// checker and differentiates every score mod that lowers. Nothing may
// panic, and every derivative must be a float expression whose every node
// has a recorded type:
//
//	go test -run='^$' -fuzz=FuzzDifferentiate -fuzztime=20s ./grad
func FuzzDifferentiate(f *testing.F) {
	paths, _ := filepath.Glob("../examples/*.flex")
	paths = append(paths, "testdata/scores.flex")
	for _, path := range paths {
		if text, err := os.ReadFile(path); err == nil {
			f.Add(string(text))
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		file, diags := parser.ParseFile("fuzz.flex", []byte(src))
		if file == nil || diags.HasErrors() {
			return
		}
		p, diags := check.Check(file, check.Options{})
		if p == nil || diags.HasErrors() {
			return
		}
		for _, m := range p.Mods {
			if m.Kind != dsl.ScoreMod || m.Factory {
				continue
			}
			l, ld := p.LowerMod(m.Name)
			if l == nil || ld.HasErrors() {
				continue
			}
			g, err := grad.Differentiate(l)
			if err != nil {
				continue // too large
			}
			roots := []dsl.Expr{g.DScore}
			for _, r := range g.Reads {
				roots = append(roots, r.D)
			}
			for _, e := range roots {
				if g.Types[e] != dsl.TypeFloat {
					t.Fatalf("%s: a derivative of type %s", m.Name, g.Types[e])
				}
				dsl.Inspect(e, func(x dsl.Expr) bool {
					if _, isName := x.(*dsl.Ident); !isName && g.Types[x] == dsl.TypeInvalid {
						t.Fatalf("%s: a %T node without a type", m.Name, x)
					}
					return true
				})
			}
		}
	})
}
