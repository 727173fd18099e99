// maskc tile walk: which key tiles a query tile visits, and in which order
// the query tiles of a launch run. Shared by the forward kernels (attn_fwd.h
// and the warp-specialized sm_90a forward), and open to the backward's
// column walk: compiled after the generated part, which defines
// maskc_kv_interval_count / maskc_kv_intervals and maskc_q_interval_count /
// maskc_q_intervals (one interval per disjunct of the mask,
// codegen/sparsity.go).
//
// Interface:
//   MaskcTileWalk           sorted, disjoint key-tile intervals of one q tile.
//   maskc_walk_build(w, ...)  the walk of the rows [q_lo, q_hi) of (b, h).
//   maskc_q_walk_build(w, ...) the backward's column walk: the q tiles of
//                           block_m rows that can see keys [kv_lo, kv_hi)
//                           (maskc_q_intervals, one interval per disjunct).
//   w.next(t)               the first visited tile >= t (w.end() when none);
//                           on AMD from 2 intervals a wavefront-wide step (a
//                           ballot over the intervals held one a lane): every
//                           lane asks alike.
//   w.begin(), w.end()      the first visited tile and one past the last.
//   MaskcWalkTable          a walk stored for other threads to read
//                           (maskc_walk_table_store; begin, end, next).
//   maskc_walk_next_live(w, ...) w.next(t) that also skips the tiles no term's
//                           remainder conditions keep (MASKC_KV_TILE_FILTER).
//   MaskcFlagWalk           the non-empty tiles of a pre-pass flag row, a
//                           warp at a time (ballot + shuffle, no load per tile).
//   maskc_q_tile_order(...) the (q tile, h, b) a block of the forward grid
//                           runs: the longest rows of causal-like masks first,
//                           across heads (MASKC_SCHED_GROUP at a time).
//   maskc_lpt_rank(...)     a q tile's place in the longest-first order of
//                           its (b, h)'s measured row lengths (MASKC_SCHED_LPT
//                           in attn_fwd.h: documents, pre-pass masks).
#ifndef MASKC_TILE_WALK_H
#define MASKC_TILE_WALK_H

// Warp primitives of the flag walk (MaskcFlagWalk) and of AMD's
// MaskcTileWalk::next: a ballot as a 64-bit lane mask, a 64-bit shuffle
// from one lane, (AMD) one lane's value, and the index of the lowest set
// bit of a non-zero word (from 32-bit __ffs, which both platforms have).
// Without a platform (the host test, tilewalk_test.go) the includer gives
// the first two.
#if defined(MASKC_PLATFORM_NVIDIA)
__device__ __forceinline__ unsigned long long maskc_walk_ballot(bool p) { return __ballot_sync(0xffffffffu, p); }
__device__ __forceinline__ unsigned long long maskc_walk_shfl64(unsigned long long x, int src) {
  const unsigned lo = __shfl_sync(0xffffffffu, (unsigned)x, src);
  const unsigned hi = __shfl_sync(0xffffffffu, (unsigned)(x >> 32), src);
  return (unsigned long long)hi << 32 | lo;
}
#elif defined(MASKC_PLATFORM_AMD)
__device__ __forceinline__ unsigned long long maskc_walk_ballot(bool p) { return __ballot(p); }
__device__ __forceinline__ unsigned long long maskc_walk_shfl64(unsigned long long x, int src) {
  const unsigned lo = __shfl((unsigned)x, src, 64);
  const unsigned hi = __shfl((unsigned)(x >> 32), src, 64);
  return (unsigned long long)hi << 32 | lo;
}
// Lane src's x, src the same in every lane: a scalar register (the uniform
// tile loops keep their tile index scalar).
__device__ __forceinline__ int maskc_walk_readlane(int x, int src) { return __builtin_amdgcn_readlane(x, src); }
#endif
__device__ __forceinline__ int maskc_walk_ctz64(unsigned long long x) {
  const unsigned lo = (unsigned)x;
  return lo != 0 ? __ffs(lo) - 1 : 31 + __ffs((unsigned)(x >> 32));
}

