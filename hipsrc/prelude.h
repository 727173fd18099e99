// maskc generated-kernel prelude: the ONLY place with platform differences.
//
// A generated kernel is one self-contained source text: this prelude, then
// the generated configuration and device functions (codegen/), then the
// attention template (attn_fwd.h). It compiles with NVRTC (no system headers)
// for NVIDIA sm_80+ and with hipcc for AMD CDNA gfx90a / gfx94x / gfx950.
//
// What the prelude gives the kernel body:
//   - element type maskc_elem_t (raw 16-bit bf16 or fp16 bits) and packing
//     of two floats into a 32-bit pair (maskc_pack2<DT>);
//   - MASKC_WARP_SIZE (32 or 64), shuffles, votes, exp2/log2, -inf;
//   - the block shape: MASKC_NUM_WARPS warps of MASKC_WARP_ROWS query rows
//     (128 rows per block on both platforms), MASKC_MIN_BLOCKS blocks per
//     multiprocessor, and whether the Q strip lives in registers
//     (MASKC_Q_IN_REGS) or is re-read from shared memory;
//   - the swizzled shared-memory tile layout (maskc_smem_index) and a 16-byte
//     global->shared copy (cp.async on NVIDIA, plain loads on AMD);
//   - the warp tile-MMA interface. maskc_mma_qk adds a warp's Q.K^T logits
//     for a BN-key tile into MASKC_WARP_ROWS*BN/MASKC_WARP_SIZE floats per
//     lane; maskc_mma_pv adds P.V into MASKC_WARP_ROWS*D/MASKC_WARP_SIZE
//     floats. For a fragment of W columns (BN for logits, D for the output),
//     maskc_frag_col<W>(lane, i) is element i's column (one of the lane's
//     W/4 distinct columns: slot maskc_frag_colslot<W>(i), whose column is
//     maskc_colslot_col<W>(lane, slot)) and
//     maskc_frag_slot<W>(i) which of the lane's MASKC_ROW_SLOTS rows it is in;
//     maskc_slot_row(lane, slot) is that row in the warp's strip. Elements
//     2k and 2k+1 share a row and have adjacent columns. maskc_row_max and
//     maskc_row_sum reduce over the lanes that share a row.
//   NVIDIA: mma.sync.m16n8k16 (bf16/f16, fp32 accumulate) with ldmatrix;
//   MASKC_NV_MTILES m16 row blocks per warp (2: 4 warps, Q re-read from
//   shared memory, two blocks per SM; 1: 8 warps, Q in registers). With
//   MASKC_NV_WGMMA (sm_90a, Hopper): wgmma.m64nNk16, two warpgroups of 64
//   rows, 64-key tiles, both operands of Q.K^T and V from shared memory.
//   AMD: MFMA 16x16x16 (bf16_1k / f16) computing S^T = K.Q^T and O^T = V^T.P^T
//   so that the logits' accumulator layout is directly the P operand.
#ifndef MASKC_PRELUDE_H
#define MASKC_PRELUDE_H

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__) || \
    (defined(__HIPCC__) && !defined(__CUDACC__) && !defined(__CUDACC_RTC__))
#define MASKC_PLATFORM_AMD 1
#define MASKC_WARP_SIZE 64
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>  // hiprtc provides these declarations built in
#endif
#else
#define MASKC_PLATFORM_NVIDIA 1
#define MASKC_WARP_SIZE 32
#endif

