package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/hipsrc"
)

// WriteDir is how maskc writes an output directory (`maskc compile -o
// DIR`, genkernels -o DIR, and so the Python package's kernel cache, which
// runs maskc compile): the outputs land inside DIR and nowhere else. DIR
// may be a link (it stays one) and its parent need not be writable. A run
// touches only files a run wrote itself, which it lists with their SHA-256
// in DIR's ledger; a name it would write that holds anything else (a
// user's file, a link, one of its own outputs edited since) is refused,
// never replaced. One run's outputs are committed as a whole: they are
// staged in DIR/.maskc-stage-*, the commit is first recorded in a journal,
// and a run killed during its commit is completed by the next run into DIR
// before anything else. Outputs of an earlier run that this run does not
// write are removed (when unchanged). Runs into one DIR take turns (flock
// on DIR).
const (
	// ledgerName lists the outputs of the last committed run.
	ledgerName = ".maskc-outputs.json"
	// journalName is a commit in progress: the staging directory, the new
	// ledger and the stale outputs to remove.
	journalName = ".maskc-commit.json"
	// stagePrefix starts the names of staging directories inside DIR.
	stagePrefix = ".maskc-stage-"
	// ledgerFormat versions the ledger and the journal.
	ledgerFormat = "maskc-outputs-v1"
	// maxOutput bounds what is read of one existing output to hash it.
	maxOutput = 1 << 30
)

// ledger is the content of ledgerName and journalName.
type ledger struct {
	Format string            `json:"format"`
	Stage  string            `json:"stage,omitempty"`  // journal only
	Files  map[string]string `json:"files"`            // name: SHA-256 of what maskc wrote
	Remove map[string]string `json:"remove,omitempty"` // journal only: stale name: SHA-256
}

// OutDir is an output directory while a WriteDir run fills it.
type OutDir struct {
	final  string   // the directory the user named
	dir    *os.File // final, open and locked
	tmp    string   // the staging directory inside final
	writer string   // the command writing, for messages ("maskc compile")
}

// WriteDir creates dir (and its parents) if missing, locks it, completes
// or discards what killed runs left there, and calls fill to write the
// outputs into a staging directory. When fill returns nil the outputs are
// committed to dir as a whole (see above); otherwise they are discarded
// and dir is left as it was, and fill's error is returned. writer names
// the command in messages ("maskc compile"). Errors name dir or the file.
func WriteDir(dir, writer string, fill func(out *OutDir) error) error {
	out, err := stageDir(dir, writer)
	if err != nil {
		return err
	}
	if err := fill(out); err != nil {
		out.abort()
		return err
	}
	return out.commit()
}

// stageDir creates final (and its parents) if missing, locks it, completes
// or discards what killed runs left there, and starts a staging directory.
func stageDir(final, writer string) (*OutDir, error) {
	if st, err := os.Stat(final); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", final)
	}
	if err := os.MkdirAll(final, 0o755); err != nil {
		return nil, CleanPathError(err)
	}
	dir, err := os.Open(final)
	if err != nil {
		return nil, CleanPathError(err)
	}
	if err := unix.Flock(int(dir.Fd()), unix.LOCK_EX); err != nil {
		dir.Close()
		return nil, fmt.Errorf("%s: lock: %v", final, err)
	}
	s := &OutDir{final: final, dir: dir, writer: writer}
	if err := s.recover(); err != nil {
		dir.Close()
		return nil, err
	}
	tmp, err := os.MkdirTemp(final, stagePrefix+"*")
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("%s: %v", final, UnwrapPath(err))
	}
	s.tmp = tmp
	return s, nil
}

// recover completes the commit a killed run recorded in the journal, then
// removes staging directories that killed runs left (the lock says no live
// run uses them).
func (s *OutDir) recover() error {
	var j ledger
	switch err := readLedger(filepath.Join(s.final, journalName), &j); {
	case err == nil:
		if err := s.apply(&j); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	entries, err := os.ReadDir(s.final)
	if err != nil {
		return fmt.Errorf("%s: %v", s.final, UnwrapPath(err))
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), stagePrefix) {
			if err := os.RemoveAll(filepath.Join(s.final, e.Name())); err != nil {
				return fmt.Errorf("%s: %v", s.final, UnwrapPath(err))
			}
		}
	}
	return nil
}

// readLedger reads a ledger or journal; a missing one is fs.ErrNotExist.
func readLedger(path string, l *ledger) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return CleanPathError(err)
	}
	if err := json.Unmarshal(data, l); err != nil || l.Format != ledgerFormat {
		return fmt.Errorf("%s: not a maskc compile ledger (format %q, %v); remove it and the outputs it named", path, l.Format, err)
	}
	return nil
}

// Path is where the file name is written while staging.
func (s *OutDir) Path(name string) string { return filepath.Join(s.tmp, name) }

// abort discards everything staged and releases DIR.
func (s *OutDir) abort() {
	os.RemoveAll(s.tmp)
	s.dir.Close()
}

// digest is the SHA-256 of the regular file at path: links are not
// followed, FIFOs and devices not read (ok false for either).
func digest(path string) (sum string, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxOutput {
		return "", false, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxOutput)); err != nil {
		return "", false, err
	}
	return hex.EncodeToString(h.Sum(nil)), true, nil
}

// commit puts the staged outputs in place as described at WriteDir.
// Errors name the final directory or file.
func (s *OutDir) commit() error {
	j, err := s.journal()
	if err != nil {
		return err
	}
	err = s.apply(j)
	s.dir.Close()
	return err
}

