// Hand-written generated part: full attention (no mask, no score mod).
#define MASKC_SPARSITY_NONE 1
#ifndef MASKC_BUFFERS_DEFINED
#define MASKC_BUFFERS_DEFINED
struct MaskcBuffers {
  const void* ptr[8];
  long long dim[8][2];
};
#endif