#if defined(MASKC_PLATFORM_NVIDIA)
// MASKC_NV_WGMMA 1 selects the sm_90a warpgroup-MMA kernel; the host defines
// it (with -DMASKC_NV_WGMMA=1) exactly when it compiles for sm_90a, and
// launches the block shape below.
#ifndef MASKC_NV_WGMMA
#define MASKC_NV_WGMMA 0
#endif
#if MASKC_NV_WGMMA
// Two warpgroups of 64 rows; 64-key tiles; Q read by the MMA from shared memory.
#define MASKC_NV_MTILES 1
#define MASKC_WARP_ROWS 16
#define MASKC_NUM_WARPS 8
#ifndef MASKC_NV_WG_MIN_BLOCKS
#define MASKC_NV_WG_MIN_BLOCKS 2
#endif
#define MASKC_MIN_BLOCKS MASKC_NV_WG_MIN_BLOCKS
#define MASKC_Q_IN_REGS 0
#ifndef MASKC_BLOCK_N
#define MASKC_BLOCK_N 64
#endif
#define MASKC_SMEM_ALIGN 1024
#else
#define MASKC_NV_MTILES 2
#define MASKC_WARP_ROWS (16 * MASKC_NV_MTILES)
#define MASKC_NUM_WARPS (8 / MASKC_NV_MTILES)
#define MASKC_MIN_BLOCKS (MASKC_NV_MTILES == 2 ? 2 : 1)
#define MASKC_Q_IN_REGS (MASKC_NV_MTILES == 1)
#endif
// ldmatrix fragments in flight before their MMAs: K x4 loads per k-step
// group (up to BN/16) and V x4 loads per group (divides D/16).
#define MASKC_NV_K_GROUP 4
#define MASKC_NV_V_GROUP 4
#else
#define MASKC_WARP_ROWS 16
#define MASKC_NUM_WARPS 8
#define MASKC_MIN_BLOCKS 1
#define MASKC_Q_IN_REGS 1
#endif

typedef unsigned short maskc_elem_t;  // raw bf16 / fp16 bits
typedef unsigned int maskc_u32;

// Element types, the DT template argument of everything dtype-dependent (the
// generated part that selects one is compiled after this prelude).
enum { MASKC_BF16 = 0, MASKC_F16 = 1 };

#define MASKC_LOG2E 1.4426950408889634f
#define MASKC_LN2 0.6931471805599453f

// ---------------------------------------------------------------------------
#if defined(MASKC_PLATFORM_NVIDIA)

__device__ __forceinline__ float maskc_neg_inf() { return __int_as_float(0xff800000); }
__device__ __forceinline__ float maskc_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float maskc_log2(float x) { return log2f(x); }
__device__ __forceinline__ float maskc_shfl_xor(float x, int mask) {
  return __shfl_xor_sync(0xffffffffu, x, mask);
}
__device__ __forceinline__ int maskc_shfl_xor_int(int x, int mask) { return __shfl_xor_sync(0xffffffffu, x, mask); }
__device__ __forceinline__ bool maskc_block_any(bool p) { return __syncthreads_or(p) != 0; }
__device__ __forceinline__ bool maskc_block_all(bool p) { return __syncthreads_and(p) != 0; }
__device__ __forceinline__ bool maskc_warp_all(bool p) { return __all_sync(0xffffffffu, p) != 0; }
// How many lanes of the warp find probe(lane) true (all lanes must call it).
template <typename F>
__device__ __forceinline__ int maskc_warp_count(F probe) {
  return __popc(__ballot_sync(0xffffffffu, probe((int)(threadIdx.x % MASKC_WARP_SIZE))));
}

