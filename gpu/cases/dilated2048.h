// Hand-written generated part: dilated causal window, q >= kv, q - kv < 2048, (q - kv) % 2 == 0.
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
// Python floor modulo (b > 0 here).
__device__ __forceinline__ long long case_floormod(long long a, long long b) {
  const long long r = a % b;
  return r < 0 ? r + b : r;
}
__device__ __forceinline__ bool maskc_mask(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                           long long KV, long long b, long long h, long long q, long long kv) {
  return q >= kv && q - kv < 2048 && case_floormod(q - kv, 2) == 0;
}
__device__ __forceinline__ void maskc_kv_range(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                               long long Q, long long KV, long long b, long long h, long long q_lo,
                                               long long q_hi, long long* lo, long long* hi) {
  *lo = q_lo - 2047;
  *hi = q_hi;
}
__device__ __forceinline__ bool maskc_tile_full(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                long long Q, long long KV, long long b, long long h, long long q_lo,
                                                long long q_hi, long long kv_lo, long long kv_hi) {
  return false;
}
