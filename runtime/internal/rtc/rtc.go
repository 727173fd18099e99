// Package rtc drives a run-time compiler library with NVRTC's program API:
// NVRTC and hiprtc export the same functions under the prefixes "nvrtc" and
// "hiprtc" (create a program, compile it with options, read the log and
// the code, destroy it), so one implementation serves both.
package rtc

import (
	"fmt"
	"sync"

	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/internal/dl"
)

// Output is one way to read compiled code, e.g. NVRTC's CUBIN or PTX.
type Output struct {
	// Kind is the image kind this output produces.
	Kind backend.ImageKind
	// Size is the library's <prefix>Get<Name>Size, bound by Bind.
	Size func(prog uintptr, n *uint64) int32
	// Get is the library's <prefix>Get<Name>, bound by Bind.
	Get func(prog uintptr, out *byte) int32
	// name is the function-name stem, e.g. "CUBIN".
	name string
	// text outputs (PTX) are NUL-terminated strings.
	text bool
}

// NewOutput describes the output read by <prefix>Get<name>Size and
// <prefix>Get<name>; text marks NUL-terminated text such as PTX.
func NewOutput(kind backend.ImageKind, name string, text bool) Output {
	return Output{Kind: kind, name: name, text: text}
}

// Library is a bound run-time compiler.
type Library struct {
	prefix string
	// Major and Minor are what <prefix>Version reports.
	Major, Minor int32

	create      func(prog *uintptr, src, name string, nh int32, headers, names *uintptr) int32
	compile     func(prog uintptr, n int32, opts *uintptr) int32
	logSize     func(prog uintptr, n *uint64) int32
	log         func(prog uintptr, out *byte) int32
	destroy     func(prog *uintptr) int32
	errorString func(r int32) string
	outputs     []Output

	mu sync.Mutex // compilations are serialised: cheap insurance for older libraries
}

// Bind resolves the program API with the given prefix ("nvrtc", "hiprtc")
// in lib, and the outputs, tried in order after a compilation.
func Bind(lib *dl.Library, prefix string, outputs ...Output) (*Library, error) {
	l := &Library{prefix: prefix, outputs: outputs}
	var version func(major, minor *int32) int32
	bs := []dl.Binding{
		dl.Fn(&version, prefix+"Version"),
		dl.Fn(&l.create, prefix+"CreateProgram"),
		dl.Fn(&l.compile, prefix+"CompileProgram"),
		dl.Fn(&l.logSize, prefix+"GetProgramLogSize"),
		dl.Fn(&l.log, prefix+"GetProgramLog"),
		dl.Fn(&l.destroy, prefix+"DestroyProgram"),
		dl.Fn(&l.errorString, prefix+"GetErrorString"),
	}
	for i := range l.outputs {
		o := &l.outputs[i]
		bs = append(bs, dl.Fn(&o.Size, prefix+"Get"+o.name+"Size"), dl.Fn(&o.Get, prefix+"Get"+o.name))
	}
	if err := lib.BindAll(bs); err != nil {
		return nil, err
	}
	if err := l.check("Version", version(&l.Major, &l.Minor)); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Library) check(fn string, r int32) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("%s%s: %s (%d)", l.prefix, fn, l.errorString(r), r)
}

// Compile compiles src (named name in the log) with opts. A rejected
// source gives a *backend.CompileError carrying the log, reported under
// the compiler name version.
func (l *Library) Compile(version, src, name string, opts []string) (backend.Image, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var prog uintptr
	if err := l.check("CreateProgram", l.create(&prog, src, name, 0, nil, nil)); err != nil {
		return backend.Image{}, err
	}
	defer l.destroy(&prog)
	copts := dl.NewCStrings(opts)
	defer copts.Free()
	if r := l.compile(prog, int32(copts.Len()), copts.Ptr()); r != 0 {
		log := l.programLog(prog)
		if log == "" {
			log = l.check("CompileProgram", r).Error()
		}
		return backend.Image{}, &backend.CompileError{Compiler: version, Log: log}
	}
	for _, o := range l.outputs {
		var size uint64
		if o.Size(prog, &size) != 0 || size == 0 {
			continue
		}
		out := make([]byte, size)
		if err := l.check("Get"+o.name, o.Get(prog, &out[0])); err != nil {
			return backend.Image{}, err
		}
		if o.text {
			out = []byte(dl.GoString(out))
		}
		return backend.Image{Kind: o.Kind, Code: out}, nil
	}
	return backend.Image{}, fmt.Errorf("%s: compilation produced no code", version)
}

func (l *Library) programLog(prog uintptr) string {
	var size uint64
	if l.logSize(prog, &size) != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if l.log(prog, &buf[0]) != 0 {
		return ""
	}
	return dl.GoString(buf)
}