// Two floats -> packed pair, lo in the low 16 bits (round to nearest even).
template <int DT>
__device__ __forceinline__ maskc_u32 maskc_pack2(float lo, float hi) {
  maskc_u32 r;
  if (DT == MASKC_F16)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ maskc_u32 maskc_smem_addr(const void* p) {
  maskc_u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// 16-byte global->shared copy; when !valid the destination is zero-filled and
// src is not read (it must still be a mapped address).
__device__ __forceinline__ void maskc_copy16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(maskc_smem_addr(dst)), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void maskc_copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits for this thread's copies; with wgmma, also makes them visible to the
// tensor cores' (async proxy) reads once a barrier follows.
__device__ __forceinline__ void maskc_copy_wait_all() {
  asm volatile("cp.async.wait_group 0;" ::: "memory");
#if MASKC_NV_WGMMA
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

#else  // AMD -----------------------------------------------------------------

__device__ __forceinline__ float maskc_neg_inf() { return __int_as_float(0xff800000); }
__device__ __forceinline__ float maskc_exp2(float x) { return exp2f(x); }
__device__ __forceinline__ float maskc_log2(float x) { return log2f(x); }
__device__ __forceinline__ float maskc_shfl_xor(float x, int mask) { return __shfl_xor(x, mask, 64); }
__device__ __forceinline__ int maskc_shfl_xor_int(int x, int mask) { return __shfl_xor(x, mask, 64); }
__device__ __forceinline__ bool maskc_block_any(bool p) { return __syncthreads_or(p) != 0; }
__device__ __forceinline__ bool maskc_block_all(bool p) { return __syncthreads_and(p) != 0; }
__device__ __forceinline__ bool maskc_warp_all(bool p) { return __all(p) != 0; }
template <typename F>
__device__ __forceinline__ int maskc_warp_count(F probe) {
  return __popcll(__ballot(probe((int)(threadIdx.x % MASKC_WARP_SIZE))));
}

template <int DT>
__device__ __forceinline__ maskc_u32 maskc_to16(float x) {
  if (DT == MASKC_F16) {
    _Float16 h = (_Float16)x;
    return (maskc_u32)__builtin_bit_cast(unsigned short, h);
  }
  maskc_u32 u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                 // round to nearest even
  return u >> 16;
}
template <int DT>
__device__ __forceinline__ maskc_u32 maskc_pack2(float lo, float hi) {
  return maskc_to16<DT>(lo) | (maskc_to16<DT>(hi) << 16);
}

// Plain copies: AMD has no cp.async on these targets; loads complete at issue.
__device__ __forceinline__ void maskc_copy16(void* dst, const void* src, bool valid) {
  typedef unsigned int u32x4 __attribute__((ext_vector_type(4)));
  u32x4 v = {0u, 0u, 0u, 0u};
  if (valid) v = *(const u32x4*)src;
  *(u32x4*)dst = v;
}
__device__ __forceinline__ void maskc_copy_commit() {}
__device__ __forceinline__ void maskc_copy_wait_all() {}

#endif  // platform

// ---------------------------------------------------------------------------
// Shared-memory tiles: row-major [rows][D] with the 16-byte chunk index
// XOR-swizzled by (row % 8), so that 8 consecutive rows read at the same
// column hit distinct banks (ldmatrix and the copy stores are conflict-free).
template <int D>
__device__ __forceinline__ int maskc_smem_index(int row, int col) {
  return row * D + (((col >> 3) ^ (row & 7)) << 3) + (col & 7);
}

// Where the tile loader puts element (row, col) of a ROWS x D tile. With
// wgmma the tile is stored as D/64 column blocks of [ROWS][64], each row of
// a block 128 bytes with the same XOR swizzle: the layout the MMA's
// 128-byte-swizzle descriptors read (the block must be 1024-byte aligned).
// For D = 64 both layouts are the same.
template <int ROWS, int D>
__device__ __forceinline__ int maskc_tile_index(int row, int col) {
#if defined(MASKC_PLATFORM_NVIDIA) && MASKC_NV_WGMMA
  return (col >> 6) * (ROWS * 64) + row * 64 + ((((col & 63) >> 3) ^ (row & 7)) << 3) + (col & 7);
#else
  return maskc_smem_index<D>(row, col);
#endif
}
#ifndef MASKC_SMEM_ALIGN
#define MASKC_SMEM_ALIGN 16
#endif

// ---------------------------------------------------------------------------
// Warp tile-MMA interface, templated on the element type DT, the head dim D
// and the key-tile width BN. Per lane, the logits of a strip x key tile take
// MASKC_WARP_ROWS*BN/MASKC_WARP_SIZE floats and the output strip
// MASKC_WARP_ROWS*D/MASKC_WARP_SIZE floats.

#if defined(MASKC_PLATFORM_NVIDIA)

__device__ __forceinline__ void maskc_ldmatrix_x4(maskc_u32 (&r)[4], const maskc_elem_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(maskc_smem_addr(p)));
}
__device__ __forceinline__ void maskc_ldmatrix_x4_trans(maskc_u32 (&r)[4], const maskc_elem_t* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(maskc_smem_addr(p)));
}
// c[0..3] += A(16x16, row) . B(16x8, col)
template <int DT>
__device__ __forceinline__ void maskc_mma16816(float* c, maskc_u32 a0, maskc_u32 a1, maskc_u32 a2, maskc_u32 a3,
                                               maskc_u32 b0, maskc_u32 b1) {
  if (DT == MASKC_F16)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}


#if MASKC_NV_WGMMA
// sm_90a warpgroup MMA. The 4 warps of a warpgroup own 64 consecutive rows
// (warp w: rows 16 (w % 4) .. +15 of them), and the accumulators of
// m64nNk16 give each warp the m16n8 layout of mma.sync, N/8 times over: the
// fragment functions below serve both. S = Q.K^T reads Q and K through
// shared-memory descriptors (both K-major); O += P.V takes P from registers
// (the logits' accumulator layout is the A-operand layout, as in FA2) and V
// [keys][D] from shared memory, transposed by the MMA (MN-major B). The
// MMAs are asynchronous: fence, issue, commit, wait; the register fences
// keep the compiler from moving accumulator accesses across them.

// Shared-memory matrix descriptor, 128-byte swizzle: start address, leading
// and stride byte offsets (PTX ISA "Matrix Descriptor Format").
__device__ __forceinline__ unsigned long long maskc_wg_desc(const maskc_elem_t* p, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((maskc_smem_addr(p) & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void maskc_wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void maskc_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void maskc_wg_wait() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void maskc_wg_fence_regs(float* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// The warpgroup's Q rows: the MMA reads them from the shared Q tile.
template <int D>
struct MaskcQFrag {
  const maskc_elem_t* sQ;  // the warpgroup's first row in the first 64-column block
  int dblock;              // elements between the tile's 64-column blocks
};
template <int D, int ROWS>
__device__ __forceinline__ void maskc_load_q(MaskcQFrag<D>& q, const maskc_elem_t* sQ, int row0, int lane) {
  (void)lane;
  q.sQ = sQ + (row0 & ~63) * 64;
  q.dblock = ROWS * 64;
}

// Accumulator operand lists of the inline assembly: N/2 floats per thread.
#define MASKC_WG_ACC32(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define MASKC_WG_REGS32 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define MASKC_WG_ACC64(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define MASKC_WG_REGS64 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

// d += A . B, one m64n64k16 step: A and B from descriptors, both K-major.
template <int DT>
__device__ __forceinline__ void maskc_wgmma_ss_n64(float* d, unsigned long long da, unsigned long long db) {
#define MASKC_WG_SS(T)                                                                              \
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %34, 0;\n"                                                \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." T "." T " " MASKC_WG_REGS32                \
               ", %32, %33, p, 1, 1, 0, 0; }"                                                           \
               : MASKC_WG_ACC32(d)                                                                     \
               : "l"(da), "l"(db), "r"(1))
  if (DT == MASKC_F16)
    MASKC_WG_SS("f16");
  else
    MASKC_WG_SS("bf16");
#undef MASKC_WG_SS
}

// d += A . B, one m64n64k16 step: A from 4 registers (the mma.sync A
// layout), B from a descriptor, MN-major (transposed by the MMA).
template <int DT>
__device__ __forceinline__ void maskc_wgmma_rs_n64(float* d, const maskc_u32 (&a)[4], unsigned long long db) {
#define MASKC_WG_RS(T)                                                                              \
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %37, 0;\n"                                                \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." T "." T " " MASKC_WG_REGS32                \
               ", {%32, %33, %34, %35}, %36, p, 1, 1, 1; }"                                            \
               : MASKC_WG_ACC32(d)                                                                     \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1))
  if (DT == MASKC_F16)
    MASKC_WG_RS("f16");
  else
    MASKC_WG_RS("bf16");
#undef MASKC_WG_RS
}

// d += A . B, one m64n128k16 step: A and B from descriptors, both K-major.
template <int DT>
__device__ __forceinline__ void maskc_wgmma_ss_n128(float* d, unsigned long long da, unsigned long long db) {
#define MASKC_WG_SS(T)                                                                              \
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %66, 0;\n"                                                \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." T "." T " " MASKC_WG_REGS64                \
               ", %64, %65, p, 1, 1, 0, 0; }"                                                           \
               : MASKC_WG_ACC64(d)                                                                     \
               : "l"(da), "l"(db), "r"(1))
  if (DT == MASKC_F16)
    MASKC_WG_SS("f16");
  else
    MASKC_WG_SS("bf16");
#undef MASKC_WG_SS
}

// d += A . B, one m64n128k16 step: A from 4 registers (the mma.sync A
// layout), B from a descriptor, MN-major (transposed by the MMA).
template <int DT>
__device__ __forceinline__ void maskc_wgmma_rs_n128(float* d, const maskc_u32 (&a)[4], unsigned long long db) {
#define MASKC_WG_RS(T)                                                                              \
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %69, 0;\n"                                                \
               "wgmma.mma_async.sync.aligned.m64n128k16.f32." T "." T " " MASKC_WG_REGS64                \
               ", {%64, %65, %66, %67}, %68, p, 1, 1, 1; }"                                            \
               : MASKC_WG_ACC64(d)                                                                     \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1))
  if (DT == MASKC_F16)
    MASKC_WG_RS("f16");
  else
    MASKC_WG_RS("bf16");
#undef MASKC_WG_RS
}

