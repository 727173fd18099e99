package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/dsl"
)

// maxInput bounds what maskc reads from one file, so that a device or a
// runaway pipe cannot make it hang or exhaust memory; the parser refuses
// much smaller files with a positioned diagnostic.
const maxInput = 64 << 20

// readInput reads path ("-" is standard input) up to maxInput bytes.
func readInput(e *env, path string) ([]byte, error) {
	var r io.Reader
	if path == "-" {
		r = e.stdin
	} else {
		st, err := os.Stat(path)
		if err != nil {
			return nil, compiler.CleanPathError(err)
		}
		if st.IsDir() {
			return nil, fmt.Errorf("%s: is a directory, not a .flex file", path)
		}
		if !st.Mode().IsRegular() {
			// A FIFO would block the open or the read for as long as
			// nobody writes it (issue 31: check and fmt -w hung).
			return nil, fmt.Errorf("%s: not a regular file (%v); to read a pipe, give - and redirect it to standard input", path, st.Mode().Type())
		}
		f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return nil, compiler.CleanPathError(err)
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file; to read a pipe, give - and redirect it to standard input", path)
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("%s: file larger than %d MiB", path, maxInput>>20)
	}
	return data, nil
}

// unit is one file taken through the front end.
type unit struct {
	path  string
	file  *dsl.File
	prog  *check.Program // nil when the file has syntax errors
	diags dsl.Diagnostics
}

// load parses and checks path. The error is for files that cannot be read;
// problems in the text are diagnostics in unit.diags.
func load(e *env, path string, defines map[string]string) (*unit, error) {
	data, err := readInput(e, path)
	if err != nil {
		return nil, err
	}
	c, diags := compiler.ParseAndCheck(displayName(e, path), data, compiler.Options{Defines: defines})
	return &unit{path: path, file: c.File, prog: c.Program, diags: diags}, nil
}

// printDiags writes diagnostics in their full human form, a blank line
// between two.
func printDiags(w io.Writer, ds dsl.Diagnostics) {
	fmt.Fprint(w, ds.Render())
}

// displayName is what diagnostics and generated code call path: "-" is
// <stdin>, or the name --stdin-name gave it.
func displayName(e *env, path string) string {
	if path != "-" {
		return path
	}
	if e.stdinName != "" {
		return e.stdinName
	}
	return "<stdin>"
}

// stdinNameFlag registers --stdin-name, the name FILE "-" is given. The
// Python package sends the exact bytes it keyed a cache entry by on stdin
// and names them by their file, so an edit while maskc runs cannot put one
// text's kernels under another's key.
func stdinNameFlag(e *env, fs *flag.FlagSet) {
	fs.StringVar(&e.stdinName, "stdin-name", "", "with FILE -, the file `NAME` to give the text read from stdin in diagnostics and generated code")
}
