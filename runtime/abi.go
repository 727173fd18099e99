package runtime

import "structs"

// The generated-kernel ABI shared with hipsrc/attn_fwd.h and codegen:
//
//	struct MaskcShape {
//	  int B, H, HKV, Sq, Skv;
//	  long long q_stride[3], k_stride[3], v_stride[3], o_stride[3];
//	  float scale;
//	  const float* sink;
//	  const unsigned char* tile_flags;
//	};
//	struct MaskcBuffers { const void* ptr[8]; long long dim[8][2]; };
//	extern "C" __global__ void maskc_attn_fwd(const T* Q, const T* K, const T* V, T* O, float* LSE,
//	                                          MaskcShape shape, MaskcBuffers buf);
//	extern "C" __global__ void maskc_tile_flags(MaskcShape shape, MaskcBuffers buf, unsigned char* flags);
//
// Launch geometry (as hipsrc/attn_fwd.h documents it): maskc_attn_fwd runs
// on grid (ceil(Sq/BLOCK_M), H, B) with NUM_THREADS threads and
// AttentionSpec.SharedBytes of dynamic shared memory. maskc_tile_flags runs
// on grid (ceil(Skv/BLOCK_N), ceil(Sq/BLOCK_M), 1) with NUM_THREADS threads
// and no dynamic shared memory, and writes one byte per tile at
// flags[((b'*FH + h')*QTiles + qTile)*KVTiles + kvTile], where b' (h') is b
// (h) if the mask reads it and 0 otherwise, and FH is H or 1 likewise;
// shape.tile_flags points at the same buffer, FB*FH*QTiles*KVTiles bytes.
//
// CDecls are the C declarations of the two ABI structs that cShape and
// cBuffers mirror; tests compare them with the kernel template's.
const CDecls = `
struct MaskcShape {
  int B, H, HKV, Sq, Skv;
  long long q_stride[3], k_stride[3], v_stride[3], o_stride[3];
  float scale;
  const float* sink;
  const unsigned char* tile_flags;
};
struct MaskcBuffers {
  const void* ptr[8];
  long long dim[8][2];
};
`

// cShape and cBuffers mirror the two structs byte for byte (the tests check
// every offset against the C layout on LP64).

const (
	// AttentionEntry is the forward kernel's name.
	AttentionEntry = "maskc_attn_fwd"
	// TileFlagsEntry is the PREPASS kernel's name.
	TileFlagsEntry = "maskc_tile_flags"
	// MaxBuffers is the number of captured tensors MaskcBuffers holds.
	MaxBuffers = 8
)

// Tile flag values written by maskc_tile_flags.
const (
	TileEmpty   = 0
	TilePartial = 1
	TileFull    = 2
)

// cShape is struct MaskcShape (144 bytes on LP64).
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

// cBuffers is struct MaskcBuffers (192 bytes on LP64).
type cBuffers struct {
	_   structs.HostLayout
	Ptr [MaxBuffers]uintptr
	Dim [MaxBuffers][2]int64
}
