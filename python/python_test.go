// Package python holds maskc's Python package (maskc, maskc.torch) and its
// wheel builder; this Go test runs the package's pure-Python tests with
// pytest, so `go test ./...` covers them.
package python

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonWithPytest returns a Python 3 that can import pytest: $MASKC_PYTHON,
// else python3 on PATH, else /usr/bin/python3 (Debian's python3-pytest
// installs there even when another python3 comes first on PATH).
func pythonWithPytest(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, c := range []string{os.Getenv("MASKC_PYTHON"), "python3", "/usr/bin/python3"} {
		if c == "" {
			continue
		}
		p, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+": not found")
			continue
		}
		if out, err := exec.Command(p, "-c", "import pytest").CombinedOutput(); err != nil {
			tried = append(tried, p+": "+string(out))
			continue
		}
		return p
	}
	t.Fatalf("no python3 with pytest (Debian: apt-get install python3-pytest); tried %q", tried)
	return ""
}

// readInputs reads every file the pytest run depends on (the Python
// sources, and the Go sources, headers and examples the maskc binary is
// built from and tested on), so that go test's cache, which records the
// files a test opens, reruns the test when any of them changes.
func readInputs(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n != ".." && (strings.HasPrefix(n, ".") || n == "__pycache__" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".py", ".flex", ".h", ".mod", ".sum", ".toml":
			_, err = os.ReadFile(path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// buildMaskc builds the maskc binary the Python tests run.
func buildMaskc(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "maskc")
	build := exec.Command("go", "build", "-o", bin, "../cmd/maskc")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/maskc: %v\n%s", err, out)
	}
	return bin
}

// runPytest runs pytest on dir (relative to python/) with the maskc binary
// bin and a fresh cache.
func runPytest(t *testing.T, py, bin, dir string) {
	t.Helper()
	cmd := exec.Command(py, "-m", "pytest", "-q", "-p", "no:cacheprovider", dir)
	cmd.Env = append(os.Environ(), "MASKC_BIN="+bin, "MASKC_CACHE_DIR="+t.TempDir(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -m pytest %s: %v\n%s", py, dir, err, out)
	}
	t.Logf("%s", out)
}

// TestPytest builds the maskc binary and runs python/tests against it.
func TestPytest(t *testing.T) {
	readInputs(t)
	runPytest(t, pythonWithPytest(t), buildMaskc(t), "tests")
}

// TestGPUToolingPytest runs gpu/tests, the tests of the GPU scripts'
// tooling (gpu/harness.py, gpu/buffers.py, gpu/runlog.py: beside the
// scripts, not in the wheel), under Debian's CPU torch.
func TestGPUToolingPytest(t *testing.T) {
	readInputs(t)
	// the shared vectors of gpu/buffers.py and Go's harness.Buffer (readInputs skips testdata)
	if _, err := os.ReadFile("../harness/testdata/buffers.json"); err != nil {
		t.Fatal(err)
	}
	runPytest(t, pythonWithPytest(t), buildMaskc(t), "../gpu/tests")
}
