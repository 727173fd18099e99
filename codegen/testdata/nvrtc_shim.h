// The declarations NVRTC builds in, for clang's CUDA front end (no CUDA
// headers): TestClangCUDA compiles every generated source for the NVIDIA
// back ends with it (clang -include). Intrinsics map to clang's NVVM
// built-ins; math functions to its generic built-ins. Device code only.
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __restrict__ __restrict
// A kernel parameter read in place (clang 15 has no grid_constant; its copy
// of a by-value parameter compiles to the same accesses for these tests).
#define __grid_constant__
struct __dim3 { unsigned x, y, z; };  // uint3, as CUDA's
#define threadIdx (__dim3{(unsigned)__nvvm_read_ptx_sreg_tid_x(), (unsigned)__nvvm_read_ptx_sreg_tid_y(), (unsigned)__nvvm_read_ptx_sreg_tid_z()})
#define blockIdx (__dim3{(unsigned)__nvvm_read_ptx_sreg_ctaid_x(), (unsigned)__nvvm_read_ptx_sreg_ctaid_y(), (unsigned)__nvvm_read_ptx_sreg_ctaid_z()})
#define blockDim (__dim3{(unsigned)__nvvm_read_ptx_sreg_ntid_x(), (unsigned)__nvvm_read_ptx_sreg_ntid_y(), (unsigned)__nvvm_read_ptx_sreg_ntid_z()})
#define gridDim (__dim3{(unsigned)__nvvm_read_ptx_sreg_nctaid_x(), (unsigned)__nvvm_read_ptx_sreg_nctaid_y(), (unsigned)__nvvm_read_ptx_sreg_nctaid_z()})
__device__ int __syncthreads_or(int p) { return __nvvm_bar0_or(p); }
__device__ int __syncthreads_and(int p) { return __nvvm_bar0_and(p); }
__device__ void __syncwarp(unsigned m = 0xffffffffu) { __nvvm_bar_warp_sync(m); }
__device__ float __shfl_xor_sync(unsigned m, float x, int l) { return __nvvm_shfl_sync_bfly_f32(m, x, l, 0x1f); }
__device__ int __shfl_xor_sync(unsigned m, int x, int l) { return __nvvm_shfl_sync_bfly_i32(m, x, l, 0x1f); }
__device__ unsigned __shfl_sync(unsigned m, unsigned x, int l) { return (unsigned)__nvvm_shfl_sync_idx_i32(m, (int)x, l, 0x1f); }
__device__ int __ffs(unsigned x) { return __builtin_ffs((int)x); }
__device__ unsigned __ballot_sync(unsigned m, int p) { return __nvvm_vote_ballot_sync(m, p); }
__device__ int __all_sync(unsigned m, int p) { return __nvvm_vote_all_sync(m, p); }
__device__ int __any_sync(unsigned m, int p) { return __nvvm_vote_any_sync(m, p); }
__device__ int __popc(unsigned x) { return __builtin_popcount(x); }
__device__ int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
__device__ float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
__device__ float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
__device__ int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
__device__ unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
__device__ long long __float2ll_rn(float x) { return __nvvm_f2ll_rn(x); }
__device__ int __float2int_rn(float x) { return __nvvm_f2i_rn(x); }
__device__ int __float2int_rz(float x) { return __nvvm_f2i_rz(x); }
__device__ float atomicAdd(float* p, float x) { return __nvvm_atom_add_gen_f(p, x); }
__device__ unsigned long long atomicAdd(unsigned long long* p, unsigned long long x) { return __nvvm_atom_add_gen_ll((long long*)p, x); }
__device__ int atomicAdd(int* p, int x) { return __nvvm_atom_add_gen_i(p, x); }
__device__ unsigned atomicOr(unsigned* p, unsigned x) { return (unsigned)__nvvm_atom_or_gen_i((int*)p, (int)x); }
__device__ unsigned atomicAdd(unsigned* p, unsigned x) { return (unsigned)__nvvm_atom_add_gen_i((int*)p, (int)x); }
__device__ int atomicMin(int* p, int x) { return __nvvm_atom_min_gen_i(p, x); }
__device__ int atomicMax(int* p, int x) { return __nvvm_atom_max_gen_i(p, x); }
__device__ float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__device__ float fminf(float a, float b) { return __builtin_fminf(a, b); }
__device__ float log2f(float a) { return __builtin_log2f(a); }
__device__ float exp2f(float a) { return __builtin_exp2f(a); }
__device__ float logf(float a) { return __builtin_logf(a); }
__device__ float expf(float a) { return __builtin_expf(a); }
__device__ float sqrtf(float a) { return __builtin_sqrtf(a); }
__device__ float tanhf(float a) { return __builtin_tanhf(a); }
__device__ float fabsf(float a) { return __builtin_fabsf(a); }
__device__ float floorf(float a) { return __builtin_floorf(a); }
__device__ float powf(float a, float b) { return __builtin_powf(a, b); }
__device__ float fmodf(float a, float b) { return __builtin_fmodf(a, b); }
__device__ int min(int a, int b) { return a < b ? a : b; }
__device__ int max(int a, int b) { return a > b ? a : b; }
__device__ long long min(long long a, long long b) { return a < b ? a : b; }
__device__ long long max(long long a, long long b) { return a > b ? a : b; }
__device__ double exp(double a) { return __builtin_exp(a); }
__device__ double log(double a) { return __builtin_log(a); }
__device__ double sqrt(double a) { return __builtin_sqrt(a); }
__device__ double tanh(double a) { return __builtin_tanh(a); }
__device__ double fabs(double a) { return __builtin_fabs(a); }
__device__ double floor(double a) { return __builtin_floor(a); }
__device__ double ceil(double a) { return __builtin_ceil(a); }
__device__ float ceilf(float a) { return __builtin_ceilf(a); }
__device__ double trunc(double a) { return __builtin_trunc(a); }
__device__ float truncf(float a) { return __builtin_truncf(a); }
__device__ double round(double a) { return __builtin_round(a); }
__device__ float roundf(float a) { return __builtin_roundf(a); }
__device__ double exp2(double a) { return __builtin_exp2(a); }
__device__ double log2(double a) { return __builtin_log2(a); }
__device__ double sin(double a) { return __builtin_sin(a); }
__device__ float sinf(float a) { return __builtin_sinf(a); }
__device__ double cos(double a) { return __builtin_cos(a); }
__device__ float cosf(float a) { return __builtin_cosf(a); }
__device__ double tan(double a) { return __builtin_tan(a); }
__device__ float tanf(float a) { return __builtin_tanf(a); }
__device__ double rint(double a) { return __builtin_rint(a); }
__device__ float rintf(float a) { return __builtin_rintf(a); }
__device__ double nearbyint(double a) { return __builtin_nearbyint(a); }
__device__ float nearbyintf(float a) { return __builtin_nearbyintf(a); }
__device__ double log1p(double a) { return __builtin_log1p(a); }
__device__ float log1pf(float a) { return __builtin_log1pf(a); }
__device__ double expm1(double a) { return __builtin_expm1(a); }
__device__ float expm1f(float a) { return __builtin_expm1f(a); }
__device__ double erf(double a) { return __builtin_erf(a); }
__device__ float erff(float a) { return __builtin_erff(a); }
__device__ double fmod(double a, double b) { return __builtin_fmod(a, b); }
__device__ double pow(double a, double b) { return __builtin_pow(a, b); }
__device__ double copysign(double a, double b) { return __builtin_copysign(a, b); }
__device__ float copysignf(float a, float b) { return __builtin_copysignf(a, b); }
__device__ double fmax(double a, double b) { return __builtin_fmax(a, b); }
__device__ double fmin(double a, double b) { return __builtin_fmin(a, b); }
__device__ double atan2(double a, double b) { return __builtin_atan2(a, b); }
__device__ float atan2f(float a, float b) { return __builtin_atan2f(a, b); }
__device__ double remainder(double a, double b) { return __builtin_remainder(a, b); }
__device__ float remainderf(float a, float b) { return __builtin_remainderf(a, b); }
__device__ unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
__device__ unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
__device__ double __ll2double_rn(long long x) { return (double)x; }
__device__ float __ll2float_rn(long long x) { return (float)x; }
__device__ long long __double2ll_rn(double x) { return __nvvm_d2ll_rn(x); }
__device__ long long __double2ll_rz(double x) { return (long long)x; }
__device__ long long __float2ll_rz(float x) { return (long long)x; }
__device__ long long llrint(double x) { return (long long)__builtin_rint(x); }
__device__ void __trap() { __builtin_trap(); }
__device__ float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
