// maskc generated-kernel prelude: with the matrix-core back ends that
// follow it (mma_sync.h, mma_wgmma.h, mma_mfma.h), the only place with
// platform differences.
//
// A generated kernel is one self-contained source text (hipsrc.Assemble):
// this prelude, the back ends, abi.h, runtime.h, then the generated
// configuration and device functions (codegen/), then the attention
// template (attn_fwd.h). It compiles with NVRTC (no system headers)
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

// The head dim comes first in a generated source (hipsrc.Assemble): the
// block shape below depends on it.
#if !defined(MASKC_HEAD_DIM)
#error "maskc: MASKC_HEAD_DIM must be defined before the prelude (hipsrc.Assemble)"
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
#if MASKC_HEAD_DIM > 128  // 128 output floats per thread: one block per SM
#define MASKC_MIN_BLOCKS 1
#else
#define MASKC_MIN_BLOCKS 2
#endif
#define MASKC_Q_IN_REGS 0
#ifndef MASKC_BLOCK_N
#define MASKC_BLOCK_N 64
#endif
#elif MASKC_HEAD_DIM <= 128
#define MASKC_NV_MTILES 2
#define MASKC_WARP_ROWS (16 * MASKC_NV_MTILES)
#define MASKC_NUM_WARPS (8 / MASKC_NV_MTILES)
#define MASKC_MIN_BLOCKS (MASKC_NV_MTILES == 2 ? 2 : 1)
#define MASKC_Q_IN_REGS (MASKC_NV_MTILES == 1)
#else
// Head dims above 128: 8 warps of one m16 block (two would need D floats of
// output per lane), Q re-read from shared memory (its fragments would take
// D/4 more registers).
#define MASKC_NV_MTILES 1
#define MASKC_WARP_ROWS 16
#define MASKC_NUM_WARPS 8
#define MASKC_MIN_BLOCKS 1
#define MASKC_Q_IN_REGS 0
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

// x, made here in a vector register: through an empty volatile asm, which
// the compiler neither moves nor sees through, so that what computes x is not
// sunk past what follows the call (volatile asms keep their order) and what is
// computed from x is not hoisted above it, out of the loop around the call
// into scalar registers held through it (the kernels have none to spare).
template <typename T>
__device__ __forceinline__ T maskc_vgpr(T x) {
  asm volatile("" : "+v"(x));
  return x;
}

// x, the same on every lane, made where this is called: maskc_vgpr and back
// (readfirstlane). An "s" operand would do the same in one instruction less,
// but Debian's hipcc 5.2 (clang 15) takes some such values for divergent and
// stops ("illegal SGPR to VGPR copy").
__device__ __forceinline__ int maskc_uniform_here(int x) { return __builtin_amdgcn_readfirstlane(maskc_vgpr(x)); }

// Kernel arguments read where they are used. The compiler loads every
// kernel argument at the kernel's entry, so an argument used only after the
// main loop (the epilogue's output pointers and strides), or in a few
// instructions per iteration of it (the strides of a head's rows, the
// position frame of the tile classes), holds scalar registers through the
// whole loop, with what is derived from it (per-lane addresses in vector
// registers), and the kernels have none to spare: at the per-wave limit
// they spill (v_writelane).
// maskc_kernarg<T, F, I>() points at parameter I (a T) of kernel type F in
// the kernarg segment, through an opaque copy of the segment's pointer made
// where it is called, so what is read through it is loaded there (scalar
// loads from the scalar cache; inside a loop, once per iteration). The
// offset follows the AMDGPU code object ABI, the explicit arguments in order
// each at its own alignment; codegen's TestHipccMFMA checks the code
// objects' metadata against that rule.
#define MASKC_KERNARG_AS __attribute__((address_space(4)))
template <int I, class A0, class... A>
struct MaskcArgType {
  using type = typename MaskcArgType<I - 1, A...>::type;
};
template <class A0, class... A>
struct MaskcArgType<0, A0, A...> {
  using type = A0;
};
template <class F>
struct MaskcKernargs;
template <class... A>
struct MaskcKernargs<void(A...)> {
  template <int I>
  using type = typename MaskcArgType<I, A...>::type;
  static constexpr unsigned offset(int i) {
    constexpr unsigned size[] = {sizeof(A)...}, align[] = {alignof(A)...};
    unsigned off = 0;
    for (int j = 0; j < i; ++j) off = (off + align[j] - 1) / align[j] * align[j] + size[j];
    return (off + align[i] - 1) / align[i] * align[i];
  }
};
template <class T, class U>
struct MaskcSameType {
  static constexpr bool value = false;
};
template <class T>
struct MaskcSameType<T, T> {
  static constexpr bool value = true;
};
template <class T, class F, int I>
__device__ __forceinline__ const MASKC_KERNARG_AS T* maskc_kernarg() {
  static_assert(MaskcSameType<T, typename MaskcKernargs<F>::template type<I>>::value, "kernel parameter I is not a T");
  const MASKC_KERNARG_AS char* p = (const MASKC_KERNARG_AS char*)__builtin_amdgcn_kernarg_segment_ptr();
  asm volatile("" : "+s"(p));
  return (const MASKC_KERNARG_AS T*)(p + MaskcKernargs<F>::offset(I));
}

#endif  // platform

// ---------------------------------------------------------------------------
// Shared-memory tiles: row-major [rows][D] with the 16-byte chunk index
// XOR-swizzled by the row, so that 8 consecutive rows read at the same
// column hit distinct banks (ldmatrix and the copy stores are conflict-free).
// The XOR takes as many bits of the row as a row has chunks (MASKC_SWZ_MASK:
// 7 from 64 elements up, 3 for the backward's 32-wide P^T and dS^T tiles), so
// that every element stays in its own row: XOR-ing a 4-chunk row by row % 8
// wrote into the next row (the 32 x 32 backward tiles' gradients were wrong).
#define MASKC_SWZ_MASK(D) (((D) >= 64 ? 64 : (D)) / 8 - 1)
template <int D>
__device__ __forceinline__ int maskc_smem_index(int row, int col) {
  static_assert(D % 8 == 0 && (MASKC_SWZ_MASK(D) & (MASKC_SWZ_MASK(D) + 1)) == 0,
                "maskc: swizzled rows have a power-of-two number of 16-byte chunks below 8");
  return row * D + (((col >> 3) ^ (row & MASKC_SWZ_MASK(D))) << 3) + (col & 7);
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
// The dynamic shared memory's alignment: the wgmma descriptors' 1024 bytes.
#if defined(MASKC_PLATFORM_NVIDIA) && MASKC_NV_WGMMA
#define MASKC_SMEM_ALIGN 1024
#else
#define MASKC_SMEM_ALIGN 16
#endif

// ---------------------------------------------------------------------------
// Warp tile-MMA interface, templated on the element type DT, the head dim D
// and the key-tile width BN. Per lane, the logits of a strip x key tile take
// MASKC_WARP_ROWS*BN/MASKC_WARP_SIZE floats and the output strip
// MASKC_WARP_ROWS*D/MASKC_WARP_SIZE floats.
// The interface is implemented once per matrix-core back end, each in its
// own file after this prelude: mma_sync.h (NVIDIA mma.sync, and the m16n8
// fragment layout both NVIDIA kernels share), mma_wgmma.h (sm_90a wgmma),
// mma_mfma.h (AMD MFMA). attn_fwd.h derives maskc_frag_row from them.

#endif  // MASKC_PRELUDE_H
