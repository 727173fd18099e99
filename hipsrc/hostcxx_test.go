package hipsrc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cutSource returns text from the first occurrence of from up to and
// including the next occurrence of to, failing t with what when either is
// missing.
func cutSource(t *testing.T, text, from, to, what string) string {
	t.Helper()
	start := strings.Index(text, from)
	if start < 0 {
		t.Fatalf("%s not found", what)
	}
	end := strings.Index(text[start:], to)
	if end < 0 {
		t.Fatalf("the end of %s not found", what)
	}
	return text[start : start+end+len(to)]
}

// runHostProgram compiles program with cxx and flags (plus -Wall) in a
// temporary directory and runs it; the check passes when it prints "ok".
// A compile error fails t at once, a failed check is reported with
// t.Errorf so that a table of programs goes on.
func runHostProgram(t *testing.T, cxx, name, program string, flags ...string) {
	t.Helper()
	dir := t.TempDir()
	src, exe := filepath.Join(dir, name+".cc"), filepath.Join(dir, name)
	if err := os.WriteFile(src, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, flags...), "-Wall", "-o", exe, src)
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: g++: %v\n%s", name, err, out)
	}
	out, err := exec.Command(exe).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("%s: %v\n%s", name, err, out)
	}
}