template <int DT, int N>
__device__ __forceinline__ void maskc_wgmma_ss(float* d, unsigned long long da, unsigned long long db) {
  static_assert(N == 64 || N == 128, "wgmma tile width");
  if (N == 64)
    maskc_wgmma_ss_n64<DT>(d, da, db);
  else
    maskc_wgmma_ss_n128<DT>(d, da, db);
}
template <int DT, int N>
__device__ __forceinline__ void maskc_wgmma_rs(float* d, const maskc_u32 (&a)[4], unsigned long long db) {
  static_assert(N == 64 || N == 128, "wgmma tile width");
  if (N == 64)
    maskc_wgmma_rs_n64<DT>(d, a, db);
  else
    maskc_wgmma_rs_n128<DT>(d, a, db);
}

// s += Q_wg . K_tile^T for the warpgroup's 64 rows (q.sQ points at them).
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_qk(float* s, const MaskcQFrag<D>& q, const maskc_elem_t* sK, int lane) {
  (void)lane;
  maskc_wg_fence_regs<BN / 2>(s);
  maskc_wg_fence();
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    // k16 step kk: column block kk / 4, 32 bytes per step inside it; rows in
    // groups of 8 at 1024 bytes (the leading offset is unused when K-major).
    const unsigned long long da = maskc_wg_desc(q.sQ + (kk >> 2) * q.dblock + (kk & 3) * 16, 16, 1024);
    const unsigned long long db = maskc_wg_desc(sK + (kk >> 2) * (BN * 64) + (kk & 3) * 16, 16, 1024);
    maskc_wgmma_ss<DT, BN>(s, da, db);
  }
  maskc_wg_commit();
  maskc_wg_wait();
  maskc_wg_fence_regs<BN / 2>(s);
}

