// maskc fused flash-attention forward template (FlashAttention-2 style).
//
// Compiled after prelude.h, the back ends, abi.h (struct MaskcShape and
// struct MaskcBuffers), runtime.h and the generated part, which defines
//   MASKC_HEAD_DIM (64, 128 or 256; also defined before the prelude, whose
//   block shape depends on it), MASKC_DTYPE_BF16 or MASKC_DTYPE_F16,
//   optionally MASKC_HAS_MASK, MASKC_HAS_SCORE, MASKC_HAS_SINK,
//   one of MASKC_SPARSITY_ANALYTIC / _PREPASS / _NONE,
//   MASKC_MASK_USES_B / MASKC_MASK_USES_H (0 when the mask does not depend on
//   b / h: the pre-pass flags are then shared),
//   MASKC_SPLIT_MODS, and maskc_mask / maskc_score (with their row and
//   column parts) / maskc_kv_range / maskc_tile_full.
//
// Entry points (C linkage, fixed signatures):
//   maskc_attn_fwd    grid (ceil(Sq/MASKC_BLOCK_M), H, B), MASKC_NUM_THREADS
//                     threads, MASKC_SMEM_BYTES dynamic shared memory.
//   maskc_tile_flags  grid (ceil(Skv/MASKC_BLOCK_N), ceil(Sq/MASKC_BLOCK_M), 1),
//                     MASKC_NUM_THREADS threads, no shared memory; writes
//                     flags[b'][h'][q_tile][kv_tile] (0 empty, 1 partial,
//                     2 full), with b' = b if MASKC_MASK_USES_B else 0 and h'
//                     likewise, into a buffer of B*H*q_tiles*kv_tiles bytes.
//   maskc_seg_check   grid (1, 1, 1), MASKC_NUM_THREADS threads, no shared
//                     memory (with MASKC_SEG_CHECK): the segments buffers'
//                     order into buf.status (abi.h's status words).
//
// The kernel: each block owns MASKC_BLOCK_M query rows of one (b, h), split
// into warp strips of MASKC_WARP_ROWS rows (prelude.h). K/V tiles of
// MASKC_BLOCK_N keys are double-buffered in swizzled shared memory with one
// barrier per tile (cp.async copies of the next tile overlap the current
// one); blocks run q tiles in reverse so the long rows of causal-like masks
// start first, across MASKC_SCHED_GROUP heads (tile_walk.h). Key tiles outside
// every disjunct's kv interval (analytic, maskc_kv_intervals through
// tile_walk.h) or marked empty by the pre-pass are never visited. Logits go
// through the score mod (on the scaled logit), then the mask (skipped on tiles known to be full, and
// always applied to keys past Skv), then an online softmax in base 2; P is
// rounded to the element type in registers and fed to the P.V product.
// A fully masked row stores O = 0 and LSE = -inf (natural log). With a sink,
// LSE includes the sink term: LSE = log(sum_j exp(s_j) + exp(sink[h])).
// Requirements on the launch: scale > 0 (the row max is taken before
// scaling), Sq and Skv below 2^31 - 256, 16-byte aligned rows (seq strides
// multiples of 8 elements), last dimension contiguous, H % HKV == 0.
#ifndef MASKC_ATTN_FWD_H
#define MASKC_ATTN_FWD_H

// MASKC_FWD_WS: the forward is attn_fwd_sm90.h's warp-specialized kernel
// (sm_90a with MASKC_NV_WS); this file then gives maskc_tile_flags and the
// helpers only.
#if defined(MASKC_PLATFORM_NVIDIA) && MASKC_NV_WGMMA && defined(MASKC_NV_WS) && MASKC_NV_WS
#define MASKC_FWD_WS 1
#else
#define MASKC_FWD_WS 0
#endif
#if !defined(MASKC_HEAD_DIM) || (MASKC_HEAD_DIM != 64 && MASKC_HEAD_DIM != 128 && MASKC_HEAD_DIM != 256)
#error "maskc: MASKC_HEAD_DIM must be 64, 128 or 256"
#endif
#if defined(MASKC_DTYPE_F16)
#define MASKC_DT MASKC_F16
#else
#define MASKC_DT MASKC_BF16
#endif
#if !defined(MASKC_SPARSITY_ANALYTIC) && !defined(MASKC_SPARSITY_PREPASS) && !defined(MASKC_SPARSITY_NONE)
#define MASKC_SPARSITY_NONE 1
#endif
// With MASKC_SPLIT_MODS (the generated part's mods come with row and
// column parts), a lane reads the mask's and score's q-only buffer values
// once per block and the kv-only ones once per column of a tile, rather
// than at every element; the columns before the tile's Q.K^T, so that the
// reads overlap the MMA.
#if !defined(MASKC_SPLIT_MODS)
#error "maskc: the generated part must give the mods' row and column parts (MASKC_SPLIT_MODS)"
#endif
// MASKC_MASK_BITS 1: on a partial tile, the mask (its column parts and
// the per-element test, with keys past Skv) is evaluated before the tile's
// Q.K^T into one bit per logit, so that only the bits, not the column
// values, are live across the MMA; the logits then take -inf by bit.
// 0: the column values are read before the MMA and the mask is evaluated
// after it, per element. The default is 1 where the mask
// reads a buffer per key (the generated part's MASKC_MASK_COL_READS:
// documents, Longformer's global tokens), whose column values otherwise
// stay live across the MMA and spill: on the H200 (docs/kernel-decisions.md)
// document +9%, document_sliding +12%, longformer +13%, and spills 144 ->
// 72 bytes; on an arithmetic mask (neighbourhood_2d, pre-pass) 1 lost 4%.
// It is also 1 on sm_90a where no tile can be proven full and no kv bound
// goes through floor division (MASKC_MASK_PER_ELEMENT, codegen: dilated
// windows): on the H200, dilated2048 0.901 -> 0.940, dilated_window 0.891 ->
// 0.926 of Flex, where neighbourhood_2d lost 9% and masks with full tiles
// (block_causal, spec_decode, prefix_lm_per_batch) 3-5%.
#ifndef MASKC_MASK_BITS
#if defined(MASKC_MASK_COL_READS) || (defined(MASKC_MASK_PER_ELEMENT) && defined(MASKC_NV_WGMMA) && MASKC_NV_WGMMA)
#define MASKC_MASK_BITS 1
#else
#define MASKC_MASK_BITS 0
#endif
#endif
// MASKC_ROW_BITS 1: where the generated part proves that a row's kept keys
// are exactly its own maskc_kv_intervals (MASKC_KV_ROWS_EXACT: bounds
// linear in kv and segment equalities, nothing evaluated per element), each
// lane computes its rows' intervals once (maskc_kv_intervals_lane) and a
// partial tile's keep bits test the keys against them (a subtraction and
// an unsigned compare per logit and interval) instead of reading the
// mask's columns and evaluating it. Used with MASKC_MASK_BITS, where
// maskc_kv_rows_exact holds at run time. NVIDIA by default (measured on the
// H200, docs/kernel-decisions.md).
#if defined(MASKC_KV_ROWS_EXACT) && defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_ANALYTIC) && MASKC_MASK_BITS
#ifndef MASKC_ROW_BITS
#if defined(MASKC_PLATFORM_NVIDIA)
#define MASKC_ROW_BITS 1
#else
#define MASKC_ROW_BITS 0
#endif
#endif
#else
#undef MASKC_ROW_BITS
#define MASKC_ROW_BITS 0
#endif
// MASKC_SCHED_LPT 1: with a mask whose rows differ in length in ways the
// reverse q-tile order does not follow (documents, pre-pass masks), each
// block first measures the rows of its (b, h) (the tiles each q tile's walk
// visits, or its non-empty pre-pass flags) and runs the q tile of its rank in
// longest-first order (maskc_lpt_rank in tile_walk.h), so that the launch's
// last wave holds the short rows. Only up to MASKC_SCHED_LPT_MAX_QT q tiles
// (and, with pre-pass flags, MASKC_SCHED_LPT_MAX_FLAGS flags of a (b, h)),
// so that the measuring stays a small share of a block's work; beyond, the
// plain order. The default is 1 for pre-pass kernels on NVIDIA: on the
// H200 (docs/kernel-decisions.md) Longformer +5%; documents lost 15-25% (the
// measuring, 64 walks with segment searches per block, costs more than the
// order wins: their rows are a few tiles each); not measured on AMD, where
// gfx90a's build of a pre-pass kernel took 20 bytes of scratch with it.
// MASKC_ROW_BITS_SMEM (with MASKC_ROW_BITS, where stage 1's memory is
// free before the loop: Q not kept in it): each thread computes the
// intervals of one row of the block (its segment searches) into stage 1's
// memory while the first tiles are copied, and every lane then reads its
// row slots' intervals from there, instead of each lane searching for all
// its MASKC_ROW_SLOTS rows one search loop after another (documents: 4 rows
// x 2 binary searches of dependent loads per lane, before the first tile).
// With MASKC_ROW_BITS, a tile is full for a warp when each of its rows holds
// the tile's keys in one of its intervals (maskc_rows_hold, a few compares,
// no loads) rather than by maskc_tile_full over the block's rows (for
// documents, segment ids read at the tile's corners before every tile's
// MMA).
#if MASKC_ROW_BITS && !MASKC_Q_IN_REGS
#define MASKC_ROW_BITS_SMEM 1
#else
#define MASKC_ROW_BITS_SMEM 0
#endif
#ifndef MASKC_SCHED_LPT
#if defined(MASKC_PLATFORM_NVIDIA) && defined(MASKC_SPARSITY_PREPASS)
#define MASKC_SCHED_LPT 1
#else
#define MASKC_SCHED_LPT 0
#endif
#endif
#define MASKC_SCHED_LPT_MAX_QT 256
#define MASKC_SCHED_LPT_MAX_FLAGS 65536
// MASKC_COL_SHFL 1 (NVIDIA, with MASKC_MASK_BITS and the mask's column
// reads): a partial tile's mask column parts are read by every lane for
// MASKC_BLOCK_N / MASKC_WARP_SIZE keys (kv0 + r * warp size + lane: coalesced
// and independent loads) and handed to the lanes' column slots by shuffles
// (maskc_mask_cols_shfl), instead of MASKC_BLOCK_N / 4 loads in every lane,
// which ptxas issues one after another at 128 registers (each waits for its
// load): on the H200 (docs/kernel-decisions.md) Longformer's is_global[kv]
// 0.83x -> 0.98x of Flex; documents (whose row bits skip the reads)
// unchanged.
#if defined(MASKC_PLATFORM_NVIDIA) && defined(MASKC_MASK_COL_READS) && MASKC_MASK_BITS
#ifndef MASKC_COL_SHFL
#define MASKC_COL_SHFL 1
#endif
#else
#undef MASKC_COL_SHFL
#define MASKC_COL_SHFL 0
#endif
// MASKC_LOOP_LEAN 1 (NVIDIA): fewer values held across the key loop, which
// on sm_90a runs at the 128-register cap (two blocks of 256 threads per SM;
// one block at 255 registers lost 18% on documents on the H200)
// and spilled there: the K/V copies go through maskc_load_tile_lean (each
// thread's source pointer and shared offset rebuilt per tile) instead of
// per-round 64-bit offsets hoisted out of the loop; the Q descriptors are
// rebuilt per tile; with MASKC_ROW_BITS, the fallback for rows not proven
// exact re-reads its rows' mask parts rather than keeping them live. ptxas
// 12.4 (sm_90a, local NVRTC; loop = the key loop's SASS): document 172 B
// spill stores / 212 B loads (24 LDL a loop pass) -> 0 / 0 (none), 1232 ->
// 1194 instructions in the loop; document_sliding 172 / 196 (23 LDL) -> 0 / 0,
// 1331 -> 1272. Default 1 with MASKC_ROW_BITS (the documents), else 0 (on
// the others it removes most spills too (docs/kernel-decisions.md), but
// Longformer's and neighbourhood_2d's loops spill more with it).
#if defined(MASKC_PLATFORM_NVIDIA)
#ifndef MASKC_LOOP_LEAN
#if MASKC_ROW_BITS
#define MASKC_LOOP_LEAN 1
#else
#define MASKC_LOOP_LEAN 0
#endif
#endif
#else
#undef MASKC_LOOP_LEAN
#define MASKC_LOOP_LEAN 0  // the opaque moves are PTX
#endif
#if !defined(MASKC_MASK_USES_B) || !defined(MASKC_MASK_USES_H)
#error "maskc: the generated part must say whether the mask reads b and h (MASKC_MASK_USES_B, _H)"
#endif

