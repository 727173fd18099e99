package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/maskc/maskc/compiler"
)

// errChangedOnDisk is why a file that someone else saved while maskc was
// formatting it is left alone: rewriting it would lose that save.
var errChangedOnDisk = errors.New("changed on disk while maskc was formatting it; not rewritten (run again)")

// beforeReplace runs after the new content is ready and before maskc
// checks that the file still holds what it read; tests use it to save the
// file concurrently at the worst moment.
var beforeReplace = func(target string) {}

// beforeSwap runs after that check and before the new file takes the
// old one's place; tests use it to save the file in that window (issue
// 31: a save there was lost, deterministically with a delay here).
var beforeSwap = func(target string) {}

// replaceFile rewrites the file at path, which maskc read as old, with
// data, as an editor's careful save would:
//
//   - a symbolic link is followed and its target rewritten (the link
//     stays a link);
//   - a file marked read-only (no write bit) or not writable by the caller
//     is refused;
//   - a file changed since maskc read it is refused (errChangedOnDisk), so
//     a concurrent save is never lost;
//   - the file is replaced through a synced temporary file and a rename, so
//     readers see the old or the new content, with the old mode, owner and
//     group; where a rename cannot keep the file's identity (more than one
//     hard link, an owner or group maskc cannot give the new file, a
//     directory it cannot create files in) the file is rewritten in place.
//
// Errors name path, never a temporary file.
func replaceFile(path string, old, data []byte) error {
	fail := func(err error) error {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: %v", path, err)
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fail(err)
	}
	st, err := os.Stat(target)
	if err != nil {
		return fail(err)
	}
	if !st.Mode().IsRegular() {
		return fail(errors.New("not a regular file; not rewritten"))
	}
	if st.Mode().Perm()&0o222 == 0 {
		return fail(errors.New("file is read-only; not rewritten"))
	}
	// Opening for writing (without truncating) is the permission check the
	// kernel makes for the caller, read-only file systems included; the
	// handle serves an in-place rewrite.
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Nlink <= 1 {
		done, err := replaceByRename(target, old, data, st)
		if err != nil {
			return fail(err)
		}
		if done {
			return nil
		}
	}
	// In place: the file keeps its inode, so its links, owner, group and
	// mode stay as they are.
	beforeReplace(target)
	if err := unchanged(target, old); err != nil {
		return fail(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fail(err)
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	return nil
}

// replaceByRename replaces target with data through a temporary sibling
// that gets target's mode, owner and group. done is false, with no error,
// when the temporary file cannot be made to look like target (the caller
// then rewrites in place).
func replaceByRename(target string, old, data []byte, st fs.FileInfo) (done bool, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".maskc-*")
	if err != nil {
		return false, nil // e.g. a writable file in a directory the caller cannot write
	}
	name := tmp.Name()
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return false, err
	}
	if err := tmp.Sync(); err != nil {
		return false, err
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		if err := tmp.Chown(int(sys.Uid), int(sys.Gid)); err != nil {
			return false, nil // not ours to give away: keep the inode instead
		}
	}
	// After chown, which clears the set-id bits.
	if err := tmp.Chmod(st.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	beforeReplace(target)
	if err := unchanged(target, old); err != nil {
		return false, err
	}
	beforeSwap(target)
	// Exchange the two files in one step (renameat2 RENAME_EXCHANGE) and
	// check what came out: a save that landed after the check above is
	// then at name, and is put back. Where the file system cannot
	// exchange, a plain rename (the window stays).
	err = unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, target, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if err := os.Rename(name, target); err != nil {
			return false, err
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	done = true // name now holds what target held: never remove it unchecked
	if err := unchanged(name, old); err == nil {
		return true, os.Remove(name)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, target, unix.RENAME_EXCHANGE); err != nil {
		return true, fmt.Errorf("%w; the save is kept at %s", errChangedOnDisk, name)
	}
	if now, err := os.ReadFile(name); err == nil && bytes.Equal(now, data) {
		os.Remove(name)
		return true, errChangedOnDisk
	}
	return true, fmt.Errorf("%w; another save is kept at %s", errChangedOnDisk, name)
}

// unchanged reports errChangedOnDisk unless target still holds old.
func unchanged(target string, old []byte) error {
	now, err := os.ReadFile(target)
	if err != nil {
		return err
	}
	if !bytes.Equal(now, old) {
		return errChangedOnDisk
	}
	return nil
}

// writeNew writes data to path (a picture, say) through a synced temporary
// file in the same directory and a rename, so a reader never sees half a
// file. An existing path must be a regular file (a link, device or FIFO is
// refused, not replaced); the new file gets mode 0666 less the umask, as a
// file the shell creates would. Errors name path, never the temporary
// file.
func writeNew(path string, data []byte) error {
	fail := func(err error) error { return fmt.Errorf("%s: %v", path, compiler.UnwrapPath(err)) }
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return fail(fmt.Errorf("not a regular file (%v); not replaced", st.Mode().Type()))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".maskc-*")
	if err != nil {
		return fail(err)
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if err := os.Chmod(tmp.Name(), 0o666&^fs.FileMode(currentUmask())); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return nil
}

// currentUmask reads the process's umask (setting it back at once).
func currentUmask() int {
	m := unix.Umask(0o022)
	unix.Umask(m)
	return m
}
