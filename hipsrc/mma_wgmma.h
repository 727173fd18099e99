// maskc generated-kernel back end: NVIDIA sm_90a warpgroup MMA (wgmma).
//
// Follows prelude.h and mma_sync.h (whose m16n8 fragment functions give the
// accumulator layout); compiled in with -DMASKC_NV_WGMMA=1 (hipsrc.WGMMAOptions).
#ifndef MASKC_MMA_WGMMA_H
#define MASKC_MMA_WGMMA_H
#if defined(MASKC_PLATFORM_NVIDIA) && MASKC_NV_WGMMA

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
// maskc_wg_desc_at takes the shared-memory address itself.
__device__ __forceinline__ unsigned long long maskc_wg_desc_at(maskc_u32 addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ unsigned long long maskc_wg_desc(const maskc_elem_t* p, unsigned lbo, unsigned sbo) {
  return maskc_wg_desc_at(maskc_smem_addr(p), lbo, sbo);
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
#define MASKC_WG_ACC16(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define MASKC_WG_REGS16 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
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

// The products as functions name<DT>(d, ...) adding A . B into the N/2
// accumulator floats d of one SHAPE step (m64nNk16), in the element type DT:
// MASKC_WG_DEFINE_SS with A and B from descriptors (da, db), their transpose
// flags TNSP ("0, 0": both K-major; 1: MN-major, transposed by the MMA);
// MASKC_WG_DEFINE_RS with A from 4 registers (the mma.sync A layout) and B
// MN-major from a descriptor. ACC and REGS are the accumulators' operand
// and register lists; IA, IB, IP the operand numbers (after the N/2
// accumulators) of A, B and the predicate's input (scale-d: 1, accumulate).
#define MASKC_WG_PRODUCT(SHAPE, T, REGS, IA, IB, IP, TNSP) \
  "{ .reg .pred p; setp.ne.b32 p, " IP ", 0;\n" \
  "wgmma.mma_async.sync.aligned." SHAPE ".f32." T "." T " " REGS ", " IA ", " IB ", p, 1, 1, " TNSP "; }"
#define MASKC_WG_DEFINE_SS(name, SHAPE, ACC, REGS, IA, IB, IP, TNSP)                                             \
  template <int DT>                                                                                             \
  __device__ __forceinline__ void name(float* d, unsigned long long da, unsigned long long db) {                \
    if (DT == MASKC_F16)                                                                                        \
      asm volatile(MASKC_WG_PRODUCT(SHAPE, "f16", REGS, IA, IB, IP, TNSP) : ACC(d) : "l"(da), "l"(db), "r"(1));  \
    else                                                                                                        \
      asm volatile(MASKC_WG_PRODUCT(SHAPE, "bf16", REGS, IA, IB, IP, TNSP) : ACC(d) : "l"(da), "l"(db), "r"(1)); \
  }
#define MASKC_WG_DEFINE_RS(name, SHAPE, ACC, REGS, IA, IB, IP)                                                  \
  template <int DT>                                                                                             \
  __device__ __forceinline__ void name(float* d, const maskc_u32(&a)[4], unsigned long long db) {               \
    if (DT == MASKC_F16)                                                                                        \
      asm volatile(MASKC_WG_PRODUCT(SHAPE, "f16", REGS, IA, IB, IP, "1")                                        \
                   : ACC(d)                                                                                     \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));                              \
    else                                                                                                        \
      asm volatile(MASKC_WG_PRODUCT(SHAPE, "bf16", REGS, IA, IB, IP, "1")                                       \
                   : ACC(d)                                                                                     \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));                              \
  }