// o += P . V_tile: P (the logits' fragments, rounded to DT) from registers.
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_pv(float* o, const float* p, const maskc_elem_t* sV, int lane) {
  (void)lane;
  maskc_u32 a[BN / 16][4];
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    const float* pm = p + (2 * kk) * 4;
    a[kk][0] = maskc_pack2<DT>(pm[0], pm[1]);
    a[kk][1] = maskc_pack2<DT>(pm[2], pm[3]);
    a[kk][2] = maskc_pack2<DT>(pm[4], pm[5]);
    a[kk][3] = maskc_pack2<DT>(pm[6], pm[7]);
  }
  maskc_wg_fence_regs<D / 2>(o);
  maskc_wg_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    // keys kk*16 .. +15 (two 8-row groups at 1024 bytes); the head dim's
    // 64-column blocks are BN*128 bytes apart (leading offset, MN-major).
    const unsigned long long db = maskc_wg_desc(sV + kk * 16 * 64, BN * 128, 1024);
    maskc_wgmma_rs<DT, D>(o, a[kk], db);
  }
  maskc_wg_commit();
  maskc_wg_wait();
  maskc_wg_fence_regs<D / 2>(o);
}

#else  // mma.sync ---------------------------------------------------------------

// The warp's Q strip: MASKC_NV_MTILES m16 x D A operands in registers when
// MASKC_Q_IN_REGS, else the shared Q tile, re-read for every key tile.
template <int D>
struct MaskcQFrag {
  maskc_u32 a[MASKC_Q_IN_REGS ? D / 16 : 1][4];
  const maskc_elem_t* sQ;
  int row0;
};

