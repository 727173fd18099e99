package runtime

import (
	"fmt"
	goruntime "runtime"
	"unsafe"

	"github.com/maskc/maskc/runtime/backend"
)

// Kernel is a launchable entry point of a Module.
type Kernel struct {
	d  *Device
	fn backend.Function
	// Name is the entry point's name.
	Name string
}

// LaunchConfig is a kernel's grid, block and dynamic shared memory.
type LaunchConfig struct {
	// Grid is the number of blocks, Block the threads per block.
	Grid, Block Dim3
	// SharedBytes is the dynamic shared memory per block.
	SharedBytes uint32
}

// Attribute reads a property of the kernel (registers, static shared
// memory, ...).
func (k *Kernel) Attribute(a backend.FuncAttribute) (int, error) {
	return k.d.FuncAttribute(k.fn, a)
}

// SetMaxDynamicSharedMemory allows launches with up to bytes of dynamic
// shared memory.
func (k *Kernel) SetMaxDynamicSharedMemory(bytes int) error {
	if err := k.d.SetMaxDynamicSharedMemory(k.fn, bytes); err != nil {
		return errorf(CodeSpec, err, "kernel %s: %d bytes of dynamic shared memory", k.Name, bytes)
	}
	return nil
}

// Launch enqueues the kernel on stream s with args. It allocates nothing
// unless it fails.
func (k *Kernel) Launch(s Stream, cfg LaunchConfig, args *Args) error {
	if err := k.d.Launch(k.fn, cfg.Grid, cfg.Block, cfg.SharedBytes, s, args.params()); err != nil {
		return errorf(CodeLaunch, err, "launching %s with grid %v block %v", k.Name, cfg.Grid, cfg.Block)
	}
	return nil
}

// Args is a kernel's argument block laid out as the `void**` array the
// launch APIs take, in pinned memory so that it may be handed to C. Set
// values, launch, set again: the runtime copies the values at launch, so
// one Args can serve every launch of a kernel from one goroutine.
type Args struct {
	ptrs   []unsafe.Pointer
	data   []uint64
	offs   []int
	sizes  []int
	pinner *goruntime.Pinner // separate object so a cleanup can unpin if Free is never called
}

// NewArgs makes an argument block for parameters of the given byte sizes
// (8 for a pointer, 4 for an int or float, the struct size for a struct
// passed by value). Each value is 8-byte aligned.
func NewArgs(sizes ...int) (*Args, error) {
	a := &Args{ptrs: make([]unsafe.Pointer, len(sizes)+1), offs: make([]int, len(sizes)), sizes: sizes}
	total := 0
	for i, n := range sizes {
		if n <= 0 || n > 4096 {
			return nil, fmt.Errorf("runtime: kernel parameter %d has size %d", i, n)
		}
		a.offs[i] = total
		total += (n + 7) &^ 7
	}
	a.data = make([]uint64, total/8+1)
	base := unsafe.Pointer(&a.data[0])
	for i := range sizes {
		a.ptrs[i] = unsafe.Add(base, a.offs[i])
	}
	a.pinner = new(goruntime.Pinner)
	a.pinner.Pin(&a.data[0])
	a.pinner.Pin(&a.ptrs[0])
	goruntime.AddCleanup(a, unpin, a.pinner)
	return a, nil
}

// Len is the number of parameters.
func (a *Args) Len() int { return len(a.sizes) }

func (a *Args) slot(i, size int) unsafe.Pointer {
	if a.sizes[i] != size {
		panic(fmt.Sprintf("runtime: kernel parameter %d has size %d, set with a %d-byte value", i, a.sizes[i], size))
	}
	return a.ptrs[i]
}

// SetPtr sets parameter i, which must be 8 bytes, to a device pointer.
func (a *Args) SetPtr(i int, p DevicePtr) { *(*uintptr)(a.slot(i, 8)) = uintptr(p) }

// SetInt32 sets 4-byte parameter i.
func (a *Args) SetInt32(i int, v int32) { *(*int32)(a.slot(i, 4)) = v }

// SetInt64 sets 8-byte parameter i.
func (a *Args) SetInt64(i int, v int64) { *(*int64)(a.slot(i, 8)) = v }

// SetFloat32 sets 4-byte parameter i.
func (a *Args) SetFloat32(i int, v float32) { *(*float32)(a.slot(i, 4)) = v }

// SetBytes sets parameter i to the bytes of a struct passed by value;
// len(b) must equal its size.
func (a *Args) SetBytes(i int, b []byte) { copy(unsafe.Slice((*byte)(a.slot(i, len(b))), len(b)), b) }

// params is the `void**` handed to Launch.
func (a *Args) params() unsafe.Pointer { return unsafe.Pointer(&a.ptrs[0]) }

// Free unpins the block; it must not be launched with afterwards.
func (a *Args) Free() { a.pinner.Unpin() }
