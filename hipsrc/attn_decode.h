// maskc split-KV decode attention: short query blocks (Sq <= 16, a
// generate() step or a speculative-decoding check) against a long key cache.
//
// Compiled after attn_fwd.h in every generated source (hipsrc.Assemble), from
// the same generated part: the mask, the score, the sink and the sparsity are
// the forward's, evaluated through the position frame (frame.h) at global
// positions, so that a decode step with q_offset = past_len computes what
// the forward computes for those rows.
//
// Entry points (C linkage, hipsrc.Entries):
//   maskc_attn_decode        grid (n_split * row_blocks, HKV, B),
//                            MASKC_DEC_THREADS threads, static shared memory.
//   maskc_attn_decode_merge  grid (Sq, H, B), MASKC_DEC_THREADS threads;
//                            launched after it when n_split > 1.
// row_blocks = ceil(Sq * G / MASKC_DEC_ROWS) with G = H / HKV.
//
// The decode kernel: one block per (batch, kv head, row block, key split).
// The rows of a block are MASKC_DEC_ROWS of the Sq * G query rows of the G
// query heads that share its kv head (row r: head r / Sq of the group, query
// r % Sq), so that every key and value it reads serves all of them. The key
// tiles of the mask's kv intervals for those rows (tile_walk.h; for a
// pre-pass mask too, with no pre-pass launch: MASKC_DEC_WALK) are counted
// and dealt out evenly to the n_split blocks of the row block, so that a
// sliding window reads only the window's keys however long the cache is.
// Tiles of MASKC_DEC_BLOCK_N keys are read with 16-byte loads into registers
// while the block computes on the previous tile, converted to fp32 and
// stored to shared memory once (not once per row). Each warp takes a quarter
// of a tile's keys; within a warp, each lane holds MASKC_DEC_ELEMS columns
// of the Q and O of MASKC_DEC_RPL rows, and a logit is a lane-local FMA
// chain and a MASKC_DEC_PARTS-wide shuffle reduction. The logit goes
// through the score mod (on the scaled logit), the mask (skipped on tiles
// maskc_tile_full proves full) and an online softmax in base 2, as in the
// forward (P stays fp32 in the P.V sums, where the forward rounds it to the
// element type for its MMA). The warps' partial results are merged in warp
// order (deterministic) through shared memory; with one split the block
// writes O and the LSE, else its split's
// normalised O and base-2 LSE go to the workspace (fp32, ws_o[row][split][D],
// ws_lse[row][split], row = (b * H + h) * Sq + q) and the merge kernel
// combines the splits through their LSEs and folds in the sink. A fully
// masked row stores O = 0 and LSE = -inf, or the sink's logit with a sink.
#ifndef MASKC_ATTN_DECODE_H
#define MASKC_ATTN_DECODE_H

