// Test-only generated part: a head- and batch-dependent mask through the
// pre-pass: kv <= q + 64 * h - 300 * b (whole rows masked for b = 1, h = 0).
#define MASKC_HAS_MASK 1
#define MASKC_SPARSITY_PREPASS 1
#ifndef MASKC_BUFFERS_DEFINED
#define MASKC_BUFFERS_DEFINED
struct MaskcBuffers {
  const void* ptr[8];
  long long dim[8][2];
};
#endif
__device__ __forceinline__ bool maskc_mask(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                           long long KV, long long b, long long h, long long q, long long kv) {
  return kv <= q + 64 * h - 300 * b;
}
