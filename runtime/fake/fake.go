// Package fake is a CPU-only backend.Backend for unit tests that must run
// without a GPU: device memory is host memory behind a fake address space
// (so out-of-bounds and use-after-free accesses are errors, not crashes),
// kernels are Go functions registered by name, the compiler only scans the
// source for entry points, #line directives and #error lines, and streams
// run work immediately.
package fake

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/maskc/maskc/runtime/backend"
)

// Launch is what a fake kernel receives.
type Launch struct {
	// Grid and Block are the launch extents.
	Grid, Block backend.Dim3
	// SharedBytes is the dynamic shared memory requested.
	SharedBytes uint32
	// Stream is the stream launched on.
	Stream backend.Stream
	// Params is the `void**` parameter array; read it with Param.
	Params unsafe.Pointer
}

// Kernel stands in for a device kernel. It runs synchronously inside
// Backend.Launch; mem resolves device pointers.
type Kernel func(mem *Backend, l Launch) error

// Param returns kernel parameter i of a launch as a T: the value the i-th
// pointer of the `void**` array points at.
func Param[T any](params unsafe.Pointer, i int) T {
	p := *(*unsafe.Pointer)(unsafe.Add(params, uintptr(i)*unsafe.Sizeof(uintptr(0))))
	return *(*T)(p)
}

// allocation is one live Alloc.
type allocation struct {
	base backend.DevicePtr
	data []byte
}

// Backend is the fake device. The zero value is not usable: call New.
type Backend struct {
	mu      sync.RWMutex
	allocs  []allocation // sorted by base
	next    backend.DevicePtr
	kernels map[string]Kernel
	modules map[backend.Module][]string
	nextMod backend.Module
	events  map[backend.Event]time.Time
	nextEv  backend.Event
	nextStr backend.Stream

	funcs   atomic.Pointer[[]Kernel] // Function handle i+1 is funcs[i]; copy on write
	funcsMu sync.Mutex

	launches atomic.Int64
	compiles atomic.Int64
	closed   atomic.Bool

	// The tensor map encoder (tensormap.go).
	tmMu    sync.Mutex
	tmOff   atomic.Bool
	tmFail  func(backend.TiledTensorMap) error
	tmCalls []TensorMapCall
}

var _ backend.Backend = (*Backend)(nil)

// New returns an empty fake device.
func New() *Backend {
	b := &Backend{
		next: 0x10000, kernels: map[string]Kernel{}, modules: map[backend.Module][]string{},
		events: map[backend.Event]time.Time{},
	}
	b.funcs.Store(&[]Kernel{})
	return b
}

// Register makes name available to Function in any module that declares it.
func (b *Backend) Register(name string, k Kernel) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kernels[name] = k
}

// Launches is the number of successful Launch calls so far.
func (b *Backend) Launches() int64 { return b.launches.Load() }

// Compiles is the number of Compile calls so far (cache tests count them).
func (b *Backend) Compiles() int64 { return b.compiles.Load() }

// Device implements backend.Backend.
func (b *Backend) Device() backend.DeviceInfo {
	return backend.DeviceInfo{
		Backend: "fake", Name: "fake CPU device", Arch: "fake", MultiProcessors: 1, WarpSize: 32,
		SharedMemPerBlock: 48 << 10, SharedMemPerBlockOptin: 227 << 10, SharedMemPerMultiProcessor: 228 << 10,
		TotalMemory: 1 << 30, DriverVersion: "fake 1",
	}
}

// Compiler implements backend.Backend.
func (b *Backend) Compiler() (backend.Compiler, error) { return Compiler{b: b}, nil }

