package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEPicture checks that the picture the README shows is what the
// command printed above it makes: the command is run from the repository
// root with -o redirected, and the bytes must equal the checked-in file.
func TestREADMEPicture(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cmdLine string
	for _, ln := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(ln, "go run ./cmd/maskc draw ") {
			cmdLine = ln
		}
	}
	if cmdLine == "" {
		t.Fatal("README.md shows no `go run ./cmd/maskc draw` command")
	}
	args := strings.Fields(strings.TrimPrefix(cmdLine, "go run ./cmd/maskc "))
	out, written := "", ""
	for i := range args {
		if args[i] == "-o" && i+1 < len(args) {
			out = args[i+1]
			written = filepath.Join(t.TempDir(), filepath.Base(out))
			args[i+1] = written
		}
	}
	if out == "" || !strings.Contains(string(readme), "]("+out+")") {
		t.Fatalf("the README's draw command writes %q, which the README does not show", out)
	}
	for i := range args { // paths are relative to the repository root
		if strings.HasPrefix(args[i], "examples/") {
			args[i] = filepath.Join("..", "..", args[i])
		}
	}
	var stdout, stderr bytes.Buffer
	if code := mainArgs(args, &env{stdout: &stdout, stderr: &stderr}); code != exitOK {
		t.Fatalf("maskc %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	got, err := os.ReadFile(written)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", out))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the README's command makes; rerun it from the repository root:\n%s", out, cmdLine)
	}
}
