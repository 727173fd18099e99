package main

import (
	"bytes"
	"golang.org/x/sys/unix"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const (
	messyFlex = "mask  causal( b,h,q,kv )=q>=kv\n"
	tidyFlex  = "mask causal(b, h, q, kv) = q >= kv\n"
)

// fmtW runs `maskc fmt -w path` in-process.
func fmtW(t *testing.T, path string) (code int, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = mainArgs([]string{"fmt", "-w", path}, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb})
	return code, errb.String()
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.maskc-*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// TestFmtWriteKeepsConcurrentSave: a save that lands between maskc's read
// and its write wins; maskc reports it and rewrites nothing. Both the
// rename and the in-place (hard-linked) paths are covered.
func TestFmtWriteKeepsConcurrentSave(t *testing.T) {
	for _, links := range []int{1, 2} {
		dir := t.TempDir()
		path := filepath.Join(dir, "m.flex")
		if err := os.WriteFile(path, []byte(messyFlex), 0o644); err != nil {
			t.Fatal(err)
		}
		if links == 2 {
			if err := os.Link(path, filepath.Join(dir, "other.flex")); err != nil {
				t.Fatal(err)
			}
		}
		const saved = "mask  saved( b,h,q,kv )=q>=kv\n"
		beforeReplace = func(string) {
			if err := os.WriteFile(path, []byte(saved), 0o644); err != nil {
				t.Error(err)
			}
		}
		code, stderr := fmtW(t, path)
		beforeReplace = func(string) {}
		if code != exitUsage || !strings.Contains(stderr, path+": changed on disk") {
			t.Errorf("links=%d: exit %d, stderr %q; want 2 and 'changed on disk'", links, code, stderr)
		}
		if got := readString(t, path); got != saved {
			t.Errorf("links=%d: concurrent save lost, file holds %q", links, got)
		}
		noTempFiles(t, dir)
	}
}

// TestFmtWriteThroughSymlink: the link's target is formatted, the link
// stays a link.
func TestFmtWriteThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.flex")
	link := filepath.Join(dir, "link.flex")
	if err := os.WriteFile(target, []byte(messyFlex), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.flex", link); err != nil {
		t.Fatal(err)
	}
	if code, stderr := fmtW(t, link); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced by a regular file (%v, %v)", st.Mode(), err)
	}
	if got := readString(t, target); got != tidyFlex {
		t.Errorf("target not formatted: %q", got)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o640 {
		t.Errorf("target mode %v, want 0640", st.Mode().Perm())
	}
}

// TestFmtWriteKeepsHardLinks: both names still share one formatted inode.
func TestFmtWriteKeepsHardLinks(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.flex"), filepath.Join(dir, "b.flex")
	if err := os.WriteFile(a, []byte(messyFlex), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	if code, stderr := fmtW(t, a); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	sa, _ := os.Stat(a)
	sb, _ := os.Stat(b)
	if !os.SameFile(sa, sb) {
		t.Error("hard link split: a.flex and b.flex are different files now")
	}
	if got := readString(t, b); got != tidyFlex {
		t.Errorf("other link holds %q", got)
	}
	noTempFiles(t, dir)
}

// TestFmtWriteKeepsOwnerGroupMode: a file owned by someone else keeps its
// owner, group and mode (needs root to give a file away).
func TestFmtWriteKeepsOwnerGroupMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another owner needs root")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "m.flex")
	if err := os.WriteFile(path, []byte(messyFlex), 0o664); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65533); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	if code, stderr := fmtW(t, path); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	st, _ := os.Stat(path)
	sys := st.Sys().(*syscall.Stat_t)
	if sys.Uid != 65534 || sys.Gid != 65533 || st.Mode().Perm() != 0o664 {
		t.Errorf("owner %d group %d mode %v, want 65534 65533 0664", sys.Uid, sys.Gid, st.Mode().Perm())
	}
	if got := readString(t, path); got != tidyFlex {
		t.Errorf("not formatted: %q", got)
	}
}

// TestFmtWriteRespectsReadOnly: a read-only file is reported under its own
// name and left alone, even for root.
func TestFmtWriteRespectsReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ro.flex")
	if err := os.WriteFile(path, []byte(messyFlex), 0o444); err != nil {
		t.Fatal(err)
	}
	code, stderr := fmtW(t, path)
	if code != exitUsage || !strings.HasPrefix(stderr, "maskc: "+path+": ") || !strings.Contains(stderr, "read-only") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stderr, ".maskc-") {
		t.Errorf("error names a temporary file: %q", stderr)
	}
	if got := readString(t, path); got != messyFlex {
		t.Errorf("read-only file rewritten: %q", got)
	}
	noTempFiles(t, dir)
}

// TestFmtWriteKeepsSaveAfterCheck: a save that lands after maskc checked
// the file and before its new file takes the old one's place is kept and
// reported (issue 31: lost, deterministically with a delay there and 1 in
// 1,400 at random). Saves written in place and by rename are covered.
func TestFmtWriteKeepsSaveAfterCheck(t *testing.T) {
	for _, how := range []string{"in place", "by rename"} {
		dir := t.TempDir()
		path := filepath.Join(dir, "m.flex")
		if err := os.WriteFile(path, []byte(messyFlex), 0o644); err != nil {
			t.Fatal(err)
		}
		const saved = "mask  saved( b,h,q,kv )=q>=kv\n"
		beforeSwap = func(string) {
			if how == "in place" {
				if err := os.WriteFile(path, []byte(saved), 0o644); err != nil {
					t.Error(err)
				}
				return
			}
			tmp := filepath.Join(dir, "editor-save.tmp")
			if err := os.WriteFile(tmp, []byte(saved), 0o644); err != nil {
				t.Error(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Error(err)
			}
		}
		code, stderr := fmtW(t, path)
		beforeSwap = func(string) {}
		if code != exitUsage || !strings.Contains(stderr, path+": changed on disk") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and 'changed on disk'", how, code, stderr)
		}
		if got := readString(t, path); got != saved {
			t.Errorf("%s: the save was lost, file holds %q", how, got)
		}
		noTempFiles(t, dir)
	}
}

// TestWriteNewRefusesNonRegularAndHonoursUmask: draw -o does not replace a
// link or a device with a regular file, and creates its file with the
// umask applied (issue 31: both were ignored).
func TestWriteNewRefusesNonRegularAndHonoursUmask(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.svg")
	if err := os.WriteFile(target, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.svg")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, "/dev/null"} {
		if err := writeNew(p, []byte("new")); err == nil || !strings.Contains(err.Error(), p+": not a regular file") {
			t.Errorf("writeNew(%s) = %v, want a refusal", p, err)
		}
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 || readString(t, target) != "theirs" {
		t.Errorf("the link or its target changed: %v", err)
	}
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	out := filepath.Join(dir, "new.svg")
	if err := writeNew(out, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(out); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode under umask 077: %v, %v; want 0600", st.Mode(), err)
	}
	noTempFiles(t, dir)
}
