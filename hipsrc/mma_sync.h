// maskc generated-kernel back end: NVIDIA mma.sync (sm_80 and later).
//
// Follows prelude.h. The ldmatrix and mma.sync.m16n8k16 helpers and the
// m16n8 accumulator fragment functions at the end serve both NVIDIA
// kernels (the wgmma accumulators have the same per-warp layout, see
// mma_wgmma.h); the warp tile-MMA functions are the mma.sync kernel's.
#ifndef MASKC_MMA_SYNC_H
#define MASKC_MMA_SYNC_H
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


#if !MASKC_NV_WGMMA

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

#endif  // !MASKC_NV_WGMMA

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


#endif  // MASKC_PLATFORM_NVIDIA
#endif  // MASKC_MMA_SYNC_H