// journal checks the staged outputs against DIR and records the commit in
// DIR's journal; on an error it aborts the run.
func (s *OutDir) journal() (*ledger, error) {
	fail := func(err error) (*ledger, error) {
		s.abort()
		return nil, err
	}
	var old ledger
	if err := readLedger(filepath.Join(s.final, ledgerName), &old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	staged, err := os.ReadDir(s.tmp)
	if err != nil {
		return fail(fmt.Errorf("%s: %v", s.final, UnwrapPath(err)))
	}
	j := ledger{Format: ledgerFormat, Stage: filepath.Base(s.tmp), Files: map[string]string{}, Remove: map[string]string{}}
	for _, e := range staged {
		name := e.Name()
		sum, ok, err := digest(s.Path(name))
		if err != nil || !ok {
			return fail(fmt.Errorf("%s: staged output is not a regular file (%v)", filepath.Join(s.final, name), err))
		}
		j.Files[name] = sum
		dest := filepath.Join(s.final, name)
		have, ok, err := digest(dest)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail(CleanPathError(err))
		}
		if !ok || old.Files[name] == "" || old.Files[name] != have {
			return fail(fmt.Errorf("%s: not an output of an earlier %s into %s (or changed since), so it is not replaced; move it away or choose another -o DIR", dest, s.writer, s.final))
		}
	}
	for name, sum := range old.Files {
		if _, ours := j.Files[name]; ours {
			continue
		}
		if have, ok, err := digest(filepath.Join(s.final, name)); err == nil && ok && have == sum {
			j.Remove[name] = sum
		}
	}
	data, err := json.MarshalIndent(&j, "", "  ")
	if err != nil {
		return fail(err)
	}
	// The journal is written in the staging directory and renamed into
	// place: from then on the commit is completed by whoever runs next.
	if err := os.WriteFile(filepath.Join(s.tmp, journalName), data, 0o644); err != nil {
		return fail(fmt.Errorf("%s: %v", filepath.Join(s.final, journalName), UnwrapPath(err)))
	}
	if err := os.Rename(filepath.Join(s.tmp, journalName), filepath.Join(s.final, journalName)); err != nil {
		return fail(fmt.Errorf("%s: %v", filepath.Join(s.final, journalName), UnwrapPath(err)))
	}
	return &j, nil
}

// apply carries out a journal: moves its staged files in (plan.json last,
// so that the plan never names a file not yet there), removes the stale
// outputs still unchanged, writes the new ledger and drops the journal and
// the staging directory. It may be repeated after a kill at any point.
func (s *OutDir) apply(j *ledger) error {
	stage := filepath.Join(s.final, j.Stage)
	if j.Stage == "" || filepath.Base(j.Stage) != j.Stage || !strings.HasPrefix(j.Stage, stagePrefix) {
		return fmt.Errorf("%s: names no staging directory of maskc's; remove it", filepath.Join(s.final, journalName))
	}
	names := make([]string, 0, len(j.Files))
	for name := range j.Files {
		if filepath.Base(name) != name || name == ledgerName || name == journalName {
			return fmt.Errorf("%s: names a file outside its directory: %q; remove it", filepath.Join(s.final, journalName), name)
		}
		if name != "plan.json" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if _, ok := j.Files["plan.json"]; ok {
		names = append(names, "plan.json")
	}
	for _, name := range names {
		err := os.Rename(filepath.Join(stage, name), filepath.Join(s.final, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %v", filepath.Join(s.final, name), UnwrapPath(err))
		}
	}
	for name, sum := range j.Remove {
		if filepath.Base(name) != name {
			continue
		}
		p := filepath.Join(s.final, name)
		if have, ok, err := digest(p); err == nil && ok && have == sum {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("%s: %v", p, UnwrapPath(err))
			}
		}
	}
	data, err := json.MarshalIndent(&ledger{Format: ledgerFormat, Files: j.Files}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stage, 0o700); err != nil {
		return fmt.Errorf("%s: %v", s.final, UnwrapPath(err))
	}
	if err := os.WriteFile(filepath.Join(stage, ledgerName), data, 0o644); err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(s.final, ledgerName), UnwrapPath(err))
	}
	if err := os.Rename(filepath.Join(stage, ledgerName), filepath.Join(s.final, ledgerName)); err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(s.final, ledgerName), UnwrapPath(err))
	}
	if err := os.Remove(filepath.Join(s.final, journalName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %v", filepath.Join(s.final, journalName), UnwrapPath(err))
	}
	return os.RemoveAll(stage)
}

// UnwrapPath drops an *os.PathError's or *os.LinkError's operation and
// (temporary) path: what is left is the reason, for a message that names
// the file the user knows.
func UnwrapPath(err error) error {
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

// WriteFile writes a new file of the staged directory.
func (s *OutDir) WriteFile(name string, data []byte) error {
	if err := os.WriteFile(s.Path(name), data, 0o644); err != nil {
		return fmt.Errorf("%s: %v", filepath.Join(s.final, name), UnwrapPath(err))
	}
	return nil
}

// CleanPathError turns *os.PathError into "path: reason" without the
// operation name.
func CleanPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

// WriteKernel writes the forward source of kernel k, generated for block d
// (nil: a kernel asked for without a plan) of the .flex file flex, as file
// and its backward source beside it (hipsrc.BwdSourceName), and returns
// the kernel's descriptor as written (KernelDesc).
func (s *OutDir) WriteKernel(k *codegen.Kernel, d *classify.Decision, file, flex string) (hipsrc.KernelDesc, error) {
	m := KernelDesc(k, d, file, flex)
	if err := s.WriteFile(m.SourceFile, []byte(k.Source)); err != nil {
		return hipsrc.KernelDesc{}, err
	}
	if err := s.WriteFile(m.BwdSourceFile, []byte(k.BwdSource)); err != nil {
		return hipsrc.KernelDesc{}, err
	}
	return m, nil
}