// Tile shape: mirrored by the Go constants in hipsrc.go (a test keeps them equal).
#define MASKC_BLOCK_M 128
#ifndef MASKC_BLOCK_N  // the prelude may set it for its platform
#define MASKC_BLOCK_N 32
#endif
// Block size of maskc_attn_fwd and maskc_tile_flags (hipsrc Platform.NumThreads):
// the warp-specialized forward's three warpgroups (MASKC_WS_THREADS), else
// one thread per lane of the MASKC_NUM_WARPS warps.
#if MASKC_FWD_WS
#define MASKC_NUM_THREADS 384
#else
#define MASKC_NUM_THREADS (MASKC_NUM_WARPS * MASKC_WARP_SIZE)
#endif
#define MASKC_S_ELEMS (MASKC_WARP_ROWS * MASKC_BLOCK_N / MASKC_WARP_SIZE)
#define MASKC_O_ELEMS (MASKC_WARP_ROWS * MASKC_HEAD_DIM / MASKC_WARP_SIZE)
#define MASKC_KV_TILE_ELEMS (MASKC_BLOCK_N * MASKC_HEAD_DIM)
#define MASKC_STAGE_ELEMS (2 * MASKC_KV_TILE_ELEMS)
#define MASKC_Q_TILE_ELEMS (MASKC_BLOCK_M * MASKC_HEAD_DIM)
// Shared memory: stage 0 | stage 1 | Q, where a Q strip kept in registers
// lets Q's tile overlap stage 1 (it is read before stage 1 is first written),
// or with MASKC_Q_FIRST (head dims above 128, so that AMD's 64 KiB of LDS
// hold the tiles) both stages: Q is read into registers before the first K
// and V tiles are copied.
#define MASKC_Q_FIRST (MASKC_Q_IN_REGS && MASKC_HEAD_DIM > 128)
#define MASKC_Q_OFFSET_ELEMS (MASKC_Q_FIRST ? 0 : MASKC_Q_IN_REGS ? MASKC_STAGE_ELEMS : 2 * MASKC_STAGE_ELEMS)
#define MASKC_MAX_ELEMS(a, b) ((a) > (b) ? (a) : (b))
#define MASKC_SMEM_BYTES                                                                                   \
  (2 * (MASKC_Q_FIRST ? MASKC_MAX_ELEMS(2 * MASKC_STAGE_ELEMS, MASKC_Q_TILE_ELEMS)                         \
                      : MASKC_Q_OFFSET_ELEMS + (MASKC_Q_IN_REGS ? MASKC_MAX_ELEMS(MASKC_STAGE_ELEMS, MASKC_Q_TILE_ELEMS) \
                                                                : MASKC_Q_TILE_ELEMS)))

static_assert(MASKC_BLOCK_M == MASKC_NUM_WARPS * MASKC_WARP_ROWS, "one warp per 16-row strip");
static_assert(MASKC_BLOCK_N % 16 == 0, "key tile is a whole number of MMA k-steps");
static_assert(MASKC_NUM_THREADS % MASKC_BLOCK_N == 0, "the pre-pass gives each thread one key column");

// struct MaskcShape and struct MaskcBuffers come from abi.h (generated from
// hipsrc/abi.go, the one definition of the kernel ABI).

// Row in the warp's strip of element i of a W-column fragment (from the
// back end's maskc_slot_row and maskc_frag_slot).
template <int W>
__device__ __forceinline__ int maskc_frag_row(int lane, int i) { return maskc_slot_row(lane, maskc_frag_slot<W>(i)); }

