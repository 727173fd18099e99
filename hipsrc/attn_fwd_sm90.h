// maskc fused attention forward for sm_90a (Hopper), warp-specialized in
// the structure of FlashAttention-3 (arXiv 2407.08608; its hopper/ mainloop).
//
// Compiled after attn_fwd.h, and only with MASKC_NV_WGMMA and MASKC_NV_WS
// both 1 (hipsrc.WSOptions): it then replaces attn_fwd.h's maskc_attn_fwd
// (same entry point, parameters and grid, (ceil(Sq/128), H, B)), with
// MASKC_WS_THREADS threads and MASKC_WS_SMEM_BYTES of dynamic shared memory;
// maskc_tile_flags stays attn_fwd.h's (flags in its MASKC_BLOCK_N-key tiles).
//
// A block of three warpgroups owns 128 query rows of one (b, h):
//   - warpgroup 0, the producer, gives up registers (setmaxnreg.dec) and
//     copies Q once, then K and V tiles of MASKC_WS_BLOCK_N keys into a ring
//     of MASKC_WS_STAGES stages (cp.async, 16 bytes per thread and copy, in
//     the swizzled layout of the wgmma descriptors). A stage's "full"
//     mbarrier is signalled by each producer thread once its copies have
//     landed (cp.async.wait_group one group behind the newest, then the
//     proxy fence that makes them visible to the tensor cores); the
//     consumers' "empty" mbarrier hands the stage back.
//   - warpgroups 1 and 2, the consumers, take the registers
//     (setmaxnreg.inc) and own 64 rows each: S = Q.K^T and O += P.V by
//     wgmma, the mask and score mods, the online softmax, the epilogue.
// With MASKC_WS_OVERLAP, a consumer issues Q.K^T of tile j and P.V of tile
// j-1 together and runs tile j's softmax while P.V(j-1) is in flight. With
// MASKC_WS_PINGPONG as well, two named barriers make the consumers take
// turns issuing their MMAs, so that one's softmax runs under the other's
// MMAs. Tiles are visited in ascending order; those known to be full (the
// closed-form maskc_tile_full, or pre-pass flags) skip the per-element mask.
// The semantics are attn_fwd.h's (mods, fully masked rows, sink, LSE).
#ifndef MASKC_ATTN_FWD_SM90_H
#define MASKC_ATTN_FWD_SM90_H
#if defined(MASKC_PLATFORM_NVIDIA) && MASKC_NV_WGMMA && defined(MASKC_NV_WS) && MASKC_NV_WS

// Both off by default: on the H200 (gpu/NOTES.md, run 14 (fwdfast)) the
// sequential consumer step was the fastest of the three at D = 128 and 256
// (full 469.5 TFLOP/s against 455.5 with the overlap and 440.0 with the
// ping-pong as well).
#ifndef MASKC_WS_OVERLAP
#define MASKC_WS_OVERLAP 0
#endif
#ifndef MASKC_WS_PINGPONG
#define MASKC_WS_PINGPONG 0
#endif
#if MASKC_WS_PINGPONG && !MASKC_WS_OVERLAP
#error "maskc: MASKC_WS_PINGPONG needs MASKC_WS_OVERLAP"
#endif
// Key tile per head dim (hipsrc.WSBlockN mirrors it): the accumulators of
// S (BN/2 floats) and O (D/2 floats) fit one consumer's registers.
#ifndef MASKC_WS_BLOCK_N
#if MASKC_HEAD_DIM == 256
#define MASKC_WS_BLOCK_N 64
#else
#define MASKC_WS_BLOCK_N 128
#endif
#endif
#ifndef MASKC_WS_STAGES
#define MASKC_WS_STAGES 2
#endif
// How a producer thread signals a stage's "full" barrier: 1, by
// cp.async.mbarrier.arrive.noinc (the arrival happens when its copies land,
// every stage's copies can be in flight; each consumer thread then fences
// the async proxy after its wait); 0, by waiting for all but its newest
// cp.async group, fencing and arriving (at most two groups in flight).
#ifndef MASKC_WS_NOINC
#define MASKC_WS_NOINC 1
#endif
#define MASKC_WS_THREADS 384
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
#define MASKC_WS_FLAGS_PER_TILE (MASKC_WS_BLOCK_N / MASKC_BLOCK_N)

