// Package cuda implements backend.Backend on the NVIDIA CUDA driver API
// (libcuda.so.1) and backend.Compiler on NVRTC, both loaded at run time
// through purego: no cgo and no CUDA SDK are needed to build.
//
// The driver API's context is current per OS thread, while goroutines move
// between threads; every call therefore locks its goroutine to the thread
// and makes the backend's context current first.
package cuda

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"unsafe"

	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/internal/dl"
)

// result is a CUresult.
type result int32

// Device attributes (CUdevice_attribute) read by Open.
const (
	attrMaxSharedPerBlock      = 8
	attrWarpSize               = 10
	attrMultiProcessorCount    = 16
	attrComputeMajor           = 75
	attrComputeMinor           = 76
	attrMaxSharedPerSM         = 81
	attrMaxSharedPerBlockOptin = 97
)

// Function attributes (CUfunction_attribute).
var funcAttrs = map[backend.FuncAttribute]int32{
	backend.AttrMaxThreadsPerBlock:        0,
	backend.AttrSharedSizeBytes:           1,
	backend.AttrNumRegs:                   4,
	backend.AttrMaxDynamicSharedSizeBytes: 8,
}

const eventDefault = 0

// Error is a failed driver call.
type Error struct {
	// Func is the driver function, e.g. "cuMemAlloc_v2".
	Func string
	// Code is the CUresult.
	Code int32
	// Name and Desc come from cuGetErrorName / cuGetErrorString.
	Name, Desc string
}

// Error formats as "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (%d): %s", e.Func, e.Name, e.Code, e.Desc)
}

// driver holds the bound driver API.
type driver struct {
	lib *dl.Library

	cuInit                    func(flags uint32) result
	cuDriverGetVersion        func(v *int32) result
	cuDeviceGetCount          func(n *int32) result
	cuDeviceGet               func(dev *int32, ordinal int32) result
	cuDeviceGetName           func(name *byte, n int32, dev int32) result
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) result
	cuDeviceTotalMem          func(bytes *uint64, dev int32) result
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) result
	cuDevicePrimaryCtxRelease func(dev int32) result
	cuCtxSetCurrent           func(ctx uintptr) result
	cuCtxSynchronize          func() result
	cuGetErrorName            func(r result, s **byte) result
	cuGetErrorString          func(r result, s **byte) result
	cuMemAlloc                func(p *uintptr, n uint64) result
	cuMemFree                 func(p uintptr) result
	cuMemcpyHtoD              func(dst uintptr, src unsafe.Pointer, n uint64) result
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uintptr, n uint64) result
	cuMemcpyDtoD              func(dst, src uintptr, n uint64) result
	cuMemsetD8                func(p uintptr, v uint8, n uint64) result
	cuMemsetD8Async           func(p uintptr, v uint8, n uint64, s uintptr) result
	cuModuleLoadData          func(m *uintptr, image unsafe.Pointer) result
	cuModuleUnload            func(m uintptr) result
	cuModuleGetFunction       func(f *uintptr, m uintptr, name string) result
	cuFuncGetAttribute        func(v *int32, attr int32, f uintptr) result
	cuFuncSetAttribute        func(f uintptr, attr int32, v int32) result
	cuStreamCreate            func(s *uintptr, flags uint32) result
	cuStreamDestroy           func(s uintptr) result
	cuStreamSynchronize       func(s uintptr) result
	cuEventCreate             func(e *uintptr, flags uint32) result
	cuEventRecord             func(e, s uintptr) result
	cuEventSynchronize        func(e uintptr) result
	cuEventElapsedTime        func(ms *float32, start, end uintptr) result
	cuEventDestroy            func(e uintptr) result
	launchKernel              uintptr // cuLaunchKernel, called through dl.Call: no allocation
	ctxSetCurrent             uintptr // cuCtxSetCurrent, likewise
	// tensorMapEncodeTiled is cuTensorMapEncodeTiled (CUDA 12 and later),
	// called through dl.Call; 0 where the driver lacks it.
	tensorMapEncodeTiled uintptr
}

