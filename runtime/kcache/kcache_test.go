package kcache

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/maskc/maskc/runtime/backend"
)

func testImage(n int) backend.Image {
	code := make([]byte, n)
	for i := range code {
		code[i] = byte(i*7 + 3)
	}
	return backend.Image{Kind: backend.ImageCUBIN, Code: code}
}

func TestNewKeySeparatesParts(t *testing.T) {
	if NewKey("ab", "c") == NewKey("a", "bc") {
		t.Fatal("keys of different splits collide")
	}
	if NewKey("x", "sm_90") != NewKey("x", "sm_90") {
		t.Fatal("key is not deterministic")
	}
}

func TestRoundTripAndPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "cache")
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := NewKey("src", "sm_90", "nvrtc 13.0")
	if _, st, err := c.Get(k); st != Miss || err != nil {
		t.Fatalf("empty cache: status %v, err %v", st, err)
	}
	want := testImage(1000)
	if err := c.Put(k, want); err != nil {
		t.Fatal(err)
	}
	got, st, err := c.Get(k)
	if st != Hit || err != nil || got.Kind != want.Kind || !bytes.Equal(got.Code, want.Code) {
		t.Fatalf("got status %v err %v kind %v len %d", st, err, got.Kind, len(got.Code))
	}
	for path, mode := range map[string]os.FileMode{dir: 0o700, c.Path(k): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := st.Mode().Perm(); perm&^mode != 0 {
			t.Errorf("%s has mode %v, want at most %v", path, perm, mode)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestCorruptEntriesAreDeleted(t *testing.T) {
	k := NewKey("corrupt")
	good := Encode(k, testImage(300))
	tests := []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"empty file", func(b []byte) []byte { return nil }},
		{"truncated header", func(b []byte) []byte { return b[:20] }},
		{"truncated payload", func(b []byte) []byte { return b[:len(b)-1] }},
		{"trailing garbage", func(b []byte) []byte { return append(b, 0) }},
		{"flipped payload bit", func(b []byte) []byte { b[len(b)-5] ^= 1; return b }},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"other key", func(b []byte) []byte { b[len(magic)] ^= 0xff; return b }},
		{"unknown kind", func(b []byte) []byte { b[len(magic)+32] = 99; return b }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			data := tc.mutate(append([]byte(nil), good...))
			if err := os.WriteFile(c.Path(k), data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, st, err := c.Get(k)
			if st != Corrupt || err == nil {
				t.Fatalf("status %v, err %v; want corrupt with a reason", st, err)
			}
			if _, err := os.Stat(c.Path(k)); !os.IsNotExist(err) {
				t.Errorf("corrupt entry still on disk (stat err %v)", err)
			}
			if _, st, _ := c.Get(k); st != Miss {
				t.Errorf("after deletion: status %v, want miss", st)
			}
		})
	}
}

