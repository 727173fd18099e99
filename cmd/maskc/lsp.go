package main

import (
	"context"
	"fmt"

	"github.com/maskc/maskc/lsp"
)

// runLSP implements `maskc lsp`: a Language Server on stdin/stdout.
func runLSP(e *env, args []string) int {
	fs := newFlagSet(e, "lsp", "")
	if _, code, ok := parseArgs(fs, args); !ok {
		return code
	}
	if err := lsp.Serve(context.Background(), e.stdin, e.stdout); err != nil {
		fmt.Fprintf(e.stderr, "maskc lsp: %v\n", err)
		return exitError
	}
	return exitOK
}
