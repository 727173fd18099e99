// Package hip implements backend.Backend on AMD's HIP runtime
// (libamdhip64) and backend.Compiler on hiprtc, both loaded at run time
// through purego: no cgo and no ROCm SDK are needed to build. ROCm 5 exports
// the hiprtc functions from libamdhip64 itself; ROCm 6 and later ship
// libhiprtc.so, which is tried first.
//
// The current device is per OS thread in HIP; every call locks its
// goroutine to the thread and selects the backend's device first.
package hip

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	goruntime "runtime"
	"strings"
	"unsafe"

	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/internal/dl"
)

// hipError is a hipError_t.
type hipError int32

// hipDeviceAttribute_t values (stable since ROCm 5.0).
const (
	attrComputeMajor        = 23
	attrComputeMinor        = 61
	attrMultiprocessorCount = 63
	attrMaxSharedPerBlock   = 74
	attrSharedPerBlockOptin = 75
	attrSharedPerSM         = 76
	attrWarpSize            = 87
)

// hipFunction_attribute values, the same as CUDA's.
var funcAttrs = map[backend.FuncAttribute]int32{
	backend.AttrMaxThreadsPerBlock:        0,
	backend.AttrSharedSizeBytes:           1,
	backend.AttrNumRegs:                   4,
	backend.AttrMaxDynamicSharedSizeBytes: 8,
}

// ArchEnv overrides the gfx architecture read from the device.
const ArchEnv = "MASKC_HIP_ARCH"

// Error is a failed HIP call.
type Error struct {
	// Func is the HIP function, e.g. "hipMalloc".
	Func string
	// Code is the hipError_t.
	Code int32
	// Name and Desc come from hipGetErrorName / hipGetErrorString.
	Name, Desc string
}

// Error formats as "hipMalloc: hipErrorOutOfMemory (2): out of memory".
func (e *Error) Error() string { return fmt.Sprintf("%s: %s (%d): %s", e.Func, e.Name, e.Code, e.Desc) }

type runtimeLib struct {
	lib *dl.Library

	hipInit                 func(flags uint32) hipError
	hipGetDeviceCount       func(n *int32) hipError
	hipSetDevice            func(dev int32) hipError
	hipDeviceGetName        func(name *byte, n int32, dev int32) hipError
	hipDeviceGetAttribute   func(v *int32, attr int32, dev int32) hipError
	hipDeviceTotalMem       func(bytes *uint64, dev int32) hipError
	hipGetDeviceProperties  func(props unsafe.Pointer, dev int32) hipError
	hipRuntimeGetVersion    func(v *int32) hipError
	hipGetErrorName         func(e hipError) string
	hipGetErrorString       func(e hipError) string
	hipMalloc               func(p *uintptr, n uint64) hipError
	hipFree                 func(p uintptr) hipError
	hipMemcpyHtoD           func(dst uintptr, src unsafe.Pointer, n uint64) hipError
	hipMemcpyDtoH           func(dst unsafe.Pointer, src uintptr, n uint64) hipError
	hipMemcpyDtoD           func(dst, src uintptr, n uint64) hipError
	hipMemset               func(p uintptr, v int32, n uint64) hipError
	hipMemsetAsync          func(p uintptr, v int32, n uint64, s uintptr) hipError
	hipModuleLoadData       func(m *uintptr, image unsafe.Pointer) hipError
	hipModuleUnload         func(m uintptr) hipError
	hipModuleGetFunction    func(f *uintptr, m uintptr, name string) hipError
	hipFuncGetAttribute     func(v *int32, attr int32, f uintptr) hipError
	hipStreamCreateWithFlag func(s *uintptr, flags uint32) hipError
	hipStreamDestroy        func(s uintptr) hipError
	hipStreamSynchronize    func(s uintptr) hipError
	hipEventCreate          func(e *uintptr) hipError
	hipEventRecord          func(e, s uintptr) hipError
	hipEventSynchronize     func(e uintptr) hipError
	hipEventElapsedTime     func(ms *float32, start, end uintptr) hipError
	hipEventDestroy         func(e uintptr) hipError
	hipDeviceSynchronize    func() hipError
	launchKernel            uintptr // hipModuleLaunchKernel, called through dl.Call
	setDevice               uintptr // hipSetDevice, likewise for the launch path
}