// Launch shape (hipsrc DecodeWarps, DecodeRows, DecodeMaxSq: a test keeps them equal).
#define MASKC_DEC_WARPS 4
#define MASKC_DEC_THREADS (MASKC_DEC_WARPS * MASKC_WARP_SIZE)
#define MASKC_DEC_ROWS 8
#define MASKC_DEC_MAX_SQ 16
// Each lane holds MASKC_DEC_RPL rows (rows g, g + ROW_GROUPS, ...: its row
// group g) and MASKC_DEC_ELEMS head-dim columns of them, as float4 chunks:
// chunk c of lane part p is columns 4 (c * PARTS + p) .. + 3, so that the
// PARTS lanes of a row group read 16 * PARTS contiguous bytes of shared
// memory per instruction, broadcast to the other row groups: on NVIDIA 4
// rows a lane, 2 row groups of 16 parts (a quarter-warp's 8 lanes read 128
// distinct bytes: even where a 16-byte load's broadcast is not merged
// across quarter-warps, shared memory serves 128 bytes per cycle), for 4
// more shuffles per row and key than 2 rows a lane; on AMD 2 rows a lane,
// 4 row groups of 16 parts (4 rows would leave 2 columns a lane at head
// dim 64). Keys per tile: 16 KiB of bf16/fp16 K and V, 32 KiB in fp32.
#if defined(MASKC_PLATFORM_AMD)
#define MASKC_DEC_RPL 2
#else
#define MASKC_DEC_RPL 4
#endif
#define MASKC_DEC_ROW_GROUPS (MASKC_DEC_ROWS / MASKC_DEC_RPL)
#define MASKC_DEC_PARTS (MASKC_WARP_SIZE / MASKC_DEC_ROW_GROUPS)
#define MASKC_DEC_ELEMS (MASKC_HEAD_DIM / MASKC_DEC_PARTS)
#define MASKC_DEC_CHUNKS (MASKC_DEC_ELEMS / 4)
#define MASKC_DEC_BLOCK_N (4096 / MASKC_HEAD_DIM)
#define MASKC_DEC_WARP_KEYS (MASKC_DEC_BLOCK_N / MASKC_DEC_WARPS)
// 16-byte chunks of one K (or V) tile, and per thread for both.
#define MASKC_DEC_TILE_CHUNKS (MASKC_DEC_BLOCK_N * MASKC_HEAD_DIM / 8)
#define MASKC_DEC_LOADS (2 * MASKC_DEC_TILE_CHUNKS / MASKC_DEC_THREADS)
// The decode walks the mask's kv intervals and tests tiles full wherever the generated part
// has them: analytic masks, and pre-pass masks, whose intervals and full tests are sound too (a
// mask too complex to analyse has [0, KV) and no full tile); a decode step launches no pre-pass.
#if defined(MASKC_HAS_MASK) && (defined(MASKC_SPARSITY_ANALYTIC) || defined(MASKC_SPARSITY_PREPASS))
#define MASKC_DEC_WALK 1
#endif
// Where a term's remainder conditions can fail on a whole tile (MASKC_KV_TILE_FILTER: `(q - kv) %
// S == 0` and its kin, codegen/period.go), the walk's tiles that no term keeps for any row of the
// block are passed over as the forward's walk passes them (maskc_walk_next_live): neither loaded nor
// computed. The splits still share the walk's tiles by rank, the passed ones included.
#if defined(MASKC_DEC_WALK) && defined(MASKC_KV_TILE_FILTER)
#define MASKC_DEC_FILTER 1
#endif

static_assert(MASKC_DEC_WARP_KEYS >= 1 && MASKC_DEC_BLOCK_N % MASKC_DEC_WARPS == 0, "whole keys per warp");
static_assert(MASKC_DEC_ELEMS % 4 == 0, "float4 chunks per lane");
static_assert((2 * MASKC_DEC_TILE_CHUNKS) % MASKC_DEC_THREADS == 0, "whole loads per thread");
static_assert(MASKC_DEC_WARPS * MASKC_DEC_ROWS * 2 * 4 <= 2 * MASKC_DEC_BLOCK_N * MASKC_HEAD_DIM * 4 &&
                  MASKC_DEC_ROWS * MASKC_HEAD_DIM * 4 + MASKC_DEC_WARPS * MASKC_DEC_ROWS * 2 * 4 <=
                      2 * MASKC_DEC_BLOCK_N * MASKC_HEAD_DIM * 4,
              "the warps' merge fits in the tile's memory");

// 16- and 8-byte vectors for wide loads and stores (no vector headers in NVRTC).
struct __attribute__((aligned(16))) maskc_dec_u32x4 {
  unsigned x, y, z, w;
};
struct __attribute__((aligned(16))) maskc_dec_f32x4 {
  float x, y, z, w;
};
struct __attribute__((aligned(8))) maskc_dec_u32x2 {
  unsigned x, y;
};

// The two elements of a packed pair as floats (low half first).
__device__ __forceinline__ float maskc_dec_lo(maskc_u32 x) {
#if defined(MASKC_DTYPE_F16)
#if defined(MASKC_PLATFORM_NVIDIA)
  float f;
  asm("{ .reg .f16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"((unsigned short)(x & 0xffffu)));
  return f;
#else
  return (float)__builtin_bit_cast(_Float16, (unsigned short)(x & 0xffffu));
#endif
#else
  return __uint_as_float(x << 16);
#endif
}
__device__ __forceinline__ float maskc_dec_hi(maskc_u32 x) {
#if defined(MASKC_DTYPE_F16)
  return maskc_dec_lo(x >> 16);
#else
  return __uint_as_float(x & 0xffff0000u);
#endif
}

