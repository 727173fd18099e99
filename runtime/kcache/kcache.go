// Package kcache is maskc's on-disk cache of compiled kernels. An entry is
// keyed by a hash of everything that determines the compiled code (source,
// target architecture, compiler version, options), survives restarts, is
// written atomically (temporary file and rename in the same directory, so
// concurrent writers in one or several processes never expose a partial
// entry), and carries a checksum so that a corrupt or truncated entry is
// detected, deleted and reported as such rather than loaded.
//
// The cache trusts nothing it finds: Open refuses a directory that another
// user owns or that group or others may write (either could plant a "hit"
// that runs their code), and Get opens entries without following links,
// accepts regular files only and reads at most MaxEntrySize bytes, so a
// planted link, FIFO or device can neither redirect, hang nor exhaust it.
package kcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/maskc/maskc/runtime/backend"
)

// Key identifies a compiled kernel.
type Key [sha256.Size]byte

// NewKey hashes parts, each prefixed by its length so that different
// splits of the same bytes give different keys.
func NewKey(parts ...string) Key {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	var k Key
	h.Sum(k[:0])
	return k
}

// String is the key in hex.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// Status is the outcome of Get.
type Status int

const (
	// Miss means no entry exists.
	Miss Status = iota
	// Hit means a valid entry was loaded.
	Hit
	// Corrupt means an entry existed but failed validation (or was a
	// link, a FIFO, a device or too large); it was deleted and the caller
	// should recompile.
	Corrupt
	// Unreadable means an entry exists but could not be read (e.g.
	// permission denied); it is left alone and the caller should
	// recompile.
	Unreadable
)

var statusNames = [...]string{"miss", "hit", "corrupt", "unreadable"}

// String returns "miss", "hit", "corrupt" or "unreadable".
func (s Status) String() string {
	if s < 0 || int(s) >= len(statusNames) {
		return "unknown"
	}
	return statusNames[s]
}

// DirEnv is the environment variable that overrides the cache directory.
const DirEnv = "MASKC_CACHE_DIR"

// DefaultDir is $MASKC_CACHE_DIR, else os.UserCacheDir()/maskc.
func DefaultDir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("kernel cache: no cache directory (set %s): %w", DirEnv, err)
	}
	return filepath.Join(base, "maskc"), nil
}

// Cache is a directory of entries. It is safe for concurrent use by
// goroutines and processes.
type Cache struct {
	dir string
}

// MaxEntrySize bounds the size of one entry; a larger file is not read.
// Compiled attention kernels are a few MiB.
const MaxEntrySize = 256 << 20

// Open returns the cache in dir ("" means DefaultDir), creating the
// directory with mode 0700 if needed. An existing directory must belong to
// the caller (its effective user) and be writable by nobody else, and so
// must every directory and link on the way to it (see trusted); Open
// refuses it otherwise and says why.
func Open(dir string) (*Cache, error) {
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("kernel cache: %w", err)
	}
	if err := trusted(dir); err != nil {
		return nil, err
	}
	return &Cache{dir: dir}, nil
}

// trusted applies the cache directory rule (SECURITY.md, "The kernel cache
// directory"; python/maskc/cache.py's check_trusted applies the same rule
// to the same cases, testdata/trust_cases.json):
//
//   - every directory a name is looked up in on the way to dir (links
//     followed) belongs to the caller or to root, and group and others may
//     not write it unless its sticky bit is set (as on /tmp, where nobody
//     may rename another's entries);
//   - every symbolic link on the way belongs to the caller or to root;
//   - dir itself is a directory that belongs to the caller and that group
//     and others may not write.
//
// Anyone else who can change one of these could plant kernels in the cache.
func trusted(dir string) error {
	real, err := resolveTrusted(dir)
	if err != nil {
		return err
	}
	st, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("kernel cache: %s is not a directory", dir)
	}
	if uid, ok := owner(st); ok && uid != os.Geteuid() {
		return fmt.Errorf("kernel cache: refusing %s: it belongs to uid %d, not to you (uid %d), who could plant kernels in it; set %s to a directory of yours",
			dir, uid, os.Geteuid(), DirEnv)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("kernel cache: refusing %s: mode %#o lets other users plant kernels in it; run chmod go-w %s",
			dir, uint32(perm), dir)
	}
	return nil
}

// owner is the uid that owns the file st describes.
func owner(st fs.FileInfo) (int, bool) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid), true
	}
	return 0, false
}

// maxLinks bounds the links followed resolving a cache path (Linux's 40).
const maxLinks = 40

