// Code generated from hipsrc/abi.go by `go generate ./hipsrc`; DO NOT EDIT.
// The kernel ABI structs (hipsrc/MANIFEST.md documents them and their layout).
#ifndef MASKC_ABI_H
#define MASKC_ABI_H
#define MASKC_ABI_VERSION 3
#define MASKC_MAX_BUFFERS 8

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

// Captured tensors by slot (declaration order of the buffers the kernel reads): ptr[i] is
// the data (row-major, contiguous), dim[i] its extents (a 1-D buffer has dim[i][1] == 1).
struct MaskcBuffers {
  const void* ptr[8];
  long long dim[8][2];
};

#endif  // MASKC_ABI_H
