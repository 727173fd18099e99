package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/internal/dl"
	"github.com/maskc/maskc/runtime/internal/rtc"
)

// nvrtcNames are the NVRTC file names tried, newest first.
var nvrtcNames = []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}

// toolkitDirs lists where a CUDA toolkit may live: $CUDA_HOME, $CUDA_PATH,
// /usr/local/cuda, and the pip wheels' layout.
func toolkitDirs() []string {
	return dl.SearchDirs(os.Getenv("CUDA_HOME"), os.Getenv("CUDA_PATH"), "/usr/local/cuda", "/usr/local/cuda-*", "/opt/cuda",
		"/usr/local/lib/python3*/dist-packages/nvidia/cu13", "/usr/local/lib/python3*/site-packages/nvidia/cu13",
		"/usr/lib/python3/dist-packages/nvidia/cu13", "/usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc")
}

// nvrtcDirs are the library directories searched after the loader's path.
func nvrtcDirs() []string {
	var dirs []string
	for _, t := range toolkitDirs() {
		dirs = append(dirs, filepath.Join(t, "lib64"), filepath.Join(t, "lib"), filepath.Join(t, "targets/x86_64-linux/lib"))
	}
	return dl.SearchDirs(dirs...)
}

// includeDir returns the first toolkit include directory holding
// cuda_bf16.h, or "".
func includeDir() string {
	for _, t := range toolkitDirs() {
		for _, d := range []string{filepath.Join(t, "include"), filepath.Join(t, "targets/x86_64-linux/include")} {
			if _, err := os.Stat(filepath.Join(d, "cuda_bf16.h")); err == nil {
				return d
			}
		}
	}
	return ""
}

// nvrtcLib is the loaded NVRTC.
type nvrtcLib struct {
	*rtc.Library
	include string // toolkit include directory, "" if none
}

// nvrtc is the backend.Compiler part of Backend, loaded on first use.
type nvrtc struct {
	arch string
	once sync.Once
	lib  *nvrtcLib
	err  error
}

func loadNVRTC() (*nvrtcLib, error) {
	names := nvrtcNames
	if p := os.Getenv("MASKC_NVRTC_LIBRARY"); p != "" {
		names = append([]string{p}, names...)
	}
	lib, err := dl.Open("NVRTC", names, nvrtcDirs())
	if err != nil {
		return nil, err
	}
	l, err := rtc.Bind(lib, "nvrtc",
		rtc.NewOutput(backend.ImageCUBIN, "CUBIN", false),
		rtc.NewOutput(backend.ImagePTX, "PTX", true))
	if err != nil {
		return nil, err
	}
	return &nvrtcLib{Library: l, include: includeDir()}, nil
}

// Compiler implements backend.Backend: NVRTC, loaded on first use.
func (b *Backend) Compiler() (backend.Compiler, error) {
	b.nvrtc.once.Do(func() { b.nvrtc.lib, b.nvrtc.err = loadNVRTC() })
	if b.nvrtc.err != nil {
		return nil, b.nvrtc.err
	}
	return &b.nvrtc, nil
}

// Version implements backend.Compiler, e.g. "nvrtc 13.0".
func (c *nvrtc) Version() string {
	return fmt.Sprintf("nvrtc %d.%d", c.lib.Major, c.lib.Minor)
}

// BaseOptions implements backend.Compiler: the architecture, C++17, and the
// toolkit include directory when one is installed.
func (c *nvrtc) BaseOptions(arch string) []string {
	opts := []string{"--gpu-architecture=" + arch, "-std=c++17"}
	if c.lib.include != "" {
		opts = append(opts, "--include-path="+c.lib.include)
	}
	return opts
}

// Compile implements backend.Compiler. It returns CUBIN, or PTX only if
// the NVRTC build cannot emit CUBIN for the target.
func (c *nvrtc) Compile(req backend.CompileRequest) (backend.Image, error) {
	arch := req.Arch
	if arch == "" {
		arch = c.arch
	}
	name := req.Name
	if name == "" {
		name = "maskc_kernel.cu"
	}
	return c.lib.Compile(c.Version(), req.Source, name, append(c.BaseOptions(arch), req.Options...))
}

// NewCompiler loads NVRTC without opening a device, for compiling ahead of
// time or on a machine without a GPU; arch is the default target, e.g.
// "sm_90".
func NewCompiler(arch string) (backend.Compiler, error) {
	lib, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	return &nvrtc{arch: arch, lib: lib}, nil
}
