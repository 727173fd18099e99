package main

import (
	"fmt"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/compiler"
)

// runClassify implements `maskc classify FILE [--json] [--target T] [-D
// ...]`: per attention block, the Turbo call it becomes (or `generated`)
// and why.
func runClassify(e *env, args []string) int {
	fs := newFlagSet(e, "classify", "FILE [--json] [--target T] [-D NAME=VALUE]...")
	asJSON := fs.Bool("json", false, "print the plan as JSON (the plan.json schema)")
	target, defines := targetFlag(fs), defineFlag(fs)
	files, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(files) != 1 {
		return usageError(e.stderr, "classify takes exactly one FILE")
	}
	_, plan, status := buildPlan(e, files[0], *target, defines)
	if plan == nil {
		return status
	}
	if *asJSON {
		out, err := plan.JSON()
		if err != nil {
			fmt.Fprintf(e.stderr, "maskc: %v\n", err)
			return exitError
		}
		fmt.Fprintln(e.stdout, string(out))
	} else {
		fmt.Fprint(e.stdout, plan.Explain())
	}
	return status
}

// buildPlan runs the front end and the classifier on path, printing
// diagnostics. The plan is nil when there were errors (status says which
// exit code to use).
func buildPlan(e *env, path, target string, defines map[string]string) (*unit, *classify.Plan, int) {
	profile, err := classify.Target(target)
	if err != nil {
		return nil, nil, usageError(e.stderr, "%v", err)
	}
	u, err := load(e, path, defines)
	if err != nil {
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		return nil, nil, exitUsage
	}
	if u.diags.HasErrors() {
		printDiags(e.stderr, u.diags)
		return nil, nil, exitError
	}
	plan, cd := compiler.Classify(u.prog, compiler.Options{Target: profile})
	ds := append(u.diags, cd...)
	ds.Sort()
	printDiags(e.stderr, ds)
	if ds.HasErrors() {
		return nil, nil, exitError
	}
	return u, plan, exitOK
}

// runTargets implements `maskc targets`: the known Turbo target profiles.
func runTargets(e *env, args []string) int {
	fs := newFlagSet(e, "targets", "")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	for _, p := range classify.Targets() {
		def := ""
		if p.Name == classify.DefaultTarget.Name {
			def = " (default)"
		}
		fmt.Fprintf(e.stdout, "%s%s\n    %s\n", p.Name, def, p.Description)
	}
	return exitOK
}
