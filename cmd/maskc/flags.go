package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
)

// defineFlags collects repeated `-D NAME=VALUE` param overrides.
type defineFlags map[string]string

func (d defineFlags) String() string {
	var parts []string
	for k, v := range d {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (d defineFlags) Set(s string) error {
	name, value, err := check.ParseDefine(s)
	if err != nil {
		return err
	}
	if _, dup := d[name]; dup {
		return fmt.Errorf("param %s defined twice", name)
	}
	d[name] = value
	return nil
}

// defineFlag registers the repeatable -D NAME=VALUE param override.
func defineFlag(fs *flag.FlagSet) defineFlags {
	d := defineFlags{}
	fs.Var(d, "D", "override a param: `NAME=VALUE` (repeatable)")
	return d
}

// targetFlag registers --target, the Turbo target profile to classify for.
func targetFlag(fs *flag.FlagSet) *string {
	return fs.String("target", "", "Turbo target profile (see 'maskc targets'); default: "+classify.DefaultTarget.Name)
}

// newFlagSet returns a flag set that reports errors on e.stderr and never
// exits the process.
func newFlagSet(e *env, name, argsUsage string) *flag.FlagSet {
	fs := flag.NewFlagSet("maskc "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: maskc %s %s\n", name, argsUsage)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments (`maskc eval FILE --mask m`), returning the
// positionals. A lone "--" ends flag parsing.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseArgs runs parseInterleaved and maps errors to exit codes: -h is a
// success, anything else a usage error. ok is false when the caller should
// return code.
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	if helpAsked(fs, args) {
		fs.Usage()
		return nil, exitOK, false
	}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, exitOK, false
	}
	if err != nil {
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// helpAsked reports a -h (or --h) that asks for help in a command that
// also has a flag named h (the head index of eval and draw): one with no
// value after it, or a flag after it (issue 31: `maskc eval -h` said
// "flag needs an argument: -h").
func helpAsked(fs *flag.FlagSet, args []string) bool {
	if fs.Lookup("h") == nil {
		return false
	}
	for i, a := range args {
		if a == "--" {
			return false
		}
		if a != "-h" && a != "--h" {
			continue
		}
		if i+1 == len(args) {
			return true
		}
		next := args[i+1]
		if _, err := strconv.Atoi(next); err != nil && strings.HasPrefix(next, "-") {
			return true
		}
	}
	return false
}

// usageError prints a one-line usage problem and returns exitUsage.
func usageError(w io.Writer, format string, args ...any) int {
	fmt.Fprintf(w, "maskc: "+format+"\n", args...)
	return exitUsage
}
