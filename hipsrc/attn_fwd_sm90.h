// maskc fused attention forward for sm_90a (Hopper), warp-specialized in
// the structure of FlashAttention-3 (arXiv 2407.08608; its hopper/ mainloop).
//
// Compiled after attn_fwd.h, and only with MASKC_NV_WGMMA and MASKC_NV_WS
// both 1 (codegen writes #define MASKC_NV_WS 1 into the kernels it selects
// it for; hipsrc.WSOptions for experiments): it then replaces attn_fwd.h's
// maskc_attn_fwd (same entry point, parameters and grid, (ceil(Sq/128), H,
// B)), with MASKC_WS_THREADS threads and MASKC_WS_SMEM_BYTES of dynamic
// shared memory (the manifest's launch). Masks under a pre-pass stay on
// attn_fwd.h: codegen never selects this forward for them (measured slower
// here, docs/kernel-decisions.md), and built here by hand (MASKC_NV_WS=1)
// one visits every key tile and evaluates the mask on each, without flags.
//
// A block of three warpgroups owns 128 query rows of one (b, h):
//   - warpgroup 0, the producer, gives up registers (setmaxnreg.dec) and
//     copies Q once, then K and V tiles of MASKC_WS_BLOCK_N keys into a ring
//     of MASKC_WS_STAGES stages, in the swizzled layout of the wgmma
//     descriptors: one thread drives the bulk tensor copy engine
//     (tensor maps built by the block), else (where the
//     engine cannot take the strides) all 128 threads copy by cp.async. A
//     stage's "full" mbarrier completes when its bytes have landed; the
//     consumers' "empty" mbarrier hands the stage back.
//   - warpgroups 1 and 2, the consumers, take the registers
//     (setmaxnreg.inc) and own 64 rows each: S = Q.K^T and O += P.V by
//     wgmma, the mask and score mods, the online softmax, the epilogue.
// A consumer's step overlaps (MASKC_WS_OVERLAP 1, which codegen writes into
// every warp-specialized forward): tile j's Q.K^T and tile j - 1's P.V in
// flight together, j's mods and softmax under that P.V (FlashAttention-3's
// intra-warpgroup overlap); under MASKC_WS_OVERLAP 0 it is sequential:
// Q.K^T, the mods and the softmax, then P.V.
// Tiles are visited in ascending order; those known to be full (the
// closed-form maskc_tile_full) skip the per-element mask.
// The semantics are attn_fwd.h's (mods, fully masked rows, sink, LSE).
#ifndef MASKC_ATTN_FWD_SM90_H
#define MASKC_ATTN_FWD_SM90_H
#if defined(MASKC_PLATFORM_NVIDIA) && MASKC_NV_WGMMA
// sm_90a's asynchronous copies and barriers, which the warp-specialized
// forward below and the warp-specialized backward (attn_bwd.h,
// MASKC_BWD_WS) share.