// Copies rows [row0, row0 + ROWS) of a [rows][D] matrix (row stride `stride`
// elements, rows contiguous) into a swizzled shared tile, zero-filling the
// rows at or beyond nrows without reading them.
template <int ROWS>
__device__ __forceinline__ void maskc_load_tile(maskc_elem_t* dst, const maskc_elem_t* src, long long stride,
                                                int row0, int nrows, int tid) {
  constexpr int kChunks = MASKC_HEAD_DIM / 8;  // 16-byte chunks per row
  constexpr int kRounds = (ROWS * kChunks + MASKC_NUM_THREADS - 1) / MASKC_NUM_THREADS;
#pragma unroll
  for (int it = 0; it < kRounds; ++it) {
    const int c = tid + it * MASKC_NUM_THREADS;
    if ((ROWS * kChunks) % MASKC_NUM_THREADS != 0 && c >= ROWS * kChunks) break;
    const int r = c / kChunks, ch = c % kChunks;
    const bool valid = row0 + r < nrows;
    const maskc_elem_t* g = src + (long long)(valid ? row0 + r : 0) * stride + ch * 8;
    maskc_copy16(dst + maskc_tile_index<ROWS, MASKC_HEAD_DIM>(r, ch * 8), g, valid);
  }
}

#if MASKC_LOOP_LEAN
// x, through a volatile move: the compiler cannot hoist what is computed
// from it out of the key loop (MASKC_LOOP_LEAN, NVIDIA only), so such values
// are rebuilt where they are used rather than held in registers.
__device__ __forceinline__ int maskc_opaque_int(int x) {
  int y;
  asm volatile("mov.b32 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}
// maskc_load_tile for the key loop (MASKC_LOOP_LEAN): the same copies
// (same chunks, same zero-fill, same shared layout), with the thread's row
// and chunk taken from an opaque copy of tid, so that the compiler rebuilds
// the thread's source pointer (one 64-bit multiply-add) and shared offset at
// every tile and steps them by whole rounds (uniform strides), instead of
// hoisting one 64-bit source offset and one shared offset per round out of
// the loop (2 x 2 x kRounds + 2 x kRounds registers live across it: spilled at
// 128 registers). Needs every round to cover whole rows of the same chunks
// and a multiple of 8 rows (the swizzle's period); else maskc_load_tile.
template <int ROWS>
__device__ __forceinline__ void maskc_load_tile_lean(maskc_elem_t* dst, const maskc_elem_t* src, long long stride,
                                                     int row0, int nrows, int tid) {
  constexpr int kChunks = MASKC_HEAD_DIM / 8;
  constexpr int kStep = MASKC_NUM_THREADS / kChunks;  // rows a round copies
  if constexpr (MASKC_NUM_THREADS % kChunks != 0 || kStep % 8 != 0 || ROWS % kStep != 0) {
    maskc_load_tile<ROWS>(dst, src, stride, row0, nrows, tid);
  } else {
    const unsigned t = (unsigned)maskc_opaque_int(tid);  // nothing derived from it is hoisted
    const int r = (int)(t / kChunks), ch = (int)(t % kChunks);
    const maskc_elem_t* g = src + (long long)(row0 + r) * stride + ch * 8;
    maskc_elem_t* d = dst + maskc_tile_index<ROWS, MASKC_HEAD_DIM>(r, ch * 8);
#pragma unroll
    for (int it = 0; it < ROWS / kStep; ++it) {
      // Row r + it * kStep keeps r's swizzle phase (kStep is a multiple of 8):
      // its shared offset is d's plus whole rows.
      const bool valid = row0 + r + it * kStep < nrows;
      maskc_copy16(d + (maskc_tile_index<ROWS, MASKC_HEAD_DIM>(it * kStep, 0)),
                   valid ? g + (long long)(it * kStep) * stride : src, valid);
    }
  }
}
#endif  // MASKC_LOOP_LEAN

// Indices handed to the generated functions are never negative (and below
// 2^31): telling the compiler lets it narrow their 64-bit arithmetic.
__device__ __forceinline__ int maskc_nonneg(int x) {
  __builtin_assume(x >= 0);
  return x;
}

// Whether key kv lies in one of a row's N intervals [lo[j], lo[j] + len[j])
// (MASKC_ROW_BITS: a subtraction and an unsigned compare per interval).
template <int N>
__device__ __forceinline__ bool maskc_in_intervals(const int (&lo)[N], const int (&len)[N], int kv) {
  bool keep = false;
#pragma unroll
  for (int j = 0; j < N; ++j) keep = keep || (unsigned)(kv - lo[j]) < (unsigned)len[j];
  return keep;
}

// Whether each of a lane's R rows holds the keys [kv0, kv0 + n) inside one
// of its N intervals (the tile is then full for those rows).
template <int R, int N>
__device__ __forceinline__ bool maskc_rows_hold(const int (&lo)[R][N], const int (&len)[R][N], int kv0, int n) {
  bool all = true;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    bool one = false;
#pragma unroll
    for (int j = 0; j < N; ++j) one = one || (kv0 >= lo[r][j] && kv0 - lo[r][j] <= len[r][j] - n);
    all = all && one;
  }
  return all;
}

// Index of the first pre-pass flag of (b, h, q_tile).
__device__ __forceinline__ long long maskc_flag_row(const MaskcShape& sh, int b, int h, int qt, int n_qt, int n_kt) {
  const int hf = MASKC_MASK_USES_H ? sh.H : 1;
  const int z = (MASKC_MASK_USES_B ? b : 0) * hf + (MASKC_MASK_USES_H ? h : 0);
  return ((long long)z * n_qt + qt) * n_kt;
}

// Online softmax, one definition for both forwards (this file's kernel and
// attn_fwd_sm90.h's consumer warpgroups), as FlashAttention-3's
// hopper/softmax.h is for its main loops. A lane holds, for each of its
// MASKC_ROW_SLOTS rows, the running maximum m of the row's logits in base-2
// units (-inf while the row has seen no visible key) and the running sum l
// of this lane's share of exp2(logit - m); the tile's logits s are the MMA
// back end's fragment of a W-key tile (element i in row slot
// maskc_frag_slot<W>(i)), in units of `unit` base-2 logits, masked ones
// -inf. The sink is folded in once, at the end (maskc_softmax_finish).

// maskc_softmax_tile takes one tile into the running state: it moves each
// row's m to the tile's maximum, scales l by alpha = exp2(m_old - m_new),
// turns s into the probabilities exp2(s * unit - m) (the operand of P.V) and
// adds them to l. A row with no visible key yet keeps m = -inf and uses 0 as
// its reference, so that no -inf - -inf is ever formed. It returns whether
// some row's maximum moved anywhere in the warp: the accumulator must then
// be multiplied by alpha (maskc_softmax_rescale) before the tile's P.V.
template <int W, int NS, int SLOTS>
__device__ __forceinline__ bool maskc_softmax_tile(float (&s)[NS], float (&m)[SLOTS], float (&l)[SLOTS],
                                                   float (&alpha)[SLOTS], float unit) {
  float mx[SLOTS], mref[SLOTS];
#pragma unroll
  for (int sl = 0; sl < SLOTS; ++sl) mx[sl] = maskc_neg_inf();
#pragma unroll
  for (int i = 0; i < NS; ++i) mx[maskc_frag_slot<W>(i)] = fmaxf(mx[maskc_frag_slot<W>(i)], s[i]);
  bool same_max = true;
#pragma unroll
  for (int sl = 0; sl < SLOTS; ++sl) {
    const float m_new = fmaxf(m[sl], maskc_row_max(mx[sl]) * unit);
    mref[sl] = m_new == maskc_neg_inf() ? 0.f : m_new;
    alpha[sl] = maskc_exp2(m[sl] - mref[sl]);
    same_max = same_max && m_new == m[sl];
    m[sl] = m_new;
    l[sl] *= alpha[sl];
  }
#pragma unroll
  for (int i = 0; i < NS; ++i) {
    const int sl = maskc_frag_slot<W>(i);
    s[i] = maskc_exp2(fmaf(s[i], unit, -mref[sl]));
    l[sl] += s[i];
  }
  return !maskc_warp_all(same_max);
}

// maskc_softmax_rescale multiplies the O accumulator (the back end's
// fragment of a D-column tile, element i in row slot maskc_frag_slot<D>(i))
// by each row's alpha from maskc_softmax_tile.
template <int D, int NO, int SLOTS>
__device__ __forceinline__ void maskc_softmax_rescale(float (&o)[NO], const float (&alpha)[SLOTS]) {
#pragma unroll
  for (int i = 0; i < NO; ++i) o[i] *= alpha[maskc_frag_slot<D>(i)];
}

// maskc_softmax_finish ends the rows after the last tile: it sums l over the
// lanes of each row, folds in head h's sink (a logit shape.sink[h], natural
// log, in every row's denominator and in no output) when the kernel has one,
// and gives each row the factor inv that normalises O and the natural-log
// LSE. A row that saw no visible key (and no sink) gets inv 0 (O = 0) and
// LSE -inf.
template <int SLOTS>
__device__ __forceinline__ void maskc_softmax_finish(const float (&m)[SLOTS], const float (&l)[SLOTS],
                                                     const MaskcShape& shape, int h, float (&inv)[SLOTS],
                                                     float (&lse)[SLOTS]) {
#pragma unroll
  for (int sl = 0; sl < SLOTS; ++sl) {
    float mm = m[sl], ll = maskc_row_sum(l[sl]), corr = 1.f;
#if defined(MASKC_HAS_SINK)
    if (shape.sink != nullptr) {
      const float s2 = shape.sink[h] * MASKC_LOG2E;
      const float mf = fmaxf(mm, s2);
      corr = maskc_exp2(mm - mf);
      ll = ll * corr + maskc_exp2(s2 - mf);
      mm = mf;
    }
#else
    (void)shape;
    (void)h;
#endif
    inv[sl] = ll > 0.f ? corr / ll : 0.f;
    lse[sl] = ll > 0.f ? (mm + maskc_log2(ll)) * MASKC_LN2 : maskc_neg_inf();
  }
}

// The forward's epilogue, one definition for both forwards: it ends the
// rows (maskc_softmax_finish), stores the lane's share of O (the back end's
// fragment of a D-column tile, NO floats, rows from row_base; Op at head
// (b, h)) normalised and rounded to the element type, and the natural-log
// LSE of the rows the lane leads; rows at or past Sq are not stored.
template <int D, int NO, int SLOTS>
__device__ __forceinline__ void maskc_fwd_epilogue(const float (&o)[NO], const float (&m)[SLOTS],
                                                   const float (&l)[SLOTS], const MaskcShape& shape, int b, int h,
                                                   int row_base, int lane, int Sq, maskc_elem_t* Op, float* LSE) {
  float inv[SLOTS], lse[SLOTS];
  maskc_softmax_finish(m, l, shape, h, inv, lse);
#pragma unroll
  for (int i = 0; i < NO; i += 2) {
    const int q = row_base + maskc_frag_row<D>(lane, i);
    if (q < Sq) {
      const float f = inv[maskc_frag_slot<D>(i)];
      *(maskc_u32*)(Op + (long long)q * shape.o_stride[2] + maskc_frag_col<D>(lane, i)) =
          maskc_pack2<MASKC_DT>(o[i] * f, o[i + 1] * f);
    }
  }
#pragma unroll
  for (int sl = 0; sl < SLOTS; ++sl) {
    const int q = row_base + maskc_slot_row(lane, sl);
    if (maskc_row_leader(lane) && q < Sq) LSE[((long long)b * shape.H + h) * Sq + q] = lse[sl];
  }
}

#if !MASKC_FWD_WS
#if MASKC_COL_SHFL && defined(MASKC_HAS_MASK)
// The mask's column parts of a lane's column slots of the tile at kv0
// (MASKC_COL_SHFL): lane l reads keys kv0 + l, kv0 + l + warp size, ...
// and each slot takes its key's value, as 32-bit words, from the lane that
// read it.
__device__ __forceinline__ void maskc_mask_cols_shfl(MaskcMaskCol (&out)[MASKC_BLOCK_N / 4], const MaskcBuffers& buf,
                                                     long long nB, long long nH, long long nHKV, long long nQ,
                                                     long long nKV, int b, int h, int kv0, int lane) {
  constexpr int kW = (sizeof(MaskcMaskCol) + 3) / 4, kR = MASKC_BLOCK_N / MASKC_WARP_SIZE;
  unsigned own[kR][kW];
#pragma unroll
  for (int r = 0; r < kR; ++r) {
    const MaskcMaskCol c = maskc_mask_col(buf, nB, nH, nHKV, nQ, nKV, b, h, maskc_nonneg(kv0 + r * MASKC_WARP_SIZE + lane));
    const unsigned char* p = (const unsigned char*)&c;
#pragma unroll
    for (int k = 0; k < kW; ++k) own[r][k] = 0u;
#pragma unroll
    for (int i = 0; i < (int)sizeof c; ++i) own[r][i / 4] |= (unsigned)p[i] << (8 * (i % 4));
  }
#pragma unroll
  for (int cs = 0; cs < MASKC_BLOCK_N / 4; ++cs) {
    const int col = maskc_colslot_col<MASKC_BLOCK_N>(lane, cs);
    unsigned w[kW];
#pragma unroll
    for (int k = 0; k < kW; ++k) {
      w[k] = 0u;
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        const unsigned v = __shfl_sync(0xffffffffu, own[r][k], col % MASKC_WARP_SIZE);
        if (col / MASKC_WARP_SIZE == r) w[k] = v;
      }
    }
    unsigned char* d = (unsigned char*)&out[cs];
#pragma unroll
    for (int i = 0; i < (int)sizeof(MaskcMaskCol); ++i) d[i] = (unsigned char)(w[i / 4] >> (8 * (i % 4)));
  }
}
#endif
#if MASKC_SCHED_LPT && defined(MASKC_HAS_MASK) && (defined(MASKC_SPARSITY_ANALYTIC) || defined(MASKC_SPARSITY_PREPASS))
#define MASKC_LPT_ON 1
// The q tile that the block of longest-first rank `rank` runs among the
// n_qt tiles of (b, h) (MASKC_SCHED_LPT): every warp measures q tiles
// warp, warp + MASKC_NUM_WARPS, ... into shared memory, then the thread
// holding the tile of place `rank` publishes it. Block-collective; `smem`
// holds n_qt + 1 ints and is free again when it returns.
__device__ __forceinline__ int maskc_lpt_q_tile(int rank, int n_qt, int n_kt, const MaskcShape& shape,
                                                const MaskcBuffers& buf, int b, int h, int* smem) {
  const int tid = threadIdx.x, warp = tid / MASKC_WARP_SIZE, lane = tid % MASKC_WARP_SIZE;
  int* len = smem;
  const long long nB = shape.B, nH = shape.H, nHKV = shape.HKV, nQ = shape.Sq, nKV = shape.Skv;
  (void)nB, (void)nH, (void)nHKV, (void)nQ, (void)nKV, (void)n_kt, (void)buf;
  for (int t = warp; t < n_qt; t += MASKC_NUM_WARPS) {
#if defined(MASKC_SPARSITY_PREPASS)
    const unsigned char* row = shape.tile_flags + maskc_flag_row(shape, b, h, t, n_qt, n_kt);
    int c = 0;
    for (int u = lane; u < n_kt; u += MASKC_WARP_SIZE) c += row[u] != 0;
#pragma unroll
    for (int w = 1; w < MASKC_WARP_SIZE; w *= 2) c += maskc_shfl_xor_int(c, w);
#else
    MaskcTileWalk<maskc_kv_interval_count> w;
    maskc_walk_build(w, buf, nB, nH, nHKV, nQ, nKV, b, h, (long long)t * MASKC_BLOCK_M,
                     min((long long)t * MASKC_BLOCK_M + MASKC_BLOCK_M, nQ), MASKC_BLOCK_N);
    const int c = w.count();
#endif
    if (lane == 0) len[t] = c;
  }
  __syncthreads();
  for (int t = tid; t < n_qt; t += MASKC_NUM_THREADS)
    if (maskc_lpt_rank(len, n_qt, t) == rank) len[n_qt] = t;
  __syncthreads();
  const int qt = len[n_qt];
  __syncthreads();  // the memory is the kernel's again
  return qt;
}
#else
#define MASKC_LPT_ON 0
#endif
extern "C" __global__ void __launch_bounds__(MASKC_NUM_THREADS, MASKC_MIN_BLOCKS)
    maskc_attn_fwd(const maskc_elem_t* __restrict__ Q, const maskc_elem_t* __restrict__ K,
                   const maskc_elem_t* __restrict__ V, maskc_elem_t* __restrict__ O, float* __restrict__ LSE,
                   MaskcShape shape, MaskcBuffers buf, const MaskcTensorMaps maps) {
  (void)maps;  // the warp-specialized forward's (attn_fwd_sm90.h); this one's launch passes them zero
  extern __shared__ __attribute__((aligned(MASKC_SMEM_ALIGN))) unsigned char maskc_smem_raw[];
  maskc_elem_t* const sKV = (maskc_elem_t*)maskc_smem_raw;  // stage s: K at s*STAGE, V after it
  maskc_elem_t* const sQ = sKV + MASKC_Q_OFFSET_ELEMS;

#if MASKC_SMEM_ALIGN > 16
  if ((maskc_smem_addr(maskc_smem_raw) & (MASKC_SMEM_ALIGN - 1)) != 0) __trap();  // descriptors need it
#endif
  const int tid = threadIdx.x;
  const int warp = tid / MASKC_WARP_SIZE, lane = tid % MASKC_WARP_SIZE;
  const int n_qt = (shape.Sq + MASKC_BLOCK_M - 1) / MASKC_BLOCK_M;
  const int n_kt = (shape.Skv + MASKC_BLOCK_N - 1) / MASKC_BLOCK_N;
  int qt, h_, b_;  // longest rows of causal-like masks first (tile_walk.h)
  maskc_q_tile_order(n_qt, shape.H, shape.B, &qt, &h_, &b_);
#if MASKC_LPT_ON
  // Rows measured: the same rank, longest-first by length (every thread of
  // the block takes the branch alike).
  bool lpt = n_qt > 1 && n_qt <= MASKC_SCHED_LPT_MAX_QT && (n_qt + 1) * (int)sizeof(int) <= MASKC_SMEM_BYTES;
#if defined(MASKC_SPARSITY_PREPASS)
  lpt = lpt && (long long)n_qt * n_kt <= MASKC_SCHED_LPT_MAX_FLAGS;
#endif
  if (lpt) qt = maskc_lpt_q_tile(n_qt - 1 - qt, n_qt, n_kt, shape, buf, b_, h_, (int*)maskc_smem_raw);
#elif defined(MASKC_FIRST_ROWS_LONGEST)
  qt = n_qt - 1 - qt;  // the first q tiles' rows are the longest (codegen's estimate): they start first
#endif
  const int h = maskc_nonneg(h_), b = maskc_nonneg(b_);
  const int Sq = maskc_nonneg(shape.Sq), Skv = maskc_nonneg(shape.Skv);
  const int q0 = qt * MASKC_BLOCK_M;
  const int q_end = min(q0 + MASKC_BLOCK_M, Sq);
  const int hkv = h / (shape.H / shape.HKV);
  const maskc_elem_t* Qp = Q + b * shape.q_stride[0] + h * shape.q_stride[1];
  const maskc_elem_t* Kp = K + b * shape.k_stride[0] + hkv * shape.k_stride[1];
  const maskc_elem_t* Vp = V + b * shape.v_stride[0] + hkv * shape.v_stride[1];
#if !defined(MASKC_PLATFORM_AMD)  // AMD reads O's pointer at the end (maskc_kernarg)
  maskc_elem_t* Op = O + b * shape.o_stride[0] + h * shape.o_stride[1];
#endif
  const long long nB = shape.B, nH = shape.H, nHKV = shape.HKV, nQ = Sq, nKV = Skv;
  (void)nB, (void)nH, (void)nHKV, (void)nQ, (void)nKV;

  // Q's copy starts first: it does not depend on which key tiles are visited.
  maskc_load_tile<MASKC_BLOCK_M>(sQ, Qp, shape.q_stride[2], q0, Sq, tid);
  MaskcQFrag<MASKC_HEAD_DIM> qf;
#if MASKC_Q_FIRST
  // Q's tile covers both stages: into registers before anything else.
  maskc_copy_commit();
  maskc_copy_wait_all();
  __syncthreads();
  maskc_load_q<MASKC_HEAD_DIM, MASKC_BLOCK_M>(qf, sQ, warp * MASKC_WARP_ROWS, lane);
  __syncthreads();
#endif

  // Key tiles to visit: [kt_begin, kt_end), minus the tiles between the
  // disjuncts' kv intervals (analytic) or empty pre-pass tiles.
  int kt_begin = 0, kt_end = n_kt;
#if defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_ANALYTIC)
  MaskcTileWalk<maskc_kv_interval_count> walk;
#if defined(MASKC_KV_TILE_FILTER)
  // The rows' kv intervals stay for the tile filter (maskc_walk_next_live).
  long long live_lo[maskc_kv_interval_count], live_hi[maskc_kv_interval_count];
  maskc_kv_intervals(buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, live_lo, live_hi);
  maskc_walk_from(walk, live_lo, live_hi, (int)nKV, MASKC_BLOCK_N);
#elif defined(MASKC_PLATFORM_AMD)
  if (walk.lanes) {  // the walk held across the lanes: built in vector registers
    maskc_walk_build(walk, buf, nB, nH, nHKV, nQ, nKV, b, h, maskc_walk_vgpr(q0), maskc_walk_vgpr(q_end), MASKC_BLOCK_N);
    maskc_walk_uniform(walk);
  } else {
    maskc_walk_build(walk, buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, MASKC_BLOCK_N);
  }
#else
  maskc_walk_build(walk, buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, MASKC_BLOCK_N);
#endif
  kt_begin = walk.begin();
  kt_end = walk.end();
#endif
#if defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_PREPASS)
  const unsigned char* flags = shape.tile_flags + maskc_flag_row(shape, b, h, qt, n_qt, n_kt);
  // Each warp walks the flag row from a register window (tile_walk.h): no
  // dependent load per visited tile, no pass over the row before the loop.
  MaskcFlagWalk fwalk;
  fwalk.init(flags, n_kt);
  int next_flag = 0;  // flag of the tile next_tile returned
  auto next_tile = [&](int t) {
    t = fwalk.next(t);
    next_flag = fwalk.flag;
    return t;
  };
#elif defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_ANALYTIC) && defined(MASKC_KV_TILE_FILTER)
  auto next_tile = [&](int t) {
    return maskc_walk_next_live(walk, live_lo, live_hi, buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, t, MASKC_BLOCK_N);
  };
#elif defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_ANALYTIC)
  auto next_tile = [&](int t) { return walk.next(t); };
#else
  auto next_tile = [](int t) { return t; };
#endif

  int kt = next_tile(kt_begin);
#if defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_PREPASS)
  int cur_flag = next_flag;
#endif
  if (kt < kt_end) {
    maskc_load_tile<MASKC_BLOCK_N>(sKV, Kp, shape.k_stride[2], kt * MASKC_BLOCK_N, Skv, tid);
    maskc_load_tile<MASKC_BLOCK_N>(sKV + MASKC_KV_TILE_ELEMS, Vp, shape.v_stride[2], kt * MASKC_BLOCK_N, Skv, tid);
  }
  maskc_copy_commit();
#if MASKC_ROW_BITS_SMEM
  // The block's row intervals, one row a thread, into stage 1 (free until
  // the loop's first prefetch): [i][r] lo, then [count + i][r] length.
  static_assert(2 * maskc_kv_interval_count * MASKC_BLOCK_M * (int)sizeof(int) <=
                    MASKC_STAGE_ELEMS * (int)sizeof(maskc_elem_t), "the row intervals fit in a stage");
  int* const srows = (int*)(sKV + MASKC_STAGE_ELEMS);
  for (int r = tid; r < MASKC_BLOCK_M; r += MASKC_NUM_THREADS) {
    const int qs = maskc_nonneg(q0 + r);
    long long lo[maskc_kv_interval_count], hi[maskc_kv_interval_count];
    maskc_kv_intervals_lane(buf, nB, nH, nHKV, nQ, nKV, b, h, qs, (long long)qs + 1, lo, hi);
#pragma unroll
    for (int i = 0; i < maskc_kv_interval_count; ++i) {
      srows[i * MASKC_BLOCK_M + r] = (int)lo[i];
      srows[(maskc_kv_interval_count + i) * MASKC_BLOCK_M + r] = qs < Sq ? (int)(hi[i] - lo[i]) : 0;
    }
  }
#endif
  maskc_copy_wait_all();
  __syncthreads();
#if !MASKC_Q_FIRST
  maskc_load_q<MASKC_HEAD_DIM, MASKC_BLOCK_M>(qf, sQ, warp * MASKC_WARP_ROWS, lane);
  if (MASKC_Q_IN_REGS) __syncthreads();  // Q's tile is stage 1's memory
#endif

  float o[MASKC_O_ELEMS];
#pragma unroll
  for (int i = 0; i < MASKC_O_ELEMS; ++i) o[i] = 0.f;
  float m[MASKC_ROW_SLOTS], l[MASKC_ROW_SLOTS];
#pragma unroll
  for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) {
    m[sl] = maskc_neg_inf();
    l[sl] = 0.f;
  }
  // Logits are kept in units of `unit` base-2 logits: raw q.k (unit
  // scale*log2 e) without a score mod, score-mod results (log2 e) with one.
