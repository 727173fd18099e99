// Package backend defines the one interface every GPU runtime maskc can
// drive implements: CUDA (package runtime/cuda), HIP (runtime/hip) and the
// CPU-only fake used by unit tests (runtime/fake). It holds only types; it
// loads nothing.
//
// Handles (DevicePtr, Module, Function, Stream, Event) are plain integers so
// that passing them around never allocates and never hands Go pointers to C.
package backend

import (
	"fmt"
	"unsafe"
)

// DevicePtr is an address in device memory, as returned by Alloc. Zero is the
// null pointer.
type DevicePtr uintptr

// Module is a loaded code object (CUBIN, PTX or HSACO).
type Module uintptr

// Function is a kernel entry point in a loaded Module.
type Function uintptr

// Stream is a queue of device work. The zero Stream is the default (null)
// stream.
type Stream uintptr

// Event is a marker recorded in a stream, used to wait and to time work.
type Event uintptr

// Dim3 is a grid or block extent.
type Dim3 struct {
	// X, Y and Z are the extents; none may be 0 in a launch.
	X, Y, Z uint32
}

// Count returns X*Y*Z.
func (d Dim3) Count() uint64 { return uint64(d.X) * uint64(d.Y) * uint64(d.Z) }

// String formats d as "(x,y,z)".
func (d Dim3) String() string { return fmt.Sprintf("(%d,%d,%d)", d.X, d.Y, d.Z) }

// DeviceInfo describes the device a backend drives.
type DeviceInfo struct {
	// Backend is "cuda", "hip" or "fake".
	Backend string
	// Ordinal is the device index the backend opened.
	Ordinal int
	// Name is the marketing name, e.g. "NVIDIA H200".
	Name string
	// Arch is what the JIT compiler targets: "sm_90" on CUDA, the gfx name
	// such as "gfx942" on HIP.
	Arch string
	// MultiProcessors is the number of SMs (CUDA) or CUs (HIP).
	MultiProcessors int
	// WarpSize is 32 on NVIDIA and 64 on AMD CDNA.
	WarpSize int
	// SharedMemPerBlock is the static shared-memory limit of one block.
	SharedMemPerBlock int
	// SharedMemPerBlockOptin is the most shared memory a block may use
	// after opting in with SetMaxDynamicSharedMemory.
	SharedMemPerBlockOptin int
	// SharedMemPerMultiProcessor is the shared memory of one SM or CU.
	SharedMemPerMultiProcessor int
	// TotalMemory is the device memory in bytes.
	TotalMemory int64
	// DriverVersion is the runtime's version, e.g. "CUDA driver 13000".
	DriverVersion string
}

// ImageKind says what a compiler produced.
type ImageKind uint8

const (
	// ImageCUBIN is NVIDIA machine code for one architecture.
	ImageCUBIN ImageKind = iota + 1
	// ImagePTX is NVIDIA virtual ISA, compiled by the driver at load.
	ImagePTX
	// ImageHSACO is an AMD code object.
	ImageHSACO
	// ImageFake is the fake backend's image format.
	ImageFake
)

var imageKindNames = map[ImageKind]string{ImageCUBIN: "cubin", ImagePTX: "ptx", ImageHSACO: "hsaco", ImageFake: "fake"}

// String returns "cubin", "ptx", "hsaco" or "fake".
func (k ImageKind) String() string {
	if s, ok := imageKindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("ImageKind(%d)", uint8(k))
}

// Valid reports whether k is one of the kinds above.
func (k ImageKind) Valid() bool { _, ok := imageKindNames[k]; return ok }

// Image is a compiled kernel ready for LoadModule.
type Image struct {
	// Kind is the format of Code.
	Kind ImageKind
	// Code is the compiled bytes.
	Code []byte
}

// CompileRequest is one run-time compilation.
type CompileRequest struct {
	// Source is the complete, self-contained kernel source.
	Source string
	// Name is the file name the compiler prints in its log for lines not
	// redirected by #line, e.g. "maskc_kernel.cu".
	Name string
	// Arch is the target, e.g. "sm_90" or "gfx942".
	Arch string
	// Options are extra compiler options appended after the backend's own.
	Options []string
}

// CompileError is returned by Compiler.Compile when the compiler rejects
// the source. Log is the compiler's complete output.
type CompileError struct {
	// Compiler names the compiler, e.g. "nvrtc 13.0".
	Compiler string
	// Log is the compiler's diagnostic output.
	Log string
}

// Error returns the first line of the log.
func (e *CompileError) Error() string {
	first := e.Log
	for i, c := range first {
		if c == '\n' {
			first = first[:i]
			break
		}
	}
	return fmt.Sprintf("%s: compilation failed: %s", e.Compiler, first)
}