// Alloc implements backend.Backend. Allocations are 256-byte aligned and
// separated by unmapped gaps.
func (b *Backend) Alloc(n int64) (backend.DevicePtr, error) {
	if n <= 0 || n > 1<<32 {
		return 0, fmt.Errorf("fake: alloc of %d bytes", n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.next
	b.next += backend.DevicePtr((n+255)/256*256 + 256)
	b.allocs = append(b.allocs, allocation{base: p, data: make([]byte, n)})
	return p, nil
}

// find returns the index of the allocation holding p, or -1. b.mu is held.
func (b *Backend) find(p backend.DevicePtr) int {
	i := sort.Search(len(b.allocs), func(i int) bool { return b.allocs[i].base > p }) - 1
	if i < 0 || p >= b.allocs[i].base+backend.DevicePtr(len(b.allocs[i].data)) {
		return -1
	}
	return i
}

// Free implements backend.Backend; freeing anything but an allocation's
// base is an error.
func (b *Backend) Free(p backend.DevicePtr) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := b.find(p)
	if i < 0 || b.allocs[i].base != p {
		return fmt.Errorf("fake: free of %#x, which is not an allocation", uintptr(p))
	}
	b.allocs = append(b.allocs[:i], b.allocs[i+1:]...)
	return nil
}

// Bytes returns the n bytes of device memory at p, or an error if they are
// not all inside one live allocation.
func (b *Backend) Bytes(p backend.DevicePtr, n int64) ([]byte, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	i := b.find(p)
	if i < 0 {
		return nil, fmt.Errorf("fake: access to unallocated address %#x", uintptr(p))
	}
	off := int64(p - b.allocs[i].base)
	if n < 0 || off+n > int64(len(b.allocs[i].data)) {
		return nil, fmt.Errorf("fake: access of %d bytes at %#x runs past its allocation", n, uintptr(p))
	}
	return b.allocs[i].data[off : off+n], nil
}

// CopyHtoD implements backend.Backend.
func (b *Backend) CopyHtoD(dst backend.DevicePtr, src []byte) error {
	d, err := b.Bytes(dst, int64(len(src)))
	if err != nil {
		return err
	}
	copy(d, src)
	return nil
}

// CopyDtoH implements backend.Backend.
func (b *Backend) CopyDtoH(dst []byte, src backend.DevicePtr) error {
	s, err := b.Bytes(src, int64(len(dst)))
	if err != nil {
		return err
	}
	copy(dst, s)
	return nil
}

// CopyDtoD implements backend.Backend.
func (b *Backend) CopyDtoD(dst, src backend.DevicePtr, n int64) error {
	s, err := b.Bytes(src, n)
	if err != nil {
		return err
	}
	d, err := b.Bytes(dst, n)
	if err != nil {
		return err
	}
	copy(d, s)
	return nil
}

// Memset implements backend.Backend.
func (b *Backend) Memset(p backend.DevicePtr, v byte, n int64) error {
	d, err := b.Bytes(p, n)
	if err != nil {
		return err
	}
	for i := range d {
		d[i] = v
	}
	return nil
}

// MemsetAsync implements backend.Backend: streams run work immediately.
func (b *Backend) MemsetAsync(p backend.DevicePtr, v byte, n int64, s backend.Stream) error {
	return b.Memset(p, v, n)
}

// LoadModule implements backend.Backend for images made by Compiler.
func (b *Backend) LoadModule(img backend.Image) (backend.Module, error) {
	names, err := parseImage(img)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextMod++
	b.modules[b.nextMod] = names
	return b.nextMod, nil
}

// UnloadModule implements backend.Backend.
func (b *Backend) UnloadModule(m backend.Module) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.modules[m]; !ok {
		return fmt.Errorf("fake: unload of unknown module %d", m)
	}
	delete(b.modules, m)
	return nil
}

// Function implements backend.Backend: name must be an entry point of the
// module and registered with Register.
func (b *Backend) Function(m backend.Module, name string) (backend.Function, error) {
	b.mu.RLock()
	names, ok := b.modules[m]
	k := b.kernels[name]
	b.mu.RUnlock()
	if !ok {
		return 0, fmt.Errorf("fake: unknown module %d", m)
	}
	found := false
	for _, n := range names {
		found = found || n == name
	}
	if !found {
		return 0, fmt.Errorf("fake: kernel %q not found in module (it has %v)", name, names)
	}
	if k == nil {
		return 0, fmt.Errorf("fake: kernel %q has no registered Go implementation", name)
	}
	b.funcsMu.Lock()
	defer b.funcsMu.Unlock()
	fs := append(append([]Kernel(nil), *b.funcs.Load()...), k)
	b.funcs.Store(&fs)
	return backend.Function(len(fs)), nil
}

