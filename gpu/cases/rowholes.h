// Test-only generated part: causal with every 7th row (q % 7 == 3) fully
// masked, no block sparsity: exercises O = 0 / LSE = -inf rows.
#define MASKC_HAS_MASK 1
#define MASKC_SPARSITY_NONE 1
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
  return case_floormod(q, 7) != 3 && kv <= q;
}
