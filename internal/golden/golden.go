// Package golden is the one golden-file comparison of maskc's tests and
// the one -update flag that rewrites golden files.
//
// A test renders its output and calls Check (or CheckString) with the
// golden file's path, usually under testdata/. Without -update, Check
// compares the output with the file and, on a difference, reports the
// first differing line. With -update (`go test ./PKG -update`), Check
// writes the output to the file instead, creating its directory; review
// the change with git diff before committing it.
//
// Only tests import this package: importing it registers -update on the
// test binary's command line, so a test package must not define its own.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files instead of comparing with them")

// Update reports whether the test binary runs with -update: golden files
// are rewritten rather than compared. Tests where -update also drives
// other rewriting (test scripts, generated fixtures) read it here.
func Update() bool { return *update }

// Check compares got with the golden file at path and fails t with the
// first differing line if they differ. Under -update it writes got to
// path instead, creating path's directory, and compares nothing.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := Diff(want, got); d != "" {
		t.Errorf("%s differs from the output: %s\n(run go test -update to rewrite it, then review the change with git diff)", path, d)
	}
}

// CheckString is Check for output held in a string.
func CheckString(t testing.TB, path, got string) {
	t.Helper()
	Check(t, path, []byte(got))
}

// Diff describes the first line where want and got differ, with its
// 1-based number and both versions quoted, or returns "" if they are
// equal. A line one side lacks shows as <end of file>.
func Diff(want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	wl, gl := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	line := func(ls [][]byte, i int) string {
		if i < len(ls) {
			return fmt.Sprintf("%q", ls[i])
		}
		return "<end of file>"
	}
	for i := 0; ; i++ {
		if i >= len(wl) || i >= len(gl) || !bytes.Equal(wl[i], gl[i]) {
			return fmt.Sprintf("first difference at line %d of %d (want) / %d (got):\nwant: %s\ngot:  %s",
				i+1, len(wl), len(gl), line(wl, i), line(gl, i))
		}
	}
}