#if defined(MASKC_HAS_SCORE)
  const float unit = MASKC_LOG2E;
#else
  const float unit = shape.scale * MASKC_LOG2E;
#endif
  const int row_base = q0 + warp * MASKC_WARP_ROWS;
  MaskcMaskRow mrow[MASKC_ROW_SLOTS];
  MaskcScoreRow srow[MASKC_ROW_SLOTS];
#pragma unroll
  for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) {
    const int qs = maskc_nonneg(row_base + maskc_slot_row(lane, sl));
    mrow[sl] = maskc_mask_row(buf, nB, nH, nHKV, nQ, nKV, b, h, qs);
    srow[sl] = maskc_score_row(buf, nB, nH, nHKV, nQ, nKV, b, h, qs);
  }
#if MASKC_ROW_BITS
  // Each row's kept keys: [rlo, rlo + rlen) per interval of the mask
  // (MASKC_ROW_BITS); rows past Sq keep none (they are never stored).
  const bool rows_exact = maskc_kv_rows_exact(buf, nB, nH, nHKV, nQ, nKV);
  int rlo[MASKC_ROW_SLOTS][maskc_kv_interval_count], rlen[MASKC_ROW_SLOTS][maskc_kv_interval_count];
#if MASKC_ROW_BITS_SMEM
#pragma unroll
  for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) {
    const int r = warp * MASKC_WARP_ROWS + maskc_slot_row(lane, sl);
#pragma unroll
    for (int i = 0; i < maskc_kv_interval_count; ++i) {
      rlo[sl][i] = srows[i * MASKC_BLOCK_M + r];
      rlen[sl][i] = srows[(maskc_kv_interval_count + i) * MASKC_BLOCK_M + r];
    }
  }
  __syncthreads();  // stage 1 is the loop's again