// At most this many tile intervals (maskc_kv_interval_count, one per disjunct).
// Every array is indexed by compile-time constants only (unrolled loops,
// merged intervals switched off in a bit mask rather than compacted), so the
// walk lives in registers: a runtime index would put it in scratch memory
// on AMD (codegen's TestHipccMFMA holds every kernel to zero scratch) and in
// local memory on NVIDIA.
template <int N>
struct MaskcTileWalk {
  static_assert(N >= 1 && N <= 32, "one bit of live per interval");
  unsigned live;  // bit i: interval i is in the walk
  int first;      // the first visited tile (0 when none)
  int last;       // one past the last visited tile (0 when none)
  int lo[N];      // tile intervals [lo[i], hi[i]); the live ones sorted,
  int hi[N];      // disjoint and non-empty
#if defined(MASKC_PLATFORM_AMD)
  // From 2 intervals (unions, block selections), the walk across the wavefront's
  // lanes for next(): lane i < N holds interval i when it is live (lane_hi =
  // INT_MIN otherwise). Held in the loop as two vector registers instead of
  // the arrays and a lane mask of each live bit in scalar registers (2N +
  // 2N), which spilled them (CDNA); fewer intervals stay scalar, where a
  // kernel at its vector register limit has none to give.
  static constexpr bool lanes = N >= 2;
  int lane_lo, lane_hi;
#endif

  __device__ __forceinline__ int begin() const { return first; }
  __device__ __forceinline__ int end() const { return last; }
  // How many tiles the walk visits.
  __device__ __forceinline__ int count() const {
    int c = 0;
#pragma unroll
    for (int i = 0; i < N; ++i)
#if defined(MASKC_PLATFORM_AMD)
      c += hi[i] - lo[i];  // 0 for the intervals not live (maskc_walk_from)
#else
      if ((live >> i) & 1u) c += hi[i] - lo[i];
#endif
    return c;
  }
  // The first visited tile >= t, or end() when none.
  __device__ __forceinline__ int next(int t) const {
#if defined(MASKC_PLATFORM_AMD)
    if (lanes) {
      // Asked by every lane of the wavefront alike (the kernels' uniform
      // tile loops): the lowest lane whose interval ends after t is the
      // earliest live interval ending after t (lanes are in sorted order).
      const unsigned long long m = maskc_walk_ballot(lane_hi > t);
      if (m == 0) return last;
      const int l = maskc_walk_readlane(lane_lo, maskc_walk_ctz64(m));
      return t > l ? t : l;
    }
#endif
    int r = last;
#pragma unroll
    for (int i = N - 1; i >= 0; --i)  // the earliest live interval ending after t wins
      if (((live >> i) & 1u) && hi[i] > t) r = t > lo[i] ? t : lo[i];
    return r;
  }
};

// Tile intervals of the kv intervals [lo[i], hi[i]) clamped to [0, kv_len),
// in tiles of block_n keys: empty ones dropped, the rest sorted by start
// (an odd-even transposition network) and overlapping or touching ones
// merged into the later one of each pair.
template <int N>
__device__ __forceinline__ void maskc_walk_from(MaskcTileWalk<N>& w, const long long* lo, const long long* hi,
                                                int kv_len, int block_n) {
  constexpr int kEmpty = 0x7fffffff;  // sorts after every real start
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const long long a = lo[i] < 0 ? 0 : lo[i], b = hi[i] > kv_len ? kv_len : hi[i];
    const bool empty = a >= b;
    w.lo[i] = empty ? kEmpty : (int)(a / block_n);
    w.hi[i] = empty ? kEmpty : (int)((b + block_n - 1) / block_n);
  }
