// Code generated from hipsrc/abi.go by `go generate ./hipsrc`; DO NOT EDIT.
// The kernel ABI structs (hipsrc/MANIFEST.md documents them and their layout).
#ifndef MASKC_ABI_H
#define MASKC_ABI_H
#define MASKC_ABI_VERSION 8
#define MASKC_MAX_BUFFERS 8
#define MASKC_MAX_BUFFER_RANK 8
// The status words MaskcBuffers.status points at: [0] sticky bits, [1 + slot] segments sorted.
#define MASKC_STATUS_WORDS (1 + MASKC_MAX_BUFFERS)
#define MASKC_STATUS_SEGMENTS_UNSORTED 1u  // a segments buffer's ids were not non-decreasing along a row (the promise was broken; the result is still the mask as written)
#define MASKC_STATUS_READ_OUT_OF_RANGE 2u  // a buffer read whose index depends on buffer values fell outside its extents (the read returned the documented value)

// Shapes and strides of one launch (the same value for both entry points).
struct MaskcShape {
  int B;                               // batch
  int H;                               // query heads
  int HKV;                             // key/value heads; query head h reads kv head h / (H / HKV)
  int Sq;                              // query length
  int Skv;                             // key/value length
  long long q_stride[3];               // elements, for (batch, head, seq)
  long long k_stride[3];
  long long v_stride[3];
  long long o_stride[3];
  float scale;                         // softmax scale applied to q.k (> 0)
  const float* sink;                   // nullptr or [H] fp32 sink logits
  const unsigned char* tile_flags;     // nullptr unless SparsityPrepass: maskc_tile_flags's output
};

// What the mask and score read: captured tensors by slot (declaration order of the buffers the
// kernel reads): ptr[i] is the data (row-major, contiguous), dim[i] its extents (outermost first;
// the extents past a buffer's rank are 1); and the position frame (hipsrc/frame.h): the launch computes the rows
// q_offset .. q_offset+Sq-1 against the keys kv_offset .. kv_offset+Skv-1 and the heads
// h_offset .. h_offset+H-1 of an attention of q_total x kv_total positions and h_total heads,
// which is what the mask and score see (all zero: the launch is the whole attention).
struct MaskcBuffers {
  const void* ptr[8];
  long long dim[8][8];
  long long q_offset;                  // global position of local query row 0 (>= 0)
  long long kv_offset;                 // global position of local key 0 (>= 0)
  long long h_offset;                  // global index of local query head 0 (>= 0, a multiple of H / HKV)
  long long q_total;                   // global query length Q the mask sees; 0: q_offset + Sq
  long long kv_total;                  // global key length KV the mask sees; 0: kv_offset + Skv
  long long h_total;                   // global query heads H the mask sees (HKV scales alike); 0: h_offset + H
  unsigned int* status;                // nullptr or MASKC_STATUS_WORDS launcher-owned words: [0] sticky MASKC_STATUS_* bits, [1 + slot] segments sorted (1) or not (0)
};

// The copy engine's maps of Q, K, V and dO for a launch that says tensor_maps (MANIFEST.md):
// CUtensorMap objects encoded by the launcher, ok = 1; else all zero, and the kernel copies by cp.async.
struct alignas(64) MaskcTensorMaps {
  unsigned char q[128];                // Q's 4-D map: D x Sq x H x B, boxes of 64 columns x tensor_maps.q_rows
  unsigned char k[128];                // K's: D x Skv x HKV x B, boxes of 64 columns x tensor_maps.kv_rows
  unsigned char v[128];                // V's, as K's
  unsigned char dout[128];             // the backward's dO, as Q's (strides do_stride); zero in the forward's
  int ok;                              // 1: the launch's maps are encoded; 0: not (any other launch)
};

#endif  // MASKC_ABI_H
