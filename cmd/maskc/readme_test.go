package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeListsEveryPackage keeps README's layout table in step with the
// tree: every directory holding Go code is named in it (a top-level package
// as `dir/`, a nested one as `dir/sub` or by its last element in its
// parent's row), and every top-level directory the table names exists.
func TestReadmeListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "| package | job |")
	end := strings.Index(readme[start:], "\n\n")
	if start < 0 || end < 0 {
		t.Fatal("README has no layout table")
	}
	table := readme[start : start+end]
	dirs := map[string]bool{}
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, _ := filepath.Rel("../..", filepath.Dir(path))
			dirs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range dirs {
		top, rest, nested := strings.Cut(dir, "/")
		row := ""
		for _, l := range strings.Split(table, "\n") {
			if strings.HasPrefix(l, "| `"+top+"/") {
				row = l
			}
		}
		switch {
		case row == "":
			t.Errorf("README's layout table has no row for %s/", top)
		case nested && !strings.Contains(table, "`"+dir) && !strings.Contains(row, "`"+rest) && !strings.Contains(row, filepath.Base(dir)):
			t.Errorf("README's row for %s/ does not mention %s", top, dir)
		}
	}
	for _, l := range strings.Split(table, "\n")[2:] {
		name := strings.TrimSuffix(strings.Trim(strings.SplitN(l, "|", 3)[1], " `"), "/")
		if st, err := os.Stat(filepath.Join("../..", name)); err != nil || !st.IsDir() {
			t.Errorf("README's layout table names %s, which is not a directory", name)
		}
	}
}
