package sidrocm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCacheBuild: a miss runs the build and stores its output; the same
// source and arguments hit; other arguments or source miss; a failed build
// reports its log and stores nothing.
func TestCacheBuild(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Dir: t.TempDir(), toolchain: []byte("tc")}
	builds := 0
	build := func() ([]byte, error) {
		builds++
		src, _ := os.ReadFile(filepath.Join(dir, "k.cu"))
		return nil, os.WriteFile(filepath.Join(dir, "k.out"), append([]byte("obj:"), src...), 0o644)
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "k.cu"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, step := range []struct {
		src     string
		args    []string
		wantHit bool
	}{
		{"a", []string{"-O3"}, false},
		{"a", []string{"-O3"}, true},
		{"a", []string{"-O2"}, false},
		{"b", []string{"-O3"}, false},
		{"a", []string{"-O3"}, true},
	} {
		write(step.src)
		os.Remove(filepath.Join(dir, "k.out"))
		hit, err := c.Build(dir, "k.cu", "k.out", step.args, build)
		if err != nil || hit != step.wantHit {
			t.Fatalf("step %d: hit %v err %v, want hit %v", i, hit, err, step.wantHit)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "k.out")); string(got) != "obj:"+step.src {
			t.Fatalf("step %d: object %q", i, got)
		}
	}
	if builds != 3 {
		t.Errorf("%d builds, want 3", builds)
	}
	write("c")
	_, err := c.Build(dir, "k.cu", "k.out", nil, func() ([]byte, error) { return []byte("the log"), errors.New("exit status 1") })
	if err == nil || !strings.Contains(err.Error(), "the log") {
		t.Fatalf("failed build: %v", err)
	}
	if hit, _ := c.Build(dir, "k.cu", "k.out", nil, build); hit {
		t.Error("a failed build was cached")
	}
}
