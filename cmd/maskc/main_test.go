package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/maskc/maskc/internal/golden"
)

// TestMain lets the script tests run "maskc" in-process as a subcommand.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"maskc": func() { main() },
	})
}

// TestScripts runs the command-line scripts in testdata/script: every
// command, its output and its exit code. Run with -update to rewrite the
// expected output embedded in the scripts.
func TestScripts(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: golden.Update(),
		Setup: func(e *testscript.Env) error {
			e.Setenv("EXAMPLES", wd+"/../../examples")
			// Inputs a text archive cannot hold: binary bytes and the CRLF
			// framing of the Language Server Protocol.
			if err := os.WriteFile(filepath.Join(e.WorkDir, "binary.flex"), []byte("mask \x00\x01\x02\xff ELF\n"), 0o644); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(e.WorkDir, "lsp-session.txt"), lspFrames(
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`,
				`{"jsonrpc":"2.0","method":"initialized","params":{}}`,
				`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`,
				`{"jsonrpc":"2.0","method":"exit"}`,
			), 0o644)
		},
	})
}

// lspFrames frames JSON-RPC messages with LSP's Content-Length headers.
func lspFrames(msgs ...string) []byte {
	var out []byte
	for _, m := range msgs {
		out = fmt.Appendf(out, "Content-Length: %d\r\n\r\n%s", len(m), m)
	}
	return out
}