// driverNames are the file names tried for the driver library.
var driverNames = []string{"libcuda.so.1", "libcuda.so"}

// driverDirs are searched after the loader's own path.
func driverDirs() []string {
	return dl.SearchDirs(
		"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
		"/usr/lib/wsl/lib",
	)
}

func loadDriver() (*driver, error) {
	lib, err := dl.Open("CUDA driver", driverNames, driverDirs())
	if err != nil {
		return nil, err
	}
	d := &driver{lib: lib}
	err = lib.BindAll([]dl.Binding{
		dl.Fn(&d.cuInit, "cuInit"),
		dl.Fn(&d.cuDriverGetVersion, "cuDriverGetVersion"),
		dl.Fn(&d.cuDeviceGetCount, "cuDeviceGetCount"),
		dl.Fn(&d.cuDeviceGet, "cuDeviceGet"),
		dl.Fn(&d.cuDeviceGetName, "cuDeviceGetName"),
		dl.Fn(&d.cuDeviceGetAttribute, "cuDeviceGetAttribute"),
		dl.Fn(&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
		dl.Fn(&d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		dl.Fn(&d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
		dl.Fn(&d.cuCtxSetCurrent, "cuCtxSetCurrent"),
		dl.Fn(&d.cuCtxSynchronize, "cuCtxSynchronize"),
		dl.Fn(&d.cuGetErrorName, "cuGetErrorName"),
		dl.Fn(&d.cuGetErrorString, "cuGetErrorString"),
		dl.Fn(&d.cuMemAlloc, "cuMemAlloc_v2"),
		dl.Fn(&d.cuMemFree, "cuMemFree_v2"),
		dl.Fn(&d.cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
		dl.Fn(&d.cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
		dl.Fn(&d.cuMemcpyDtoD, "cuMemcpyDtoD_v2"),
		dl.Fn(&d.cuMemsetD8, "cuMemsetD8_v2"),
		dl.Fn(&d.cuMemsetD8Async, "cuMemsetD8Async"),
		dl.Fn(&d.cuModuleLoadData, "cuModuleLoadData"),
		dl.Fn(&d.cuModuleUnload, "cuModuleUnload"),
		dl.Fn(&d.cuModuleGetFunction, "cuModuleGetFunction"),
		dl.Fn(&d.cuFuncGetAttribute, "cuFuncGetAttribute"),
		dl.Fn(&d.cuFuncSetAttribute, "cuFuncSetAttribute"),
		dl.Fn(&d.cuStreamCreate, "cuStreamCreate"),
		dl.Fn(&d.cuStreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy"),
		dl.Fn(&d.cuStreamSynchronize, "cuStreamSynchronize"),
		dl.Fn(&d.cuEventCreate, "cuEventCreate"),
		dl.Fn(&d.cuEventRecord, "cuEventRecord"),
		dl.Fn(&d.cuEventSynchronize, "cuEventSynchronize"),
		dl.Fn(&d.cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
		dl.Fn(&d.cuEventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
	})
	if err != nil {
		return nil, err
	}
	if d.launchKernel, err = lib.Sym("cuLaunchKernel"); err != nil {
		return nil, err
	}
	if d.ctxSetCurrent, err = lib.Sym("cuCtxSetCurrent"); err != nil {
		return nil, err
	}
	// Optional: a driver before CUDA 12 has no tensor maps and still loads.
	if lib.HasSym("cuTensorMapEncodeTiled") {
		d.tensorMapEncodeTiled, _ = lib.Sym("cuTensorMapEncodeTiled")
	}
	return d, nil
}

// check turns a CUresult into an *Error.
func (d *driver) check(fn string, r result) error {
	if r == 0 {
		return nil
	}
	e := &Error{Func: fn, Code: int32(r), Name: "CUDA_ERROR_UNKNOWN", Desc: "unknown error"}
	var s *byte
	if d.cuGetErrorName(r, &s) == 0 && s != nil {
		e.Name = dl.GoStringPtr(s)
	}
	if d.cuGetErrorString(r, &s) == 0 && s != nil {
		e.Desc = dl.GoStringPtr(s)
	}
	return e
}

// Backend drives one CUDA device through its primary context.
type Backend struct {
	d    *driver
	dev  int32
	ctx  uintptr
	info backend.DeviceInfo
	nvrtc
}

var (
	_ backend.Backend          = (*Backend)(nil)
	_ backend.TensorMapEncoder = (*Backend)(nil)
)

// Open loads the driver, initialises it and retains the primary context of
// device ordinal. With no driver it returns a *dl.NotFoundError listing the
// paths tried; with no device, an error saying so.
func Open(ordinal int) (*Backend, error) {
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	if err := d.check("cuInit", d.cuInit(0)); err != nil {
		return nil, fmt.Errorf("CUDA driver %s loaded but found no usable device: %w", d.lib.Path, err)
	}
	var n int32
	if err := d.check("cuDeviceGetCount", d.cuDeviceGetCount(&n)); err != nil {
		return nil, fmt.Errorf("CUDA driver %s loaded but found no usable device: %w", d.lib.Path, err)
	}
	if ordinal < 0 || int(n) <= ordinal {
		return nil, fmt.Errorf("CUDA driver: device %d requested but %s reports %d device(s)", ordinal, d.lib.Path, n)
	}
	b := &Backend{d: d}
	if err := d.check("cuDeviceGet", d.cuDeviceGet(&b.dev, int32(ordinal))); err != nil {
		return nil, err
	}
	if err := d.check("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&b.ctx, b.dev)); err != nil {
		return nil, err
	}
	if err := b.query(ordinal); err != nil {
		d.cuDevicePrimaryCtxRelease(b.dev)
		return nil, err
	}
	b.nvrtc.arch = b.info.Arch
	return b, nil
}

func (b *Backend) query(ordinal int) error {
	d := b.d
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), b.dev)); err != nil {
		return err
	}
	attr := func(a int32) (int, error) {
		var v int32
		err := d.check("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&v, a, b.dev))
		return int(v), err
	}
	var vals [7]int
	for i, a := range []int32{attrComputeMajor, attrComputeMinor, attrMultiProcessorCount, attrWarpSize, attrMaxSharedPerBlock, attrMaxSharedPerBlockOptin, attrMaxSharedPerSM} {
		v, err := attr(a)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	var mem uint64
	if err := d.check("cuDeviceTotalMem_v2", d.cuDeviceTotalMem(&mem, b.dev)); err != nil {
		return err
	}
	var ver int32
	if err := d.check("cuDriverGetVersion", d.cuDriverGetVersion(&ver)); err != nil {
		return err
	}
	b.info = backend.DeviceInfo{
		Backend: "cuda", Ordinal: ordinal, Name: dl.GoString(name),
		Arch:            fmt.Sprintf("sm_%d%d", vals[0], vals[1]),
		MultiProcessors: vals[2], WarpSize: vals[3],
		SharedMemPerBlock: vals[4], SharedMemPerBlockOptin: vals[5], SharedMemPerMultiProcessor: vals[6],
		TotalMemory:   int64(mem),
		DriverVersion: fmt.Sprintf("CUDA driver %d.%d", ver/1000, ver%1000/10),
	}
	return nil
}

// bind locks the calling goroutine to its thread and makes the context
// current there; the returned func undoes the lock.
func (b *Backend) bind() (func(), error) {
	goruntime.LockOSThread()
	if r := b.d.cuCtxSetCurrent(b.ctx); r != 0 {
		goruntime.UnlockOSThread()
		return nil, b.d.check("cuCtxSetCurrent", r)
	}
	return goruntime.UnlockOSThread, nil
}

// call runs fn with the context current and converts its result.
func (b *Backend) call(name string, fn func() result) error {
	unlock, err := b.bind()
	if err != nil {
		return err
	}
	defer unlock()
	return b.d.check(name, fn())
}

// Device implements backend.Backend.
func (b *Backend) Device() backend.DeviceInfo { return b.info }

// Alloc implements backend.Backend.
func (b *Backend) Alloc(n int64) (backend.DevicePtr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("cuda: alloc of %d bytes", n)
	}
	var p uintptr
	err := b.call("cuMemAlloc_v2", func() result { return b.d.cuMemAlloc(&p, uint64(n)) })
	return backend.DevicePtr(p), err
}

// Free implements backend.Backend.
func (b *Backend) Free(p backend.DevicePtr) error {
	return b.call("cuMemFree_v2", func() result { return b.d.cuMemFree(uintptr(p)) })
}

// CopyHtoD implements backend.Backend. From pageable memory the copy may
// return before the DMA to the device has finished, unordered against
// non-blocking streams, so it synchronises like Memset.
func (b *Backend) CopyHtoD(dst backend.DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if err := b.call("cuMemcpyHtoD_v2", func() result {
		return b.d.cuMemcpyHtoD(uintptr(dst), unsafe.Pointer(&src[0]), uint64(len(src)))
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
	return b.call("cuMemcpyDtoH_v2", func() result {
		return b.d.cuMemcpyDtoH(unsafe.Pointer(&dst[0]), uintptr(src), uint64(len(dst)))
	})
}

// CopyDtoD implements backend.Backend.
func (b *Backend) CopyDtoD(dst, src backend.DevicePtr, n int64) error {
	return b.call("cuMemcpyDtoD_v2", func() result { return b.d.cuMemcpyDtoD(uintptr(dst), uintptr(src), uint64(n)) })
}

// Memset implements backend.Backend.
//
// cuMemsetD8 is asynchronous on the legacy default stream, which does not
// order against the non-blocking streams kernels run on: without the
// context synchronisation a NaN poison written before a launch could land
// after the kernel's stores (seen on the H200 at 8192 tokens).
func (b *Backend) Memset(p backend.DevicePtr, v byte, n int64) error {
	if err := b.call("cuMemsetD8_v2", func() result { return b.d.cuMemsetD8(uintptr(p), v, uint64(n)) }); err != nil {
		return err
	}
	return b.Synchronize()
}

// MemsetAsync implements backend.Backend with cuMemsetD8Async on s.
func (b *Backend) MemsetAsync(p backend.DevicePtr, v byte, n int64, s backend.Stream) error {
	return b.call("cuMemsetD8Async", func() result { return b.d.cuMemsetD8Async(uintptr(p), v, uint64(n), uintptr(s)) })
}

// LoadModule implements backend.Backend. PTX must be NUL-terminated for the
// driver; LoadModule adds the terminator.
func (b *Backend) LoadModule(img backend.Image) (backend.Module, error) {
	if img.Kind != backend.ImageCUBIN && img.Kind != backend.ImagePTX {
		return 0, fmt.Errorf("cuda: cannot load a %s image", img.Kind)
	}
	code := img.Code
	if img.Kind == backend.ImagePTX {
		code = append(append([]byte(nil), code...), 0)
	}
	if len(code) == 0 {
		return 0, fmt.Errorf("cuda: empty %s image", img.Kind)
	}
	var m uintptr
	err := b.call("cuModuleLoadData", func() result { return b.d.cuModuleLoadData(&m, unsafe.Pointer(&code[0])) })
	return backend.Module(m), err
}

// UnloadModule implements backend.Backend.
func (b *Backend) UnloadModule(m backend.Module) error {
	return b.call("cuModuleUnload", func() result { return b.d.cuModuleUnload(uintptr(m)) })
}

// Function implements backend.Backend.
func (b *Backend) Function(m backend.Module, name string) (backend.Function, error) {
	var f uintptr
	err := b.call("cuModuleGetFunction", func() result { return b.d.cuModuleGetFunction(&f, uintptr(m), name) })
	if err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	return backend.Function(f), nil
}

// FuncAttribute implements backend.Backend.
func (b *Backend) FuncAttribute(f backend.Function, attr backend.FuncAttribute) (int, error) {
	a, ok := funcAttrs[attr]
	if !ok {
		return 0, fmt.Errorf("cuda: unknown function attribute %d", attr)
	}
	var v int32
	err := b.call("cuFuncGetAttribute", func() result { return b.d.cuFuncGetAttribute(&v, a, uintptr(f)) })
	return int(v), err
}

// SetMaxDynamicSharedMemory implements backend.Backend.
func (b *Backend) SetMaxDynamicSharedMemory(f backend.Function, bytes int) error {
	return b.call("cuFuncSetAttribute", func() result {
		return b.d.cuFuncSetAttribute(uintptr(f), funcAttrs[backend.AttrMaxDynamicSharedSizeBytes], int32(bytes))
	})
}

// Launch implements backend.Backend with cuLaunchKernel called through
// dl.Call on integer arguments only, so it does not allocate.
func (b *Backend) Launch(f backend.Function, grid, block backend.Dim3, shared uint32, s backend.Stream, params unsafe.Pointer) error {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if r := dl.Call(b.d.ctxSetCurrent, b.ctx); r != 0 {
		return b.d.check("cuCtxSetCurrent", result(int32(r)))
	}
	r := dl.Call(b.d.launchKernel, uintptr(f),
		uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
		uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
		uintptr(shared), uintptr(s), uintptr(params), 0)
	if r != 0 {
		return b.d.check("cuLaunchKernel", result(int32(r)))
	}
	return nil
}

// NewStream implements backend.Backend (a non-blocking stream).
func (b *Backend) NewStream() (backend.Stream, error) {
	var s uintptr
	err := b.call("cuStreamCreate", func() result { return b.d.cuStreamCreate(&s, 1) })
	return backend.Stream(s), err
}

// DestroyStream implements backend.Backend.
func (b *Backend) DestroyStream(s backend.Stream) error {
	return b.call("cuStreamDestroy", func() result { return b.d.cuStreamDestroy(uintptr(s)) })
}

// SynchronizeStream implements backend.Backend.
func (b *Backend) SynchronizeStream(s backend.Stream) error {
	return b.call("cuStreamSynchronize", func() result { return b.d.cuStreamSynchronize(uintptr(s)) })
}

// NewEvent implements backend.Backend.
func (b *Backend) NewEvent() (backend.Event, error) {
	var e uintptr
	err := b.call("cuEventCreate", func() result { return b.d.cuEventCreate(&e, eventDefault) })
	return backend.Event(e), err
}

// RecordEvent implements backend.Backend.
func (b *Backend) RecordEvent(e backend.Event, s backend.Stream) error {
	return b.call("cuEventRecord", func() result { return b.d.cuEventRecord(uintptr(e), uintptr(s)) })
}

// SynchronizeEvent implements backend.Backend.
func (b *Backend) SynchronizeEvent(e backend.Event) error {
	return b.call("cuEventSynchronize", func() result { return b.d.cuEventSynchronize(uintptr(e)) })
}

// ElapsedMs implements backend.Backend.
func (b *Backend) ElapsedMs(start, end backend.Event) (float32, error) {
	var ms float32
	err := b.call("cuEventElapsedTime", func() result { return b.d.cuEventElapsedTime(&ms, uintptr(start), uintptr(end)) })
	return ms, err
}

// DestroyEvent implements backend.Backend.
func (b *Backend) DestroyEvent(e backend.Event) error {
	return b.call("cuEventDestroy", func() result { return b.d.cuEventDestroy(uintptr(e)) })
}

// Synchronize implements backend.Backend.
func (b *Backend) Synchronize() error {
	return b.call("cuCtxSynchronize", func() result { return b.d.cuCtxSynchronize() })
}

// Close implements backend.Backend: it releases the primary context.
func (b *Backend) Close() error {
	return b.d.check("cuDevicePrimaryCtxRelease", b.d.cuDevicePrimaryCtxRelease(b.dev))
}

// tensorMapScratch is the host memory one cuTensorMapEncodeTiled call
// reads and writes: the output, which the driver wants 64-byte aligned
// (map is over-allocated; the aligned 128 bytes are copied out), and the
// argument arrays. It holds no Go pointers, and the call keeps it alive.
type tensorMapScratch struct {
	dims      [backend.TensorMapMaxRank]uint64
	strides   [backend.TensorMapMaxRank - 1]uint64
	box       [backend.TensorMapMaxRank]uint32
	elemSteps [backend.TensorMapMaxRank]uint32
	m         [backend.TensorMapBytes + tensorMapAlign]byte
}

// tensorMapAlign is the alignment cuTensorMapEncodeTiled wants of its
// output (cuda.h declares CUtensorMap alignas(64)).
const tensorMapAlign = 64

// tensorMapScratches recycles scratch blocks so that encoding does not
// allocate (and needs no lock) once warm.
var tensorMapScratches = sync.Pool{New: func() any { return new(tensorMapScratch) }}

// errNoTensorMaps is EncodeTensorMap's error where the driver lacks
// cuTensorMapEncodeTiled.
var errNoTensorMaps = errors.New("cuda: the driver has no cuTensorMapEncodeTiled (CUDA 12 or later)")

// CanEncodeTensorMaps implements backend.TensorMapEncoder: true where the
// driver exports cuTensorMapEncodeTiled (CUDA 12 and later).
func (b *Backend) CanEncodeTensorMaps() bool { return b.d.tensorMapEncodeTiled != 0 }

// EncodeTensorMap implements backend.TensorMapEncoder with
// cuTensorMapEncodeTiled, called through dl.Call on integer arguments into
// a pooled scratch block, so it does not allocate unless it fails. The
// encoding is host work on its arguments alone: it needs no context.
func (b *Backend) EncodeTensorMap(out *[backend.TensorMapBytes]byte, m backend.TiledTensorMap) error {
	if b.d.tensorMapEncodeTiled == 0 {
		return errNoTensorMaps
	}
	if m.Rank < 1 || m.Rank > backend.TensorMapMaxRank {
		return fmt.Errorf("cuda: tensor map of rank %d; want 1 to %d", m.Rank, backend.TensorMapMaxRank)
	}
	s := tensorMapScratches.Get().(*tensorMapScratch)
	s.dims, s.strides, s.box, s.elemSteps = m.Dims, m.Strides, m.Box, m.ElementStrides
	base := uintptr(unsafe.Pointer(&s.m[0]))
	off := (tensorMapAlign - base%tensorMapAlign) % tensorMapAlign
	r := dl.Call(b.d.tensorMapEncodeTiled, base+off, uintptr(m.DataType), uintptr(m.Rank), uintptr(m.Address),
		uintptr(unsafe.Pointer(&s.dims[0])), uintptr(unsafe.Pointer(&s.strides[0])),
		uintptr(unsafe.Pointer(&s.box[0])), uintptr(unsafe.Pointer(&s.elemSteps[0])),
		uintptr(m.Interleave), uintptr(m.Swizzle), uintptr(m.L2Promotion), uintptr(m.OOBFill))
	copy(out[:], s.m[off:off+backend.TensorMapBytes])
	goruntime.KeepAlive(s)
	tensorMapScratches.Put(s)
	if int32(r) != 0 {
		return b.d.check("cuTensorMapEncodeTiled", result(int32(r)))
	}
	return nil
}