var runtimeNames = []string{"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"}

// rocmDirs are $ROCM_PATH and the usual install locations.
func rocmDirs() []string {
	return dl.SearchDirs(os.Getenv("ROCM_PATH")+"/lib", os.Getenv("HIP_PATH")+"/lib", "/opt/rocm/lib", "/opt/rocm-*/lib",
		"/usr/lib/x86_64-linux-gnu", "/usr/lib64")
}

func loadRuntime() (*runtimeLib, error) {
	lib, err := dl.Open("HIP runtime", runtimeNames, rocmDirs())
	if err != nil {
		return nil, err
	}
	r := &runtimeLib{lib: lib}
	err = lib.BindAll([]dl.Binding{
		dl.Fn(&r.hipInit, "hipInit"),
		dl.Fn(&r.hipGetDeviceCount, "hipGetDeviceCount"),
		dl.Fn(&r.hipSetDevice, "hipSetDevice"),
		dl.Fn(&r.hipDeviceGetName, "hipDeviceGetName"),
		dl.Fn(&r.hipDeviceGetAttribute, "hipDeviceGetAttribute"),
		dl.Fn(&r.hipDeviceTotalMem, "hipDeviceTotalMem"),
		dl.Fn(&r.hipGetDeviceProperties, "hipGetDevicePropertiesR0600", "hipGetDeviceProperties"),
		dl.Fn(&r.hipRuntimeGetVersion, "hipRuntimeGetVersion"),
		dl.Fn(&r.hipGetErrorName, "hipGetErrorName"),
		dl.Fn(&r.hipGetErrorString, "hipGetErrorString"),
		dl.Fn(&r.hipMalloc, "hipMalloc"),
		dl.Fn(&r.hipFree, "hipFree"),
		dl.Fn(&r.hipMemcpyHtoD, "hipMemcpyHtoD"),
		dl.Fn(&r.hipMemcpyDtoH, "hipMemcpyDtoH"),
		dl.Fn(&r.hipMemcpyDtoD, "hipMemcpyDtoD"),
		dl.Fn(&r.hipMemset, "hipMemset"),
		dl.Fn(&r.hipMemsetAsync, "hipMemsetAsync"),
		dl.Fn(&r.hipModuleLoadData, "hipModuleLoadData"),
		dl.Fn(&r.hipModuleUnload, "hipModuleUnload"),
		dl.Fn(&r.hipModuleGetFunction, "hipModuleGetFunction"),
		dl.Fn(&r.hipFuncGetAttribute, "hipFuncGetAttribute"),
		dl.Fn(&r.hipStreamCreateWithFlag, "hipStreamCreateWithFlags"),
		dl.Fn(&r.hipStreamDestroy, "hipStreamDestroy"),
		dl.Fn(&r.hipStreamSynchronize, "hipStreamSynchronize"),
		dl.Fn(&r.hipEventCreate, "hipEventCreate"),
		dl.Fn(&r.hipEventRecord, "hipEventRecord"),
		dl.Fn(&r.hipEventSynchronize, "hipEventSynchronize"),
		dl.Fn(&r.hipEventElapsedTime, "hipEventElapsedTime"),
		dl.Fn(&r.hipEventDestroy, "hipEventDestroy"),
		dl.Fn(&r.hipDeviceSynchronize, "hipDeviceSynchronize"),
	})
	if err != nil {
		return nil, err
	}
	if r.launchKernel, err = lib.Sym("hipModuleLaunchKernel"); err != nil {
		return nil, err
	}
	if r.setDevice, err = lib.Sym("hipSetDevice"); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *runtimeLib) check(fn string, e hipError) error {
	if e == 0 {
		return nil
	}
	return &Error{Func: fn, Code: int32(e), Name: r.hipGetErrorName(e), Desc: r.hipGetErrorString(e)}
}

// Backend drives one HIP device. It is no backend.TensorMapEncoder: AMD
// devices have no tensor maps, so a launcher passes a forward's
// MaskcTensorMaps zero (ok = 0).
type Backend struct {
	r    *runtimeLib
	dev  int32
	info backend.DeviceInfo
	hiprtc
}