#else
#pragma unroll
  for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) {
    const int qs = maskc_nonneg(row_base + maskc_slot_row(lane, sl));
    long long lo[maskc_kv_interval_count], hi[maskc_kv_interval_count];
    maskc_kv_intervals_lane(buf, nB, nH, nHKV, nQ, nKV, b, h, qs, (long long)qs + 1, lo, hi);
#pragma unroll
    for (int i = 0; i < maskc_kv_interval_count; ++i) {
      rlo[sl][i] = (int)lo[i];
      rlen[sl][i] = qs < Sq ? (int)(hi[i] - lo[i]) : 0;
    }
  }
#endif
#endif
#define MASKC_COL_SLOTS (MASKC_BLOCK_N / 4)
  // The column parts of a tile; the mask's only where it is not full.
#if MASKC_MASK_BITS
#define MASKC_READ_MASK_COL(cs, kvs)
#else
#define MASKC_READ_MASK_COL(cs, kvs) \
  if (!full) mcol[cs] = maskc_mask_col(buf, nB, nH, nHKV, nQ, nKV, b, h, kvs);
#endif
#define MASKC_READ_COLS()                                                                              \
  MaskcMaskCol mcol[MASKC_COL_SLOTS];                                                                  \
  MaskcScoreCol scol[MASKC_COL_SLOTS];                                                                 \
  (void)mcol;                                                                                          \
  _Pragma("unroll") for (int cs = 0; cs < MASKC_COL_SLOTS; ++cs) {                                     \
    const int kvs = maskc_nonneg(kv0 + maskc_colslot_col<MASKC_BLOCK_N>(lane, cs));                   \
    MASKC_READ_MASK_COL(cs, kvs)                                                                       \
    scol[cs] = maskc_score_col(buf, nB, nH, nHKV, nQ, nKV, b, h, kvs);                                 \
  }