// Compiler compiles kernel source at run time (NVRTC, hiprtc).
type Compiler interface {
	// Version identifies the compiler exactly enough to key a cache, e.g.
	// "nvrtc 13.0".
	Version() string
	// BaseOptions are the options Compile always passes for arch, so that
	// a cache key can include them.
	BaseOptions(arch string) []string
	// Compile compiles req. A rejected source gives a *CompileError
	// holding the log.
	Compile(req CompileRequest) (Image, error)
}

// FuncAttribute selects a property of a kernel for FuncAttribute.
type FuncAttribute int

const (
	// AttrMaxThreadsPerBlock is the largest block the kernel can launch with.
	AttrMaxThreadsPerBlock FuncAttribute = iota
	// AttrSharedSizeBytes is the kernel's static shared memory.
	AttrSharedSizeBytes
	// AttrNumRegs is the registers used per thread.
	AttrNumRegs
	// AttrMaxDynamicSharedSizeBytes is the dynamic shared memory the kernel
	// may currently be launched with.
	AttrMaxDynamicSharedSizeBytes
)

// Backend is a GPU runtime driving one device. Methods are safe for
// concurrent use unless noted. Copies are synchronous; Launch and
// RecordEvent are asynchronous in their stream.
type Backend interface {
	// Device describes the device.
	Device() DeviceInfo
	// Compiler returns the run-time compiler for this backend, or an error
	// that says which libraries were searched when none loads.
	Compiler() (Compiler, error)

	// Alloc allocates n bytes of device memory.
	Alloc(n int64) (DevicePtr, error)
	// Free releases memory from Alloc.
	Free(p DevicePtr) error
	// CopyHtoD copies len(src) bytes from host to device.
	CopyHtoD(dst DevicePtr, src []byte) error
	// CopyDtoH copies len(dst) bytes from device to host.
	CopyDtoH(dst []byte, src DevicePtr) error
	// CopyDtoD copies n bytes within the device.
	CopyDtoD(dst, src DevicePtr, n int64) error
	// Memset sets n bytes at p to value and returns once they are set,
	// like the copies: work launched afterwards on any stream, a
	// non-blocking one included, sees the new bytes.
	Memset(p DevicePtr, value byte, n int64) error
	// MemsetAsync enqueues setting n bytes at p to value on stream s:
	// ordered with the kernels of s, asynchronous to the host. It must not
	// allocate.
	MemsetAsync(p DevicePtr, value byte, n int64, s Stream) error

	// LoadModule loads a compiled image.
	LoadModule(img Image) (Module, error)
	// UnloadModule releases a module and its functions.
	UnloadModule(m Module) error
	// Function looks up a kernel by its (extern "C") name.
	Function(m Module, name string) (Function, error)
	// FuncAttribute reads a property of a kernel.
	FuncAttribute(f Function, attr FuncAttribute) (int, error)
	// SetMaxDynamicSharedMemory lets f launch with up to bytes of dynamic
	// shared memory (needed above the 48 KiB default on NVIDIA).
	SetMaxDynamicSharedMemory(f Function, bytes int) error

	// Launch enqueues f on stream s. params is a C-style `void**`: an array
	// of pointers, one per kernel parameter, each to the parameter's value.
	// The memory must stay valid and unmoved for the duration of the call
	// (not after: the runtime copies the values). Launch must not allocate.
	Launch(f Function, grid, block Dim3, sharedBytes uint32, s Stream, params unsafe.Pointer) error

	// NewStream creates a stream.
	NewStream() (Stream, error)
	// DestroyStream releases a stream.
	DestroyStream(s Stream) error
	// SynchronizeStream waits until all work in s is done.
	SynchronizeStream(s Stream) error

	// NewEvent creates an event that records timing.
	NewEvent() (Event, error)
	// RecordEvent enqueues e in s.
	RecordEvent(e Event, s Stream) error
	// SynchronizeEvent waits until e has completed.
	SynchronizeEvent(e Event) error
	// ElapsedMs returns the time between two completed events.
	ElapsedMs(start, end Event) (float32, error)
	// DestroyEvent releases an event.
	DestroyEvent(e Event) error

	// Synchronize waits until all work on the device is done.
	Synchronize() error
	// Close releases the backend's context; the Backend must not be used
	// afterwards.
	Close() error
}

// TensorMapBytes is the size of an encoded tensor map (CUDA's CUtensorMap,
// hipsrc.TensorMapBytes): what a kernel receives by value and hands to the
// copy engine.
const TensorMapBytes = 128

// TensorMapMaxRank is the most dimensions a tiled tensor map can have.
const TensorMapMaxRank = 5