// FuncAttribute implements backend.Backend with fixed values.
func (b *Backend) FuncAttribute(f backend.Function, attr backend.FuncAttribute) (int, error) {
	switch attr {
	case backend.AttrMaxThreadsPerBlock:
		return 1024, nil
	case backend.AttrMaxDynamicSharedSizeBytes:
		return 48 << 10, nil
	case backend.AttrSharedSizeBytes, backend.AttrNumRegs:
		return 0, nil
	}
	return 0, fmt.Errorf("fake: unknown function attribute %d", attr)
}

// SetMaxDynamicSharedMemory implements backend.Backend.
func (b *Backend) SetMaxDynamicSharedMemory(f backend.Function, bytes int) error {
	if bytes > b.Device().SharedMemPerBlockOptin {
		return fmt.Errorf("fake: %d bytes of shared memory exceed the device's %d", bytes, b.Device().SharedMemPerBlockOptin)
	}
	return nil
}

// Launch implements backend.Backend: it runs the kernel now. It takes no
// lock and allocates nothing beyond what the kernel itself does.
func (b *Backend) Launch(f backend.Function, grid, block backend.Dim3, shared uint32, s backend.Stream, params unsafe.Pointer) error {
	fs := *b.funcs.Load()
	if f == 0 || int(f) > len(fs) {
		return errBadFunction
	}
	if grid.Count() == 0 || block.Count() == 0 || block.Count() > 1024 {
		return errBadLaunch
	}
	if err := fs[f-1](b, Launch{Grid: grid, Block: block, SharedBytes: shared, Stream: s, Params: params}); err != nil {
		return err
	}
	b.launches.Add(1)
	return nil
}

var (
	errBadFunction = fmt.Errorf("fake: launch of an unknown function")
	errBadLaunch   = fmt.Errorf("fake: invalid launch configuration")
)

// NewStream implements backend.Backend.
func (b *Backend) NewStream() (backend.Stream, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextStr++
	return b.nextStr, nil
}

// DestroyStream implements backend.Backend.
func (b *Backend) DestroyStream(s backend.Stream) error { return nil }

// SynchronizeStream implements backend.Backend; fake work is synchronous.
func (b *Backend) SynchronizeStream(s backend.Stream) error { return nil }

// NewEvent implements backend.Backend.
func (b *Backend) NewEvent() (backend.Event, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextEv++
	b.events[b.nextEv] = time.Time{}
	return b.nextEv, nil
}

// RecordEvent implements backend.Backend: it stores the current time.
func (b *Backend) RecordEvent(e backend.Event, s backend.Stream) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.events[e]; !ok {
		return fmt.Errorf("fake: unknown event %d", e)
	}
	b.events[e] = time.Now()
	return nil
}

// SynchronizeEvent implements backend.Backend.
func (b *Backend) SynchronizeEvent(e backend.Event) error { return nil }

// ElapsedMs implements backend.Backend; both events must have been recorded.
func (b *Backend) ElapsedMs(start, end backend.Event) (float32, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	t0, t1 := b.events[start], b.events[end]
	if t0.IsZero() || t1.IsZero() {
		return 0, fmt.Errorf("fake: elapsed time of an unrecorded event")
	}
	return float32(t1.Sub(t0).Seconds() * 1e3), nil
}

// DestroyEvent implements backend.Backend.
func (b *Backend) DestroyEvent(e backend.Event) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.events, e)
	return nil
}

// Synchronize implements backend.Backend.
func (b *Backend) Synchronize() error { return nil }

// Close implements backend.Backend.
func (b *Backend) Close() error {
	b.closed.Store(true)
	return nil
}

// Closed reports whether Close was called.
func (b *Backend) Closed() bool { return b.closed.Load() }