// The lane's ldmatrix row address of A block (16 rows from row0, k-step kk).
template <int D>
__device__ __forceinline__ const maskc_elem_t* maskc_a_addr(const maskc_elem_t* sQ, int row0, int kk, int lane) {
  return sQ + maskc_smem_index<D>(row0 + (lane & 7) + ((lane >> 3) & 1) * 8, kk * 16 + (lane >> 4) * 8);
}

// Prepares rows [row0, row0 + MASKC_WARP_ROWS) of the swizzled Q tile.
template <int D, int ROWS>
__device__ __forceinline__ void maskc_load_q(MaskcQFrag<D>& q, const maskc_elem_t* sQ, int row0, int lane) {
  q.sQ = sQ;
  q.row0 = row0;
  if (MASKC_Q_IN_REGS) {
#pragma unroll
    for (int kk = 0; kk < (MASKC_Q_IN_REGS ? D / 16 : 0); ++kk) maskc_ldmatrix_x4(q.a[kk], maskc_a_addr<D>(sQ, row0, kk, lane));
  }
}

// s += Q_strip . K_tile^T, the K tile swizzled [BN][D]. Each K fragment
// feeds MASKC_NV_MTILES MMAs.
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_qk(float* s, const MaskcQFrag<D>& q, const maskc_elem_t* sK, int lane) {
  const int nr = (lane & 7) + (lane >> 4) * 8;
  const int kc = ((lane >> 3) & 1) * 8;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    maskc_u32 a[MASKC_NV_MTILES][4];
#pragma unroll
    for (int mi = 0; mi < MASKC_NV_MTILES; ++mi) {
      if (MASKC_Q_IN_REGS) {
#pragma unroll
        for (int r = 0; r < 4; ++r) a[mi][r] = q.a[MASKC_Q_IN_REGS ? kk : 0][r];
      } else {
        maskc_ldmatrix_x4(a[mi], maskc_a_addr<D>(q.sQ, q.row0 + 16 * mi, kk, lane));
      }
    }
    constexpr int kG = MASKC_NV_K_GROUP < BN / 16 ? MASKC_NV_K_GROUP : BN / 16;
    static_assert((BN / 16) % kG == 0, "K fragment groups tile the key tile");
#pragma unroll
    for (int j0 = 0; j0 < BN / 16; j0 += kG) {  // kG fragments in flight, then their MMAs
      maskc_u32 b[kG][4];
#pragma unroll
      for (int j = 0; j < kG; ++j)
        maskc_ldmatrix_x4(b[j], sK + maskc_smem_index<D>((j0 + j) * 16 + nr, kk * 16 + kc));
#pragma unroll
      for (int mi = 0; mi < MASKC_NV_MTILES; ++mi) {
        float* sm = s + mi * (BN / 2);
#pragma unroll
        for (int j = 0; j < kG; ++j) {
          const int jp = j0 + j;
          maskc_mma16816<DT>(sm + (2 * jp) * 4, a[mi][0], a[mi][1], a[mi][2], a[mi][3], b[j][0], b[j][1]);
          maskc_mma16816<DT>(sm + (2 * jp + 1) * 4, a[mi][0], a[mi][1], a[mi][2], a[mi][3], b[j][2], b[j][3]);
        }
      }
    }
  }
}

