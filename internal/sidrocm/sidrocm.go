// Package sidrocm runs the tools of the Debian sid ROCm chroot that
// .ci/sid-rocm makes (hipcc 7.0 with clang/LLVM 21, HIP 6.4's hiprtc):
// Debian bookworm's hipcc 5.2 cannot target gfx942 or gfx950. Tests use it
// to build AMD code objects for every CDNA target and to drive hiprtc.
//
// A command runs as `unshare --mount` + `chroot`: in a private mount
// namespace, /proc is mounted in the chroot (hipcc and clang find their
// installation through /proc/self/exe) and the caller's work directory is
// bind-mounted at /mnt, where the command starts. Nothing stays mounted
// after it exits. Both need root, as .ci/run has.
package sidrocm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Stamp is the file, at the chroot's top, that .ci/sid-rocm writes last: a
// chroot without it is incomplete.
const Stamp = ".maskc-sid-ready"

// WorkDir is where the caller's directory appears inside the chroot.
const WorkDir = "/mnt"

// DefaultRoot is where .ci/sid-rocm puts the chroot unless $MASKC_SID_ROOT
// says otherwise: $HOME/.cache/maskc-sid/root.
func DefaultRoot() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "maskc-sid", "root")
}

// Root returns the chroot's directory ($MASKC_SID_ROOT, else DefaultRoot),
// or an error that says how to make it.
func Root() (string, error) {
	root := os.Getenv("MASKC_SID_ROOT")
	if root == "" {
		root = DefaultRoot()
	}
	if root == "" {
		return "", fmt.Errorf("sid ROCm chroot: no $MASKC_SID_ROOT and no home directory")
	}
	if _, err := os.Stat(filepath.Join(root, Stamp)); err != nil {
		return "", fmt.Errorf("sid ROCm chroot not found at %s (run .ci/sid-rocm as root to make it): %v", root, err)
	}
	for _, tool := range []string{"unshare", "chroot", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("sid ROCm chroot: %s is needed: %v", tool, err)
		}
	}
	return root, nil
}

// script runs in the private mount namespace: $0 is the chroot, $1 the
// host directory to show at /mnt, the rest the command.
const script = `set -e
root=$0 dir=$1
shift
mount -t proc proc "$root/proc"
mount --bind "$dir" "$root` + WorkDir + `"
exec chroot "$root" /bin/sh -c 'cd ` + WorkDir + ` && exec "$@"' sh "$@"`

// Command returns a command that runs name with args inside the chroot at
// root, in the host directory dir (seen there as WorkDir, its working
// directory). The environment is the caller's unless cmd.Env is set.
func Command(root, dir, name string, args ...string) *exec.Cmd {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	argv := append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, root, abs, name}, args...)
	return exec.Command("unshare", argv...)
}

// Cache keeps code objects built in the chroot, keyed by the SHA-256 of the
// toolchain (the chroot's dpkg status), the compiler arguments and the
// source, so that a test run rebuilds only what changed.
type Cache struct {
	// Dir holds the objects, one file per key; "" disables the cache.
	Dir       string
	toolchain []byte
}

// ObjectCache returns the cache of the chroot at root:
// $MASKC_SID_OBJCACHE, else obj/ beside the chroot; "off" disables it.
func ObjectCache(root string) *Cache {
	dir := os.Getenv("MASKC_SID_OBJCACHE")
	switch dir {
	case "off":
		return &Cache{}
	case "":
		dir = filepath.Join(filepath.Dir(root), "obj")
	}
	status, err := os.ReadFile(filepath.Join(root, "var", "lib", "dpkg", "status"))
	if err != nil || os.MkdirAll(dir, 0o755) != nil {
		return &Cache{}
	}
	return &Cache{Dir: dir, toolchain: status}
}

// Build makes the file out in dir from the file src in dir: it copies a
// cached object when one matches (hit), else runs build (whose output is
// returned in an error when it fails) and caches out. args are the
// compiler arguments, part of the key.
func (c *Cache) Build(dir, src, out string, args []string, build func() ([]byte, error)) (hit bool, err error) {
	text, err := os.ReadFile(filepath.Join(dir, src))
	if err != nil {
		return false, err
	}
	var key string
	if c.Dir != "" {
		h := sha256.New()
		for _, part := range [][]byte{c.toolchain, []byte(strings.Join(args, "\x00")), text} {
			fmt.Fprintf(h, "%d:", len(part))
			h.Write(part)
		}
		key = filepath.Join(c.Dir, hex.EncodeToString(h.Sum(nil))+".o")
		if obj, err := os.ReadFile(key); err == nil {
			return true, os.WriteFile(filepath.Join(dir, out), obj, 0o644)
		}
	}
	if log, err := build(); err != nil {
		return false, fmt.Errorf("%v\n%s", err, log)
	}
	if key != "" {
		obj, err := os.ReadFile(filepath.Join(dir, out))
		if err != nil {
			return false, err
		}
		// Write then rename, so that a reader never sees half an object.
		tmp, err := os.CreateTemp(c.Dir, "tmp-*")
		if err != nil {
			return false, nil
		}
		_, werr := tmp.Write(obj)
		if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), key) != nil {
			os.Remove(tmp.Name())
		}
	}
	return false, nil
}