// The r-th tile (0-based) of a walk's visited tiles, or w.end() past them.
template <int N>
__device__ __forceinline__ int maskc_dec_walk_at(const MaskcTileWalk<N>& w, int r) {
  int at = w.end(), seen = 0;
  bool found = false;
#pragma unroll
  for (int i = 0; i < N; ++i) {
#if defined(MASKC_PLATFORM_AMD)
    {  // an interval not live is empty on AMD (maskc_walk_from)
#else
    if ((w.live >> i) & 1u) {
#endif
      const int n = w.hi[i] - w.lo[i];
      if (!found && r < seen + n) {
        at = w.lo[i] + (r - seen);
        found = true;
      }
      seen += n;
    }
  }
  return at;
}

// O and LSE of one row from its n_split partials (normalised O, base-2 LSE
// in the kernel's units): columns [c0, D) step cstep. A split that kept no
// key has LSE -inf and O 0.
template <typename PartO, typename PartL>
__device__ __forceinline__ void maskc_dec_finish(maskc_elem_t* Orow, float* lse_out, int h, const MaskcShape& shape,
                                                 int n_split, PartO part_o, PartL part_l, int c0, int cstep) {
  float M = maskc_neg_inf();
  for (int s = 0; s < n_split; ++s) M = fmaxf(M, part_l(s));
  const float Mref = M == maskc_neg_inf() ? 0.f : M;
  float total = 0.f;
  for (int s = 0; s < n_split; ++s) total += maskc_exp2(part_l(s) - Mref);
  float top = Mref, corr = 1.f;  // O = sum_s 2^(lse_s - Mref) O_s * corr / total
#if defined(MASKC_HAS_SINK)
  if (shape.sink != nullptr) {
    const float s2 = shape.sink[h] * MASKC_LOG2E;
    const float mf = M == maskc_neg_inf() ? s2 : fmaxf(M, s2);
    corr = maskc_exp2(Mref - mf);
    total = total * corr + maskc_exp2(s2 - mf);
    top = mf;
  }
#else
  (void)h, (void)shape;
#endif
  const float inv = total > 0.f ? corr / total : 0.f;
  for (int c = c0; 2 * c < MASKC_HEAD_DIM; c += cstep) {
    float a = 0.f, b = 0.f;
    for (int s = 0; s < n_split; ++s) {
      const float w = maskc_exp2(part_l(s) - Mref);
      a += w * part_o(s, 2 * c);
      b += w * part_o(s, 2 * c + 1);
    }
    *(maskc_u32*)(Orow + 2 * c) = maskc_pack2<MASKC_DT>(a * inv, b * inv);
  }
  if (c0 == 0) *lse_out = total > 0.f ? (top + maskc_log2(total)) * MASKC_LN2 : maskc_neg_inf();
}

extern "C" __global__ void __launch_bounds__(MASKC_DEC_THREADS)
    maskc_attn_decode(const maskc_elem_t* __restrict__ Q, const maskc_elem_t* __restrict__ K,
                      const maskc_elem_t* __restrict__ V, maskc_elem_t* __restrict__ O, float* __restrict__ LSE,
                      MaskcShape shape, MaskcBuffers buf, float* __restrict__ ws_o, float* __restrict__ ws_lse,
                      int n_split) {
  // K then V of one tile in fp32, [key][column]; after the key loop, the
  // warps' merge: m and l per (warp, row), then O per row.
  __shared__ __attribute__((aligned(16))) float sKV[2 * MASKC_DEC_BLOCK_N * MASKC_HEAD_DIM];
  const int tid = threadIdx.x, warp = tid / MASKC_WARP_SIZE, lane = tid % MASKC_WARP_SIZE;
  const int rg = lane / MASKC_DEC_PARTS, part = lane % MASKC_DEC_PARTS;
  const int split = (int)(blockIdx.x % (unsigned)n_split), rblock = (int)(blockIdx.x / (unsigned)n_split);
  const int hkv = maskc_nonneg((int)blockIdx.y), b = maskc_nonneg((int)blockIdx.z);
  const int G = shape.H / shape.HKV;
  const int Sq = maskc_nonneg(shape.Sq), Skv = maskc_nonneg(shape.Skv);
  const int n_rows = Sq * G;
  const long long nB = shape.B, nH = shape.H, nHKV = shape.HKV, nQ = Sq, nKV = Skv;
  (void)nB, (void)nH, (void)nHKV, (void)nQ, (void)nKV;

  // This lane's rows: row j is r[j] of the block (head g of the group,
  // query qi); a padding row (past Sq * G) takes row 0's indices harmlessly
  // and is never stored.
  int qi[MASKC_DEC_RPL], h[MASKC_DEC_RPL];
  bool row_ok[MASKC_DEC_RPL];
  float q[MASKC_DEC_RPL][MASKC_DEC_ELEMS];
#pragma unroll
  for (int j = 0; j < MASKC_DEC_RPL; ++j) {
    const int row = rblock * MASKC_DEC_ROWS + rg + j * MASKC_DEC_ROW_GROUPS;
    row_ok[j] = row < n_rows;
    const int g = row_ok[j] ? row / Sq : 0;
    qi[j] = maskc_nonneg(row_ok[j] ? row % Sq : 0);
    h[j] = maskc_nonneg(hkv * G + g);
    const maskc_elem_t* Qp = Q + b * shape.q_stride[0] + h[j] * shape.q_stride[1] + qi[j] * shape.q_stride[2];
#pragma unroll
    for (int c = 0; c < MASKC_DEC_CHUNKS; ++c) {
      const maskc_dec_u32x2 x = *(const maskc_dec_u32x2*)(Qp + 4 * (c * MASKC_DEC_PARTS + part));
      q[j][4 * c] = maskc_dec_lo(x.x);
      q[j][4 * c + 1] = maskc_dec_hi(x.x);
      q[j][4 * c + 2] = maskc_dec_lo(x.y);
      q[j][4 * c + 3] = maskc_dec_hi(x.y);
    }
  }

  // The key tiles of this row block, and this split's share of them.
  const int n_kt = (Skv + MASKC_DEC_BLOCK_N - 1) / MASKC_DEC_BLOCK_N;
#if defined(MASKC_DEC_WALK)
  MaskcTileWalk<maskc_kv_interval_count> walk;
#if defined(MASKC_DEC_FILTER)
  // The hull and the block's heads outlive the walk's build: the filter reads them per tile.
  long long lo[maskc_kv_interval_count], hi[maskc_kv_interval_count];
  const int r0 = rblock * MASKC_DEC_ROWS, r1 = min(r0 + MASKC_DEC_ROWS, n_rows);
  const int g0 = r0 / Sq, g1 = MASKC_MASK_USES_H ? (r1 - 1) / Sq : g0;
  {
#pragma unroll
    for (int i = 0; i < maskc_kv_interval_count; ++i) lo[i] = hi[i] = 0;
#else
  {
    // The hull, per disjunct, of the kv intervals of the block's heads.
    long long lo[maskc_kv_interval_count], hi[maskc_kv_interval_count];
#pragma unroll
    for (int i = 0; i < maskc_kv_interval_count; ++i) lo[i] = hi[i] = 0;
    const int r0 = rblock * MASKC_DEC_ROWS, r1 = min(r0 + MASKC_DEC_ROWS, n_rows);
    const int g0 = r0 / Sq, g1 = MASKC_MASK_USES_H ? (r1 - 1) / Sq : g0;
#endif
    for (int gg = g0; gg <= g1; ++gg) {
      long long l1[maskc_kv_interval_count], h1[maskc_kv_interval_count];
#if defined(MASKC_PLATFORM_AMD)
      // The walk held across the lanes (from 2 intervals): built in vector registers.
      maskc_kv_intervals(buf, nB, nH, nHKV, nQ, nKV, b, maskc_nonneg(hkv * G + gg), walk.lanes ? maskc_walk_vgpr(0) : 0,
                         walk.lanes ? maskc_walk_vgpr(Sq) : Sq, l1, h1);
#else
      maskc_kv_intervals(buf, nB, nH, nHKV, nQ, nKV, b, maskc_nonneg(hkv * G + gg), 0, Sq, l1, h1);
#endif
#pragma unroll
      for (int i = 0; i < maskc_kv_interval_count; ++i) {
        if (l1[i] >= h1[i]) continue;
        const bool none = lo[i] >= hi[i];
        lo[i] = none || l1[i] < lo[i] ? l1[i] : lo[i];
        hi[i] = none || h1[i] > hi[i] ? h1[i] : hi[i];
      }
    }
    maskc_walk_from(walk, lo, hi, Skv, MASKC_DEC_BLOCK_N);
  }
#if defined(MASKC_PLATFORM_AMD)
  // The intervals came through vector registers (maskc_walk_vgpr): the
  // walk's bounds, its count and its first tile back in scalar registers.
  maskc_walk_uniform(walk);
  const int n_vis = __builtin_amdgcn_readfirstlane(walk.count());
#else
  const int n_vis = walk.count();
#endif
#else
  const int n_vis = n_kt;
#endif
  const int rank0 = (int)((long long)n_vis * split / n_split), rank1 = (int)((long long)n_vis * (split + 1) / n_split);
#if defined(MASKC_DEC_WALK)
#if defined(MASKC_PLATFORM_AMD)
  int kt = rank0 < rank1 ? __builtin_amdgcn_readfirstlane(maskc_dec_walk_at(walk, rank0)) : n_kt;
#else
  int kt = rank0 < rank1 ? maskc_dec_walk_at(walk, rank0) : n_kt;
#endif
  auto next_tile = [&](int t) { return walk.next(t); };
#else
  int kt = rank0 < rank1 ? rank0 : n_kt;
  auto next_tile = [](int t) { return t; };
#endif
  (void)n_kt;
#if defined(MASKC_DEC_FILTER)
  // Passes over the walk's tiles from t on that no row of the block keeps a pair of (of the n
  // tiles left of the split; n counts the tiles passed): t is then a kept tile, or n is 0.
  // The hull's intervals serve every head of the block (a wider interval only keeps more).
  auto pass_dead = [&](int& t, int& n) {
    for (; n > 0; t = next_tile(t + 1)) {
      const long long k0 = (long long)t * MASKC_DEC_BLOCK_N, k1 = min(k0 + MASKC_DEC_BLOCK_N, (long long)Skv);
      bool live = false;
      for (int gg = g0; gg <= g1 && !live; ++gg)
        live = maskc_kv_tile_live(buf, nB, nH, nHKV, nQ, nKV, b, maskc_nonneg(hkv * G + gg), 0, Sq, k0, k1, lo, hi);
#if defined(MASKC_PLATFORM_AMD)
      live = __builtin_amdgcn_readfirstlane(live);
#endif
      if (live || --n == 0) break;
    }
  };
#endif

  // Register staging of one tile: chunk i of this thread is
  // tid + i * MASKC_DEC_THREADS over K's chunks then V's.
  const maskc_elem_t* Kp = K + b * shape.k_stride[0] + hkv * shape.k_stride[1];
  const maskc_elem_t* Vp = V + b * shape.v_stride[0] + hkv * shape.v_stride[1];
  maskc_dec_u32x4 st[MASKC_DEC_LOADS];
  auto load = [&](int t) {
#pragma unroll
    for (int i = 0; i < MASKC_DEC_LOADS; ++i) {
      const int c = tid + i * MASKC_DEC_THREADS;
      const int isv = c >= MASKC_DEC_TILE_CHUNKS, cc = isv ? c - MASKC_DEC_TILE_CHUNKS : c;
      const int key = t * MASKC_DEC_BLOCK_N + cc / (MASKC_HEAD_DIM / 8), col = cc % (MASKC_HEAD_DIM / 8) * 8;
      maskc_dec_u32x4 v = {0u, 0u, 0u, 0u};
      if (key < Skv)
        v = *(const maskc_dec_u32x4*)((isv ? Vp + key * shape.v_stride[2] : Kp + key * shape.k_stride[2]) + col);
      st[i] = v;
    }
  };
  auto store = [&]() {
#pragma unroll
    for (int i = 0; i < MASKC_DEC_LOADS; ++i) {
      const int c = tid + i * MASKC_DEC_THREADS;
      float* d = sKV + c * 8;  // K's chunks then V's: the same order as [K | V][key][column]
      const maskc_dec_u32x4 v = st[i];
      *(maskc_dec_f32x4*)d = {maskc_dec_lo(v.x), maskc_dec_hi(v.x), maskc_dec_lo(v.y), maskc_dec_hi(v.y)};
      *(maskc_dec_f32x4*)(d + 4) = {maskc_dec_lo(v.z), maskc_dec_hi(v.z), maskc_dec_lo(v.w), maskc_dec_hi(v.w)};
    }
  };

#if defined(MASKC_HAS_SCORE)
  const float unit = MASKC_LOG2E;
#else
  const float unit = shape.scale * MASKC_LOG2E;
#endif
  float o[MASKC_DEC_RPL][MASKC_DEC_ELEMS];
  float m[MASKC_DEC_RPL], l[MASKC_DEC_RPL];
#pragma unroll
  for (int j = 0; j < MASKC_DEC_RPL; ++j) {
#pragma unroll
    for (int e = 0; e < MASKC_DEC_ELEMS; ++e) o[j][e] = 0.f;
    m[j] = maskc_neg_inf();
    l[j] = 0.f;
  }

  int left = rank1 - rank0;
#if defined(MASKC_DEC_FILTER)
  pass_dead(kt, left);
#endif
  if (left > 0) load(kt);
  while (left > 0) {
    __syncthreads();  // every warp is done with the previous tile's memory
    store();
    __syncthreads();
    const int kv0 = kt * MASKC_DEC_BLOCK_N;
#if defined(MASKC_DEC_FILTER)
    int kt_next = kt;
    if (--left > 0) {
      kt_next = next_tile(kt + 1);
      pass_dead(kt_next, left);
    }
#else
    const int kt_next = --left > 0 ? next_tile(kt + 1) : kt;
#endif
    if (left > 0) load(kt_next);  // in flight while this tile is computed

    // Is every (row, key) of the tile kept? Then the mask is skipped.
    bool full = kv0 + MASKC_DEC_BLOCK_N <= Skv;
#if defined(MASKC_PLATFORM_AMD) && defined(MASKC_HAS_MASK)
    // The mask's buffers read through the kernarg segment here, once a
    // tile (maskc_kernarg): otherwise each term's read address (its
    // buffer's pointer plus the term's constant offset) is hoisted out of
    // the loop, 2 scalar registers a term.
    const MaskcBuffers& kbuf = *(const MaskcBuffers*)maskc_kernarg<MaskcBuffers, decltype(maskc_attn_decode), 6>();
#endif
#if defined(MASKC_HAS_MASK)
#if defined(MASKC_DEC_WALK)
#if defined(MASKC_PLATFORM_AMD)
#pragma unroll
    for (int j = 0; j < MASKC_DEC_RPL; ++j)
      full = full && maskc_tile_full(kbuf, nB, nH, nHKV, nQ, nKV, b, h[j], qi[j], qi[j] + 1, kv0, kv0 + MASKC_DEC_BLOCK_N);
#else
#pragma unroll
    for (int j = 0; j < MASKC_DEC_RPL; ++j)
      full = full && maskc_tile_full(buf, nB, nH, nHKV, nQ, nKV, b, h[j], qi[j], qi[j] + 1, kv0, kv0 + MASKC_DEC_BLOCK_N);
#endif
    full = maskc_warp_all(full);
#else
    full = false;
#endif
#endif
    // Logits of this warp's keys for the lane's rows, summed over the row
    // group's PARTS lanes, then the score mod and the mask.
    float s[MASKC_DEC_RPL][MASKC_DEC_WARP_KEYS];
#if defined(MASKC_PLATFORM_AMD) && defined(MASKC_SCORE_HEAVY)
    // A count, not a bare pragma: LLVM drops a full unroll whose body is over its size
    // threshold (a heavy score's keys at D = 64, trig.flex), and s[][] then went to
    // scratch memory (144 bytes per lane); a count is unrolled whatever the size.
    constexpr int maskc_dec_keys = MASKC_DEC_WARP_KEYS;
#pragma unroll maskc_dec_keys
#else
#pragma unroll
#endif
    for (int k = 0; k < MASKC_DEC_WARP_KEYS; ++k) {
      const float* kr = sKV + (warp * MASKC_DEC_WARP_KEYS + k) * MASKC_HEAD_DIM;
      float acc[MASKC_DEC_RPL];
#pragma unroll
      for (int j = 0; j < MASKC_DEC_RPL; ++j) acc[j] = 0.f;
#pragma unroll
      for (int c = 0; c < MASKC_DEC_CHUNKS; ++c) {
        const maskc_dec_f32x4 x = *(const maskc_dec_f32x4*)(kr + 4 * (c * MASKC_DEC_PARTS + part));
#pragma unroll
        for (int j = 0; j < MASKC_DEC_RPL; ++j) {
          acc[j] = fmaf(q[j][4 * c], x.x, acc[j]);
          acc[j] = fmaf(q[j][4 * c + 1], x.y, acc[j]);
          acc[j] = fmaf(q[j][4 * c + 2], x.z, acc[j]);
          acc[j] = fmaf(q[j][4 * c + 3], x.w, acc[j]);
        }
      }
      const int kv = maskc_nonneg(kv0 + warp * MASKC_DEC_WARP_KEYS + k);
#pragma unroll
      for (int j = 0; j < MASKC_DEC_RPL; ++j) {
#pragma unroll
        for (int w = 1; w < MASKC_DEC_PARTS; w *= 2) acc[j] += maskc_shfl_xor(acc[j], w);
#if defined(MASKC_HAS_SCORE)
        const float x = maskc_score(buf, nB, nH, nHKV, nQ, nKV, acc[j] * shape.scale, b, h[j], qi[j], kv);
#else
        const float x = acc[j];
#endif
        bool keep = true;
        if (!full) {
          keep = kv < Skv;
#if defined(MASKC_HAS_MASK) && defined(MASKC_PLATFORM_AMD)
          keep = keep && maskc_mask(kbuf, nB, nH, nHKV, nQ, nKV, b, h[j], qi[j], kv);
#elif defined(MASKC_HAS_MASK)
          keep = keep && maskc_mask(buf, nB, nH, nHKV, nQ, nKV, b, h[j], qi[j], kv);
#endif
        }
        s[j][k] = keep ? x : maskc_neg_inf();
      }
    }
    // Online softmax in base 2, as the forward's (a row with no kept key
    // yet keeps m = -inf and 0 as its reference).
    float alpha[MASKC_DEC_RPL];
    bool same = true;
#pragma unroll
    for (int j = 0; j < MASKC_DEC_RPL; ++j) {
      float mx = maskc_neg_inf();
#pragma unroll
      for (int k = 0; k < MASKC_DEC_WARP_KEYS; ++k) mx = fmaxf(mx, s[j][k]);
      const float m_new = fmaxf(m[j], mx * unit);
      const float mref = m_new == maskc_neg_inf() ? 0.f : m_new;
      alpha[j] = maskc_exp2(m[j] - mref);
      same = same && m_new == m[j];
      m[j] = m_new;
      l[j] *= alpha[j];
#pragma unroll
      for (int k = 0; k < MASKC_DEC_WARP_KEYS; ++k) {
        s[j][k] = maskc_exp2(fmaf(s[j][k], unit, -mref));
        l[j] += s[j][k];
      }
    }
    if (!maskc_warp_all(same)) {
#pragma unroll
      for (int j = 0; j < MASKC_DEC_RPL; ++j)
#pragma unroll
        for (int e = 0; e < MASKC_DEC_ELEMS; ++e) o[j][e] *= alpha[j];
    }
#pragma unroll
    for (int k = 0; k < MASKC_DEC_WARP_KEYS; ++k) {
      const float* vr = sKV + (MASKC_DEC_BLOCK_N + warp * MASKC_DEC_WARP_KEYS + k) * MASKC_HEAD_DIM;
#pragma unroll
      for (int c = 0; c < MASKC_DEC_CHUNKS; ++c) {
        const maskc_dec_f32x4 x = *(const maskc_dec_f32x4*)(vr + 4 * (c * MASKC_DEC_PARTS + part));
#pragma unroll
        for (int j = 0; j < MASKC_DEC_RPL; ++j) {
          o[j][4 * c] = fmaf(s[j][k], x.x, o[j][4 * c]);
          o[j][4 * c + 1] = fmaf(s[j][k], x.y, o[j][4 * c + 1]);
          o[j][4 * c + 2] = fmaf(s[j][k], x.z, o[j][4 * c + 2]);
          o[j][4 * c + 3] = fmaf(s[j][k], x.w, o[j][4 * c + 3]);
        }
      }
    }
    kt = kt_next;
  }

  // The warps' merge: [warp][row] m and l, then each warp in turn adds its
  // rescaled O into [row][column] (in warp order: deterministic).
  __syncthreads();
  float* sm = sKV;
  float* sl = sm + MASKC_DEC_WARPS * MASKC_DEC_ROWS;
  float* so = sl + MASKC_DEC_WARPS * MASKC_DEC_ROWS;
#pragma unroll
  for (int j = 0; j < MASKC_DEC_RPL; ++j) {
    if (part == 0) {
      sm[warp * MASKC_DEC_ROWS + rg + j * MASKC_DEC_ROW_GROUPS] = m[j];
      sl[warp * MASKC_DEC_ROWS + rg + j * MASKC_DEC_ROW_GROUPS] = l[j];
    }
  }
  __syncthreads();
  float M[MASKC_DEC_RPL], L[MASKC_DEC_RPL], f[MASKC_DEC_RPL];
#pragma unroll
  for (int j = 0; j < MASKC_DEC_RPL; ++j) {
    const int r = rg + j * MASKC_DEC_ROW_GROUPS;
    M[j] = maskc_neg_inf();
#pragma unroll
    for (int w = 0; w < MASKC_DEC_WARPS; ++w) M[j] = fmaxf(M[j], sm[w * MASKC_DEC_ROWS + r]);
    const float Mref = M[j] == maskc_neg_inf() ? 0.f : M[j];
    L[j] = 0.f;
#pragma unroll
    for (int w = 0; w < MASKC_DEC_WARPS; ++w)
      L[j] += sl[w * MASKC_DEC_ROWS + r] * maskc_exp2(sm[w * MASKC_DEC_ROWS + r] - Mref);
    f[j] = maskc_exp2(m[j] - Mref);
  }
#pragma unroll
  for (int w = 0; w < MASKC_DEC_WARPS; ++w) {
    if (warp == w) {
#pragma unroll
      for (int j = 0; j < MASKC_DEC_RPL; ++j) {
#pragma unroll
        for (int c = 0; c < MASKC_DEC_CHUNKS; ++c) {
          float* d = so + (rg + j * MASKC_DEC_ROW_GROUPS) * MASKC_HEAD_DIM + 4 * (c * MASKC_DEC_PARTS + part);
#pragma unroll
          for (int e = 0; e < 4; ++e) d[e] = (w == 0 ? 0.f : d[e]) + o[j][4 * c + e] * f[j];
        }
      }
    }
    __syncthreads();
  }
  // Each row's normalised O and base-2 LSE (M + log2 L, -inf when this
  // split kept nothing): O and the LSE with one split, else the workspace.
  if (warp != 0) return;
#if defined(MASKC_PLATFORM_AMD)
  {  // The output pointers and the shape (its strides) read here, not held through the loop (maskc_kernarg).
    const MaskcShape& shape = *(const MaskcShape*)maskc_kernarg<MaskcShape, decltype(maskc_attn_decode), 5>();
    maskc_elem_t* const O = *maskc_kernarg<maskc_elem_t*, decltype(maskc_attn_decode), 3>();
    float* const LSE = *maskc_kernarg<float*, decltype(maskc_attn_decode), 4>();
    float* const ws_o = *maskc_kernarg<float*, decltype(maskc_attn_decode), 7>();
    float* const ws_lse = *maskc_kernarg<float*, decltype(maskc_attn_decode), 8>();
#endif
#pragma unroll
  for (int j = 0; j < MASKC_DEC_RPL; ++j) {
    if (!row_ok[j]) continue;
    const float lse2 = L[j] > 0.f ? M[j] + maskc_log2(L[j]) : maskc_neg_inf();
    const float invL = L[j] > 0.f ? 1.f / L[j] : 0.f;
    const long long orow = ((long long)b * shape.H + h[j]) * Sq + qi[j];
    const float* srow = so + (rg + j * MASKC_DEC_ROW_GROUPS) * MASKC_HEAD_DIM;
    if (n_split == 1) {
      maskc_elem_t* Orow = O + b * shape.o_stride[0] + h[j] * shape.o_stride[1] + qi[j] * shape.o_stride[2];
      maskc_dec_finish(Orow, LSE + orow, h[j], shape, 1, [&](int, int c) { return srow[c] * invL; },
                       [&](int) { return lse2; }, part, MASKC_DEC_PARTS);
    } else {
      float* wo = ws_o + (orow * n_split + split) * MASKC_HEAD_DIM;
      for (int c = part; c < MASKC_HEAD_DIM; c += MASKC_DEC_PARTS) wo[c] = srow[c] * invL;
      if (part == 0) ws_lse[orow * n_split + split] = lse2;
    }
  }
#if defined(MASKC_PLATFORM_AMD)
  }
#endif
}

// Merges the n_split partials of one row (b, h, q) = (blockIdx.z, .y, .x).
extern "C" __global__ void __launch_bounds__(MASKC_DEC_THREADS)
    maskc_attn_decode_merge(maskc_elem_t* __restrict__ O, float* __restrict__ LSE, MaskcShape shape,
                            const float* __restrict__ ws_o, const float* __restrict__ ws_lse, int n_split) {
  const int qi = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const long long orow = ((long long)b * shape.H + h) * shape.Sq + qi;
  const float* po = ws_o + orow * n_split * MASKC_HEAD_DIM;
  const float* pl = ws_lse + orow * n_split;
  maskc_elem_t* Orow = O + b * shape.o_stride[0] + h * shape.o_stride[1] + qi * shape.o_stride[2];
  maskc_dec_finish(Orow, LSE + orow, h, shape, n_split, [&](int s, int c) { return po[s * MASKC_HEAD_DIM + c]; },
                   [&](int s) { return pl[s]; }, (int)threadIdx.x, MASKC_DEC_THREADS);
}

#endif  // MASKC_ATTN_DECODE_H
