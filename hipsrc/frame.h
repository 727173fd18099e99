// maskc position frame: what the kernels call to evaluate the mask and the
// score and to bound the tiles they visit, in the launch's local indices.
//
// The generated part (package codegen) defines every mask, score and
// sparsity function in the global frame, named maskc_g_*: the positions,
// heads and sizes that the .flex file's mask and score see. A launch may
// compute only a slice of that attention (a context-parallel rank's query
// chunk against one key chunk, a rank's share of the heads): MaskcBuffers'
// frame members (abi.h) say where the slice lies. Each function below takes
// local indices, as the kernels use them, evaluates its maskc_g_ twin at
// global q = q + q_offset, kv = kv + kv_offset, h = h + h_offset with the
// global sizes, and maps ranges back to local indices clamped to the
// launch's own rows and keys, so a slice still skips every tile that is
// masked in it. With every frame member zero each is its twin.
//
// Buffers are read with global indices: a buffer whose extents name Q, KV
// or H covers the whole attention (python/maskc/README_CP.md).

// The frame of one launch: global sizes and offsets.
struct MaskcFrame {
  long long H, HKV, Q, KV;  // global sizes the mask sees
  long long h0, q0, kv0;    // global index of local head, row and key 0
};

__device__ __forceinline__ MaskcFrame maskc_frame(const MaskcBuffers& buf, long long H, long long HKV, long long Q,
                                                  long long KV) {
  MaskcFrame f;
  f.h0 = buf.h_offset;
  f.q0 = buf.q_offset;
  f.kv0 = buf.kv_offset;
  f.Q = buf.q_total > 0 ? buf.q_total : Q + f.q0;
  f.KV = buf.kv_total > 0 ? buf.kv_total : KV + f.kv0;
  f.H = buf.h_total > 0 ? buf.h_total : H + f.h0;
  f.HKV = H == HKV ? f.H : f.H / (H / HKV);  // the group size H / HKV is the same globally
  return f;
}

// [*lo, *hi) in global indices to local ones: shifted by off and clamped to
// [0, n); an empty range becomes [0, 0).
__device__ __forceinline__ void maskc_frame_local(long long* lo, long long* hi, long long off, long long n) {
  long long l = *lo - off, u = *hi - off;
  l = l < 0 ? 0 : l;
  u = u > n ? n : u;
  if (l >= u) l = u = 0;
  *lo = l;
  *hi = u;
}

__device__ __forceinline__ MaskcMaskRow maskc_mask_row(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                       long long Q, long long KV, long long b, long long h, long long q) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_mask_row(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q + f.q0);
}
__device__ __forceinline__ MaskcMaskCol maskc_mask_col(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                       long long Q, long long KV, long long b, long long h, long long kv) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_mask_col(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, kv + f.kv0);
}
__device__ __forceinline__ bool maskc_mask_rc(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                              long long KV, const MaskcMaskRow& r, const MaskcMaskCol& c, long long b,
                                              long long h, long long q, long long kv) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_mask_rc(buf, B, f.H, f.HKV, f.Q, f.KV, r, c, b, h + f.h0, q + f.q0, kv + f.kv0);
}
__device__ __forceinline__ bool maskc_mask(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                           long long KV, long long b, long long h, long long q, long long kv) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_mask(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q + f.q0, kv + f.kv0);
}

__device__ __forceinline__ MaskcScoreRow maskc_score_row(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                         long long Q, long long KV, long long b, long long h, long long q) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_score_row(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q + f.q0);
}
__device__ __forceinline__ MaskcScoreCol maskc_score_col(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                         long long Q, long long KV, long long b, long long h, long long kv) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_score_col(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, kv + f.kv0);
}
__device__ __forceinline__ float maskc_score_rc(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                                long long KV, const MaskcScoreRow& r, const MaskcScoreCol& c, float score,
                                                long long b, long long h, long long q, long long kv) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_score_rc(buf, B, f.H, f.HKV, f.Q, f.KV, r, c, score, b, h + f.h0, q + f.q0, kv + f.kv0);
}
__device__ __forceinline__ float maskc_score(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                             long long KV, float score, long long b, long long h, long long q, long long kv) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_score(buf, B, f.H, f.HKV, f.Q, f.KV, score, b, h + f.h0, q + f.q0, kv + f.kv0);
}
// The buffer-gradient reads it reports index the global buffers.
__device__ __forceinline__ float maskc_score_grad(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                  long long Q, long long KV, float score, long long b, long long h,
                                                  long long q, long long kv, MaskcScoreGradRead* reads) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_score_grad(buf, B, f.H, f.HKV, f.Q, f.KV, score, b, h + f.h0, q + f.q0, kv + f.kv0, reads);
}

