// maskc generated-kernel back end: AMD MFMA (gfx90a, gfx94x, gfx950: 16x16x16,
// and on gfx950 its own 16x16x32, forward and backward).
//
// Follows prelude.h.
#ifndef MASKC_MMA_MFMA_H
#define MASKC_MMA_MFMA_H
#if defined(MASKC_PLATFORM_AMD)


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
// gfx950 (CDNA4) has 16x16x32 MFMAs, twice the k of 16x16x16 per
// instruction: lane l holds A[l%16][8(l/16)+e] and B[8(l/16)+e][l%16],
// e < 8. Two 16x16x16 k-steps concatenated (k-step 0's four elements, then
// k-step 1's) reorder k the same way in A and B, so one 16x16x32 computes
// both steps' sum of products.
#if defined(__gfx950__)
#define MASKC_MFMA_K32 1
typedef short maskc_short8 __attribute__((ext_vector_type(8)));
typedef __bf16 maskc_bf16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 maskc_half8 __attribute__((ext_vector_type(8)));
template <int DT>
__device__ __forceinline__ maskc_float4 maskc_mfma16x2(maskc_short4 a0, maskc_short4 a1, maskc_short4 b0,
                                                       maskc_short4 b1, maskc_float4 c) {
  const maskc_short8 a = __builtin_shufflevector(a0, a1, 0, 1, 2, 3, 4, 5, 6, 7);
  const maskc_short8 b = __builtin_shufflevector(b0, b1, 0, 1, 2, 3, 4, 5, 6, 7);
  if (DT == MASKC_F16)
    return __builtin_amdgcn_mfma_f32_16x16x32_f16(__builtin_bit_cast(maskc_half8, a), __builtin_bit_cast(maskc_half8, b),
                                                  c, 0, 0, 0);
  return __builtin_amdgcn_mfma_f32_16x16x32_bf16(__builtin_bit_cast(maskc_bf16x8, a), __builtin_bit_cast(maskc_bf16x8, b),
                                                 c, 0, 0, 0);
}
#else
#define MASKC_MFMA_K32 0
#endif
__device__ __forceinline__ maskc_short4 maskc_lds4(const maskc_elem_t* p) { return *(const maskc_short4*)p; }

// Above head dim 128, an opaque copy of the lane for the products: their LDS
// addresses depend only on it, and hoisted out of the key loop they would
// stay live across it, beyond the 256 registers of a 512-thread block's
// waves (as in the backward's maskc_bwd_gemm).
template <int D>
__device__ __forceinline__ void maskc_mfma_hide_lane(int& lane) {
  if constexpr (D > 128) asm volatile("" : "+v"(lane));
}

template <int D, int ROWS>
__device__ __forceinline__ void maskc_load_q(MaskcQFrag<D>& q, const maskc_elem_t* sQ, int row0, int lane) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    q.b[kk] = maskc_lds4(sQ + maskc_smem_index<D>(row0 + (lane & 15), kk * 16 + (lane >> 4) * 4));
}

// S^T tile j (kv 16j..16j+15) += K_j . Q^T: lane holds S[q = l%16][kv = 16j + 4*(l/16) + e].
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_qk(float* s, const MaskcQFrag<D>& q, const maskc_elem_t* sK, int lane) {
  maskc_mfma_hide_lane<D>(lane);
#pragma unroll
  for (int j = 0; j < BN / 16; ++j) {
    maskc_float4 c = {s[4 * j], s[4 * j + 1], s[4 * j + 2], s[4 * j + 3]};
#if MASKC_MFMA_K32
#pragma unroll
    for (int kk = 0; kk < D / 16; kk += 2)
      c = maskc_mfma16x2<DT>(maskc_lds4(sK + maskc_smem_index<D>(j * 16 + (lane & 15), kk * 16 + (lane >> 4) * 4)),
                             maskc_lds4(sK + maskc_smem_index<D>(j * 16 + (lane & 15), kk * 16 + 16 + (lane >> 4) * 4)),
                             q.b[kk], q.b[kk + 1], c);
#else
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk)
      c = maskc_mfma16<DT>(maskc_lds4(sK + maskc_smem_index<D>(j * 16 + (lane & 15), kk * 16 + (lane >> 4) * 4)),
                           q.b[kk], c);
#endif
    s[4 * j] = c[0];
    s[4 * j + 1] = c[1];
    s[4 * j + 2] = c[2];
    s[4 * j + 3] = c[3];
  }
}

// O^T tile jd (d 16jd..16jd+15) += V^T . P^T: A = V^T read transposed from
// LDS, B = P^T straight from the logits' registers.
// P^T's B operand for k-step kk (kv 16kk..16kk+15) from the logits' registers.
template <int DT>
__device__ __forceinline__ maskc_short4 maskc_p_frag(const float* p, int kk) {
  const maskc_u32 lo = maskc_pack2<DT>(p[4 * kk], p[4 * kk + 1]);
  const maskc_u32 hi = maskc_pack2<DT>(p[4 * kk + 2], p[4 * kk + 3]);
  return {(short)(lo & 0xffffu), (short)(lo >> 16), (short)(hi & 0xffffu), (short)(hi >> 16)};
}
// V^T's A operand for k-step kk, d column d, read transposed from LDS.
template <int D>
__device__ __forceinline__ maskc_short4 maskc_v_frag(const maskc_elem_t* sV, int kk, int d, int lane) {
  const int kv = kk * 16 + (lane >> 4) * 4;
  return {(short)sV[maskc_smem_index<D>(kv, d)], (short)sV[maskc_smem_index<D>(kv + 1, d)],
          (short)sV[maskc_smem_index<D>(kv + 2, d)], (short)sV[maskc_smem_index<D>(kv + 3, d)]};
}

// O^T tile jd (d 16jd..16jd+15) += V^T . P^T: A = V^T read transposed from
// LDS, B = P^T straight from the logits' registers.
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_mma_pv(float* o, const float* p, const maskc_elem_t* sV, int lane) {
  maskc_mfma_hide_lane<D>(lane);
  constexpr int kStep = MASKC_MFMA_K32 ? 2 : 1;  // 16-key k-steps per MFMA
  static_assert(BN % (16 * kStep) == 0, "the key tile is a whole number of MFMA k-steps");
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk += kStep) {
    const maskc_short4 pb = maskc_p_frag<DT>(p, kk);
#if MASKC_MFMA_K32
    const maskc_short4 pb1 = maskc_p_frag<DT>(p, kk + 1);
#endif
#pragma unroll
    for (int jd = 0; jd < D / 16; ++jd) {
      const int d = jd * 16 + (lane & 15);
      maskc_float4 c = {o[4 * jd], o[4 * jd + 1], o[4 * jd + 2], o[4 * jd + 3]};
#if MASKC_MFMA_K32
      c = maskc_mfma16x2<DT>(maskc_v_frag<D>(sV, kk, d, lane), maskc_v_frag<D>(sV, kk + 1, d, lane), pb, pb1, c);
#else
      c = maskc_mfma16<DT>(maskc_v_frag<D>(sV, kk, d, lane), pb, c);
#endif
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

#endif  // MASKC_PLATFORM_AMD
#endif  // MASKC_MMA_MFMA_H