// o += P . V_tile: P is the probabilities in the logits' fragment layout
// (rounded to DT here, FA2 register reuse), the V tile swizzled [BN][D].
// Each V fragment feeds MASKC_NV_MTILES MMAs.
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_pv(float* o, const float* p, const maskc_elem_t* sV, int lane) {
  const int kr = (lane & 7) + ((lane >> 3) & 1) * 8;
  const int dc = (lane >> 4) * 8;
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    maskc_u32 a[MASKC_NV_MTILES][4];
#pragma unroll
    for (int mi = 0; mi < MASKC_NV_MTILES; ++mi) {
      const float* pm = p + mi * (BN / 2) + (2 * kk) * 4;
      a[mi][0] = maskc_pack2<DT>(pm[0], pm[1]);
      a[mi][1] = maskc_pack2<DT>(pm[2], pm[3]);
      a[mi][2] = maskc_pack2<DT>(pm[4], pm[5]);
      a[mi][3] = maskc_pack2<DT>(pm[6], pm[7]);
    }
    constexpr int kG = MASKC_NV_V_GROUP;
    static_assert((D / 16) % kG == 0, "V fragment groups tile the head dim");
#pragma unroll
    for (int j0 = 0; j0 < D / 16; j0 += kG) {  // kG fragments in flight, then their MMAs
      maskc_u32 b[kG][4];
#pragma unroll
      for (int j = 0; j < kG; ++j)
        maskc_ldmatrix_x4_trans(b[j], sV + maskc_smem_index<D>(kk * 16 + kr, (j0 + j) * 16 + dc));
#pragma unroll
      for (int mi = 0; mi < MASKC_NV_MTILES; ++mi) {
        float* om = o + mi * (D / 2);
#pragma unroll
        for (int j = 0; j < kG; ++j) {
          maskc_mma16816<DT>(om + (2 * (j0 + j)) * 4, a[mi][0], a[mi][1], a[mi][2], a[mi][3], b[j][0], b[j][1]);
          maskc_mma16816<DT>(om + (2 * (j0 + j) + 1) * 4, a[mi][0], a[mi][1], a[mi][2], a[mi][3], b[j][2], b[j][3]);
        }
      }
    }
  }
}

#endif  // MASKC_NV_WGMMA

// m16n8 accumulators: in a fragment of W columns, element i is in m16 block
// mi = i / (W/2), n-tile j = (i % (W/2)) / 4, and with e = i % 4 at
// (16 mi + g + 8 (e/2), 8 j + 2 t + e%2), g = lane/4, t = lane%4.
#define MASKC_ROW_SLOTS (2 * MASKC_NV_MTILES)
template <int W>
__device__ __forceinline__ int maskc_frag_slot(int i) { return 2 * (i / (W / 2)) + ((i >> 1) & 1); }
template <int W>
__device__ __forceinline__ int maskc_frag_col(int lane, int i) { return ((i % (W / 2)) >> 2) * 8 + (lane & 3) * 2 + (i & 1); }
// A lane's elements of a W-column fragment fall in W/4 distinct columns,
// its column slots: element i's, and the column of slot cs.
template <int W>
__device__ __forceinline__ int maskc_frag_colslot(int i) { return ((i % (W / 2)) >> 2) * 2 + (i & 1); }
template <int W>
__device__ __forceinline__ int maskc_colslot_col(int lane, int cs) { return (cs >> 1) * 8 + (lane & 3) * 2 + (cs & 1); }
__device__ __forceinline__ int maskc_slot_row(int lane, int slot) { return 16 * (slot >> 1) + (lane >> 2) + 8 * (slot & 1); }
__device__ __forceinline__ float maskc_row_max(float x) {
  x = fmaxf(x, maskc_shfl_xor(x, 1));
  return fmaxf(x, maskc_shfl_xor(x, 2));
}
__device__ __forceinline__ float maskc_row_sum(float x) {
  x += maskc_shfl_xor(x, 1);
  return x + maskc_shfl_xor(x, 2);
}
// The one lane of each row group that stores per-row results.
__device__ __forceinline__ bool maskc_row_leader(int lane) { return (lane & 3) == 0; }

#else  // AMD MFMA ------------------------------------------------------------

typedef short maskc_short4 __attribute__((ext_vector_type(4)));
typedef float maskc_float4 __attribute__((ext_vector_type(4)));
typedef _Float16 maskc_half4 __attribute__((ext_vector_type(4)));

// Q strip as the B operand of S^T = K.Q^T: lane holds Q[l%16][16kk + 4*(l/16) + e].
template <int D>
struct MaskcQFrag {
  maskc_short4 b[D / 16];
};

template <int DT>
__device__ __forceinline__ maskc_float4 maskc_mfma16(maskc_short4 a, maskc_short4 b, maskc_float4 c) {
  if (DT == MASKC_F16)
    return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(maskc_half4, a),
                                                 __builtin_bit_cast(maskc_half4, b), c, 0, 0, 0);
  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
}
__device__ __forceinline__ maskc_short4 maskc_lds4(const maskc_elem_t* p) { return *(const maskc_short4*)p; }

template <int D, int ROWS>
__device__ __forceinline__ void maskc_load_q(MaskcQFrag<D>& q, const maskc_elem_t* sQ, int row0, int lane) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    q.b[kk] = maskc_lds4(sQ + maskc_smem_index<D>(row0 + (lane & 15), kk * 16 + (lane >> 4) * 4));
}

