// Command maskc compiles FlexAttention-style attention masks written in the
// .flex language: it checks and formats them, evaluates them for humans,
// classifies each attention block onto Primus-Turbo's kernels or a
// generated HIP kernel, writes the compile plan and kernel sources, runs
// generated kernels, and serves editors over the Language Server Protocol.
//
// Usage:
//
//	maskc check [--json] [-D NAME=VALUE]... FILE...
//	maskc fmt [-w] [-l] FILE...
//	maskc eval FILE (--mask NAME | --attention NAME) [--q 16] [--kv 16] [-D ...]
//	maskc classify FILE [--json] [--target T] [-D ...]
//	maskc compile FILE -o DIR [--target T] [--offload-arch gfx90a,...] [-D ...]
//	maskc run FILE --attention NAME --shape B,H,S,D [--check] [--bench]
//	maskc draw FILE --attention NAME --shape B,H,S,D -o OUT.svg|OUT.png
//	maskc lsp
//	maskc targets | version | help
//	maskc --version
//
// Exit status: 0 success, 1 the input has errors (or a check failed),
// 2 the command line is wrong or a file cannot be read or written.
package main

import (
	"fmt"
	"io"
	"os"
)

// Exit codes shared by every subcommand.
const (
	exitOK    = 0
	exitError = 1 // the input has errors
	exitUsage = 2 // bad command line, unreadable file
)

// version is the maskc release. Its one definition is python/maskc/__init__.py's
// __version__: python/build_wheel.py (and so `pip install ./python`) builds
// with -ldflags "-X main.version=<it>"; a plain `go build` says "devel".
var version = "devel"

// env is what a subcommand may touch: its arguments and standard streams.
// Tests run subcommands in-process through it.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	stdinName      string // what FILE "-" is called (--stdin-name), "" for <stdin>
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(e *env, args []string) int
}

func commands() []command {
	return []command{
		{"check", "report diagnostics for .flex files", runCheck},
		{"fmt", "format .flex files canonically", runFmt},
		{"eval", "draw a mask as a grid", runEval},
		{"classify", "explain what each attention block becomes", runClassify},
		{"compile", "write plan.json and generated kernel sources", runCompile},
		{"run", "run a generated kernel on the GPU", runRun},
		{"draw", "picture a mask and the tile map of its kernel", runDraw},
		{"lsp", "serve the Language Server Protocol on stdio", runLSP},
		{"targets", "list Turbo target profiles", runTargets},
		{"version", "print the maskc version", func(e *env, _ []string) int {
			fmt.Fprintf(e.stdout, "maskc %s\n", version)
			return exitOK
		}},
	}
}

func main() {
	os.Exit(mainArgs(os.Args[1:], &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}))
}

// mainArgs dispatches to a subcommand and returns the exit code.
func mainArgs(args []string, e *env) int {
	if len(args) == 0 {
		usage(e.stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(e.stdout)
		return exitOK
	case "-version", "--version":
		args = []string{"version"}
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(e, args[1:])
		}
	}
	fmt.Fprintf(e.stderr, "maskc: unknown command %q\n", args[0])
	usage(e.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: maskc <command> [arguments]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nrun 'maskc <command> -h' for a command's flags")
}
