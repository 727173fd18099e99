package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

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

// writeAtomic writes data to path through a synced temporary file in the
// same directory and a rename, so readers see the old or the new content,
// never a torn file.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".maskc-*")
	if err != nil {
		return cleanPathError(err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %v", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %v", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return cleanPathError(err)
	}
	return cleanPathError(os.Rename(tmp.Name(), path))
}