var _ backend.Backend = (*Backend)(nil)

// Open loads the HIP runtime and selects device ordinal. With no runtime it
// returns a *dl.NotFoundError listing the paths tried.
func Open(ordinal int) (*Backend, error) {
	r, err := loadRuntime()
	if err != nil {
		return nil, err
	}
	if err := r.check("hipInit", r.hipInit(0)); err != nil {
		return nil, fmt.Errorf("HIP runtime %s loaded but found no usable device: %w", r.lib.Path, err)
	}
	var n int32
	if err := r.check("hipGetDeviceCount", r.hipGetDeviceCount(&n)); err != nil {
		return nil, fmt.Errorf("HIP runtime %s loaded but found no usable device: %w", r.lib.Path, err)
	}
	if ordinal < 0 || int(n) <= ordinal {
		return nil, fmt.Errorf("HIP runtime: device %d requested but %s reports %d device(s)", ordinal, r.lib.Path, n)
	}
	b := &Backend{r: r, dev: int32(ordinal)}
	b.hiprtc.runtime = r.lib
	if err := b.query(ordinal); err != nil {
		return nil, err
	}
	return b, nil
}

// gfxName matches an architecture name such as gfx942 or
// gfx90a:sramecc+:xnack-, as stored in hipDeviceProp_t.gcnArchName.
var gfxName = regexp.MustCompile(`^gfx[0-9a-f]+(:[a-z]+[+-])*$`)

// archFromProperties finds gcnArchName in a hipDeviceProp_t without relying
// on the struct's layout, which differs between ROCm releases: it is the
// first NUL-terminated string in the struct that starts with "gfx" and is a
// whole architecture name. Feature suffixes (":sramecc+") are dropped.
func archFromProperties(props []byte) string {
	for off := 0; ; {
		i := bytes.Index(props[off:], []byte("gfx"))
		if i < 0 {
			return ""
		}
		s := props[off+i:]
		if end := bytes.IndexByte(s, 0); end >= 0 {
			s = s[:end]
		}
		if gfxName.Match(s) {
			arch, _, _ := strings.Cut(string(s), ":")
			return arch
		}
		off += i + 3
	}
}

func (b *Backend) query(ordinal int) error {
	r := b.r
	return b.call("hipDeviceGetName", func() hipError {
		name := make([]byte, 256)
		if e := r.hipDeviceGetName(&name[0], int32(len(name)), b.dev); e != 0 {
			return e
		}
		var vals [7]int32
		for i, a := range []int32{attrComputeMajor, attrComputeMinor, attrMultiprocessorCount, attrWarpSize, attrMaxSharedPerBlock, attrSharedPerBlockOptin, attrSharedPerSM} {
			if e := r.hipDeviceGetAttribute(&vals[i], a, b.dev); e != 0 {
				return e
			}
		}
		var mem uint64
		if e := r.hipDeviceTotalMem(&mem, b.dev); e != 0 {
			return e
		}
		var ver int32
		if e := r.hipRuntimeGetVersion(&ver); e != 0 {
			return e
		}
		props := make([]byte, 16<<10) // larger than any hipDeviceProp_t
		if e := r.hipGetDeviceProperties(unsafe.Pointer(&props[0]), b.dev); e != 0 {
			return e
		}
		arch := os.Getenv(ArchEnv)
		if arch == "" {
			arch = archFromProperties(props)
		}
		if arch == "" {
			arch = fmt.Sprintf("gfx%d%d", vals[0], vals[1]) // best effort; set MASKC_HIP_ARCH to override
		}
		optin := int(vals[5])
		if optin == 0 {
			optin = int(vals[4])
		}
		b.info = backend.DeviceInfo{
			Backend: "hip", Ordinal: ordinal, Name: dl.GoString(name), Arch: arch,
			MultiProcessors: int(vals[2]), WarpSize: int(vals[3]),
			SharedMemPerBlock: int(vals[4]), SharedMemPerBlockOptin: optin, SharedMemPerMultiProcessor: int(vals[6]),
			TotalMemory:   int64(mem),
			DriverVersion: fmt.Sprintf("HIP runtime %d.%d.%d", ver/10000000, ver/100000%100, ver%100000),
		}
		return 0
	})
}