#pragma unroll
  for (int round = 0; round < N; ++round) {
#pragma unroll
    for (int i = round & 1; i + 1 < N; i += 2) {
      const bool swap = w.lo[i] > w.lo[i + 1];
      const int la = w.lo[i], ha = w.hi[i], lb = w.lo[i + 1], hb = w.hi[i + 1];
      w.lo[i] = swap ? lb : la;
      w.hi[i] = swap ? hb : ha;
      w.lo[i + 1] = swap ? la : lb;
      w.hi[i + 1] = swap ? ha : hb;
    }
  }
  w.live = 0;
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (w.lo[i] != kEmpty) w.live |= 1u << i;
#pragma unroll
  for (int i = 1; i < N; ++i) {
    if (((w.live >> i) & 1u) && ((w.live >> (i - 1)) & 1u) && w.lo[i] <= w.hi[i - 1]) {
      w.lo[i] = w.lo[i - 1];
      w.hi[i] = w.hi[i] > w.hi[i - 1] ? w.hi[i] : w.hi[i - 1];
      w.live &= ~(1u << (i - 1));
    }
  }
  w.first = 0;
  w.last = 0;
#pragma unroll
  for (int i = N - 1; i >= 0; --i)
    if ((w.live >> i) & 1u) w.first = w.lo[i];
#pragma unroll
  for (int i = 0; i < N; ++i)
    if ((w.live >> i) & 1u) w.last = w.hi[i];
#if defined(MASKC_PLATFORM_AMD)
  // The intervals not live made empty, so that count() and the decode's
  // maskc_dec_walk_at need no live bit (each a 64-bit lane mask when the
  // walk is in vector registers).
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (!((w.live >> i) & 1u)) w.lo[i] = w.hi[i] = 0;
  static_assert(N <= MASKC_WARP_SIZE, "one lane per interval");
  const int lane = (int)(threadIdx.x % MASKC_WARP_SIZE);
  w.lane_lo = 0;
  w.lane_hi = -0x7fffffff - 1;
#pragma unroll
  for (int i = 0; i < N; ++i)
    if (w.lanes && lane == i && ((w.live >> i) & 1u)) {
      w.lane_lo = w.lo[i];
      w.lane_hi = w.hi[i];
    }
#endif
}

// A walk as a table that other threads read (the warp-specialized sm_90a forward keeps one in
// shared memory, stored by one thread with maskc_walk_table_store): the tile intervals as
// MaskcTileWalk holds them, sorted and disjoint, an interval not in the walk stored with hi = -1
// (it ends after no tile). begin(), end() and next(t) answer as the walk's.
template <int N>
struct MaskcWalkTable {
  int first, last;
  int lo[N], hi[N];

  __device__ __forceinline__ int begin() const { return first; }
  __device__ __forceinline__ int end() const { return last; }
  // The first visited tile >= t, or end() when none.
  __device__ __forceinline__ int next(int t) const {
    int r = last;
#pragma unroll
    for (int i = N - 1; i >= 0; --i)  // the earliest interval ending after t wins
      if (hi[i] > t) r = t > lo[i] ? t : lo[i];
    return r;
  }
};
template <int N>
__device__ __forceinline__ void maskc_walk_table_store(MaskcWalkTable<N>& tab, const MaskcTileWalk<N>& w) {
  tab.first = w.begin();
  tab.last = w.end();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    tab.lo[i] = w.lo[i];
    tab.hi[i] = (w.live >> i) & 1u ? w.hi[i] : -1;
  }
}

#if defined(MASKC_PLATFORM_AMD)
// A walk built from values the whole wavefront shares but that came through
// vector registers (maskc_walk_vgpr): its begin and end back in scalar
// registers, so that the tile loops stay uniform (the intervals stay in
// vector registers: a scalar live bit is a 64-bit lane mask each).
template <int N>
__device__ __forceinline__ void maskc_walk_uniform(MaskcTileWalk<N>& w) {
  w.first = __builtin_amdgcn_readfirstlane(w.first);
  w.last = __builtin_amdgcn_readfirstlane(w.last);
}
// x in a vector register: what is computed from it is computed there too
// (a walk's 64-bit interval arithmetic, 2 N values and their lane masks in
// scalar registers otherwise, spilled them).
__device__ __forceinline__ long long maskc_walk_vgpr(long long x) {
#if defined(__AMDGCN__)  // the device (the host tests run this header too)
  __asm__ volatile("" : "+v"(x));
#endif
  return x;
}
#endif