// resolveTrusted resolves dir component by component as the kernel does,
// checking each directory a name is looked up in (parentTrusted) and each
// link followed (it must belong to the caller or root), and returns the
// resolved path.
func resolveTrusted(dir string) (string, error) {
	abs := dir // not filepath.Abs: its Clean would undo ".." lexically, not as the kernel does after a link
	if !filepath.IsAbs(abs) {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("kernel cache: %w", err)
		}
		abs = wd + "/" + abs
	}
	todo := strings.Split(abs, "/")
	cur, links := "/", 0
	checked := map[string]bool{}
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		if !checked[cur] {
			if err := parentTrusted(dir, cur); err != nil {
				return "", err
			}
			checked[cur] = true
		}
		next := filepath.Join(cur, c)
		st, err := os.Lstat(next)
		if err != nil {
			return "", fmt.Errorf("kernel cache: %w", err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("kernel cache: %s: too many links", dir)
		}
		if uid, ok := owner(st); ok && uid != os.Geteuid() && uid != 0 {
			return "", fmt.Errorf("kernel cache: refusing %s: the link %s on its path belongs to uid %d, neither you nor root, who could point it elsewhere; set %s to a directory of yours",
				dir, next, uid, DirEnv)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("kernel cache: %w", err)
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return cur, nil
}

// parentTrusted checks a directory that a name of the cache path is looked
// up in.
func parentTrusted(dir, parent string) error {
	st, err := os.Stat(parent)
	if err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	if uid, ok := owner(st); ok && uid != os.Geteuid() && uid != 0 {
		return fmt.Errorf("kernel cache: refusing %s: the directory %s above it belongs to uid %d, neither you nor root, who could replace the cache; set %s to a directory of yours",
			dir, parent, uid, DirEnv)
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 && st.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("kernel cache: refusing %s: the directory %s above it has mode %#o, so other users could replace the cache; run chmod go-w %s",
			dir, parent, uint32(perm), parent)
	}
	return nil
}

// Dir is the cache directory.
func (c *Cache) Dir() string { return c.dir }

// Path is the file that holds the entry for k.
func (c *Cache) Path(k Key) string { return filepath.Join(c.dir, k.String()+".kernel") }

// Get loads the entry for k. A missing entry is a Miss; one the caller may
// not read is Unreadable (left alone); a link, a non-regular file, one
// larger than MaxEntrySize, a truncated or otherwise invalid one is deleted
// and reported as Corrupt with the reason.
func (c *Cache) Get(k Key) (backend.Image, Status, error) {
	data, err := readEntry(c.Path(k))
	if errors.Is(err, fs.ErrNotExist) {
		return backend.Image{}, Miss, nil
	}
	if errors.Is(err, fs.ErrPermission) {
		return backend.Image{}, Unreadable, fmt.Errorf("kernel cache: entry %s not readable: %w", k, err)
	}
	if err == nil {
		var img backend.Image
		if img, err = Decode(k, data); err == nil {
			return img, Hit, nil
		}
	}
	if rmErr := os.Remove(c.Path(k)); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	return backend.Image{}, Corrupt, fmt.Errorf("kernel cache: entry %s discarded: %w", k, err)
}

// openEntry opens an entry file for reading; tests replace it.
var openEntry = func(path string) (*os.File, error) {
	// O_NOFOLLOW: a planted link is refused, not followed; O_NONBLOCK: a
	// FIFO does not block the open (the type check below refuses it).
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

// readEntry reads the regular file at path, up to MaxEntrySize bytes.
func readEntry(path string) ([]byte, error) {
	f, err := openEntry(path)
	if errors.Is(err, syscall.ELOOP) {
		return nil, errors.New("entry is a symbolic link")
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("entry is not a regular file (%v)", st.Mode().Type())
	}
	if st.Size() > MaxEntrySize {
		return nil, fmt.Errorf("entry is %d bytes, more than the %d an entry may have", st.Size(), MaxEntrySize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxEntrySize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxEntrySize {
		return nil, fmt.Errorf("entry grew past the %d bytes an entry may have", MaxEntrySize)
	}
	return data, nil
}

// Put stores img under k atomically: readers see either no entry, the
// previous entry or the complete new one. Files are created with mode 0600.
func (c *Cache) Put(k Key, img backend.Image) (err error) {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	tmp, err := os.CreateTemp(c.dir, ".tmp-"+k.String()[:16]+"-*")
	if err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	if _, err = tmp.Write(Encode(k, img)); err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	if err = os.Rename(tmp.Name(), c.Path(k)); err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	return nil
}

// Entry layout, all integers little endian:
//
//	magic   8 bytes  "MASKCKC1"
//	key    32 bytes  the entry's Key (guards against renamed files)
//	kind    1 byte   backend.ImageKind
//	length  8 bytes  payload length
//	sum    32 bytes  sha256 of the payload
//	payload
const (
	magic      = "MASKCKC1"
	headerSize = len(magic) + sha256.Size + 1 + 8 + sha256.Size
)

// Encode serialises an entry.
func Encode(k Key, img backend.Image) []byte {
	out := make([]byte, 0, headerSize+len(img.Code))
	out = append(out, magic...)
	out = append(out, k[:]...)
	out = append(out, byte(img.Kind))
	out = binary.LittleEndian.AppendUint64(out, uint64(len(img.Code)))
	sum := sha256.Sum256(img.Code)
	out = append(out, sum[:]...)
	return append(out, img.Code...)
}

// Decode parses and validates an entry written by Encode for key k.
func Decode(k Key, data []byte) (backend.Image, error) {
	if len(data) < headerSize {
		return backend.Image{}, fmt.Errorf("truncated header (%d bytes)", len(data))
	}
	if string(data[:len(magic)]) != magic {
		return backend.Image{}, errors.New("bad magic")
	}
	p := data[len(magic):]
	if !bytes.Equal(p[:sha256.Size], k[:]) {
		return backend.Image{}, errors.New("entry is for another key")
	}
	p = p[sha256.Size:]
	kind := backend.ImageKind(p[0])
	n := binary.LittleEndian.Uint64(p[1:9])
	sum := p[9 : 9+sha256.Size]
	payload := p[9+sha256.Size:]
	if uint64(len(payload)) != n {
		return backend.Image{}, fmt.Errorf("payload is %d bytes, header says %d", len(payload), n)
	}
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return backend.Image{}, errors.New("checksum mismatch")
	}
	if !kind.Valid() {
		return backend.Image{}, fmt.Errorf("unknown image kind %d", uint8(kind))
	}
	return backend.Image{Kind: kind, Code: payload}, nil
}
