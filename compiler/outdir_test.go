package compiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitKilledMidwayIsCompleted: a run killed after recording its
// commit (here: after moving one of its files) is completed by the next
// run into the directory, so DIR never keeps a mix of two runs (issue 31:
// a kill mid-commit left the new a.hip beside the old plan.json), and a
// staging directory a killed run left is removed.
func TestCommitKilledMidwayIsCompleted(t *testing.T) {
	d := filepath.Join(t.TempDir(), "out")
	run := func(files map[string]string) *OutDir {
		s, err := stageDir(d, "maskc compile")
		if err != nil {
			t.Fatal(err)
		}
		for name, text := range files {
			if err := s.WriteFile(name, []byte(text)); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	if err := run(map[string]string{"a.hip": "old a", "plan.json": "old plan"}).commit(); err != nil {
		t.Fatal(err)
	}
	s := run(map[string]string{"b.hip": "new b", "c.hip": "new c", "plan.json": "new plan"})
	if _, err := s.journal(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(s.Path("b.hip"), filepath.Join(d, "b.hip")); err != nil {
		t.Fatal(err)
	}
	s.dir.Close() // killed: the lock goes with the process
	left := filepath.Join(d, stagePrefix+"killed-before-its-journal")
	if err := os.Mkdir(left, 0o700); err != nil {
		t.Fatal(err)
	}
	next, err := stageDir(d, "maskc compile")
	if err != nil {
		t.Fatal(err)
	}
	next.abort()
	want := map[string]string{"b.hip": "new b", "c.hip": "new c", "plan.json": "new plan"}
	entries, err := os.ReadDir(d)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != ".maskc-outputs.json b.hip c.hip plan.json" {
		t.Fatalf("directory holds %s", got)
	}
	for name, text := range want {
		if data, err := os.ReadFile(filepath.Join(d, name)); err != nil || string(data) != text {
			t.Errorf("%s = %q, %v; want %q", name, data, err, text)
		}
	}
	var l ledger
	if err := readLedger(filepath.Join(d, ledgerName), &l); err != nil || len(l.Files) != 3 || l.Files["a.hip"] != "" {
		t.Errorf("ledger %+v, %v", l, err)
	}
}