// The walk of the query rows [q_lo, q_hi) of (b, h): the key tiles that
// meet some disjunct's kv interval (maskc_kv_intervals), those intervals
// left in lo and hi for callers that keep them.
__device__ __forceinline__ void maskc_walk_build(MaskcTileWalk<maskc_kv_interval_count>& w,
                                                 long long (&lo)[maskc_kv_interval_count],
                                                 long long (&hi)[maskc_kv_interval_count], const MaskcBuffers& buf,
                                                 long long B, long long H, long long HKV, long long Q, long long KV,
                                                 long long b, long long h, long long q_lo, long long q_hi,
                                                 int block_n) {
  maskc_kv_intervals(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, lo, hi);
  maskc_walk_from(w, lo, hi, (int)KV, block_n);
}
// The same walk, its intervals dropped.
__device__ __forceinline__ void maskc_walk_build(MaskcTileWalk<maskc_kv_interval_count>& w, const MaskcBuffers& buf,
                                                 long long B, long long H, long long HKV, long long Q, long long KV,
                                                 long long b, long long h, long long q_lo, long long q_hi,
                                                 int block_n) {
  long long lo[maskc_kv_interval_count], hi[maskc_kv_interval_count];
  maskc_walk_build(w, lo, hi, buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, block_n);
}

#if defined(MASKC_KV_TILE_FILTER)
// The first tile >= t of the walk w (a MaskcTileWalk or a MaskcWalkTable) of the rows [q_lo,
// q_hi) of (b, h) that maskc_kv_tile_live keeps (lo, hi: the rows' maskc_kv_intervals, which w
// was built from), or w.end(): the tiles between a periodic term's kept keys are skipped
// (codegen/period.go). Every thread of the block gets the same answers.
template <typename Walk>
__device__ __forceinline__ int maskc_walk_next_live(const Walk& w, const long long* lo, const long long* hi,
                                                    const MaskcBuffers& buf, long long B, long long H, long long HKV,
                                                    long long Q, long long KV, long long b, long long h, long long q_lo,
                                                    long long q_hi, int t, int block_n) {
  for (t = w.next(t); t < w.end(); t = w.next(t + 1)) {
    const long long k0 = (long long)t * block_n, k1 = k0 + block_n < KV ? k0 + block_n : KV;
    if (maskc_kv_tile_live(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, k0, k1, lo, hi)) break;
  }
  return t;
}
#endif

// The column walk of the keys [kv_lo, kv_hi) of (b, h): the q tiles of
// block_m rows that meet some disjunct's q interval (maskc_q_intervals).
__device__ __forceinline__ void maskc_q_walk_build(MaskcTileWalk<maskc_q_interval_count>& w, const MaskcBuffers& buf,
                                                   long long B, long long H, long long HKV, long long Q, long long KV,
                                                   long long b, long long h, long long kv_lo, long long kv_hi,
                                                   int block_m) {
  long long lo[maskc_q_interval_count], hi[maskc_q_interval_count];
  maskc_q_intervals(buf, B, H, HKV, Q, KV, b, h, kv_lo, kv_hi, lo, hi);
  maskc_walk_from(w, lo, hi, (int)Q, block_m);
}

// The non-empty tiles of one pre-pass flag row (0 empty, 1 partial, 2
// full), found a warp at a time without a memory access per visited tile:
// each lane keeps 8 flags of a window of 8 * MASKC_WARP_SIZE tiles in a
// register, and next(t) is a ballot and a shuffle inside the window; the
// window moves (one coalesced load, 8 bytes per lane) only when the walk
// leaves it. Every lane of the warp gets the same answers, so the main
// loop's control stays uniform. The main loop's cost is O(visited tiles +
// n / (8 * MASKC_WARP_SIZE)): the role of FlexAttention's compact
// kv_indices / full_kv_indices lists, read from the flags in place.
struct MaskcFlagWalk {
  const unsigned char* row;  // the flag row
  int n;                     // flags in the row (key tiles)
  int base;                  // first tile of the window (a multiple of 8)
  unsigned long long word;   // this lane's flags [base + 8 lane, + 8), byte k = tile + k, 0 past n
  int flag;                  // the flag of the tile next() returned last