// The local kv indices outside [*lo, *hi) are masked for every local q in [q_lo, q_hi).
__device__ __forceinline__ void maskc_kv_range(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                               long long KV, long long b, long long h, long long q_lo, long long q_hi,
                                               long long* lo, long long* hi) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  maskc_g_kv_range(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q_lo + f.q0, q_hi + f.q0, lo, hi);
  maskc_frame_local(lo, hi, f.kv0, KV);
}
__device__ __forceinline__ void maskc_kv_intervals(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                   long long Q, long long KV, long long b, long long h, long long q_lo,
                                                   long long q_hi, long long* lo, long long* hi) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  maskc_g_kv_intervals(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q_lo + f.q0, q_hi + f.q0, lo, hi);
  for (int i = 0; i < maskc_kv_interval_count; ++i) maskc_frame_local(&lo[i], &hi[i], f.kv0, KV);
}
#if defined(MASKC_KV_TILE_FILTER)
// Whether the forward's walk visits the local keys [kv_lo, kv_hi) of the local q rows [q_lo,
// q_hi), whose maskc_kv_intervals are lo, hi: some term's interval meets the keys and the term's
// remainder conditions can hold on the pairs there (maskc_g_kv_term_live, codegen/period.go).
// Interval i is term i's (the generated part defines the filter only then).
__device__ __forceinline__ bool maskc_kv_tile_live(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                   long long Q, long long KV, long long b, long long h, long long q_lo,
                                                   long long q_hi, long long kv_lo, long long kv_hi, const long long* lo,
                                                   const long long* hi) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  bool live = false;
  for (int i = 0; i < maskc_kv_interval_count; ++i) {
    const long long a = lo[i] > kv_lo ? lo[i] : kv_lo, z = hi[i] < kv_hi ? hi[i] : kv_hi;
    live = live || (a < z && maskc_g_kv_term_live(buf, B, f.H, f.HKV, f.Q, f.KV, i, b, h + f.h0, q_lo + f.q0,
                                                  q_hi + f.q0, a + f.kv0, z + f.kv0));
  }
  return live;
}
#endif
// Whether the local keys [kv_lo, kv_hi) meet one of the maskc_kv_intervals of the local q rows
// [q_lo, q_hi) (and, with MASKC_KV_TILE_FILTER, pass maskc_kv_tile_live): false only when the
// mask keeps no pair of the tile. Defined where the intervals are the kv blocks a buffer selects
// (MASKC_KV_SELECTION) or the tiles are filtered (MASKC_KV_TILE_FILTER), as MASKC_KV_TILE_TEST:
// the backward's tile classes (attn_bwd.h) ask it for each tile, since a kv tile's closed-form q
// range reads no buffer and no remainder.
#if defined(MASKC_KV_SELECTION) || defined(MASKC_KV_TILE_FILTER)
#define MASKC_KV_TILE_TEST 1
// Whether the keys [kv_lo, kv_hi) meet one of the intervals lo, hi (maskc_kv_intervals').
__device__ __forceinline__ bool maskc_kv_intervals_meet(const long long* lo, const long long* hi, long long kv_lo,
                                                        long long kv_hi) {
  bool meets = false;
#if defined(MASKC_PLATFORM_AMD)
  // Without short circuits: with the bounds in vector registers each || was a branch whose
  // saved lane masks nested, 2 scalar registers an interval, and spilled.
  for (int i = 0; i < maskc_kv_interval_count; ++i) meets |= (lo[i] < hi[i]) & (lo[i] < kv_hi) & (kv_lo < hi[i]);
#else
  for (int i = 0; i < maskc_kv_interval_count; ++i) meets = meets || (lo[i] < hi[i] && lo[i] < kv_hi && kv_lo < hi[i]);
#endif
  return meets;
}
__device__ __forceinline__ bool maskc_kv_tile_meets(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                    long long Q, long long KV, long long b, long long h, long long q_lo,
                                                    long long q_hi, long long kv_lo, long long kv_hi) {
  long long lo[maskc_kv_interval_count], hi[maskc_kv_interval_count];
  maskc_kv_intervals(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, lo, hi);
#if defined(MASKC_KV_TILE_FILTER)
  return maskc_kv_tile_live(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, kv_lo, kv_hi, lo, hi);
#else
  return maskc_kv_intervals_meet(lo, hi, kv_lo, kv_hi);
#endif
}
#endif
#if defined(MASKC_KV_ROWS_EXACT)
// maskc_kv_intervals with per-lane segment searches (each lane its own rows),
// and whether one row's intervals are exactly its kept keys in this launch.
__device__ __forceinline__ void maskc_kv_intervals_lane(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                        long long Q, long long KV, long long b, long long h, long long q_lo,
                                                        long long q_hi, long long* lo, long long* hi) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  maskc_g_kv_intervals_lane(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q_lo + f.q0, q_hi + f.q0, lo, hi);
  for (int i = 0; i < maskc_kv_interval_count; ++i) maskc_frame_local(&lo[i], &hi[i], f.kv0, KV);
}
__device__ __forceinline__ bool maskc_kv_rows_exact(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                    long long Q, long long KV) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_kv_rows_exact(buf, B, f.H, f.HKV, f.Q, f.KV);
}
#endif
// The local q indices outside [*lo, *hi) are masked for every local kv in [kv_lo, kv_hi).
__device__ __forceinline__ void maskc_q_range(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                              long long KV, long long b, long long h, long long kv_lo, long long kv_hi,
                                              long long* lo, long long* hi) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  maskc_g_q_range(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, kv_lo + f.kv0, kv_hi + f.kv0, lo, hi);
  maskc_frame_local(lo, hi, f.q0, Q);
}
__device__ __forceinline__ void maskc_q_intervals(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                  long long Q, long long KV, long long b, long long h, long long kv_lo,
                                                  long long kv_hi, long long* lo, long long* hi) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  maskc_g_q_intervals(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, kv_lo + f.kv0, kv_hi + f.kv0, lo, hi);
  for (int i = 0; i < maskc_q_interval_count; ++i) maskc_frame_local(&lo[i], &hi[i], f.q0, Q);
}
// True only if every local (q, kv) of [q_lo, q_hi) x [kv_lo, kv_hi) is kept by the mask.
__device__ __forceinline__ bool maskc_tile_full(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q,
                                                long long KV, long long b, long long h, long long q_lo, long long q_hi,
                                                long long kv_lo, long long kv_hi) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_tile_full(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q_lo + f.q0, q_hi + f.q0, kv_lo + f.kv0,
                           kv_hi + f.kv0);
}
#if defined(MASKC_PREPASS_TERMS)
// maskc_g_term_rows at the local row q: bit i set where term i's conditions on q alone hold.
__device__ __forceinline__ unsigned maskc_term_rows(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                    long long Q, long long KV, long long b, long long h, long long q) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_term_rows(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q + f.q0);
}
// maskc_g_kv_term_ranges of the local rows [q_lo, q_hi), in local keys.
__device__ __forceinline__ void maskc_kv_term_ranges(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                     long long Q, long long KV, long long b, long long h, long long q_lo,
                                                     long long q_hi, long long* lo, long long* hi) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  maskc_g_kv_term_ranges(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q_lo + f.q0, q_hi + f.q0, lo, hi);
  for (int i = 0; i < maskc_term_count; ++i) maskc_frame_local(&lo[i], &hi[i], f.kv0, KV);
}
#endif
#if defined(MASKC_TILE_FULL_ROWS)
// maskc_tile_full of the local q rows [q_lo, q_hi) whose maskc_kv_intervals are lo, hi: the
// block selections answered from those intervals, with no buffer read (the kernels that
// hold a q tile's intervals ask it once per key tile). Defined with the generated
// maskc_g_tile_full_rows (block selections' walks).
__device__ __forceinline__ bool maskc_tile_full_rows(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                     long long Q, long long KV, long long b, long long h, long long q_lo,
                                                     long long q_hi, long long kv_lo, long long kv_hi, const long long* lo,
                                                     const long long* hi) {
  const MaskcFrame f = maskc_frame(buf, H, HKV, Q, KV);
  return maskc_g_tile_full_rows(buf, B, f.H, f.HKV, f.Q, f.KV, b, h + f.h0, q_lo + f.q0, q_hi + f.q0, kv_lo + f.kv0,
                                kv_hi + f.kv0, lo, hi, f.kv0);
}
#if !defined(MASKC_KV_TILE_FILTER)
// The class of the local keys [kv_lo, kv_hi) for the local q rows [q_lo, q_hi) from one
// computation of their intervals: 0 when maskc_kv_tile_meets is false, 2 when
// maskc_tile_full holds, else 1 (the backward's tile classes, which would compute the
// intervals twice).
__device__ __forceinline__ int maskc_kv_tile_class(const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                   long long Q, long long KV, long long b, long long h, long long q_lo,
                                                   long long q_hi, long long kv_lo, long long kv_hi) {
  long long lo[maskc_kv_interval_count], hi[maskc_kv_interval_count];
  maskc_kv_intervals(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, lo, hi);
  if (!maskc_kv_intervals_meet(lo, hi, kv_lo, kv_hi)) return 0;
  return maskc_tile_full_rows(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, kv_lo, kv_hi, lo, hi) ? 2 : 1;
}
#endif
#endif
