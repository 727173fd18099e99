// Package dl loads shared libraries and resolves their symbols through
// purego (no cgo), turning every failure into an error that says what was
// searched, and provides the small amount of C-compatible memory handling
// the GPU bindings need.
package dl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Attempt is one dlopen tried while searching for a library.
type Attempt struct {
	// Path is the name or path handed to dlopen.
	Path string
	// Err is dlopen's error.
	Err error
}

// NotFoundError lists every path tried for a library and why each failed.
type NotFoundError struct {
	// Library describes what was looked for, e.g. "CUDA driver".
	Library string
	// Attempts are the dlopen calls made, in order.
	Attempts []Attempt
}

// Error lists the attempts, one per line.
func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s library not found; searched:", e.Library)
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, "\n  %s: %v", a.Path, a.Err)
	}
	return b.String()
}

// Library is an open shared library.
type Library struct {
	// Path is the name or path that dlopen accepted.
	Path   string
	handle uintptr
}

// Open tries each name first as given (the dynamic loader's search path),
// then in each directory of dirs, and returns the first that loads. Empty
// directories and duplicates are skipped.
func Open(what string, names, dirs []string) (*Library, error) {
	nf := &NotFoundError{Library: what}
	seen := map[string]bool{}
	try := func(p string) *Library {
		if seen[p] {
			return nil
		}
		seen[p] = true
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			// dlerror repeats the path: keep only the reason.
			if msg, ok := strings.CutPrefix(err.Error(), p+": "); ok {
				err = errors.New(msg)
			}
			nf.Attempts = append(nf.Attempts, Attempt{Path: p, Err: err})
			return nil
		}
		return &Library{Path: p, handle: h}
	}
	for _, n := range names {
		if l := try(n); l != nil {
			return l, nil
		}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); err != nil {
			continue
		}
		for _, n := range names {
			if l := try(filepath.Join(d, n)); l != nil {
				return l, nil
			}
		}
	}
	if len(nf.Attempts) == 0 {
		nf.Attempts = append(nf.Attempts, Attempt{Path: "(nothing)", Err: errors.New("no candidate names")})
	}
	return nil, nf
}

// Sym returns the address of symbol name, or an error naming the library.
func (l *Library) Sym(name string) (uintptr, error) {
	p, err := purego.Dlsym(l.handle, name)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%s: symbol %s not found: %v", l.Path, name, err)
	}
	return p, nil
}

// HasSym reports whether the library exports name.
func (l *Library) HasSym(name string) bool {
	p, err := purego.Dlsym(l.handle, name)
	return err == nil && p != 0
}

// Bind resolves name and makes *fptr (a pointer to a Go func variable) call
// it with purego's type conversions. A missing symbol is an error, never a
// panic. Bound functions go through reflection and allocate per call: use
// Sym with purego.SyscallN on hot paths.
func (l *Library) Bind(fptr any, name string) error {
	p, err := l.Sym(name)
	if err != nil {
		return err
	}
	purego.RegisterFunc(fptr, p)
	return nil
}

// BindFirst binds the first of names that the library exports (for
// versioned symbols such as cuMemAlloc_v2 / cuMemAlloc) and returns it.
func (l *Library) BindFirst(fptr any, names ...string) (string, error) {
	for _, n := range names {
		if l.HasSym(n) {
			return n, l.Bind(fptr, n)
		}
	}
	return "", fmt.Errorf("%s: none of the symbols %s found", l.Path, strings.Join(names, ", "))
}

// Binding names one function to bind: Ptr is a pointer to a Go func
// variable, Names the symbols to try in order.
type Binding struct {
	// Ptr points to the func variable to set.
	Ptr any
	// Names are the symbols to try, e.g. "cuMemFree_v2" then "cuMemFree".
	Names []string
}

// BindAll binds every entry and reports all missing symbols together.
func (l *Library) BindAll(bs []Binding) error {
	var missing []string
	for _, b := range bs {
		if _, err := l.BindFirst(b.Ptr, b.Names...); err != nil {
			missing = append(missing, strings.Join(b.Names, "|"))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: missing symbols: %s", l.Path, strings.Join(missing, ", "))
	}
	return nil
}

// CStrings is an array of NUL-terminated strings laid out as a C `char**`,
// pinned so that it may be handed to C for the duration of a call.
type CStrings struct {
	ptrs   []uintptr
	bufs   [][]byte
	pinner goruntime.Pinner
}

// NewCStrings copies ss into pinned memory. Call Free when C no longer
// needs it.
func NewCStrings(ss []string) *CStrings {
	c := &CStrings{ptrs: make([]uintptr, len(ss)+1)}
	for i, s := range ss {
		b := append([]byte(s), 0)
		c.bufs = append(c.bufs, b)
		c.pinner.Pin(&b[0])
		c.ptrs[i] = uintptr(unsafe.Pointer(&b[0]))
	}
	c.pinner.Pin(&c.ptrs[0])
	return c
}

// Ptr is the `char**` (nil-terminated), valid until Free.
func (c *CStrings) Ptr() *uintptr { return &c.ptrs[0] }

// Len is the number of strings.
func (c *CStrings) Len() int { return len(c.bufs) }

// Free unpins the memory.
func (c *CStrings) Free() { c.pinner.Unpin() }

// GoString converts a NUL-terminated byte buffer to a string.
func GoString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// GoStringPtr copies the NUL-terminated C string at p (nil gives "").
func GoStringPtr(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// SearchDirs returns the existing directories among dirs, each listed once,
// with glob patterns expanded.
func SearchDirs(dirs ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		matches := []string{d}
		if strings.ContainsAny(d, "*?[") {
			matches, _ = filepath.Glob(d)
		}
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.IsDir() && !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// Fn makes a Binding of the Go func variable at ptr to the first exported
// symbol among names.
func Fn(ptr any, names ...string) Binding { return Binding{Ptr: ptr, Names: names} }

// callArgs is the scratch array Call hands to purego.SyscallN. SyscallN
// allocates when its variadic slice is built at the call site, but not when
// handed an existing slice, so Call keeps pooled arrays.
type callArgs [16]uintptr

var callPool = sync.Pool{New: func() any { return new(callArgs) }}

// Call calls the C function at fn with integer or pointer arguments (at
// most 16) and returns its integer result. Unlike purego.SyscallN called
// directly it does not allocate, and unlike a bound function it does not
// use reflection: it is meant for per-launch paths. Pointers passed must
// not point to unpinned Go memory that contains Go pointers.
func Call(fn uintptr, args ...uintptr) uintptr {
	if len(args) > len(callArgs{}) {
		panic("dl.Call: too many arguments")
	}
	buf := callPool.Get().(*callArgs)
	n := copy(buf[:], args)
	r, _, _ := purego.SyscallN(fn, buf[:n]...)
	callPool.Put(buf)
	return r
}
