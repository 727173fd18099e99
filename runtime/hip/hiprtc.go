package hip

import (
	"fmt"
	"strings"
	"sync"

	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/internal/dl"
	"github.com/maskc/maskc/runtime/internal/rtc"
)

var hiprtcNames = []string{"libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.7"}

// hiprtcLib is the loaded hiprtc.
type hiprtcLib struct {
	*rtc.Library
	runtimeVersion int32 // hipRuntimeGetVersion, 0 if unknown
}

// hiprtc is the backend.Compiler part of Backend, loaded on first use.
type hiprtc struct {
	runtime *dl.Library // ROCm 5 carries hiprtc in the runtime library
	once    sync.Once
	lib     *hiprtcLib
	err     error
	arch    string
}

func loadHiprtc(runtime *dl.Library) (*hiprtcLib, error) {
	lib, err := dl.Open("hiprtc", hiprtcNames, rocmDirs())
	if err != nil {
		if runtime == nil || !runtime.HasSym("hiprtcCreateProgram") {
			return nil, fmt.Errorf("%w\n  (and %s exports no hiprtc symbols)", err, runtimePath(runtime))
		}
		lib = runtime
	}
	l, err := rtc.Bind(lib, "hiprtc", rtc.NewOutput(backend.ImageHSACO, "Code", false))
	if err != nil {
		return nil, err
	}
	h := &hiprtcLib{Library: l}
	// hiprtcVersion is coarse (ROCm 5.2 reports 9.0); the runtime's
	// version tells point releases apart, which matters for cache keys.
	var rtVersion func(v *int32) int32
	if runtime != nil && runtime.Bind(&rtVersion, "hipRuntimeGetVersion") == nil {
		if rtVersion(&h.runtimeVersion) != 0 {
			h.runtimeVersion = 0
		}
	}
	return h, nil
}

func runtimePath(l *dl.Library) string {
	if l == nil {
		return "the HIP runtime"
	}
	return l.Path
}

// Compiler implements backend.Backend: hiprtc, loaded on first use.
func (b *Backend) Compiler() (backend.Compiler, error) {
	b.hiprtc.once.Do(func() {
		b.hiprtc.arch = b.info.Arch
		b.hiprtc.lib, b.hiprtc.err = loadHiprtc(b.hiprtc.runtime)
	})
	if b.hiprtc.err != nil {
		return nil, b.hiprtc.err
	}
	return &b.hiprtc, nil
}

// Version implements backend.Compiler, e.g. "hiprtc 9.0 (HIP 50221153)".
func (c *hiprtc) Version() string {
	return fmt.Sprintf("hiprtc %d.%d (HIP %d)", c.lib.Major, c.lib.Minor, c.lib.runtimeVersion)
}

// BaseOptions implements backend.Compiler.
func (c *hiprtc) BaseOptions(arch string) []string {
	return hipsrc.HIPOptions(arch)
}

// Compile implements backend.Compiler; the result is an HSA code object.
func (c *hiprtc) Compile(req backend.CompileRequest) (backend.Image, error) {
	arch := req.Arch
	if arch == "" {
		arch = c.arch
	}
	if err := c.supports(arch); err != nil {
		return backend.Image{}, err
	}
	name := req.Name
	if name == "" {
		name = "maskc_kernel.hip"
	}
	return c.lib.Compile(c.Version(), req.Source, name, append(c.BaseOptions(arch), req.Options...))
}

// NewCompiler loads hiprtc without opening a device, for compiling ahead of
// time or on a machine without a GPU; arch is the default target, e.g.
// "gfx942".
func NewCompiler(arch string) (backend.Compiler, error) {
	var runtime *dl.Library
	if r, err := dl.Open("HIP runtime", runtimeNames, rocmDirs()); err == nil {
		runtime = r
	}
	lib, err := loadHiprtc(runtime)
	if err != nil {
		return nil, err
	}
	return &hiprtc{runtime: runtime, lib: lib, arch: arch}, nil
}

// minRuntime is the oldest HIP runtime (hipRuntimeGetVersion encoding,
// major*10000000 + minor*100000 + patch) whose hiprtc can target an
// architecture family. Older hiprtc builds do not refuse such targets: the
// one in Debian's ROCm 5.2.3 aborts the process (munmap_chunk(): invalid
// pointer) for gfx940 and gfx942, even on a trivial kernel.
var minRuntime = []struct {
	prefix  string
	version int32
	release string
}{
	{"gfx94", 50700000, "ROCm 5.7"},
	{"gfx95", 60300000, "ROCm 6.3"},
}

// supports refuses targets the loaded hiprtc is known not to handle, rather
// than letting it crash the process.
func (c *hiprtc) supports(arch string) error {
	v := c.lib.runtimeVersion
	if v == 0 {
		return nil
	}
	for _, m := range minRuntime {
		if strings.HasPrefix(arch, m.prefix) && v < m.version {
			return fmt.Errorf("hiprtc: %s needs %s or later; the loaded HIP runtime is version %d; upgrade ROCm", arch, m.release, v)
		}
	}
	return nil
}