// maskc_wgmma_ss_nN: A and B K-major (S = Q.K^T), N = 32, 64, 128.
MASKC_WG_DEFINE_SS(maskc_wgmma_ss_n32, "m64n32k16", MASKC_WG_ACC16, MASKC_WG_REGS16, "%16", "%17", "%18", "0, 0")
MASKC_WG_DEFINE_SS(maskc_wgmma_ss_n64, "m64n64k16", MASKC_WG_ACC32, MASKC_WG_REGS32, "%32", "%33", "%34", "0, 0")
MASKC_WG_DEFINE_SS(maskc_wgmma_ss_n128, "m64n128k16", MASKC_WG_ACC64, MASKC_WG_REGS64, "%64", "%65", "%66", "0, 0")
// maskc_wgmma_rs_nN: A from registers (O += P.V), N = 64, 128, 256.
MASKC_WG_DEFINE_RS(maskc_wgmma_rs_n64, "m64n64k16", MASKC_WG_ACC32, MASKC_WG_REGS32, "{%32, %33, %34, %35}", "%36", "%37")
MASKC_WG_DEFINE_RS(maskc_wgmma_rs_n128, "m64n128k16", MASKC_WG_ACC64, MASKC_WG_REGS64, "{%64, %65, %66, %67}", "%68",
                   "%69")

// d += A . B, one m64n256k16 step (head dim 256's P.V): A from 4 registers
// (the mma.sync A layout), B from a descriptor, MN-major.
#define MASKC_WG_ACC128(d) \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
  "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define MASKC_WG_REGS128 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63," \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95," \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
MASKC_WG_DEFINE_RS(maskc_wgmma_rs_n256, "m64n256k16", MASKC_WG_ACC128, MASKC_WG_REGS128, "{%128, %129, %130, %131}",
                   "%132", "%133")

// Waits until at most N of this warpgroup's committed MMA groups are pending.
template <int N>
__device__ __forceinline__ void maskc_wg_wait_n() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void maskc_wg_fence_u32(maskc_u32* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

template <int DT, int N>
__device__ __forceinline__ void maskc_wgmma_ss(float* d, unsigned long long da, unsigned long long db) {
  static_assert(N == 32 || N == 64 || N == 128, "wgmma tile width");
  if constexpr (N == 32)
    maskc_wgmma_ss_n32<DT>(d, da, db);
  else if constexpr (N == 64)
    maskc_wgmma_ss_n64<DT>(d, da, db);
  else
    maskc_wgmma_ss_n128<DT>(d, da, db);
}
template <int DT, int N>
__device__ __forceinline__ void maskc_wgmma_rs(float* d, const maskc_u32 (&a)[4], unsigned long long db) {
  static_assert(N == 64 || N == 128 || N == 256, "wgmma tile width");
  if constexpr (N == 64)
    maskc_wgmma_rs_n64<DT>(d, a, db);
  else if constexpr (N == 128)
    maskc_wgmma_rs_n128<DT>(d, a, db);
  else
    maskc_wgmma_rs_n256<DT>(d, a, db);
}

// s += Q_wg . K_tile^T for the warpgroup's 64 rows (q.sQ points at them),
// in two halves: maskc_mma_qk_issue starts the MMAs (s must then not be
// read or written) and maskc_mma_qk_wait waits for them; maskc_mma_qk does
// both.
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_qk_issue(float* s, const MaskcQFrag<D>& q, const maskc_elem_t* sK) {
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
  maskc_wg_fence_regs<BN / 2>(s);
}
template <int BN>
__device__ __forceinline__ void maskc_mma_qk_wait(float* s) {
  maskc_wg_fence_regs<BN / 2>(s);
  maskc_wg_wait();
  maskc_wg_fence_regs<BN / 2>(s);
}
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_qk(float* s, const MaskcQFrag<D>& q, const maskc_elem_t* sK, int lane) {
  (void)lane;
  maskc_mma_qk_issue<DT, D, BN>(s, q, sK);
  maskc_mma_qk_wait<BN>(s);
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
#endif  // MASKC_PLATFORM_NVIDIA && MASKC_NV_WGMMA
#endif  // MASKC_MMA_WGMMA_H
