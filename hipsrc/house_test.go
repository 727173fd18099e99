package hipsrc

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxTuningDefaults is issue 26's bound on the kernel sources' tuning
// defaults: `#ifndef MASKC_...` that is not an include guard, a value a
// build may override with -D.
const maxTuningDefaults = 12

// kernelHeaders returns the kernel sources (every .h of this package) by
// file name.
func kernelHeaders(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("*.h")
	if err != nil || len(names) == 0 {
		t.Fatalf("no kernel headers (%v)", err)
	}
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

// TestKernelSourcesHouse holds the kernel sources to issue 26's rules: at
// most maxTuningDefaults tuning defaults (an `#ifndef MASKC_X` whose next
// line does not define X bare, as an include guard does), and comments
// that describe the design, not the history: no "run N" (the benchmark
// runs of gpu/NOTES.md, whose findings belong in docs/kernel-decisions.md).
func TestKernelSourcesHouse(t *testing.T) {
	ifndef := regexp.MustCompile(`^#ifndef (MASKC_\w+)`)
	runRef := regexp.MustCompile(`\b[Rr]uns? \d+[a-z]?\b`)
	var defaults []string
	headers := kernelHeaders(t)
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		lines := strings.Split(headers[name], "\n")
		for i, ln := range lines {
			if m := ifndef.FindStringSubmatch(ln); m != nil {
				guard := i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "#define "+m[1]
				if !guard {
					defaults = append(defaults, name+": "+m[1])
				}
			}
			if c := strings.Index(ln, "//"); c >= 0 && runRef.MatchString(ln[c:]) {
				t.Errorf("%s:%d: a comment names a benchmark run: %s", name, i+1, strings.TrimSpace(ln[c:]))
			}
		}
	}
	if len(defaults) > maxTuningDefaults {
		t.Errorf("%d tuning defaults, at most %d: %v", len(defaults), maxTuningDefaults, defaults)
	}
	t.Logf("%d tuning defaults: %v", len(defaults), defaults)
}