// The enums of a tiled tensor map. Their values are CUDA's (cuda.h), so
// that a CUDA backend passes them to the driver unchanged.
type (
	// TensorMapDataType is the element type (CUtensorMapDataType).
	TensorMapDataType int32
	// TensorMapInterleave is the interleaved layout (CUtensorMapInterleave).
	TensorMapInterleave int32
	// TensorMapSwizzle is the shared-memory swizzle of a box
	// (CUtensorMapSwizzle).
	TensorMapSwizzle int32
	// TensorMapL2Promotion is the L2 promotion of a copy
	// (CUtensorMapL2promotion).
	TensorMapL2Promotion int32
	// TensorMapOOBFill is what a copy reads out of bounds
	// (CUtensorMapFloatOOBfill).
	TensorMapOOBFill int32
)

const (
	// TensorMapFloat16 is CU_TENSOR_MAP_DATA_TYPE_FLOAT16: IEEE half.
	TensorMapFloat16 TensorMapDataType = 6
	// TensorMapBFloat16 is CU_TENSOR_MAP_DATA_TYPE_BFLOAT16.
	TensorMapBFloat16 TensorMapDataType = 9
)

// TensorMapInterleaveNone is CU_TENSOR_MAP_INTERLEAVE_NONE.
const TensorMapInterleaveNone TensorMapInterleave = 0

const (
	// TensorMapSwizzleNone is CU_TENSOR_MAP_SWIZZLE_NONE.
	TensorMapSwizzleNone TensorMapSwizzle = 0
	// TensorMapSwizzle32B is CU_TENSOR_MAP_SWIZZLE_32B.
	TensorMapSwizzle32B TensorMapSwizzle = 1
	// TensorMapSwizzle64B is CU_TENSOR_MAP_SWIZZLE_64B.
	TensorMapSwizzle64B TensorMapSwizzle = 2
	// TensorMapSwizzle128B is CU_TENSOR_MAP_SWIZZLE_128B.
	TensorMapSwizzle128B TensorMapSwizzle = 3
)

// TensorMapL2PromotionNone is CU_TENSOR_MAP_L2_PROMOTION_NONE.
const TensorMapL2PromotionNone TensorMapL2Promotion = 0

// TensorMapOOBFillNone is CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros.
const TensorMapOOBFillNone TensorMapOOBFill = 0

// TiledTensorMap is one tiled tensor map as cuTensorMapEncodeTiled takes
// it: a Rank-dimensional tensor in device memory read in boxes. Arrays hold
// dimensions innermost first; entries past Rank are ignored.
type TiledTensorMap struct {
	// DataType is the element type.
	DataType TensorMapDataType
	// Rank is the number of dimensions, 1 to TensorMapMaxRank.
	Rank int
	// Address is the tensor's first element.
	Address DevicePtr
	// Dims are the extents in elements.
	Dims [TensorMapMaxRank]uint64
	// Strides are the byte strides of dimensions 1 to Rank-1 (dimension 0
	// is contiguous): Rank-1 entries.
	Strides [TensorMapMaxRank - 1]uint64
	// Box is the extent of one copy in elements, per dimension.
	Box [TensorMapMaxRank]uint32
	// ElementStrides are the steps between elements copied, per dimension
	// (1: every element).
	ElementStrides [TensorMapMaxRank]uint32
	// Interleave, Swizzle, L2Promotion and OOBFill are the map's modes.
	Interleave  TensorMapInterleave
	Swizzle     TensorMapSwizzle
	L2Promotion TensorMapL2Promotion
	OOBFill     TensorMapOOBFill
}

// TensorMapEncoder is implemented by a Backend whose kernels can read
// tensors through the copy engine's tensor maps (CUDA 12 and later: the
// TMA of sm_90 and later). A launcher that finds it encodes the maps a
// kernel's launch asks for; without it (HIP, an older CUDA driver) it
// passes them zero and the kernel copies without them.
type TensorMapEncoder interface {
	// CanEncodeTensorMaps reports whether EncodeTensorMap can succeed at
	// all (false: the runtime has no encoder, e.g. a CUDA driver without
	// cuTensorMapEncodeTiled).
	CanEncodeTensorMaps() bool
	// EncodeTensorMap encodes m into out, the bytes a kernel receives as
	// its CUtensorMap. Where the runtime refuses m (its rules: a 16-byte
	// aligned address and strides, boxes of at most 256 elements per
	// dimension, ...) it returns an error and out is unspecified. It is
	// safe for concurrent use and allocates nothing unless it fails.
	EncodeTensorMap(out *[TensorMapBytes]byte, m TiledTensorMap) error
}