// call runs fn on a thread whose current device is the backend's.
func (b *Backend) call(name string, fn func() hipError) error {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if e := b.r.hipSetDevice(b.dev); e != 0 {
		return b.r.check("hipSetDevice", e)
	}
	return b.r.check(name, fn())
}

// Device implements backend.Backend.
func (b *Backend) Device() backend.DeviceInfo { return b.info }

// Alloc implements backend.Backend.
func (b *Backend) Alloc(n int64) (backend.DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("hip: alloc of %d bytes", n)
	}
	var p uintptr
	err := b.call("hipMalloc", func() hipError { return b.r.hipMalloc(&p, uint64(n)) })
	return backend.DevicePtr(p), err
}

// Free implements backend.Backend.
func (b *Backend) Free(p backend.DevicePtr) error {
	return b.call("hipFree", func() hipError { return b.r.hipFree(uintptr(p)) })
}

// CopyHtoD implements backend.Backend. From pageable memory the copy may
// return before the DMA to the device has finished, unordered against
// non-blocking streams, so it synchronises like Memset.
func (b *Backend) CopyHtoD(dst backend.DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if err := b.call("hipMemcpyHtoD", func() hipError {
		return b.r.hipMemcpyHtoD(uintptr(dst), unsafe.Pointer(&src[0]), uint64(len(src)))
	}); err != nil {
		return err
	}
	return b.Synchronize()
}

// CopyDtoH implements backend.Backend.
func (b *Backend) CopyDtoH(dst []byte, src backend.DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return b.call("hipMemcpyDtoH", func() hipError {
		return b.r.hipMemcpyDtoH(unsafe.Pointer(&dst[0]), uintptr(src), uint64(len(dst)))
	})
}

// CopyDtoD implements backend.Backend.
func (b *Backend) CopyDtoD(dst, src backend.DevicePtr, n int64) error {
	return b.call("hipMemcpyDtoD", func() hipError { return b.r.hipMemcpyDtoD(uintptr(dst), uintptr(src), uint64(n)) })
}

// Memset implements backend.Backend.
//
// hipMemset may return before the bytes are set and does not order against
// non-blocking streams, so the device is synchronised before returning (see
// the CUDA backend).
func (b *Backend) Memset(p backend.DevicePtr, v byte, n int64) error {
	if err := b.call("hipMemset", func() hipError { return b.r.hipMemset(uintptr(p), int32(v), uint64(n)) }); err != nil {
		return err
	}
	return b.Synchronize()
}

// MemsetAsync implements backend.Backend with hipMemsetAsync on s.
func (b *Backend) MemsetAsync(p backend.DevicePtr, v byte, n int64, s backend.Stream) error {
	return b.call("hipMemsetAsync", func() hipError { return b.r.hipMemsetAsync(uintptr(p), int32(v), uint64(n), uintptr(s)) })
}

// LoadModule implements backend.Backend for HSA code objects.
func (b *Backend) LoadModule(img backend.Image) (backend.Module, error) {
	if img.Kind != backend.ImageHSACO || len(img.Code) == 0 {
		return 0, fmt.Errorf("hip: cannot load a %s image of %d bytes", img.Kind, len(img.Code))
	}
	var m uintptr
	err := b.call("hipModuleLoadData", func() hipError { return b.r.hipModuleLoadData(&m, unsafe.Pointer(&img.Code[0])) })
	return backend.Module(m), err
}

// UnloadModule implements backend.Backend.
func (b *Backend) UnloadModule(m backend.Module) error {
	return b.call("hipModuleUnload", func() hipError { return b.r.hipModuleUnload(uintptr(m)) })
}

// Function implements backend.Backend.
func (b *Backend) Function(m backend.Module, name string) (backend.Function, error) {
	var f uintptr
	err := b.call("hipModuleGetFunction", func() hipError { return b.r.hipModuleGetFunction(&f, uintptr(m), name) })
	if err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	return backend.Function(f), nil
}