// TestConcurrentWritersGoroutines asserts that every Get during concurrent
// writes sees a miss or a complete entry, never a corrupt one.
func TestConcurrentWritersGoroutines(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := NewKey("concurrent")
	img := testImage(256 << 10)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 8; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if err := c.Put(k, img); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				got, st, err := c.Get(k)
				if st == Corrupt || (st == Hit && !bytes.Equal(got.Code, img.Code)) {
					errs <- fmt.Errorf("reader saw status %v: %v", st, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestConcurrentWritersProcesses runs two writer processes (this test binary
// re-executed) against one directory while this process reads.
func TestConcurrentWritersProcesses(t *testing.T) {
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for i := 0; i < 2; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWriter$")
		cmd.Env = append(os.Environ(), "KCACHE_HELPER_DIR="+dir, "KCACHE_HELPER_ROUNDS=40")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	k, img := helperEntry()
	hits := 0
	done := make(chan error, len(cmds))
	for _, cmd := range cmds {
		go func() { done <- cmd.Wait() }()
	}
	for finished := 0; finished < len(cmds); {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("writer process: %v", err)
			}
			finished++
		default:
			got, st, err := c.Get(k)
			if st == Corrupt || (st == Hit && !bytes.Equal(got.Code, img.Code)) {
				t.Fatalf("reader saw status %v: %v", st, err)
			}
			if st == Hit {
				hits++
			}
		}
	}
	if _, st, err := c.Get(k); st != Hit {
		t.Fatalf("final entry: status %v, err %v", st, err)
	}
	t.Logf("%d hits while two processes wrote", hits)
}

func helperEntry() (Key, backend.Image) { return NewKey("two processes"), testImage(512 << 10) }

// TestHelperWriter is the writer process of TestConcurrentWritersProcesses;
// it does nothing unless KCACHE_HELPER_DIR is set.
func TestHelperWriter(t *testing.T) {
	dir := os.Getenv("KCACHE_HELPER_DIR")
	if dir == "" {
		return
	}
	rounds, _ := strconv.Atoi(os.Getenv("KCACHE_HELPER_ROUNDS"))
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	k, img := helperEntry()
	for i := 0; i < rounds; i++ {
		if err := c.Put(k, img); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDefaultDirHonoursEnv(t *testing.T) {
	t.Setenv(DirEnv, "/tmp/maskc-cache-test")
	if d, err := DefaultDir(); err != nil || d != "/tmp/maskc-cache-test" {
		t.Fatalf("DefaultDir = %q, %v", d, err)
	}
}

func FuzzDecode(f *testing.F) {
	k := NewKey("fuzz")
	f.Add(Encode(k, testImage(10)))
	f.Add([]byte(magic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := Decode(k, data)
		if err != nil {
			return
		}
		// Anything accepted must re-encode to the same bytes.
		if !bytes.Equal(Encode(k, img), data) {
			t.Fatalf("accepted entry does not round-trip")
		}
	})
}

// TestOpenRefusesDirectoriesOthersControl: a cache directory writable by
// group or others, or owned by another user, could hold planted kernels.
func TestOpenRefusesDirectoriesOthersControl(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702} {
		dir := filepath.Join(t.TempDir(), "cache")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		_, err := Open(dir)
		if err == nil || !strings.Contains(err.Error(), "refusing "+dir) || !strings.Contains(err.Error(), "chmod go-w") {
			t.Errorf("mode %v: err %v, want a refusal saying why", mode, err)
		}
	}
	// Through a link to such a directory, too.
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if err := os.Symlink(open, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(base, "link")); err == nil {
		t.Error("a link to a world-writable directory was accepted")
	}
	if os.Geteuid() == 0 {
		dir := filepath.Join(t.TempDir(), "theirs")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Errorf("directory of another user: err %v", err)
		}
	}
}

// TestGetRefusesPlantedEntries: links are not followed, FIFOs and devices
// neither block nor are read, oversized files are not read; each is deleted
// and reported as corrupt, and what a link pointed to is untouched.
func TestGetRefusesPlantedEntries(t *testing.T) {
	k := NewKey("planted")
	tests := []struct {
		name  string
		plant func(t *testing.T, path string)
		why   string
	}{
		{"link to a valid entry", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, Encode(k, testImage(10)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if _, err := os.Stat(target); err != nil {
					t.Errorf("link target touched: %v", err)
				}
			})
		}, "symbolic link"},
		{"link to /dev/zero", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"fifo", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"oversized", func(t *testing.T, path string) {
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(MaxEntrySize + 1); err != nil { // sparse: no disk used
				t.Fatal(err)
			}
		}, "more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			tc.plant(t, c.Path(k))
			done := make(chan struct{})
			var st Status
			go func() {
				defer close(done)
				_, st, err = c.Get(k)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Get blocked on a planted entry")
			}
			if st != Corrupt || err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("status %v, err %v; want corrupt, %q", st, err, tc.why)
			}
			if _, err := os.Lstat(c.Path(k)); !os.IsNotExist(err) {
				t.Errorf("planted entry still there (lstat err %v)", err)
			}
		})
	}
}

