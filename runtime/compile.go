package runtime

import (
	"errors"
	"strings"
	"time"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/jitlog"
	"github.com/maskc/maskc/runtime/kcache"
)

// cacheFormat versions how keys are built; bump it to invalidate old
// entries.
const cacheFormat = "maskc-kernel-cache-v1"

// CompileOptions configure Device.Compile.
type CompileOptions struct {
	// Name is the file name of the generated source in compiler logs;
	// default "maskc_kernel.cu".
	Name string
	// Flex is the .flex source that the kernel's #line directives name;
	// compiler errors on its lines become diagnostics pointing into it.
	Flex *dsl.Source
	// Options are extra compiler options, e.g. "--use_fast_math" (off by
	// default).
	Options []string
	// Arch overrides the device's architecture as the compile target, e.g.
	// "sm_90a" for arch-specific instructions; empty: the device's.
	Arch string
}

// CompileStats says how a Module was obtained.
type CompileStats struct {
	// Key is the cache key in hex.
	Key string
	// Cache is the cache lookup's outcome (Miss when caching is off).
	Cache kcache.Status
	// CacheErr is why an entry was discarded (corrupt) or not read
	// (unreadable), or why a store failed; none fails the compilation.
	CacheErr error
	// Compile is the compiler's wall time (zero on a cache hit); Load the
	// cache read plus module load; Total everything.
	Compile, Load, Total time.Duration
	// Image is the kind of code loaded.
	Image backend.ImageKind
	// ImageBytes is the size of the code loaded.
	ImageBytes int
	// Arch is the architecture the code was built for, e.g. "sm_90a".
	Arch string
}

// Module is a loaded compiled source.
type Module struct {
	d      *Device
	handle backend.Module
	// Stats says how the module was obtained.
	Stats CompileStats
}

// Compile compiles src for the device (or loads it from the cache) and
// loads it. A compiler error is returned as dsl.Diagnostics: errors on
// lines of opts.Flex point there (E401), others are E402.
func (d *Device) Compile(src string, opts CompileOptions) (*Module, error) {
	t0 := time.Now()
	comp, err := d.Compiler()
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = "maskc_kernel.cu"
	}
	arch := d.Info().Arch
	if opts.Arch != "" {
		arch = opts.Arch
	}
	flags := append(comp.BaseOptions(arch), opts.Options...)
	key := kcache.NewKey(cacheFormat, src, name, arch, comp.Version(), strings.Join(flags, "\x00"))
	st := CompileStats{Key: key.String(), Arch: arch}

	var img backend.Image
	if d.cache != nil {
		img, st.Cache, st.CacheErr = d.cache.Get(key)
	}
	if st.Cache != kcache.Hit {
		tc := time.Now()
		img, err = comp.Compile(backend.CompileRequest{Source: src, Name: name, Arch: arch, Options: opts.Options})
		st.Compile = time.Since(tc)
		if err != nil {
			var ce *backend.CompileError
			if errors.As(err, &ce) {
				return nil, jitlog.Diagnostics(ce.Log, opts.Flex)
			}
			return nil, errorf(CodeCompileKernel, err, "%s failed", comp.Version())
		}
		if d.cache != nil {
			if perr := d.cache.Put(key, img); perr != nil {
				st.CacheErr = errors.Join(st.CacheErr, perr)
			}
		}
	}
	tl := time.Now()
	h, err := d.LoadModule(img)
	if err != nil {
		return nil, errorf(CodeModule, err, "loading the compiled %s", img.Kind)
	}
	st.Load = time.Since(tl)
	if st.Cache == kcache.Hit {
		st.Load = time.Since(t0)
	}
	st.Image, st.ImageBytes = img.Kind, len(img.Code)
	st.Total = time.Since(t0)
	return &Module{d: d, handle: h, Stats: st}, nil
}

// Kernel looks up an entry point by its extern "C" name.
func (m *Module) Kernel(name string) (*Kernel, error) {
	f, err := m.d.Function(m.handle, name)
	if err != nil {
		return nil, errorf(CodeModule, err, "kernel %q", name)
	}
	return &Kernel{d: m.d, fn: f, Name: name}, nil
}

// Close unloads the module; its kernels must not be launched afterwards.
func (m *Module) Close() error { return m.d.UnloadModule(m.handle) }