#define MASKC_SCORE_AT(i, x, qi, kvi)                                                                         \
  maskc_score_rc(buf, nB, nH, nHKV, nQ, nKV, srow[maskc_frag_slot<MASKC_BLOCK_N>(i)],                        \
                 scol[maskc_frag_colslot<MASKC_BLOCK_N>(i)], x, b, h, qi, kvi)
#define MASKC_MASK_AT(i, qi, kvi)                                                                             \
  maskc_mask_rc(buf, nB, nH, nHKV, nQ, nKV, mrow[maskc_frag_slot<MASKC_BLOCK_N>(i)],                         \
                mcol[maskc_frag_colslot<MASKC_BLOCK_N>(i)], b, h, qi, kvi)
  int stage = 0;
  bool first = true;
#if defined(MASKC_PLATFORM_AMD) && defined(MASKC_KV_SELECTION) && defined(MASKC_HAS_MASK)
  // AMD, block selections: maskc_tile_full of the MASKC_WARP_SIZE tiles from
  // full_base, lane i asking for tile full_base + i, as the bits of a ballot.
  // Asked per tile, the test's reads of the selected blocks and their
  // addresses were held across the loop in scalar registers, and spilled.
  int full_base = -MASKC_WARP_SIZE;
  unsigned long long full_bits = 0;
