package main

import (
	"bytes"
	"fmt"

	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/parser"
)

// runFmt implements `maskc fmt [-w] [-l] FILE...`. Without -w the formatted
// text goes to stdout. A file with syntax errors is reported and never
// rewritten.
func runFmt(e *env, args []string) int {
	fs := newFlagSet(e, "fmt", "[-w] [-l] FILE...")
	write := fs.Bool("w", false, "write the result back to the file instead of stdout")
	list := fs.Bool("l", false, "list files whose formatting differs, print nothing else")
	files, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(files) == 0 {
		fs.Usage()
		return exitUsage
	}
	status := exitOK
	for _, path := range files {
		if *write && path == "-" {
			return usageError(e.stderr, "cannot use -w with standard input")
		}
		src, err := readInput(e, path)
		if err != nil {
			fmt.Fprintf(e.stderr, "maskc: %v\n", err)
			status = exitUsage
			continue
		}
		f, diags := parser.ParseFile(path, src)
		if diags.HasErrors() {
			printDiags(e.stderr, diags)
			if status == exitOK {
				status = exitError
			}
			continue
		}
		out := format.Source(f)
		changed := !bytes.Equal(out, src)
		switch {
		case *list:
			if changed {
				fmt.Fprintln(e.stdout, path)
			}
		case *write:
			if changed {
				if err := replaceFile(path, src, out); err != nil {
					fmt.Fprintf(e.stderr, "maskc: %v\n", err)
					status = exitUsage
				}
			}
		default:
			e.stdout.Write(out)
		}
	}
	return status
}
