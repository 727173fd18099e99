package main

import (
	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/dsl"
)

// kernelDiags generates the kernel of every block of plan that needs one
// and returns the generator's diagnostics (E3xx, e.g. E310 for int
// arithmetic that may overflow int64), so that `maskc check` reports every
// diagnostic `maskc compile` would.
func kernelDiags(prog *check.Program, plan *classify.Plan) dsl.Diagnostics {
	var ds dsl.Diagnostics
	if plan == nil {
		return nil
	}
	for _, d := range plan.Attentions {
		if d.Pattern != classify.PatternGenerated && d.Fallback != classify.PatternGenerated {
			continue
		}
		if a := prog.Attention(d.Name); a != nil {
			_, kd := codegen.Generate(prog, a, codegen.Options{})
			ds = append(ds, kd...)
		}
	}
	return ds
}
