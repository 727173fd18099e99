// Hand-written generated part: causal, q >= kv.
#define MASKC_HAS_MASK 1
#define MASKC_SPARSITY_ANALYTIC 1
#define MASKC_MASK_USES_B 0
#define MASKC_MASK_USES_H 0
#ifndef MASKC_BUFFERS_DEFINED
#define MASKC_BUFFERS_DEFINED
struct MaskcBuffers {
  const void* ptr[8];
  long long dim[8][2];
};
#endif
__device__ __forceinline__ bool maskc_mask(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                           long long KV, long long b, long long h, long long q, long long kv) {
  return q >= kv;
}
__device__ __forceinline__ void maskc_kv_range(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                               long long Q, long long KV, long long b, long long h, long long q_lo,
                                               long long q_hi, long long* lo, long long* hi) {
  *lo = 0;
  *hi = q_hi;
}
__device__ __forceinline__ bool maskc_tile_full(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                long long Q, long long KV, long long b, long long h, long long q_lo,
                                                long long q_hi, long long kv_lo, long long kv_hi) {
  return q_lo >= kv_hi - 1;
}
