package main

import (
	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/dsl"
)

// kernelDiags generates the kernel of every block of plan that needs one
// and returns the generator's diagnostics (E3xx, e.g. E311 for int
// arithmetic that may overflow int64), so that `maskc check` reports every
// diagnostic `maskc compile` would.
func kernelDiags(prog *check.Program, plan *classify.Plan) dsl.Diagnostics {
	if plan == nil {
		return nil
	}
	u := compiler.New(prog, plan, compiler.Options{})
	var ds dsl.Diagnostics
	for _, d := range plan.Attentions {
		if compiler.NeedsKernel(d) {
			_, kd := u.Kernel(d.Name)
			ds = append(ds, kd...)
		}
	}
	return ds
}