#endif

  while (kt < kt_end) {
    if (!first) {
      maskc_copy_wait_all();
      __syncthreads();  // tile kt landed; every warp is done with the other stage
    }
    first = false;
    const int kt_next = next_tile(kt + 1);
    if (kt_next < kt_end) {
      maskc_elem_t* dst = sKV + (stage ^ 1) * MASKC_STAGE_ELEMS;
#if MASKC_LOOP_LEAN
      maskc_load_tile_lean<MASKC_BLOCK_N>(dst, Kp, shape.k_stride[2], kt_next * MASKC_BLOCK_N, Skv, tid);
      maskc_load_tile_lean<MASKC_BLOCK_N>(dst + MASKC_KV_TILE_ELEMS, Vp, shape.v_stride[2], kt_next * MASKC_BLOCK_N,
                                          Skv, tid);
#else
      maskc_load_tile<MASKC_BLOCK_N>(dst, Kp, shape.k_stride[2], kt_next * MASKC_BLOCK_N, Skv, tid);
      maskc_load_tile<MASKC_BLOCK_N>(dst + MASKC_KV_TILE_ELEMS, Vp, shape.v_stride[2], kt_next * MASKC_BLOCK_N, Skv,
                                     tid);
#endif
    }
    maskc_copy_commit();
    const maskc_elem_t* sK = sKV + stage * MASKC_STAGE_ELEMS;
    const maskc_elem_t* sV = sK + MASKC_KV_TILE_ELEMS;

    // Is every (q, kv) of this tile visible? Then skip the mask. Asked before
    // the MMA, so that buffer reads it makes overlap it.
    const int kv0 = kt * MASKC_BLOCK_N;
    bool full = kv0 + MASKC_BLOCK_N <= Skv;
#if defined(MASKC_HAS_MASK)
#if defined(MASKC_SPARSITY_PREPASS)
    full = full && cur_flag == 2;
    cur_flag = next_flag;
#elif defined(MASKC_SPARSITY_ANALYTIC)
#if MASKC_ROW_BITS
    if (rows_exact)
      full = full && maskc_warp_all(maskc_rows_hold<MASKC_ROW_SLOTS, maskc_kv_interval_count>(rlo, rlen, kv0, MASKC_BLOCK_N));
    else
#endif
#if defined(MASKC_PLATFORM_AMD) && defined(MASKC_KV_SELECTION)
    {
      if (kt >= full_base + MASKC_WARP_SIZE) {
        // The buffers read through the kernarg segment here (maskc_kernarg):
        // otherwise each term's read address (its buffer's pointer plus the
        // term's constant offset) is hoisted out of the loop, 2 scalar
        // registers a term.
        const MaskcBuffers& kbuf = *(const MaskcBuffers*)maskc_kernarg<MaskcBuffers, decltype(maskc_attn_fwd), 6>();
        full_base = kt;
        const long long t0 = (long long)(kt + lane) * MASKC_BLOCK_N;
        full_bits = maskc_walk_ballot(maskc_tile_full(kbuf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, t0, t0 + MASKC_BLOCK_N));
      }
      full = full && ((full_bits >> (kt - full_base)) & 1ull) != 0;
    }
#elif defined(MASKC_PLATFORM_AMD)
    // The buffers read through the kernarg segment here (maskc_kernarg), as above: the test's
    // read addresses of the q tile's rows were hoisted out of the loop into scalar registers.
    full = full && maskc_tile_full(*(const MaskcBuffers*)maskc_kernarg<MaskcBuffers, decltype(maskc_attn_fwd), 6>(), nB,
                                   nH, nHKV, nQ, nKV, b, h, q0, q_end, kv0, kv0 + MASKC_BLOCK_N);
#else
    full = full && maskc_tile_full(buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, kv0, kv0 + MASKC_BLOCK_N);
#endif
#else
    full = false;
#endif
#endif

#define MASKC_S_ROW(i) maskc_nonneg(row_base + maskc_frag_row<MASKC_BLOCK_N>(lane, i))
#define MASKC_S_COL(i) maskc_nonneg(kv0 + maskc_frag_col<MASKC_BLOCK_N>(lane, i))
    float s[MASKC_S_ELEMS];
#if MASKC_MASK_BITS
    // The tile's keep bits (bit i % 32 of word i / 32: logit i kept).
    unsigned kbits[(MASKC_S_ELEMS + 31) / 32];
#pragma unroll
    for (int w = 0; w < (MASKC_S_ELEMS + 31) / 32; ++w) kbits[w] = 0u;
    if (!full) {
#if MASKC_ROW_BITS
      if (rows_exact) {
#pragma unroll
        for (int i = 0; i < MASKC_S_ELEMS; ++i) {
          const int sl = maskc_frag_slot<MASKC_BLOCK_N>(i);
          const bool keep = maskc_in_intervals<maskc_kv_interval_count>(rlo[sl], rlen[sl], MASKC_S_COL(i));
          kbits[i / 32] |= (unsigned)keep << (i % 32);
        }
      } else
#endif
      {
#if MASKC_LOOP_LEAN && MASKC_ROW_BITS
      // Rows not proven exact (MASKC_LOOP_LEAN): their mask parts and
      // indices rebuilt here from an opaque thread index, so that the hot
      // path does not carry them across the loop for this fallback.
      const int ftid = maskc_opaque_int(tid);
      const int flane = ftid % MASKC_WARP_SIZE, frow_base = q0 + ftid / MASKC_WARP_SIZE * MASKC_WARP_ROWS;
      MaskcMaskRow frow[MASKC_ROW_SLOTS];
#pragma unroll
      for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl)
        frow[sl] = maskc_mask_row(buf, nB, nH, nHKV, nQ, nKV, b, h, maskc_nonneg(frow_base + maskc_slot_row(flane, sl)));
#define MASKC_FB_ROW(i) maskc_nonneg(frow_base + maskc_frag_row<MASKC_BLOCK_N>(flane, i))
#define MASKC_FB_MROW frow
#else
#define MASKC_FB_ROW(i) MASKC_S_ROW(i)
#define MASKC_FB_MROW mrow
#endif
#if defined(MASKC_HAS_MASK)
      MaskcMaskCol bcol[MASKC_COL_SLOTS];
#if MASKC_COL_SHFL
      maskc_mask_cols_shfl(bcol, buf, nB, nH, nHKV, nQ, nKV, b, h, kv0, lane);
#else
#pragma unroll
      for (int cs = 0; cs < MASKC_COL_SLOTS; ++cs)
        bcol[cs] = maskc_mask_col(buf, nB, nH, nHKV, nQ, nKV, b, h,
                                  maskc_nonneg(kv0 + maskc_colslot_col<MASKC_BLOCK_N>(lane, cs)));
#endif
#endif
#pragma unroll
      for (int i = 0; i < MASKC_S_ELEMS; ++i) {
        const int qi = MASKC_FB_ROW(i), kvi = MASKC_S_COL(i);
        (void)qi;
        bool keep = kvi < Skv;
#if defined(MASKC_HAS_MASK)
        keep = keep && maskc_mask_rc(buf, nB, nH, nHKV, nQ, nKV, MASKC_FB_MROW[maskc_frag_slot<MASKC_BLOCK_N>(i)],
                                     bcol[maskc_frag_colslot<MASKC_BLOCK_N>(i)], b, h, qi, kvi);
#endif
        kbits[i / 32] |= (unsigned)keep << (i % 32);
      }
#undef MASKC_FB_ROW
#undef MASKC_FB_MROW
      }
    }
#endif
    MASKC_READ_COLS()
#pragma unroll
    for (int i = 0; i < MASKC_S_ELEMS; ++i) s[i] = 0.f;
#if MASKC_LOOP_LEAN && MASKC_NV_WGMMA
    {
      // The Q descriptors rebuilt per tile from an opaque address, not kept
      // (some of them spilled) across the loop (MASKC_LOOP_LEAN).
      MaskcQFrag<MASKC_HEAD_DIM> qt_ = qf;
      asm volatile("mov.b64 %0, %1;" : "=l"(qt_.sQ) : "l"(qf.sQ));
      maskc_mma_qk<MASKC_DT, MASKC_HEAD_DIM, MASKC_BLOCK_N>(s, qt_, sK, lane);
    }
#else
    maskc_mma_qk<MASKC_DT, MASKC_HEAD_DIM, MASKC_BLOCK_N>(s, qf, sK, lane);
#endif

    // Score mod on the scaled logit, then the mask.
#if defined(MASKC_PLATFORM_AMD) && defined(MASKC_SCORE_HEAVY)
    // Each logit made before the next one's score (maskc_vgpr): a transcendental
    // function's argument reduction branches, and the compiler sank every logit's
    // remaining arithmetic past the last branch, holding all their reduced arguments
    // at once (trig.flex: 48 VGPRs to scratch).
#define MASKC_SCORE_DONE(x) maskc_vgpr(x)
#else
#define MASKC_SCORE_DONE(x) x
#endif
    if (full) {
#if defined(MASKC_HAS_SCORE)
#pragma unroll
      for (int i = 0; i < MASKC_S_ELEMS; ++i)
        s[i] = MASKC_SCORE_DONE(MASKC_SCORE_AT(i, s[i] * shape.scale, MASKC_S_ROW(i), MASKC_S_COL(i)));
#endif
    } else {
#pragma unroll
      for (int i = 0; i < MASKC_S_ELEMS; ++i) {
        const int qi = MASKC_S_ROW(i), kvi = MASKC_S_COL(i);
        (void)qi, (void)kvi;
#if defined(MASKC_HAS_SCORE)
        const float x = MASKC_SCORE_AT(i, s[i] * shape.scale, qi, kvi);
#else
        const float x = s[i];
#endif
#if MASKC_MASK_BITS
        const bool keep = (kbits[i / 32] >> (i % 32)) & 1u;
#else
        bool keep = kvi < Skv;
#if defined(MASKC_HAS_MASK)
        keep = keep && MASKC_MASK_AT(i, qi, kvi);
#endif
#endif
        s[i] = MASKC_SCORE_DONE(keep ? x : maskc_neg_inf());
      }
    }
