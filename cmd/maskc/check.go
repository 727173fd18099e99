package main

import (
	"encoding/json"
	"fmt"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/dsl"
)

// runCheck implements `maskc check [--json] [--target T] [-D NAME=VALUE]...
// FILE...`: every diagnostic of every file, from parsing through the
// attention configuration rules to the kernel generator's. Exit 1 if any file has an error.
func runCheck(e *env, args []string) int {
	fs := newFlagSet(e, "check", "[--json] [--target T] [-D NAME=VALUE]... FILE...")
	asJSON := fs.Bool("json", false, "print diagnostics as a JSON array on stdout")
	target, defines := targetFlag(fs), defineFlag(fs)
	stdinNameFlag(e, fs)
	files, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(files) == 0 {
		fs.Usage()
		return exitUsage
	}
	profile, err := classify.Target(*target)
	if err != nil {
		return usageError(e.stderr, "%v", err)
	}
	var all dsl.Diagnostics
	status := exitOK
	for _, path := range files {
		u, err := load(e, path, defines)
		if err != nil {
			fmt.Fprintf(e.stderr, "maskc: %v\n", err)
			status = exitUsage
			continue
		}
		ds := u.diags
		if u.prog != nil && !ds.HasErrors() {
			_, cd := compiler.Verdict(u.prog, compiler.Options{Target: profile})
			ds = append(ds, cd...)
			ds.Sort()
		}
		if ds.HasErrors() && status == exitOK {
			status = exitError
		}
		all = append(all, ds...)
	}
	if *asJSON {
		out, _ := json.MarshalIndent(all, "", "  ")
		fmt.Fprintln(e.stdout, string(out))
	} else {
		printDiags(e.stderr, all)
	}
	return status
}