  __device__ __forceinline__ void init(const unsigned char* r, int tiles) {
    row = r;
    n = tiles;
    base = -(8 * MASKC_WARP_SIZE);  // no window yet
    word = 0;
    flag = 0;
  }
  __device__ __forceinline__ void load(int b) {
    base = b;
    word = 0;
    const int t0 = b + 8 * (int)(threadIdx.x % MASKC_WARP_SIZE);
#pragma unroll
    for (int k = 0; k < 8; ++k)
      if (t0 + k < n) word |= (unsigned long long)row[t0 + k] << (8 * k);
  }
  // The first tile >= t whose flag is not 0 (its flag in `flag`), or n.
  __device__ __forceinline__ int next(int t) {
    const int lane = (int)(threadIdx.x % MASKC_WARP_SIZE);
    while (t < n) {
      if (t < base || t >= base + 8 * MASKC_WARP_SIZE) load(t & ~7);
      const int rel = t - base, at = rel >> 3;
      unsigned long long w = lane < at ? 0ull : word;
      if (lane == at) w &= ~0ull << (8 * (rel & 7));
      const unsigned long long lanes = maskc_walk_ballot(w != 0);
      if (lanes == 0) {  // nothing left in this window
        t = base + 8 * MASKC_WARP_SIZE;
        continue;
      }
      const int f = maskc_walk_ctz64(lanes);
      const unsigned long long fw = maskc_walk_shfl64(w, f);
      const int byte = maskc_walk_ctz64(fw) >> 3;
      flag = (int)((fw >> (8 * byte)) & 0xff);
      return base + 8 * f + byte;
    }
    flag = 0;
    return n;
  }
};

// Scheduling. Blocks start in blockIdx order (x fastest); block
// (x, y, z) of the (n_qt, H, B) grid runs the q tile of rank r (0: the
// last, longest for causal-like masks) of head pair p, where the blocks are
// numbered rank-major within groups of MASKC_SCHED_GROUP (b, h) pairs: the
// heads of a group share their first wave, and a group's K and V (G * Skv *
// D * 4 bytes) stay in L2 while its q tiles run. Group 1 is the plain
// order: every q tile of (0, 0), longest first, then (0, 1). On the H200
// (docs/kernel-decisions.md) 4 beat 1 on every case measured: prefix2048 +6%,
// head_windows +5%, spec_decode +3%, document +2.5%.
#ifndef MASKC_SCHED_GROUP
#define MASKC_SCHED_GROUP 4
#endif
__device__ __forceinline__ void maskc_q_tile_order(int n_qt, int H, int B, int* qt, int* h, int* b) {
  const long long L = blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);
  const int pairs = H * B;
  const long long per_group = (long long)MASKC_SCHED_GROUP * n_qt;
  const int g = (int)(L / per_group);
  const int in = (int)(L - g * per_group);
  const int first = g * MASKC_SCHED_GROUP;
  const int size = pairs - first < MASKC_SCHED_GROUP ? pairs - first : MASKC_SCHED_GROUP;
  const int rank = in / size, p = first + in % size;
  *qt = n_qt - 1 - rank;
  *h = p % H;
  *b = p / H;
}

// Longest-first order from measured lengths (MASKC_SCHED_LPT, attn_fwd.h):
// the place of q tile t when the n tiles of one (b, h) are sorted by
// decreasing len[], ties by decreasing index (so that equal lengths keep
// maskc_q_tile_order's reverse order). The places of 0 .. n-1 are a
// permutation of 0 .. n-1; the block whose rank (maskc_q_tile_order's
// n_qt - 1 - qt) is r runs the tile whose place is r. With the hardware
// handing blocks out in launch order, that is a greedy longest-processing-
// time-first schedule of each group of heads: the last blocks to start are
// the shortest rows, so that the launch does not end on one long row.
__device__ __forceinline__ int maskc_lpt_rank(const int* len, int n, int t) {
  const int lt = len[t];
  int r = 0;
  for (int u = 0; u < n; ++u) r += len[u] > lt || (len[u] == lt && u > t);
  return r;
}

#endif  // MASKC_TILE_WALK_H