#undef MASKC_SCORE_DONE
#undef MASKC_S_ROW
#undef MASKC_S_COL

    // Online softmax in base 2; O rescaled only when some row's max moved.
    float alpha[MASKC_ROW_SLOTS];
    if (maskc_softmax_tile<MASKC_BLOCK_N>(s, m, l, alpha, unit)) maskc_softmax_rescale<MASKC_HEAD_DIM>(o, alpha);

    maskc_mma_pv<MASKC_DT, MASKC_HEAD_DIM, MASKC_BLOCK_N>(o, s, sV, lane);
    kt = kt_next;
    stage ^= 1;
  }

  // Normalise, fold in the sink, store O and the natural-log LSE.
#if defined(MASKC_PLATFORM_AMD)
  {  // The shape and the output pointers read here, not held through the loop (maskc_kernarg).
    const MaskcShape& shape = *(const MaskcShape*)maskc_kernarg<MaskcShape, decltype(maskc_attn_fwd), 5>();
    maskc_elem_t* const Op =
        *maskc_kernarg<maskc_elem_t*, decltype(maskc_attn_fwd), 3>() + b * shape.o_stride[0] + h * shape.o_stride[1];
    float* const LSE = *maskc_kernarg<float*, decltype(maskc_attn_fwd), 4>();
#endif
  maskc_fwd_epilogue<MASKC_HEAD_DIM>(o, m, l, shape, b, h, row_base, lane, Sq, Op, LSE);
#if defined(MASKC_PLATFORM_AMD)
  }
#endif
}

#endif  // !MASKC_FWD_WS

// Pre-pass for masks without a closed-form block structure: one block per
// (q tile, kv tile) evaluates the mask over the tile for every (b', h').
// The row parts of the mask (its buffer reads that name q, not kv) of the
// tile's MASKC_BLOCK_M rows are read into shared memory first, one row a
// thread, all at once: read inside the row loop, each waited for the last
// (the loop may stop early, so the loads are not issued ahead), a load
// latency per row for every thread of an empty tile.
#if defined(MASKC_HAS_MASK)
#define MASKC_FLAGS_ROWS_SMEM (sizeof(MaskcMaskRow) * MASKC_BLOCK_M <= 16384)
#endif
extern "C" __global__ void __launch_bounds__(MASKC_NUM_THREADS)
    maskc_tile_flags(MaskcShape shape, MaskcBuffers buf, unsigned char* flags) {
#if defined(MASKC_HAS_MASK)
  static_assert(MASKC_BLOCK_M <= MASKC_NUM_THREADS, "one row part a thread");
  __shared__ MaskcMaskRow srow[MASKC_FLAGS_ROWS_SMEM ? MASKC_BLOCK_M : 1];
  const int n_qt = (shape.Sq + MASKC_BLOCK_M - 1) / MASKC_BLOCK_M;
  const int n_kt = (shape.Skv + MASKC_BLOCK_N - 1) / MASKC_BLOCK_N;
  const int kt = blockIdx.x, qt = blockIdx.y;
  const int q0 = qt * MASKC_BLOCK_M, kv0 = kt * MASKC_BLOCK_N;
  const long long nB = shape.B, nH = shape.H, nHKV = shape.HKV, nQ = shape.Sq, nKV = shape.Skv;
  const int nb = MASKC_MASK_USES_B ? shape.B : 1, nh = MASKC_MASK_USES_H ? shape.H : 1;
#if defined(MASKC_PREPASS_TERMS)
  __shared__ unsigned terms_live;  // bit i: term i's conditions on q alone hold on a row of the tile
#endif
  for (int b = 0; b < nb; ++b) {
    for (int h = 0; h < nh; ++h) {
      bool any = false, all = true;
      // Each thread keeps one column, so the column's part of the mask
      // (its buffer reads) is read once; rows past Sq are never stored and do
      // not count. A thread that has seen a kept and a masked pair knows the
      // tile is partial and stops.
      const int kv = maskc_nonneg(kv0 + (int)threadIdx.x % MASKC_BLOCK_N);
      const int q_stop = min(q0 + MASKC_BLOCK_M, shape.Sq);
#if defined(MASKC_PREPASS_TERMS)
      // The terms live on the tile's rows, each thread a row, and their kv ranges over the
      // rows: a tile that none of the live ones meets holds no kept pair, and a tile
      // maskc_tile_full proves full is full, neither evaluating a pair (every thread
      // decides alike). (The last (b, h)'s read of terms_live ended at its maskc_block_all.)
      if (threadIdx.x == 0) terms_live = 0;
      __syncthreads();
      {
        const int q = q0 + (int)threadIdx.x;
        if (threadIdx.x < MASKC_BLOCK_M && q < q_stop)
          atomicOr(&terms_live, maskc_term_rows(buf, nB, nH, nHKV, nQ, nKV, b, h, maskc_nonneg(q)));
      }
#endif
      if (MASKC_FLAGS_ROWS_SMEM) {  // (the last (b, h)'s reads of srow ended at its maskc_block_all)
        const int q = q0 + (int)threadIdx.x;
        if (threadIdx.x < MASKC_BLOCK_M && q < q_stop)
          srow[threadIdx.x] = maskc_mask_row(buf, nB, nH, nHKV, nQ, nKV, b, h, maskc_nonneg(q));
        __syncthreads();
      }
#if defined(MASKC_PREPASS_TERMS)
      if (!MASKC_FLAGS_ROWS_SMEM) __syncthreads();
      {
        const unsigned live = terms_live;
        const long long k1 = min(kv0 + MASKC_BLOCK_N, shape.Skv);
        long long lo[maskc_term_count], hi[maskc_term_count];
        maskc_kv_term_ranges(buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_stop, lo, hi);
        bool meets = false;
        for (int i = 0; i < maskc_term_count; ++i)
          meets = meets || (((live >> i) & 1u) && lo[i] < hi[i] && lo[i] < k1 && kv0 < hi[i]);
        const int decided = !meets ? 0
                            : kv0 + MASKC_BLOCK_N <= shape.Skv &&
                                      maskc_tile_full(buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_stop, kv0, kv0 + MASKC_BLOCK_N)
                                ? 2
                                : -1;
        if (decided >= 0) {
          if (threadIdx.x == 0) flags[maskc_flag_row(shape, b, h, qt, n_qt, n_kt) + kt] = (unsigned char)decided;
          __syncthreads();  // srow and terms_live are read no more
          continue;
        }
      }
#endif
      if (kv < shape.Skv) {
        const MaskcMaskCol mcol = maskc_mask_col(buf, nB, nH, nHKV, nQ, nKV, b, h, kv);
        for (int q = q0 + (int)threadIdx.x / MASKC_BLOCK_N; q < q_stop; q += MASKC_NUM_THREADS / MASKC_BLOCK_N) {
          const int qs = maskc_nonneg(q);
          const MaskcMaskRow row =
              MASKC_FLAGS_ROWS_SMEM ? srow[q - q0] : maskc_mask_row(buf, nB, nH, nHKV, nQ, nKV, b, h, qs);
          const bool keep = maskc_mask_rc(buf, nB, nH, nHKV, nQ, nKV, row, mcol, b, h, qs, kv);
          any = any || keep;
          all = all && keep;
          if (any && !all) break;
        }
      } else {
        all = q0 + (int)threadIdx.x / MASKC_BLOCK_N >= q_stop;  // a key past Skv: no row of the tile keeps it
      }
      any = maskc_block_any(any);
      all = maskc_block_all(all);
      if (threadIdx.x == 0) flags[maskc_flag_row(shape, b, h, qt, n_qt, n_kt) + kt] = any ? (all ? 2 : 1) : 0;
    }
  }
#else
  (void)shape, (void)buf, (void)flags;
#endif
}

#if defined(MASKC_SEG_CHECK)
// Checks the order of the kernel's segments buffers (maskc_g_seg_check,
// generated): one block, launched first before every forward and backward,
// writes status word 1 + slot (1: sorted, the segment searches may narrow
// the walk; 0: not, they narrow nothing) and MASKC_STATUS_SEGMENTS_UNSORTED.
extern "C" __global__ void __launch_bounds__(MASKC_NUM_THREADS) maskc_seg_check(MaskcBuffers buf) {
  maskc_g_seg_check(buf);
}
#endif

#endif  // MASKC_ATTN_FWD_H
