// ---------------------------------------------------------------------------
// maskc generated-code runtime: the helpers that give generated mask/score
// functions Python's semantics.
// Self-contained (no headers) so that it compiles with hipcc, nvcc, NVRTC and,
// for maskc's own tests, a host C++ compiler.
// ---------------------------------------------------------------------------
#ifndef MASKC_CODEGEN_RUNTIME
#define MASKC_CODEGEN_RUNTIME

// struct MaskcBuffers comes from abi.h, which precedes this file.

// Python floor division on ints. Python raises on a zero divisor; a kernel
// cannot, so x // 0 is 0. x // -1 is computed without the INT64_MIN trap.
__device__ __forceinline__ long long maskc_py_floordiv(long long a, long long b) {
  if (b == 0) return 0;
  if (b == -1) return (long long)(0ULL - (unsigned long long)a);
  long long d = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) d -= 1;
  return d;
}

// The same on ints whose operands and result are known to be int32
// (codegen's interval analysis; INT_MIN // -1 is never narrowed).
__device__ __forceinline__ int maskc_py_floordiv(int a, int b) {
  if (b == 0) return 0;
  if (b == -1) return (int)(0u - (unsigned)a);
  int d = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) d -= 1;
  return d;
}
__device__ __forceinline__ int maskc_py_floormod(int a, int b) {
  if (b == 0 || b == -1) return 0;
  int r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python a // c and a % c for a constant c > 0, branch-free: C truncates
// toward zero, so a negative remainder r (only when a < 0) means the floor
// quotient is one lower and the floor remainder is r + c.
__device__ __forceinline__ int maskc_py_floordiv_pos(int a, int c) {
  const int r = a % c;
  return a / c - (r < 0);
}
__device__ __forceinline__ int maskc_py_floormod_pos(int a, int c) {
  const int r = a % c;
  return r + (r < 0 ? c : 0);
}
__device__ __forceinline__ long long maskc_py_floordiv_pos(long long a, long long c) {
  const long long r = a % c;
  return a / c - (r < 0);
}
__device__ __forceinline__ long long maskc_py_floormod_pos(long long a, long long c) {
  const long long r = a % c;
  return r + (r < 0 ? c : 0);
}

// Python floor modulo on ints: the result has the divisor's sign; x % 0 is 0.
__device__ __forceinline__ long long maskc_py_floormod(long long a, long long b) {
  if (b == 0 || b == -1) return 0;
  long long r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Python float floor modulo (float_rem in CPython): fmod, then moved to the
// divisor's sign; a zero result takes the divisor's sign.
__device__ __forceinline__ float maskc_py_floormod(float a, float b) {
  float r = fmodf(a, b);
  if (r != 0.0f) {
    if ((b < 0.0f) != (r < 0.0f)) r += b;
  } else {
    r = copysignf(0.0f, b);
  }
  return r;
}
__device__ __forceinline__ double maskc_py_floormod(double a, double b) {
  double r = fmod(a, b);
  if (r != 0.0) {
    if ((b < 0.0) != (r < 0.0)) r += b;
  } else {
    r = copysign(0.0, b);
  }
  return r;
}

// Python float floor division (float_floor_div in CPython); a zero divisor
// gives a / b (inf or nan) as torch does, where Python raises.
__device__ __forceinline__ float maskc_py_floordiv(float a, float b) {
  if (b == 0.0f) return a / b;
  float m = fmodf(a, b);
  float d = (a - m) / b;
  if (m != 0.0f && ((b < 0.0f) != (m < 0.0f))) d -= 1.0f;
  if (d == 0.0f) return copysignf(0.0f, a / b);
  float f = floorf(d);
  if (d - f > 0.5f) f += 1.0f;
  return f;
}
__device__ __forceinline__ double maskc_py_floordiv(double a, double b) {
  if (b == 0.0) return a / b;
  double m = fmod(a, b);
  double d = (a - m) / b;
  if (m != 0.0 && ((b < 0.0) != (m < 0.0))) d -= 1.0;
  if (d == 0.0) return copysign(0.0, a / b);
  double f = floor(d);
  if (d - f > 0.5) f += 1.0;
  return f;
}

// x ** e for an int x and a constant e >= 0 (wraps on int64 overflow).
__device__ __forceinline__ long long maskc_py_ipow(long long x, int e) {
  unsigned long long r = 1, base = (unsigned long long)x;
  while (e > 0) {
    if (e & 1) r *= base;
    base *= base;
    e >>= 1;
  }
  return (long long)r;
}

// Python's min(x, y) and max(x, y): x unless y is strictly smaller (larger).
__device__ __forceinline__ long long maskc_py_min(long long x, long long y) { return y < x ? y : x; }
__device__ __forceinline__ long long maskc_py_max(long long x, long long y) { return y > x ? y : x; }
__device__ __forceinline__ int maskc_py_min(int x, int y) { return y < x ? y : x; }
__device__ __forceinline__ int maskc_py_max(int x, int y) { return y > x ? y : x; }
__device__ __forceinline__ float maskc_py_min(float x, float y) { return y < x ? y : x; }
__device__ __forceinline__ float maskc_py_max(float x, float y) { return y > x ? y : x; }
__device__ __forceinline__ double maskc_py_min(double x, double y) { return y < x ? y : x; }
__device__ __forceinline__ double maskc_py_max(double x, double y) { return y > x ? y : x; }

__device__ __forceinline__ long long maskc_py_abs(long long x) { return x < 0 ? (long long)(0ULL - (unsigned long long)x) : x; }
__device__ __forceinline__ int maskc_py_abs(int x) { return x < 0 ? -x : x; }  // never INT_MIN (intrange.go)
__device__ __forceinline__ float maskc_py_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double maskc_py_abs(double x) { return fabs(x); }

// Python's int() of a float, as dsl.TruncInt: toward zero, NaN to 0, and
// beyond the int64 range (infinities included) the nearest bound, where a
// plain C cast would be undefined.
__device__ __forceinline__ long long maskc_py_int(double x) {
  return x != x ? 0LL
       : x >= 9223372036854775807.0 ? 9223372036854775807LL
       : x <= -9223372036854775808.0 ? (-9223372036854775807LL - 1)
       : (long long)x;
}
__device__ __forceinline__ long long maskc_py_int(float x) { return maskc_py_int((double)x); }

__device__ __forceinline__ float maskc_py_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ double maskc_py_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

// IEEE infinity and quiet NaN without <cmath> (NVRTC has no system headers).
__device__ __forceinline__ float maskc_inf_f32() {
  union { unsigned int u; float f; } x;
  x.u = 0x7f800000u;
  return x.f;
}
__device__ __forceinline__ double maskc_inf_f64() {
  union { unsigned long long u; double f; } x;
  x.u = 0x7ff0000000000000ULL;
  return x.f;
}
__device__ __forceinline__ float maskc_nan_f32() {
  union { unsigned int u; float f; } x;
  x.u = 0x7fc00000u;
  return x.f;
}
__device__ __forceinline__ double maskc_nan_f64() {
  union { unsigned long long u; double f; } x;
  x.u = 0x7ff8000000000000ULL;
  return x.f;
}

// Half-precision buffer elements, converted from their bits (exactly).
__device__ __forceinline__ float maskc_bf16_to_f32(unsigned short bits) {
  union { unsigned int u; float f; } x;
  x.u = ((unsigned int)bits) << 16;
  return x.f;
}
__device__ __forceinline__ float maskc_f16_to_f32(unsigned short bits) {
  const unsigned int sign = ((unsigned int)bits & 0x8000u) << 16;
  const unsigned int e = ((unsigned int)bits >> 10) & 0x1fu;
  const unsigned int m = (unsigned int)bits & 0x3ffu;
  union { unsigned int u; float f; } x;
  if (e == 0x1fu) {
    x.u = sign | 0x7f800000u | (m << 13);
  } else if (e != 0u) {
    x.u = sign | ((e + 112u) << 23) | (m << 13);
  } else {
    x.f = (float)m * 5.9604644775390625e-8f;  // subnormal: m * 2^-24
    x.u |= sign;
  }
  return x.f;
}

#endif  // MASKC_CODEGEN_RUNTIME