static_assert(MASKC_BLOCK_M == 128, "two consumer warpgroups of 64 rows");
static_assert(MASKC_WS_BLOCK_N % MASKC_BLOCK_N == 0, "a key tile is whole pre-pass flag tiles");
static_assert(MASKC_WS_PRODUCER_REGS * 128 + MASKC_WS_CONSUMER_REGS * 256 <= 65536, "register file");

// mbarrier and named-barrier primitives (PTX ISA, sm_90).
__device__ __forceinline__ void maskc_mbar_init(maskc_u32 bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void maskc_mbar_arrive(maskc_u32 bar) {
  asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" ::"r"(bar) : "memory");
}
// Waits for the completion of the barrier's phase of the given parity.
__device__ __forceinline__ void maskc_mbar_wait(maskc_u32 bar, int parity) {
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
// A consumer's wait for a "full" barrier: with MASKC_WS_NOINC the copies
// were written through the generic proxy and are read by wgmma.
__device__ __forceinline__ void maskc_ws_wait_full(maskc_u32 bar, int parity) {
  maskc_mbar_wait(bar, parity);
#if MASKC_WS_NOINC
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
__device__ __forceinline__ void maskc_named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void maskc_named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// The key tiles a block visits, in MASKC_WS_BLOCK_N-key units: [begin, end)
// minus the tiles the pre-pass marked empty. Producer and consumers walk
// the same sequence.
struct MaskcWsTiles {
  int begin, end;
  const unsigned char* flags;  // the block's pre-pass flag row, or nullptr
  int n_fkt;                   // flag tiles per row
  // 0 empty, 1 partial, 2 full (always 1 without pre-pass flags: the
  // closed-form test is the consumers').
  __device__ __forceinline__ int flag(int t) const {
    if (flags == nullptr) return 1;
    int f = flags[t * MASKC_WS_FLAGS_PER_TILE];
#pragma unroll
    for (int r = 1; r < MASKC_WS_FLAGS_PER_TILE; ++r) {
      const int i = t * MASKC_WS_FLAGS_PER_TILE + r;
      if (i < n_fkt) {
        const int g = flags[i];
        f = (f == 2 && g == 2) ? 2 : (f != 0 || g != 0) ? 1 : 0;
      }
    }
    return f;
  }
  __device__ __forceinline__ int next(int t) const {
    while (t < end && flag(t) == 0) ++t;
    return t;
  }
};

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
  return (unsigned long long)((a & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
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
                   MaskcShape shape, MaskcBuffers buf) {
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
  const int qt = n_qt - 1 - (int)blockIdx.x;  // longest rows of causal-like masks first
  const int h = maskc_nonneg(blockIdx.y), b = maskc_nonneg(blockIdx.z);
  const int Sq = maskc_nonneg(shape.Sq), Skv = maskc_nonneg(shape.Skv);
  const int q0 = qt * MASKC_BLOCK_M;
  const int q_end = min(q0 + MASKC_BLOCK_M, Sq);
  const int hkv = h / (shape.H / shape.HKV);
  const long long nB = shape.B, nH = shape.H, nHKV = shape.HKV, nQ = Sq, nKV = Skv;
  (void)nB, (void)nH, (void)nHKV, (void)nQ, (void)nKV;

  MaskcWsTiles tiles;
  tiles.begin = 0;
  tiles.end = (Skv + BN - 1) / BN;
  tiles.flags = nullptr;
  tiles.n_fkt = 0;
#if defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_ANALYTIC)
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
#if defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_PREPASS)
  tiles.n_fkt = (Skv + MASKC_BLOCK_N - 1) / MASKC_BLOCK_N;
  tiles.flags = shape.tile_flags + maskc_flag_row(shape, b, h, qt, n_qt, tiles.n_fkt);
#endif

  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < MASKC_WS_STAGES; ++s) {
      maskc_mbar_init(MASKC_BAR_FULL_K(s), 128);
      maskc_mbar_init(MASKC_BAR_FULL_V(s), 128);
      maskc_mbar_init(MASKC_BAR_EMPTY_K(s), 8);  // lane 0 of each consumer warp
      maskc_mbar_init(MASKC_BAR_EMPTY_V(s), 8);
    }
    maskc_mbar_init(MASKC_BAR_Q, 128);
  }
  __syncthreads();

  if (wg == 0) {
    // ------------------------------------------------------------ producer
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(MASKC_WS_PRODUCER_REGS));
    const maskc_elem_t* Qp = Q + b * shape.q_stride[0] + h * shape.q_stride[1];
    const maskc_elem_t* Kp = K + b * shape.k_stride[0] + hkv * shape.k_stride[1];
    const maskc_elem_t* Vp = V + b * shape.v_stride[0] + hkv * shape.v_stride[1];
#if MASKC_WS_NOINC
    // Each thread's arrival on a group's barrier fires when its copies land.
    auto signal_pending = [&](maskc_u32 bar) {
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
    };
    maskc_ws_load<MASKC_BLOCK_M>(sQ, Qp, shape.q_stride[2], q0, Sq, tid);
    signal_pending(MASKC_BAR_Q);
#else
    // Each group's barrier is signalled once the next group is issued (one
    // group stays in flight), the last one at the end.
    maskc_u32 pending = MASKC_BAR_Q;
    auto signal_pending = [&](maskc_u32 next) {
      asm volatile("cp.async.wait_group 1;" ::: "memory");
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      maskc_mbar_arrive(pending);
      pending = next;
    };
    maskc_ws_load<MASKC_BLOCK_M>(sQ, Qp, shape.q_stride[2], q0, Sq, tid);
#endif
    int ik = 0, iv = 0;  // K and V tiles loaded so far
    int kt = tiles.next(tiles.begin);
    if (kt < tiles.end) {
      maskc_ws_load<BN>(sK, Kp, shape.k_stride[2], kt * BN, Skv, tid);
      signal_pending(MASKC_BAR_FULL_K(0));
      ik = 1;
    }
    while (kt < tiles.end) {
      const int kn = tiles.next(kt + 1);
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
#if MASKC_WS_NOINC
    asm volatile("cp.async.wait_all;" ::: "memory");  // no copy outlives its thread
#else
    asm volatile("cp.async.wait_group 0;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    maskc_mbar_arrive(pending);
#endif
  } else {
    // ------------------------------------------------------------ consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(MASKC_WS_CONSUMER_REGS));
    const int cw = wg - 1;  // consumer warpgroup: rows q0 + 64 cw ..
    const int lane = tid % 32;
    const int wl = (tid / 32) % 4;  // warp in the warpgroup: 16 rows
    maskc_elem_t* Op = O + b * shape.o_stride[0] + h * shape.o_stride[1];
    // Shared addresses: the warpgroup's Q rows, K and V stage 0.
    const maskc_u32 sq_wg = maskc_smem_addr(sQ) + cw * 64 * 128;
    const maskc_u32 sk0 = maskc_smem_addr(sK), sv0 = maskc_smem_addr(sV);
#if MASKC_WS_PINGPONG
    if (cw == 1) maskc_named_arrive(1, 256);  // warpgroup 1 issues first
#endif

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
    int ik = 0, iv = 0;       // K and V tiles consumed

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
    if (!full) mcol[cs] = maskc_mask_col(buf, nB, nH, nHKV, nQ, nKV, b, h, kvs);                      \
    scol[cs] = maskc_score_col(buf, nB, nH, nHKV, nQ, nKV, b, h, kvs);                                 \
  }
#if defined(MASKC_HAS_MASK) && defined(MASKC_SPARSITY_PREPASS)
#define MASKC_WS_FULL(kt) full = full && tiles.flag(kt) == 2;
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
    float mx[MASKC_ROW_SLOTS], mref[MASKC_ROW_SLOTS];                                                     \
    _Pragma("unroll") for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) mx[sl] = maskc_neg_inf();              \
    _Pragma("unroll") for (int i = 0; i < BN / 2; ++i) mx[maskc_frag_slot<BN>(i)] =                       \
        fmaxf(mx[maskc_frag_slot<BN>(i)], s[i]);                                                          \
    bool same_max = true;                                                                                 \
    _Pragma("unroll") for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) {                                      \
      const float m_new = fmaxf(m[sl], maskc_row_max(mx[sl]) * unit);                                     \
      mref[sl] = m_new == maskc_neg_inf() ? 0.f : m_new;                                                  \
      alpha[sl] = maskc_exp2(m[sl] - mref[sl]);                                                           \
      same_max = same_max && m_new == m[sl];                                                              \
      m[sl] = m_new;                                                                                      \
      l[sl] *= alpha[sl];                                                                                 \
    }                                                                                                     \
    _Pragma("unroll") for (int i = 0; i < BN / 2; ++i) {                                                  \
      const int sl = maskc_frag_slot<BN>(i);                                                              \
      s[i] = maskc_exp2(fmaf(s[i], unit, -mref[sl]));                                                     \
      l[sl] += s[i];                                                                                      \
    }                                                                                                     \
    rescale = !maskc_warp_all(same_max);                                                                  \
  }
#define MASKC_WS_RESCALE()                                                                                \
  if (rescale) {                                                                                          \
    _Pragma("unroll") for (int i = 0; i < D / 2; ++i) o[i] *= alpha[maskc_frag_slot<D>(i)];               \
  }
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

    maskc_ws_wait_full(MASKC_BAR_Q, 0);
    int kt = tiles.next(tiles.begin);
#if MASKC_WS_OVERLAP
    if (kt < tiles.end) {
      // First tile: Q.K^T and its softmax; its P.V waits for the next tile.
      {
        const int ks = ik % MASKC_WS_STAGES;
        maskc_ws_wait_full(MASKC_BAR_FULL_K(ks), (ik / MASKC_WS_STAGES) & 1);
#if MASKC_WS_PINGPONG
        maskc_named_sync(1 + cw, 256);
#endif
        MASKC_WS_ZERO_S()
        maskc_ws_issue_qk<MASKC_DT, D, BN>(s, sq_wg, sk0 + ks * (2 * MASKC_WS_KV_ELEMS));
#if MASKC_WS_PINGPONG
        maskc_named_arrive(2 - cw, 256);
#endif
        MASKC_WS_COLS(kt)
        maskc_wg_wait_n<0>();
        maskc_wg_fence_regs<BN / 2>(s);
        MASKC_WS_RELEASE(MASKC_BAR_EMPTY_K(ks))
        ++ik;
        MASKC_WS_SOFTMAX()
        MASKC_WS_PACK_P()
      }
      kt = tiles.next(kt + 1);
      while (kt < tiles.end) {
        const int ks = ik % MASKC_WS_STAGES, vs = iv % MASKC_WS_STAGES;
        maskc_ws_wait_full(MASKC_BAR_FULL_K(ks), (ik / MASKC_WS_STAGES) & 1);
#if MASKC_WS_PINGPONG
        maskc_named_sync(1 + cw, 256);
#endif
        MASKC_WS_ZERO_S()
        maskc_ws_issue_qk<MASKC_DT, D, BN>(s, sq_wg, sk0 + ks * (2 * MASKC_WS_KV_ELEMS));
        MASKC_WS_RESCALE()
        maskc_ws_wait_full(MASKC_BAR_FULL_V(vs), (iv / MASKC_WS_STAGES) & 1);
        maskc_ws_issue_pv<MASKC_DT, D, BN>(o, a, sv0 + vs * (2 * MASKC_WS_KV_ELEMS));
#if MASKC_WS_PINGPONG
        maskc_named_arrive(2 - cw, 256);
#endif
        MASKC_WS_COLS(kt)
        maskc_wg_wait_n<1>();  // Q.K^T of tile kt done; P.V of the previous tile may run on
        maskc_wg_fence_regs<BN / 2>(s);
        MASKC_WS_RELEASE(MASKC_BAR_EMPTY_K(ks))
        ++ik;
        MASKC_WS_SOFTMAX()
        maskc_wg_wait_n<0>();
        maskc_wg_fence_regs<D / 2>(o);
        maskc_wg_fence_u32<BN / 4>(&a[0][0]);
        MASKC_WS_RELEASE(MASKC_BAR_EMPTY_V(vs))
        ++iv;
        MASKC_WS_PACK_P()
        kt = tiles.next(kt + 1);
      }
      // The last tile's P.V.
      const int vs = iv % MASKC_WS_STAGES;
      MASKC_WS_RESCALE()
      maskc_ws_wait_full(MASKC_BAR_FULL_V(vs), (iv / MASKC_WS_STAGES) & 1);
      maskc_ws_issue_pv<MASKC_DT, D, BN>(o, a, sv0 + vs * (2 * MASKC_WS_KV_ELEMS));
      maskc_wg_wait_n<0>();
      maskc_wg_fence_regs<D / 2>(o);
      maskc_wg_fence_u32<BN / 4>(&a[0][0]);
      MASKC_WS_RELEASE(MASKC_BAR_EMPTY_V(vs))
      ++iv;
    }
#else
    while (kt < tiles.end) {
      const int ks = ik % MASKC_WS_STAGES, vs = iv % MASKC_WS_STAGES;
      maskc_ws_wait_full(MASKC_BAR_FULL_K(ks), (ik / MASKC_WS_STAGES) & 1);
      MASKC_WS_ZERO_S()
      maskc_ws_issue_qk<MASKC_DT, D, BN>(s, sq_wg, sk0 + ks * (2 * MASKC_WS_KV_ELEMS));
      MASKC_WS_COLS(kt)
      maskc_wg_wait_n<0>();
      maskc_wg_fence_regs<BN / 2>(s);
      MASKC_WS_RELEASE(MASKC_BAR_EMPTY_K(ks))
      ++ik;
      MASKC_WS_SOFTMAX()
      MASKC_WS_RESCALE()
      MASKC_WS_PACK_P()
      maskc_ws_wait_full(MASKC_BAR_FULL_V(vs), (iv / MASKC_WS_STAGES) & 1);
      maskc_ws_issue_pv<MASKC_DT, D, BN>(o, a, sv0 + vs * (2 * MASKC_WS_KV_ELEMS));
      maskc_wg_wait_n<0>();
      maskc_wg_fence_regs<D / 2>(o);
      maskc_wg_fence_u32<BN / 4>(&a[0][0]);
      MASKC_WS_RELEASE(MASKC_BAR_EMPTY_V(vs))
      ++iv;
      kt = tiles.next(kt + 1);
    }
#endif

    // Normalise, fold in the sink, store O and the natural-log LSE.
    float inv[MASKC_ROW_SLOTS], lse[MASKC_ROW_SLOTS];
#pragma unroll
    for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) {
      float mm = m[sl], ll = maskc_row_sum(l[sl]), corr = 1.f;
#if defined(MASKC_HAS_SINK)
      if (shape.sink != nullptr) {
        const float s2 = shape.sink[h] * MASKC_LOG2E;
        const float mf = fmaxf(mm, s2);
        corr = maskc_exp2(mm - mf);
        ll = ll * corr + maskc_exp2(s2 - mf);
        mm = mf;
      }
#endif
      inv[sl] = ll > 0.f ? corr / ll : 0.f;
      lse[sl] = ll > 0.f ? (mm + maskc_log2(ll)) * MASKC_LN2 : maskc_neg_inf();
    }
#pragma unroll
    for (int i = 0; i < D / 2; i += 2) {
      const int q = row_base + maskc_frag_row<D>(lane, i);
      if (q < Sq) {
        const float f = inv[maskc_frag_slot<D>(i)];
        *(maskc_u32*)(Op + (long long)q * shape.o_stride[2] + maskc_frag_col<D>(lane, i)) =
            maskc_pack2<MASKC_DT>(o[i] * f, o[i + 1] * f);
      }
    }
#pragma unroll
    for (int sl = 0; sl < MASKC_ROW_SLOTS; ++sl) {
      const int q = row_base + maskc_slot_row(lane, sl);
      if (maskc_row_leader(lane) && q < Sq) LSE[((long long)b * shape.H + h) * Sq + q] = lse[sl];
    }
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
#undef MASKC_BAR_FULL_K
#undef MASKC_BAR_EMPTY_K
#undef MASKC_BAR_FULL_V
#undef MASKC_BAR_EMPTY_V
#undef MASKC_BAR_Q
}

#endif  // MASKC_PLATFORM_NVIDIA && MASKC_NV_WGMMA && MASKC_NV_WS
#endif  // MASKC_ATTN_FWD_SM90_H
