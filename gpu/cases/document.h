// Hand-written generated part: packed documents, doc[q] == doc[kv] and q >= kv,
// doc a captured int64 buffer (buffer 0); block sparsity from the pre-pass.
#define MASKC_HAS_MASK 1
#define MASKC_SPARSITY_PREPASS 1
#define MASKC_MASK_USES_B 0
#define MASKC_MASK_USES_H 0
#ifndef MASKC_BUFFERS_DEFINED
#define MASKC_BUFFERS_DEFINED
struct MaskcBuffers {
  const void* ptr[8];
  long long dim[8][2];
};
#endif
__device__ __forceinline__ long long maskc_buf0_i64(const MaskcBuffers& buf, long long i) {
  const long long n = buf.dim[0][0];
  i = i < 0 ? i + n : i;              // Python negative indexing
  i = i < 0 ? 0 : (i >= n ? n - 1 : i);  // never out of bounds
  return ((const long long*)buf.ptr[0])[i];
}
__device__ __forceinline__ bool maskc_mask(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                           long long KV, long long b, long long h, long long q, long long kv) {
  return maskc_buf0_i64(buf, q) == maskc_buf0_i64(buf, kv) && q >= kv;
}