// TestGetPermissionErrorIsNotCorrupt: an entry the caller may not read is
// reported as unreadable and left alone, not deleted as corrupt.
func TestGetPermissionErrorIsNotCorrupt(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := NewKey("not mine")
	if err := c.Put(k, testImage(10)); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// root reads anything: simulate the refusal an unprivileged caller
		// gets from the kernel for a chmod 000 entry.
		saved := openEntry
		openEntry = func(path string) (*os.File, error) {
			return nil, &os.PathError{Op: "open", Path: path, Err: syscall.EACCES}
		}
		defer func() { openEntry = saved }()
	} else if err := os.Chmod(c.Path(k), 0); err != nil {
		t.Fatal(err)
	}
	_, st, err := c.Get(k)
	if st != Unreadable || err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("status %v, err %v; want unreadable, permission denied", st, err)
	}
	if _, err := os.Lstat(c.Path(k)); err != nil {
		t.Errorf("unreadable entry deleted: %v", err)
	}
}

// trustCase is one case of testdata/trust_cases.json, shared with
// python/tests/test_cache.py.
type trustCase struct {
	Name  string
	Dirs  []struct{ Path, Mode, Owner string }
	Files []string
	Links []struct{ Path, Target, Owner string }
	Cache string
	Want  string
}

// TestTrustCases: the cache directory rule, case by case, the same cases
// the Python cache is held to. Before issue 31 the directories above the
// cache and the links on the way were not checked.
func TestTrustCases(t *testing.T) {
	data, err := os.ReadFile("testdata/trust_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []trustCase }
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 10 {
		t.Fatalf("only %d cases read", len(file.Cases))
	}
	uidOf := map[string]int{"": os.Geteuid(), "me": os.Geteuid(), "root": 0, "other": 65534}
	for _, tc := range file.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			needsRoot := false
			for _, d := range tc.Dirs {
				needsRoot = needsRoot || (d.Owner != "" && d.Owner != "me")
			}
			for _, l := range tc.Links {
				needsRoot = needsRoot || (l.Owner != "" && l.Owner != "me")
			}
			if needsRoot && os.Geteuid() != 0 {
				return // chown needs root; CI runs as root
			}
			base := t.TempDir()
			t.Cleanup(func() {
				os.Chmod(base, 0o700)
				filepath.WalkDir(base, func(p string, d os.DirEntry, _ error) error { os.Chmod(p, 0o700); return nil })
			})
			for _, d := range tc.Dirs {
				if err := os.Mkdir(filepath.Join(base, d.Path), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.Files {
				if err := os.WriteFile(filepath.Join(base, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for _, l := range tc.Links {
				p := filepath.Join(base, l.Path)
				if err := os.Symlink(l.Target, p); err != nil {
					t.Fatal(err)
				}
				if uid := uidOf[l.Owner]; uid != os.Geteuid() {
					if err := os.Lchown(p, uid, uid); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := len(tc.Dirs) - 1; i >= 0; i-- {
				d := tc.Dirs[i]
				p := filepath.Join(base, d.Path)
				mode, err := strconv.ParseUint(d.Mode, 8, 32)
				if err != nil {
					t.Fatal(err)
				}
				fm := os.FileMode(mode & 0o777)
				if mode&0o1000 != 0 {
					fm |= os.ModeSticky
				}
				if err := os.Chmod(p, fm); err != nil {
					t.Fatal(err)
				}
				if uid := uidOf[d.Owner]; uid != os.Geteuid() {
					if err := os.Chown(p, uid, uid); err != nil {
						t.Fatal(err)
					}
				}
			}
			c, err := Open(base + "/" + tc.Cache)
			if tc.Want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				st, err := os.Stat(c.Dir())
				if err != nil || !st.IsDir() {
					t.Fatalf("cache directory: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.Want) {
				t.Fatalf("err %v, want one containing %q", err, tc.Want)
			}
		})
	}
}