// FuncAttribute implements backend.Backend.
func (b *Backend) FuncAttribute(f backend.Function, attr backend.FuncAttribute) (int, error) {
	a, ok := funcAttrs[attr]
	if !ok {
		return 0, fmt.Errorf("hip: unknown function attribute %d", attr)
	}
	var v int32
	err := b.call("hipFuncGetAttribute", func() hipError { return b.r.hipFuncGetAttribute(&v, a, uintptr(f)) })
	return int(v), err
}

// SetMaxDynamicSharedMemory implements backend.Backend. AMD devices need no
// opt-in: any amount up to the device's limit is accepted, more is refused.
func (b *Backend) SetMaxDynamicSharedMemory(f backend.Function, bytes int) error {
	if bytes > b.info.SharedMemPerBlockOptin {
		return fmt.Errorf("hip: %d bytes of dynamic shared memory exceed the device's %d", bytes, b.info.SharedMemPerBlockOptin)
	}
	return nil
}

// Launch implements backend.Backend with hipModuleLaunchKernel called
// through dl.Call, so it does not allocate.
func (b *Backend) Launch(f backend.Function, grid, block backend.Dim3, shared uint32, s backend.Stream, params unsafe.Pointer) error {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if e := dl.Call(b.r.setDevice, uintptr(b.dev)); e != 0 {
		return b.r.check("hipSetDevice", hipError(int32(e)))
	}
	r := dl.Call(b.r.launchKernel, uintptr(f),
		uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
		uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
		uintptr(shared), uintptr(s), uintptr(params), 0)
	if r != 0 {
		return b.r.check("hipModuleLaunchKernel", hipError(int32(r)))
	}
	return nil
}

// NewStream implements backend.Backend (a non-blocking stream).
func (b *Backend) NewStream() (backend.Stream, error) {
	var s uintptr
	err := b.call("hipStreamCreateWithFlags", func() hipError { return b.r.hipStreamCreateWithFlag(&s, 1) })
	return backend.Stream(s), err
}

// DestroyStream implements backend.Backend.
func (b *Backend) DestroyStream(s backend.Stream) error {
	return b.call("hipStreamDestroy", func() hipError { return b.r.hipStreamDestroy(uintptr(s)) })
}

// SynchronizeStream implements backend.Backend.
func (b *Backend) SynchronizeStream(s backend.Stream) error {
	return b.call("hipStreamSynchronize", func() hipError { return b.r.hipStreamSynchronize(uintptr(s)) })
}

// NewEvent implements backend.Backend.
func (b *Backend) NewEvent() (backend.Event, error) {
	var e uintptr
	err := b.call("hipEventCreate", func() hipError { return b.r.hipEventCreate(&e) })
	return backend.Event(e), err
}

// RecordEvent implements backend.Backend.
func (b *Backend) RecordEvent(e backend.Event, s backend.Stream) error {
	return b.call("hipEventRecord", func() hipError { return b.r.hipEventRecord(uintptr(e), uintptr(s)) })
}

// SynchronizeEvent implements backend.Backend.
func (b *Backend) SynchronizeEvent(e backend.Event) error {
	return b.call("hipEventSynchronize", func() hipError { return b.r.hipEventSynchronize(uintptr(e)) })
}

// ElapsedMs implements backend.Backend.
func (b *Backend) ElapsedMs(start, end backend.Event) (float32, error) {
	var ms float32
	err := b.call("hipEventElapsedTime", func() hipError { return b.r.hipEventElapsedTime(&ms, uintptr(start), uintptr(end)) })
	return ms, err
}

// DestroyEvent implements backend.Backend.
func (b *Backend) DestroyEvent(e backend.Event) error {
	return b.call("hipEventDestroy", func() hipError { return b.r.hipEventDestroy(uintptr(e)) })
}

// Synchronize implements backend.Backend.
func (b *Backend) Synchronize() error {
	return b.call("hipDeviceSynchronize", func() hipError { return b.r.hipDeviceSynchronize() })
}

// Close implements backend.Backend. The HIP runtime keeps no per-backend
// context, so there is nothing to release.
func (b *Backend) Close() error { return nil }
