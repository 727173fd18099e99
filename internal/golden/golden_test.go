package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of stopping.
type recorder struct {
	testing.TB
	failed bool
	fatal  bool
	msg    string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.fatal, r.msg = true, true, fmt.Sprintf(format, args...)
}

func (r *recorder) Fatal(args ...any) {
	r.failed, r.fatal, r.msg = true, true, fmt.Sprint(args...)
}

// withUpdate runs f with -update set to on, restoring it afterwards.
func withUpdate(on bool, f func()) {
	old := *update
	*update = on
	defer func() { *update = old }()
	f()
}

func TestDiff(t *testing.T) {
	for _, c := range []struct{ want, got, diff string }{
		{"a\nb\n", "a\nb\n", ""},
		{"", "", ""},
		{"a\nb\nc\n", "a\nB\nc\n", "first difference at line 2 of 4 (want) / 4 (got):\nwant: \"b\"\ngot:  \"B\""},
		{"a\n", "a\nb\n", "first difference at line 2 of 2 (want) / 3 (got):\nwant: \"\"\ngot:  \"b\""},
		{"a\nb", "a", "first difference at line 2 of 2 (want) / 1 (got):\nwant: \"b\"\ngot:  <end of file>"},
	} {
		if d := Diff([]byte(c.want), []byte(c.got)); d != c.diff {
			t.Errorf("Diff(%q, %q) = %q, want %q", c.want, c.got, d, c.diff)
		}
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "testdata", "sub", "x.golden")

	// Missing file: fatal, pointing at -update.
	withUpdate(false, func() {
		r := &recorder{TB: t}
		Check(r, path, []byte("one\n"))
		if !r.fatal || !strings.Contains(r.msg, "run go test -update") {
			t.Errorf("missing golden file: fatal=%v %q", r.fatal, r.msg)
		}
	})

	// -update creates the directories and writes the file.
	withUpdate(true, func() {
		r := &recorder{TB: t}
		CheckString(r, path, "one\ntwo\n")
		if r.failed {
			t.Fatalf("update failed: %s", r.msg)
		}
	})
	if b, err := os.ReadFile(path); err != nil || string(b) != "one\ntwo\n" {
		t.Fatalf("after -update the file holds %q, %v", b, err)
	}

	// Same output: passes.
	withUpdate(false, func() {
		r := &recorder{TB: t}
		CheckString(r, path, "one\ntwo\n")
		if r.failed {
			t.Errorf("equal output failed: %s", r.msg)
		}
	})

	// Different output: an error (not fatal) naming the file, the line and -update.
	withUpdate(false, func() {
		r := &recorder{TB: t}
		Check(r, path, []byte("one\n2\n"))
		if !r.failed || r.fatal {
			t.Fatalf("differing output: failed=%v fatal=%v", r.failed, r.fatal)
		}
		for _, s := range []string{path, "line 2", `want: "two"`, `got:  "2"`, "run go test -update"} {
			if !strings.Contains(r.msg, s) {
				t.Errorf("message lacks %q:\n%s", s, r.msg)
			}
		}
	})
}

func TestUpdateFlag(t *testing.T) {
	withUpdate(true, func() {
		if !Update() {
			t.Error("Update() is false under -update")
		}
	})
	withUpdate(false, func() {
		if Update() {
			t.Error("Update() is true without -update")
		}
	})
}
