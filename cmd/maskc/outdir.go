package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// stagedDir is an output directory built beside its final place and put
// there whole: a run that fails leaves the previous directory as it was,
// and one that succeeds never shows a mix of old and new files.
type stagedDir struct {
	final string // the directory the user named
	tmp   string // the sibling being filled
}

// stageDir starts building the directory final (its parents are created).
func stageDir(final string) (*stagedDir, error) {
	if st, err := os.Stat(final); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", final)
	}
	abs, err := filepath.Abs(final)
	if err != nil {
		return nil, err
	}
	parent := filepath.Dir(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, cleanPathError(err)
	}
	for {
		tmp := filepath.Join(parent, fmt.Sprintf(".%s.maskc-%d", filepath.Base(abs), rand.Uint32()))
		err := os.Mkdir(tmp, 0o755)
		if err == nil {
			return &stagedDir{final: final, tmp: tmp}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%s: %v", final, unwrapPath(err))
		}
	}
}

// Path is where the file name is written while staging.
func (s *stagedDir) Path(name string) string { return filepath.Join(s.tmp, name) }

// Abort discards everything staged.
func (s *stagedDir) Abort() { os.RemoveAll(s.tmp) }

// isOutput says whether name is a file `maskc compile` writes.
func isOutput(name string) bool {
	return name == "plan.json" || name == "manifest.json" || strings.HasSuffix(name, ".hip") || strings.HasSuffix(name, ".hsaco")
}

// Commit puts the staged directory in place. A missing directory appears
// whole; an existing one that holds only maskc's outputs is exchanged with
// the staged one in one step (renameat2 RENAME_EXCHANGE; two renames where
// the file system lacks it) and removed; one that also holds the user's
// own files keeps them and gets the new outputs file by file, plan.json
// last, so that the plan never names a file not yet there. Errors name the
// final directory.
func (s *stagedDir) Commit() error {
	fail := func(err error) error {
		s.Abort()
		return fmt.Errorf("%s: %v", s.final, unwrapPath(err))
	}
	entries, err := os.ReadDir(s.final)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(s.tmp, s.final); err != nil {
			return fail(err)
		}
		return nil
	}
	if err != nil {
		return fail(err)
	}
	st, err := os.Stat(s.final)
	if err != nil {
		return fail(err)
	}
	if err := os.Chmod(s.tmp, st.Mode().Perm()); err != nil {
		return fail(err)
	}
	onlyOutputs := true
	for _, e := range entries {
		if !e.Type().IsRegular() || !isOutput(e.Name()) {
			onlyOutputs = false
		}
	}
	if onlyOutputs {
		err := unix.Renameat2(unix.AT_FDCWD, s.tmp, unix.AT_FDCWD, s.final, unix.RENAME_EXCHANGE)
		if err == nil {
			return os.RemoveAll(s.tmp) // now the old directory
		}
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
			return fail(err)
		}
		old := s.tmp + ".old"
		if err := os.Rename(s.final, old); err != nil {
			return fail(err)
		}
		if err := os.Rename(s.tmp, s.final); err != nil {
			os.Rename(old, s.final)
			return fail(err)
		}
		return os.RemoveAll(old)
	}
	staged, err := os.ReadDir(s.tmp)
	if err != nil {
		return fail(err)
	}
	var plan bool
	for _, e := range staged {
		if e.Name() == "plan.json" {
			plan = true
			continue
		}
		if err := os.Rename(s.Path(e.Name()), filepath.Join(s.final, e.Name())); err != nil {
			return fail(err)
		}
	}
	if plan {
		if err := os.Rename(s.Path("plan.json"), filepath.Join(s.final, "plan.json")); err != nil {
			return fail(err)
		}
	}
	return os.Remove(s.tmp)
}

// unwrapPath drops an *os.PathError's operation and (temporary) path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// writeFile writes a new file of the staged directory.
func (s *stagedDir) WriteFile(name string, data []byte) error {
	if err := os.WriteFile(s.Path(name), data, 0o644); err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(s.final, name), unwrapPath(err))
	}
	return nil
}