// mbarrier and named-barrier primitives (PTX ISA, sm_90).
__device__ __forceinline__ void maskc_mbar_init(maskc_u32 bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void maskc_mbar_arrive(maskc_u32 bar) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" ::"r"(bar) : "memory");
}
// Waits for the completion of the barrier's phase of the given parity.
// MASKC_WS_WAIT_TRAP (experiments): trap after about 2^33 cycles instead of
// waiting forever, so that a copy that never lands fails the launch.
__device__ __forceinline__ void maskc_mbar_wait(maskc_u32 bar, int parity) {
#if defined(MASKC_WS_WAIT_TRAP) && MASKC_WS_WAIT_TRAP
  const long long t0 = clock64();
  for (;;) {
    maskc_u32 done;
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (clock64() - t0 > (1ll << 33)) __trap();
  }
#endif
  asm volatile(
      "{ .reg .pred p;\n"
      "MASKC_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@p bra MASKC_DONE;\n"
      "bra MASKC_WAIT;\n"
      "MASKC_DONE:\n"
      "}" ::"r"(bar),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void maskc_named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void maskc_named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Registers per thread at the launch of a warp-specialized kernel (the
// forward below, attn_bwd.h's backward): __launch_bounds__(384, 1) gives ptxas
// 65536 / 384, rounded down to a multiple of 8 (setmaxnreg kernels are
// allocated that whole budget). setmaxnreg.inc takes registers only from
// what the block's own warps gave back by setmaxnreg.dec, not from the
// multiprocessor's unallocated rest: consumers asking for more than the
// producer released wait forever (on the H200: producer 32, consumers
// 240 hung its first launch, though 32 * 128 + 240 * 256 = 65536 fits the
// register file).
#define MASKC_WS_LAUNCH_REGS 168

// Copies tile rows [row0, row0 + ROWS) of head `head` of batch `batch`
// through a 4-D map of the launcher's (MaskcTensorMaps) into the swizzled
// layout at dst (D / 64 boxes) on mbarrier bar, whose transaction count the
// caller raised by ROWS * D * 2 bytes. Rows past the sequence arrive as
// zeros.
template <int ROWS>
__device__ __forceinline__ void maskc_ws_tma_load(maskc_elem_t* dst, const void* tmap, int row0, int head, int batch,
                                                  maskc_u32 bar) {
#pragma unroll
  for (int c = 0; c < MASKC_HEAD_DIM / 64; ++c) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
        "[%6];" ::"r"(maskc_smem_addr(dst + c * ROWS * 64)),
        "l"(tmap), "r"(c * 64), "r"(row0), "r"(head), "r"(batch), "r"(bar)
        : "memory");
  }
}
__device__ __forceinline__ void maskc_mbar_expect_tx(maskc_u32 bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
#endif  // MASKC_PLATFORM_NVIDIA && MASKC_NV_WGMMA

#if defined(MASKC_PLATFORM_NVIDIA) && MASKC_NV_WGMMA && defined(MASKC_NV_WS) && MASKC_NV_WS

// Key tile per head dim (hipsrc.WSBlockN mirrors it): the accumulators of
// S (BN/2 floats) and O (D/2 floats) fit one consumer's registers.
#if MASKC_HEAD_DIM == 256
#define MASKC_WS_BLOCK_N 64
#else
#define MASKC_WS_BLOCK_N 128
#endif
// The K and V ring's stages (hipsrc.WSStages mirrors it).
#define MASKC_WS_STAGES 2
// A producer thread signals a stage's "full" barrier by
// cp.async.mbarrier.arrive.noinc: the arrival happens when its copies land,
// every stage's copies can be in flight; each consumer thread then fences
// the async proxy after its wait.
// K, V and Q tiles are copied by the bulk tensor copy engine (TMA): one
// producer thread issues cp.async.bulk.tensor per 64-column block of a tile,
// completing on the stage's "full" mbarrier by transaction count, and the
// consumers need no proxy fence. The maps are the launcher's, in the last
// parameter (MaskcTensorMaps, abi.h: 4-D maps of Q, K and V, as
// FlashAttention-3 passes its maps), and Q's copy is issued as soon as the
// mbarriers are initialised. Where the launcher could not encode them
// (maps.ok = 0: a stride or base the engine cannot take, a driver without
// the encoder) the producer copies by cp.async.
#define MASKC_WS_THREADS 384
static_assert(MASKC_WS_THREADS == MASKC_NUM_THREADS, "the pre-pass and the forward share the platform's block size");
#ifndef MASKC_WS_PRODUCER_REGS
#define MASKC_WS_PRODUCER_REGS 40
#endif
#ifndef MASKC_WS_CONSUMER_REGS
#define MASKC_WS_CONSUMER_REGS 232
#endif
#define MASKC_WS_Q_ELEMS (MASKC_BLOCK_M * MASKC_HEAD_DIM)
#define MASKC_WS_KV_ELEMS (MASKC_WS_BLOCK_N * MASKC_HEAD_DIM)
// Shared memory: Q | K stages | V stages | mbarriers (full K, empty K, full V,
// empty V per stage, then Q's).
#define MASKC_WS_BAR_OFFSET (2 * (MASKC_WS_Q_ELEMS + 2 * MASKC_WS_STAGES * MASKC_WS_KV_ELEMS))
#define MASKC_WS_SMEM_BYTES (MASKC_WS_BAR_OFFSET + 8 * (4 * MASKC_WS_STAGES + 1))
// With MASKC_WS_WALK, the walk (MaskcWsWalk) follows at MASKC_WS_SMEM_BYTES: the launch
// gives this much more (hipsrc.WSWalkBytes).
#define MASKC_WS_WALK_BYTES 640
// MASKC_WS_OVERLAP 1 (written by codegen into every warp-specialized forward):
// FlashAttention-3's intra-warpgroup overlap. A consumer issues tile j's
// Q.K^T and tile j - 1's P.V together and runs j's mods and softmax while
// that P.V is in flight (P of j - 1 held packed beside j's logits).
#if defined(MASKC_WS_OVERLAP) && MASKC_WS_OVERLAP
#define MASKC_WS_OVERLAP_ON 1
#else
#define MASKC_WS_OVERLAP_ON 0
#endif

static_assert(MASKC_BLOCK_M == 128, "two consumer warpgroups of 64 rows");
static_assert(MASKC_WS_PRODUCER_REGS % 8 == 0 && MASKC_WS_CONSUMER_REGS % 8 == 0, "setmaxnreg counts are multiples of 8");
static_assert(2 * (MASKC_WS_CONSUMER_REGS - MASKC_WS_LAUNCH_REGS) <= MASKC_WS_LAUNCH_REGS - MASKC_WS_PRODUCER_REGS,
              "the consumers' setmaxnreg.inc must be covered by the producer's setmaxnreg.dec, or it never returns");

// A consumer's wait for a "full" barrier: copies by
// cp.async were written through the generic proxy and are read by wgmma
// (fence true); the copy engine's need no fence.
__device__ __forceinline__ void maskc_ws_wait_full(maskc_u32 bar, int parity, bool fence) {
  maskc_mbar_wait(bar, parity);
  if (fence) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// MASKC_WS_TMA: a tile's copy through the launcher's 4-D maps (head `head`
// of the block's batch b).
#define MASKC_WS_TMA(ROWS, dst, tmap, row0, head, bar) maskc_ws_tma_load<ROWS>(dst, tmap, row0, head, b, bar)

#if defined(MASKC_WS_WALK)
// The key tiles of a block whose mask's kv intervals are walked (tile_walk.h: a union's
// intervals, a block selection, remainders filtered per tile), as codegen asks with MASKC_WS_WALK:
// one thread builds the walk into shared memory before the warpgroups part, and producer and
// consumers read it there for each tile (a few broadcast loads), so that it costs the consumers
// no registers across the key loop. tiles: the walk (tile_walk.h's MaskcWalkTable); key_lo/key_hi:
// the rows' kv intervals, which the filter reads and from which the consumers' full test takes
// a block selection's blocks (maskc_tile_full_rows: no buffer read per key tile).
#if defined(MASKC_KV_TILE_FILTER) || defined(MASKC_TILE_FULL_ROWS)
#define MASKC_WS_WALK_KEYS 1
#endif
struct MaskcWsWalk {
  MaskcWalkTable<maskc_kv_interval_count> tiles;
#if defined(MASKC_WS_WALK_KEYS)
  long long key_lo[maskc_kv_interval_count], key_hi[maskc_kv_interval_count];
#endif
};
#endif

// The key tiles a block visits, in MASKC_WS_BLOCK_N-key units: [begin, end)
// (with MASKC_WS_WALK, minus the tiles outside the walk and those its filter
// drops). Producer and consumers walk the same sequence.
struct MaskcWsTiles {
  int begin, end;
#if defined(MASKC_WS_WALK)
  const MaskcWsWalk* walk;  // the block's walk, in shared memory
  // The first tile >= t of the walk that the filter keeps for the block's rows [q_lo, q_hi)
  // (maskc_walk_next_live), or end.
  __device__ __forceinline__ int next(int t, const MaskcBuffers& buf, long long nB, long long nH, long long nHKV,
                                      long long nQ, long long nKV, long long b, long long h, long long q_lo,
                                      long long q_hi) const {
#if defined(MASKC_KV_TILE_FILTER)
    return maskc_walk_next_live(walk->tiles, walk->key_lo, walk->key_hi, buf, nB, nH, nHKV, nQ, nKV, b, h, q_lo, q_hi, t,
                                MASKC_WS_BLOCK_N);
#else
    (void)buf, (void)nB, (void)nH, (void)nHKV, (void)nQ, (void)nKV, (void)b, (void)h, (void)q_lo, (void)q_hi;
    return walk->tiles.next(t);
#endif
  }
#else
  __device__ __forceinline__ int next(int t) const { return t; }
#endif
};
// The key tiles of q tile qt of (b, h), rows [q0, q_end), but the walk's
// (MASKC_WS_WALK: the kernel builds that in shared memory): from the
// closed-form kv range under an analytic plan.
__device__ __forceinline__ MaskcWsTiles maskc_ws_tiles(const MaskcShape& shape, const MaskcBuffers& buf, int b, int h,
                                                       int qt, int n_qt, int q0, int q_end) {
  constexpr int BN = MASKC_WS_BLOCK_N;
  const long long nB = shape.B, nH = shape.H, nHKV = shape.HKV, nQ = maskc_nonneg(shape.Sq);
  const int Skv = maskc_nonneg(shape.Skv);
  const long long nKV = Skv;
  (void)nB, (void)nH, (void)nHKV, (void)nQ, (void)nKV, (void)buf, (void)b, (void)h, (void)qt, (void)n_qt, (void)q0,
      (void)q_end;
  MaskcWsTiles tiles;
  tiles.begin = 0;
  tiles.end = (Skv + BN - 1) / BN;
#if !defined(MASKC_WS_WALK) && defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_ANALYTIC)
  {
    long long lo = 0, hi = Skv;
    maskc_kv_range(buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, &lo, &hi);
    lo = lo < 0 ? 0 : lo;
    hi = hi > Skv ? Skv : hi;
    if (hi <= lo) {
      tiles.end = 0;
    } else {
      tiles.begin = (int)(lo / BN);
      tiles.end = (int)((hi + BN - 1) / BN);
    }
  }
#endif
  return tiles;
}


// A block's next visited tile from t on (MaskcWsTiles::next).
#if defined(MASKC_WS_WALK)
#define MASKC_WS_NEXT(t) tiles.next(t, buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end)
#else
#define MASKC_WS_NEXT(t) tiles.next(t)
#endif

// Copies rows [row0, row0 + ROWS) of a [rows][D] matrix into the swizzled
// wgmma tile layout with the producer's 128 threads (rows at or past nrows
// are zero-filled, not read), as one cp.async group.
template <int ROWS>
__device__ __forceinline__ void maskc_ws_load(maskc_elem_t* dst, const maskc_elem_t* src, long long stride, int row0,
                                              int nrows, int ptid) {
  // Thread ptid copies chunk ch of rows r0, r0 + kStep, ...: a running
  // global pointer and a rolled loop keep the producer within its few
  // registers (unrolled, the compiler keeps every address live and spills).
  constexpr int kChunks = MASKC_HEAD_DIM / 8;
  constexpr int kStep = 128 / kChunks;
  static_assert((ROWS * kChunks) % 128 == 0 && 128 % kChunks == 0, "whole rounds of 128 copies");
  const int r0 = ptid / kChunks, ch = ptid % kChunks;
  const maskc_elem_t* g = src + (long long)(row0 + r0) * stride + ch * 8;
  const long long gstep = (long long)kStep * stride;
#pragma unroll 1
  for (int r = r0; r < ROWS; r += kStep, g += gstep) {
    const bool valid = row0 + r < nrows;
    maskc_copy16(dst + maskc_tile_index<ROWS, MASKC_HEAD_DIM>(r, ch * 8), valid ? g : src, valid);
  }
  maskc_copy_commit();
}

// A 128-byte-swizzle descriptor (maskc_wg_desc's format) of the shared
// address saddr. The address goes through a volatile move so that the
// compiler rebuilds descriptors at each use (adding constant offsets to the
// start-address field) instead of keeping a set of them live across the
// key loop, which costs the consumers registers and spills.
__device__ __forceinline__ unsigned long long maskc_ws_desc(maskc_u32 saddr, unsigned lbo, unsigned sbo) {
  maskc_u32 a;
  asm volatile("mov.b32 %0, %1;" : "=r"(a) : "r"(saddr));
  return maskc_wg_desc_at(a, lbo, sbo);
}

// S = Q_wg . K_tile^T issued (not waited): s must be zeroed by the caller.
// sq: the warpgroup's Q rows, sk: the K stage (shared addresses). Start
// addresses stay below 2^18, so adding offsets/16 to the 14-bit field
// never carries out of it.
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_ws_issue_qk(float* s, maskc_u32 sq, maskc_u32 sk) {
  maskc_wg_fence_regs<BN / 2>(s);
  maskc_wg_fence();
  const unsigned long long dq = maskc_ws_desc(sq, 16, 1024), dk = maskc_ws_desc(sk, 16, 1024);
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    // k16 step kk: 64-column block kk / 4 (MASKC_BLOCK_M or BN rows of 128
    // bytes), 32 bytes per step inside it.
    maskc_wgmma_ss<DT, BN>(s, dq + (((kk >> 2) * MASKC_BLOCK_M * 128 + (kk & 3) * 32) >> 4),
                           dk + (((kk >> 2) * BN * 128 + (kk & 3) * 32) >> 4));
  }
  maskc_wg_commit();
}

// O += P . V_tile issued (not waited), P packed in a; sv: the V stage.
template <int DT, int D, int BN>
__device__ __forceinline__ void maskc_ws_issue_pv(float* o, maskc_u32 (&a)[BN / 16][4], maskc_u32 sv) {
  maskc_wg_fence_regs<D / 2>(o);
  maskc_wg_fence();
  const unsigned long long dv = maskc_ws_desc(sv, BN * 128, 1024);
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) maskc_wgmma_rs<DT, D>(o, a[kk], dv + ((kk * 16 * 128) >> 4));
  maskc_wg_commit();
}

extern "C" __global__ void __launch_bounds__(MASKC_WS_THREADS, 1)
    maskc_attn_fwd(const maskc_elem_t* __restrict__ Q, const maskc_elem_t* __restrict__ K,
                   const maskc_elem_t* __restrict__ V, maskc_elem_t* __restrict__ O, float* __restrict__ LSE,
                   MaskcShape shape, MaskcBuffers buf, const __grid_constant__ MaskcTensorMaps maps) {
  constexpr int BN = MASKC_WS_BLOCK_N;
  constexpr int D = MASKC_HEAD_DIM;
  extern __shared__ __attribute__((aligned(1024))) unsigned char maskc_smem_raw[];
  maskc_elem_t* const sQ = (maskc_elem_t*)maskc_smem_raw;
  maskc_elem_t* const sK = sQ + MASKC_WS_Q_ELEMS;  // stage s at s * MASKC_WS_KV_ELEMS
  maskc_elem_t* const sV = sK + MASKC_WS_STAGES * MASKC_WS_KV_ELEMS;
  const maskc_u32 bars = maskc_smem_addr(maskc_smem_raw) + MASKC_WS_BAR_OFFSET;
  // mbarrier addresses: full K, empty K, full V, empty V of stage s; Q's.
#define MASKC_BAR_FULL_K(s) (bars + 8 * (s))
#define MASKC_BAR_EMPTY_K(s) (bars + 8 * (MASKC_WS_STAGES + (s)))
#define MASKC_BAR_FULL_V(s) (bars + 8 * (2 * MASKC_WS_STAGES + (s)))
#define MASKC_BAR_EMPTY_V(s) (bars + 8 * (3 * MASKC_WS_STAGES + (s)))
#define MASKC_BAR_Q (bars + 8 * (4 * MASKC_WS_STAGES))

  if ((maskc_smem_addr(maskc_smem_raw) & 1023) != 0) __trap();  // the descriptors need it
  const int tid = threadIdx.x;
  const int wg = tid / 128;
  const int n_qt = (shape.Sq + MASKC_BLOCK_M - 1) / MASKC_BLOCK_M;
#if defined(MASKC_FIRST_ROWS_LONGEST)
  const int qt = (int)blockIdx.x;  // the first q tiles' rows are the longest (codegen's estimate)
#else
  const int qt = n_qt - 1 - (int)blockIdx.x;  // longest rows of causal-like masks first
#endif
  const int h = maskc_nonneg(blockIdx.y), b = maskc_nonneg(blockIdx.z);
  const int Sq = maskc_nonneg(shape.Sq), Skv = maskc_nonneg(shape.Skv);
  const int q0 = qt * MASKC_BLOCK_M;
  const int q_end = min(q0 + MASKC_BLOCK_M, Sq);
  const int hkv = h / (shape.H / shape.HKV);
  const long long nB = shape.B, nH = shape.H, nHKV = shape.HKV, nQ = Sq, nKV = Skv;
  (void)nB, (void)nH, (void)nHKV, (void)nQ, (void)nKV;

  MaskcWsTiles tiles = maskc_ws_tiles(shape, buf, b, h, qt, n_qt, q0, q_end);
#if defined(MASKC_WS_WALK)
  static_assert(sizeof(MaskcWsWalk) <= MASKC_WS_WALK_BYTES && MASKC_WS_SMEM_BYTES % 8 == 0, "the walk fits after the barriers");
  MaskcWsWalk& ws_walk = *(MaskcWsWalk*)(maskc_smem_raw + MASKC_WS_SMEM_BYTES);
  // Thread 128 builds it (not thread 0, which sets up the copies
  // meanwhile); with segments buffers its whole warp computes the intervals,
  // whose segment searches are warp-collective (one lane alone would wait
  // for lanes that never join).
#if defined(MASKC_SEG_CHECK)
  if (tid / MASKC_WARP_SIZE == 128 / MASKC_WARP_SIZE) {
#else
  if (tid == 128) {
#endif
    MaskcTileWalk<maskc_kv_interval_count> w;
    long long klo[maskc_kv_interval_count], khi[maskc_kv_interval_count];
    maskc_walk_build(w, klo, khi, buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, BN);
    if (tid == 128) {
      maskc_walk_table_store(ws_walk.tiles, w);
#if defined(MASKC_WS_WALK_KEYS)
#pragma unroll
      for (int i = 0; i < maskc_kv_interval_count; ++i) {
        ws_walk.key_lo[i] = klo[i];
        ws_walk.key_hi[i] = khi[i];
      }
#endif
    }
  }
  tiles.walk = &ws_walk;
#endif

  const maskc_elem_t* Qp = Q + b * shape.q_stride[0] + h * shape.q_stride[1];
  const maskc_elem_t* Kp = K + b * shape.k_stride[0] + hkv * shape.k_stride[1];
  const maskc_elem_t* Vp = V + b * shape.v_stride[0] + hkv * shape.v_stride[1];
  bool tma = false;  // this block's copies by the copy engine (else cp.async)
  if (tid == 0) {
    // The launcher encoded the maps where the engine can copy (ok).
#pragma unroll
    for (int m = 0; m < 3; ++m) asm volatile("prefetch.tensormap [%0];" ::"l"(&maps.q[0] + 128 * m) : "memory");
    tma = maps.ok != 0;
  }
  if (tid == 0) {
    // Full barriers: one arrival (with the transaction count) per copy-engine
    // stage, one per producer thread with cp.async.
    const int nfull = tma ? 1 : 128;
#pragma unroll
    for (int s = 0; s < MASKC_WS_STAGES; ++s) {
      maskc_mbar_init(MASKC_BAR_FULL_K(s), nfull);
      maskc_mbar_init(MASKC_BAR_FULL_V(s), nfull);
      maskc_mbar_init(MASKC_BAR_EMPTY_K(s), 8);  // lane 0 of each consumer warp
      maskc_mbar_init(MASKC_BAR_EMPTY_V(s), 8);
    }
    maskc_mbar_init(MASKC_BAR_Q, nfull);
    if (tma) {  // Q's copy now, the mbarriers' initialisation visible to the engine first
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      maskc_mbar_expect_tx(MASKC_BAR_Q, MASKC_BLOCK_M * MASKC_HEAD_DIM * 2);
      MASKC_WS_TMA(MASKC_BLOCK_M, sQ, &maps.q[0], q0, h, MASKC_BAR_Q);
    }
  }
  tma = __syncthreads_or(tma) != 0;
#if defined(MASKC_WS_WALK)
  tiles.begin = ws_walk.tiles.begin();  // stored by thread 128 before the barrier above
  tiles.end = ws_walk.tiles.end();
#endif

  if (wg == 0) {
    // ------------------------------------------------------------ producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(MASKC_WS_PRODUCER_REGS));
    if (tma) {
      if (tid < 32) {
        if (tid == 0) {
          const void* tmK = &maps.k[0];
          const void* tmV = &maps.v[0];
          constexpr int kTileBytes = BN * MASKC_HEAD_DIM * 2;
          int ik = 0, iv = 0;
          int kt = MASKC_WS_NEXT(tiles.begin);
          if (kt < tiles.end) {
            maskc_mbar_expect_tx(MASKC_BAR_FULL_K(0), kTileBytes);
            MASKC_WS_TMA(BN, sK, tmK, kt * BN, hkv, MASKC_BAR_FULL_K(0));
            ik = 1;
          }
          while (kt < tiles.end) {
            const int kn = MASKC_WS_NEXT(kt + 1);
            if (kn < tiles.end) {
              const int s = ik % MASKC_WS_STAGES;
              maskc_mbar_wait(MASKC_BAR_EMPTY_K(s), ((ik / MASKC_WS_STAGES) & 1) ^ 1);
              maskc_mbar_expect_tx(MASKC_BAR_FULL_K(s), kTileBytes);
              MASKC_WS_TMA(BN, sK + s * MASKC_WS_KV_ELEMS, tmK, kn * BN, hkv, MASKC_BAR_FULL_K(s));
              ++ik;
            }
            const int s = iv % MASKC_WS_STAGES;
            maskc_mbar_wait(MASKC_BAR_EMPTY_V(s), ((iv / MASKC_WS_STAGES) & 1) ^ 1);
            maskc_mbar_expect_tx(MASKC_BAR_FULL_V(s), kTileBytes);
            MASKC_WS_TMA(BN, sV + s * MASKC_WS_KV_ELEMS, tmV, kt * BN, hkv, MASKC_BAR_FULL_V(s));
            ++iv;
            kt = kn;
          }
        }
      }
    } else
    {
    // Each thread's arrival on a group's barrier fires when its copies land.
    auto signal_pending = [&](maskc_u32 bar) {
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
    };
    maskc_ws_load<MASKC_BLOCK_M>(sQ, Qp, shape.q_stride[2], q0, Sq, tid);
    signal_pending(MASKC_BAR_Q);
    int ik = 0, iv = 0;  // K and V tiles loaded so far
    int kt = MASKC_WS_NEXT(tiles.begin);
    if (kt < tiles.end) {
      maskc_ws_load<BN>(sK, Kp, shape.k_stride[2], kt * BN, Skv, tid);
      signal_pending(MASKC_BAR_FULL_K(0));
      ik = 1;
    }
    while (kt < tiles.end) {
      const int kn = MASKC_WS_NEXT(kt + 1);
      if (kn < tiles.end) {
        const int s = ik % MASKC_WS_STAGES;
        maskc_mbar_wait(MASKC_BAR_EMPTY_K(s), ((ik / MASKC_WS_STAGES) & 1) ^ 1);
        maskc_ws_load<BN>(sK + s * MASKC_WS_KV_ELEMS, Kp, shape.k_stride[2], kn * BN, Skv, tid);
        signal_pending(MASKC_BAR_FULL_K(s));
        ++ik;
      }
      const int s = iv % MASKC_WS_STAGES;
      maskc_mbar_wait(MASKC_BAR_EMPTY_V(s), ((iv / MASKC_WS_STAGES) & 1) ^ 1);
      maskc_ws_load<BN>(sV + s * MASKC_WS_KV_ELEMS, Vp, shape.v_stride[2], kt * BN, Skv, tid);
      signal_pending(MASKC_BAR_FULL_V(s));
      ++iv;
      kt = kn;
    }
    asm volatile("cp.async.wait_all;" ::: "memory");  // no copy outlives its thread
    }
  } else {
    // ------------------------------------------------------------ consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(MASKC_WS_CONSUMER_REGS));
    const bool ws_fence = !tma;
    const int cw = wg - 1;  // consumer warpgroup: rows q0 + 64 cw ..
    const int lane = tid % 32;
    const int wl = (tid / 32) % 4;  // warp in the warpgroup: 16 rows
    maskc_elem_t* Op = O + b * shape.o_stride[0] + h * shape.o_stride[1];
    // Shared addresses: the warpgroup's Q rows, K and V stage 0.
    const maskc_u32 sq_wg = maskc_smem_addr(sQ) + cw * 64 * 128;
    const maskc_u32 sk0 = maskc_smem_addr(sK), sv0 = maskc_smem_addr(sV);

    float o[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float m[MASKC_ROW_SLOTS], l[MASKC_ROW_SLOTS], alpha[MASKC_ROW_SLOTS];
#pragma unroll
    for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) {
      m[sl] = maskc_neg_inf();
      l[sl] = 0.f;
      alpha[sl] = 1.f;
    }
    bool rescale = false;  // o must be multiplied by alpha before the next P.V
#if defined(MASKC_HAS_SCORE)
    const float unit = MASKC_LOG2E;
#else
    const float unit = shape.scale * MASKC_LOG2E;
#endif
    const int row_base = q0 + cw * 64 + wl * 16;
    MaskcMaskRow mrow[MASKC_ROW_SLOTS];
    MaskcScoreRow srow[MASKC_ROW_SLOTS];
#pragma unroll
    for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) {
      const int qs = maskc_nonneg(row_base + maskc_slot_row(lane, sl));
      mrow[sl] = maskc_mask_row(buf, nB, nH, nHKV, nQ, nKV, b, h, qs);
      srow[sl] = maskc_score_row(buf, nB, nH, nHKV, nQ, nKV, b, h, qs);
    }
    float s[BN / 2];
    maskc_u32 a[BN / 16][4];  // P of the tile whose P.V is next, packed
    int ik = 0, iv = 0;  // K and V tiles consumed

    // Whether every (q, kv) of tile kt is visible (the mask is then
    // skipped), and the column parts of the mods (the mask's only where
    // the tile is not full); read while the tile's Q.K^T runs.
#define MASKC_WS_COLS(kt)                                                                              \
  const int kv0 = (kt) * BN;                                                                           \
  bool full = kv0 + BN <= Skv;                                                                         \
  MASKC_WS_FULL(kt)                                                                                    \
  MaskcMaskCol mcol[BN / 4];                                                                           \
  MaskcScoreCol scol[BN / 4];                                                                          \
  _Pragma("unroll") for (int cs = 0; cs < BN / 4; ++cs) {                                              \
    const int kvs = maskc_nonneg(kv0 + maskc_colslot_col<BN>(lane, cs));                               \
    if (!full) mcol[cs] = maskc_mask_col(buf, nB, nH, nHKV, nQ, nKV, b, h, kvs);                       \
    scol[cs] = maskc_score_col(buf, nB, nH, nHKV, nQ, nKV, b, h, kvs);                                 \
  }
#if defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_ANALYTIC) && defined(MASKC_WS_WALK) && \
    defined(MASKC_TILE_FULL_ROWS)
#define MASKC_WS_FULL(kt)                                                                                \
  full = full && maskc_tile_full_rows(buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, kv0, kv0 + BN,        \
                                      tiles.walk->key_lo, tiles.walk->key_hi);
#elif defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_ANALYTIC)
#define MASKC_WS_FULL(kt) \
  full = full && maskc_tile_full(buf, nB, nH, nHKV, nQ, nKV, b, h, q0, q_end, kv0, kv0 + BN);
#elif defined(MASKC_HAS_MASK)
#define MASKC_WS_FULL(kt) full = false;
#else
#define MASKC_WS_FULL(kt)
#endif
#define MASKC_WS_ROW(i) maskc_nonneg(row_base + maskc_frag_row<BN>(lane, i))
#define MASKC_WS_COL(i) maskc_nonneg(kv0 + maskc_frag_col<BN>(lane, i))
#define MASKC_WS_SCORE_AT(i, x, qi, kvi)                                                                  \
  maskc_score_rc(buf, nB, nH, nHKV, nQ, nKV, srow[maskc_frag_slot<BN>(i)], scol[maskc_frag_colslot<BN>(i)], x, b, \
                 h, qi, kvi)
#define MASKC_WS_MASK_AT(i, qi, kvi)                                                                      \
  maskc_mask_rc(buf, nB, nH, nHKV, nQ, nKV, mrow[maskc_frag_slot<BN>(i)], mcol[maskc_frag_colslot<BN>(i)], b, h, \
                qi, kvi)
    // Mods, mask and online softmax (base 2) of the logits in s: s becomes
    // P (unrounded), l is updated, alpha and rescale say how o must be
    // scaled before P.V. Rows with no visible key yet keep m = -inf and use
    // 0 as their reference.
#if defined(MASKC_HAS_SCORE)
#define MASKC_WS_SCORE_FULL()                                                                             \
  _Pragma("unroll") for (int i = 0; i < BN / 2; ++i) s[i] =                                               \
      MASKC_WS_SCORE_AT(i, s[i] * shape.scale, MASKC_WS_ROW(i), MASKC_WS_COL(i));
#define MASKC_WS_X(i, qi, kvi) MASKC_WS_SCORE_AT(i, s[i] * shape.scale, qi, kvi)
#else
#define MASKC_WS_SCORE_FULL()
#define MASKC_WS_X(i, qi, kvi) s[i]
#endif
#if defined(MASKC_HAS_MASK)
#define MASKC_WS_KEEP(i, qi, kvi) (kvi < Skv && MASKC_WS_MASK_AT(i, qi, kvi))
#else
#define MASKC_WS_KEEP(i, qi, kvi) (kvi < Skv)
#endif
#define MASKC_WS_SOFTMAX()                                                                                \
  {                                                                                                       \
    if (full) {                                                                                           \
      MASKC_WS_SCORE_FULL()                                                                               \
    } else {                                                                                              \
      _Pragma("unroll") for (int i = 0; i < BN / 2; ++i) {                                                \
        const int qi = MASKC_WS_ROW(i), kvi = MASKC_WS_COL(i);                                            \
        (void)qi;                                                                                         \
        const float x = MASKC_WS_X(i, qi, kvi);                                                           \
        s[i] = MASKC_WS_KEEP(i, qi, kvi) ? x : maskc_neg_inf();                                           \
      }                                                                                                   \
    }                                                                                                     \
    rescale = maskc_softmax_tile<BN>(s, m, l, alpha, unit);                                               \
  }
#define MASKC_WS_RESCALE()                                                                                \
  if (rescale) maskc_softmax_rescale<D>(o, alpha);
#define MASKC_WS_PACK_P()                                                                                 \
  _Pragma("unroll") for (int kk = 0; kk < BN / 16; ++kk) {                                                \
    const float* pm = s + (2 * kk) * 4;                                                                   \
    a[kk][0] = maskc_pack2<MASKC_DT>(pm[0], pm[1]);                                                       \
    a[kk][1] = maskc_pack2<MASKC_DT>(pm[2], pm[3]);                                                       \
    a[kk][2] = maskc_pack2<MASKC_DT>(pm[4], pm[5]);                                                       \
    a[kk][3] = maskc_pack2<MASKC_DT>(pm[6], pm[7]);                                                       \
  }
#define MASKC_WS_RELEASE(bar) \
  if (lane == 0) maskc_mbar_arrive(bar);
#define MASKC_WS_ZERO_S() _Pragma("unroll") for (int i = 0; i < BN / 2; ++i) s[i] = 0.f;
    // The steps' MMAs: S = Q.K^T on K stage ks (once its copy has landed)
    // and O += P.V on V stage vs issued; once an MMA's group is complete,
    // its registers fenced and its stage handed back to the producer.
#define MASKC_WS_ISSUE_QK(ks)                                                          \
  maskc_ws_wait_full(MASKC_BAR_FULL_K(ks), (ik / MASKC_WS_STAGES) & 1, ws_fence);     \
  MASKC_WS_ZERO_S()                                                                    \
  maskc_ws_issue_qk<MASKC_DT, D, BN>(s, sq_wg, sk0 + (ks) * (2 * MASKC_WS_KV_ELEMS));
#define MASKC_WS_ISSUE_PV(vs)                                                          \
  maskc_ws_wait_full(MASKC_BAR_FULL_V(vs), (iv / MASKC_WS_STAGES) & 1, ws_fence);     \
  maskc_ws_issue_pv<MASKC_DT, D, BN>(o, a, sv0 + (vs) * (2 * MASKC_WS_KV_ELEMS));
#define MASKC_WS_QK_DONE(ks)                \
  maskc_wg_fence_regs<BN / 2>(s);           \
  MASKC_WS_RELEASE(MASKC_BAR_EMPTY_K(ks))   \
  ++ik;
#define MASKC_WS_PV_DONE(vs)                \
  maskc_wg_fence_regs<D / 2>(o);            \
  maskc_wg_fence_u32<BN / 4>(&a[0][0]);     \
  MASKC_WS_RELEASE(MASKC_BAR_EMPTY_V(vs))   \
  ++iv;

    maskc_ws_wait_full(MASKC_BAR_Q, 0, ws_fence);
    int kt = MASKC_WS_NEXT(tiles.begin);
#if MASKC_WS_OVERLAP_ON
    // Tile j's Q.K^T and tile j - 1's P.V in flight together, j's mods and
    // softmax under j - 1's P.V; o is rescaled to j's row maxima once that
    // P.V has completed, before j's P.V is issued (with j + 1's Q.K^T).
    if (kt < tiles.end) {
      int kn;
      {  // the first tile: Q.K^T, mods, softmax; o is still zero (no rescale)
        const int ks = ik % MASKC_WS_STAGES;
        MASKC_WS_ISSUE_QK(ks)
        MASKC_WS_COLS(kt)
        maskc_wg_wait_n<0>();
        MASKC_WS_QK_DONE(ks)
        kn = MASKC_WS_NEXT(kt + 1);
        MASKC_WS_SOFTMAX()
        MASKC_WS_PACK_P()
      }
      kt = kn;
      while (kt < tiles.end) {
        const int ks = ik % MASKC_WS_STAGES, vs = iv % MASKC_WS_STAGES;
        MASKC_WS_ISSUE_QK(ks)
        MASKC_WS_ISSUE_PV(vs)
        MASKC_WS_COLS(kt)
        maskc_wg_wait_n<1>();  // groups complete in order: Q.K^T's is done
        MASKC_WS_QK_DONE(ks)
        kn = MASKC_WS_NEXT(kt + 1);
        MASKC_WS_SOFTMAX()
        maskc_wg_wait_n<0>();  // the last tile's P.V
        MASKC_WS_PV_DONE(vs)
        MASKC_WS_RESCALE()
        MASKC_WS_PACK_P()
        kt = kn;
      }
      // The last tile's P.V.
      const int vs = iv % MASKC_WS_STAGES;
      MASKC_WS_ISSUE_PV(vs)
      maskc_wg_wait_n<0>();
      MASKC_WS_PV_DONE(vs)
    }
#else
    while (kt < tiles.end) {
      const int ks = ik % MASKC_WS_STAGES, vs = iv % MASKC_WS_STAGES;
      MASKC_WS_ISSUE_QK(ks)
      MASKC_WS_COLS(kt)
      maskc_wg_wait_n<0>();
      MASKC_WS_QK_DONE(ks)
      MASKC_WS_SOFTMAX()
      MASKC_WS_RESCALE()
      MASKC_WS_PACK_P()
      MASKC_WS_ISSUE_PV(vs)
      maskc_wg_wait_n<0>();
      MASKC_WS_PV_DONE(vs)
      kt = MASKC_WS_NEXT(kt + 1);
    }
#endif  // MASKC_WS_OVERLAP_ON

    // Normalise, fold in the sink, store O and the natural-log LSE.
    maskc_fwd_epilogue<D>(o, m, l, shape, b, h, row_base, lane, Sq, Op, LSE);
  }
#undef MASKC_WS_COLS
#undef MASKC_WS_FULL
#undef MASKC_WS_ROW
#undef MASKC_WS_COL
#undef MASKC_WS_SCORE_AT
#undef MASKC_WS_MASK_AT
#undef MASKC_WS_SCORE_FULL
#undef MASKC_WS_X
#undef MASKC_WS_KEEP
#undef MASKC_WS_SOFTMAX
#undef MASKC_WS_RESCALE
#undef MASKC_WS_PACK_P
#undef MASKC_WS_RELEASE
#undef MASKC_WS_ZERO_S
#undef MASKC_WS_ISSUE_QK
#undef MASKC_WS_ISSUE_PV
#undef MASKC_WS_QK_DONE
#undef MASKC_WS_PV_DONE
#undef MASKC_BAR_FULL_K
#undef MASKC_BAR_EMPTY_K
#undef MASKC_BAR_FULL_V
#undef MASKC_BAR_EMPTY_V
#undef MASKC_BAR_Q
#undef MASKC_WS_TMA
}

#endif  // MASKC_PLATFORM_NVIDIA && MASKC_NV_WGMMA && MASKC_NV_WS
#endif  // MASKC_ATTN_FWD_SM90_H
