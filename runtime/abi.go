package runtime

import (
	"structs"

	"github.com/maskc/maskc/hipsrc"
)

// The generated-kernel ABI is defined once, in hipsrc/abi.go (structs,
// entry points, grid rule, tile flags; hipsrc/MANIFEST.md documents it).
// cShape, cBuffers and cTensorMaps below are its Go mirror for passing the
// structs by value; TestCLayoutMatchesABI checks every field's offset and
// each size against hipsrc.ShapeStruct, hipsrc.BuffersStruct and
// hipsrc.TensorMapsStruct.

const (
	// AttentionEntry is the forward kernel's name.
	AttentionEntry = hipsrc.AttentionEntry
	// TileFlagsEntry is the PREPASS kernel's name.
	TileFlagsEntry = hipsrc.TileFlagsEntry
	// SegCheckEntry is the segments check's name (a descriptor's SegCheckEntry).
	SegCheckEntry = hipsrc.SegCheckEntry
	// MaxBuffers is the number of captured tensors MaskcBuffers holds.
	MaxBuffers = hipsrc.MaxBuffers
)

// The status words (hipsrc.StatusWords): AttentionKernel.Status returns
// word 0's sticky bits.
const (
	// StatusWords is the number of device words a kernel handle owns.
	StatusWords = hipsrc.StatusWords
	// StatusSegmentsUnsorted: a segments buffer's ids were not
	// non-decreasing along a row (the result is still the mask as written).
	StatusSegmentsUnsorted = hipsrc.StatusSegmentsUnsorted
	// StatusReadOutOfRange: a buffer read whose index depends on buffer
	// values fell outside the buffer's extents.
	StatusReadOutOfRange = hipsrc.StatusReadOutOfRange
)

// Tile flag values written by maskc_tile_flags.
const (
	TileEmpty   = hipsrc.TileEmpty
	TilePartial = hipsrc.TilePartial
	TileFull    = hipsrc.TileFull
)

// cShape is struct MaskcShape (hipsrc.ShapeStruct).
type cShape struct {
	_                                  structs.HostLayout
	B, H, HKV, Sq, Skv                 int32
	_                                  int32 // padding before the 8-byte-aligned strides
	QStride, KStride, VStride, OStride [3]int64
	Scale                              float32
	_                                  int32 // padding before the pointers
	Sink                               uintptr
	TileFlags                          uintptr
}

// cBuffers is struct MaskcBuffers (hipsrc.BuffersStruct).
type cBuffers struct {
	_   structs.HostLayout
	Ptr [MaxBuffers]uintptr
	Dim [MaxBuffers]Extents // dim[slot]: hipsrc.MaxBufferRank extents
	// The position frame (hipsrc.FrameFields); this runtime launches whole
	// attentions, so it leaves them zero.
	QOffset, KVOffset, HOffset, QTotal, KVTotal, HTotal int64
	// Status is the kernel handle's status words (hipsrc.StatusWords).
	Status uintptr
}

// cTensorMaps is struct MaskcTensorMaps (hipsrc.TensorMapsStruct): the
// tensor maps of Q, K, V (and the backward's dO), encoded where the
// launch says tensor_maps (OK = 1), else all zero. The C struct is
// alignas(64); this mirror has its size and offsets but Go's alignment,
// which is enough: a launch copies the value into the kernel's own,
// aligned parameter space.
type cTensorMaps struct {
	_             structs.HostLayout
	Q, K, V, Dout [hipsrc.TensorMapBytes]byte
	OK            int32
	_             [60]byte // padding to the 64-byte alignment: 576 bytes
}