// S^T tile j (kv 16j..16j+15) += K_j . Q^T: lane holds S[q = l%16][kv = 16j + 4*(l/16) + e].
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_qk(float* s, const MaskcQFrag<D>& q, const maskc_elem_t* sK, int lane) {
#pragma unroll
  for (int j = 0; j < BN / 16; ++j) {
    maskc_float4 c = {s[4 * j], s[4 * j + 1], s[4 * j + 2], s[4 * j + 3]};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      c = maskc_mfma16<DT>(maskc_lds4(sK + maskc_smem_index<D>(j * 16 + (lane & 15), kk * 16 + (lane >> 4) * 4)),
                           q.b[kk], c);
    s[4 * j] = c[0];
    s[4 * j + 1] = c[1];
    s[4 * j + 2] = c[2];
    s[4 * j + 3] = c[3];
  }
}

// O^T tile jd (d 16jd..16jd+15) += V^T . P^T: A = V^T read transposed from
// LDS, B = P^T straight from the logits' registers.
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_pv(float* o, const float* p, const maskc_elem_t* sV, int lane) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    const maskc_u32 lo = maskc_pack2<DT>(p[4 * kk], p[4 * kk + 1]);
    const maskc_u32 hi = maskc_pack2<DT>(p[4 * kk + 2], p[4 * kk + 3]);
    const maskc_short4 pb = {(short)(lo & 0xffffu), (short)(lo >> 16), (short)(hi & 0xffffu), (short)(hi >> 16)};
    const int kv = kk * 16 + (lane >> 4) * 4;
#pragma unroll
    for (int jd = 0; jd < D / 16; ++jd) {
      const int d = jd * 16 + (lane & 15);
      const maskc_short4 va = {(short)sV[maskc_smem_index<D>(kv, d)], (short)sV[maskc_smem_index<D>(kv + 1, d)],
                               (short)sV[maskc_smem_index<D>(kv + 2, d)], (short)sV[maskc_smem_index<D>(kv + 3, d)]};
      maskc_float4 c = {o[4 * jd], o[4 * jd + 1], o[4 * jd + 2], o[4 * jd + 3]};
      c = maskc_mfma16<DT>(va, pb, c);
      o[4 * jd] = c[0];
      o[4 * jd + 1] = c[1];
      o[4 * jd + 2] = c[2];
      o[4 * jd + 3] = c[3];
    }
  }
}

// 16x16 MFMA accumulators of S^T / O^T: element e of tile j is
// (row l%16, column 16j + 4*(l/16) + e); a lane holds one row.
#define MASKC_ROW_SLOTS 1
template <int W>
__device__ __forceinline__ int maskc_frag_slot(int) { return 0; }
template <int W>
__device__ __forceinline__ int maskc_frag_col(int lane, int i) { return (i >> 2) * 16 + (lane >> 4) * 4 + (i & 3); }
// Every element of a lane is in its own column: W/4 column slots.
template <int W>
__device__ __forceinline__ int maskc_frag_colslot(int i) { return i; }
template <int W>
__device__ __forceinline__ int maskc_colslot_col(int lane, int cs) { return maskc_frag_col<W>(lane, cs); }
__device__ __forceinline__ int maskc_slot_row(int lane, int) { return lane & 15; }
__device__ __forceinline__ float maskc_row_max(float x) {
  x = fmaxf(x, maskc_shfl_xor(x, 16));
  return fmaxf(x, maskc_shfl_xor(x, 32));
}
__device__ __forceinline__ float maskc_row_sum(float x) {
  x += maskc_shfl_xor(x, 16);
  return x + maskc_shfl_xor(x, 32);
}
// The one lane of each row group that stores per-row results.
__device__ __forceinline__ bool maskc_row_leader(int lane) { return lane < 16; }

#endif  // platform MMA

// Row in the warp's strip of element i of a W-column fragment.
template <int W>
__device__ __forceinline__ int maskc_frag_row(int lane, int i) { return maskc_slot_row(lane, maskc_frag_slot<W>(i)); }

#endif  // MASKC_PRELUDE_H
