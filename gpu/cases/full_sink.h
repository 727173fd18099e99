// Test-only generated part: full attention with per-head sink logits.
#define MASKC_SPARSITY_NONE 1
#define MASKC_HAS_SINK 1
#ifndef MASKC_BUFFERS_DEFINED
#define MASKC_BUFFERS_DEFINED
struct MaskcBuffers {
  const void* ptr[8];
  long long dim[8][2];
};
#endif
