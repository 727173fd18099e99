// maskc tile walk: which key tiles a query tile visits, and in which order
// the query tiles of a launch run. Shared by the forward kernels (attn_fwd.h
// and the warp-specialized sm_90a forward), and open to the backward's
// column walk: compiled after the generated part, which defines
// maskc_kv_interval_count / maskc_kv_intervals and maskc_q_interval_count /
// maskc_q_intervals (one interval per disjunct of the mask,
// codegen/sparsity.go).
//
// Interface:
//   MaskcTileWalk           the key-tile intervals of one q tile.
//   maskc_walk_build(w, ...)  the walk of the rows [q_lo, q_hi) of (b, h).
//   maskc_q_walk_build(w, ...) the backward's column walk: the q tiles of
//                           block_m rows that can see keys [kv_lo, kv_hi)
//                           (maskc_q_intervals, one interval per disjunct).
//   w.next(t)               the first visited tile >= t (w.end() when none).
//   w.begin(), w.end()      the first visited tile and one past the last.
//   maskc_q_tile_order(...) the (q tile, h, b) a block of the forward grid
//                           runs: the longest rows of causal-like masks first,
//                           across heads (MASKC_SCHED_GROUP at a time).
#ifndef MASKC_TILE_WALK_H
#define MASKC_TILE_WALK_H

// At most N tile intervals (maskc_kv_interval_count, one per disjunct), in
// any order and possibly overlapping: every loop runs over the constant N
// with constant indices, so that the walk stays in registers (no scratch
// memory, which the CDNA resource test forbids).
template <int N>
struct MaskcTileWalk {
  int lo[N];  // tile intervals [lo[i], hi[i]); empty when lo[i] >= hi[i]
  int hi[N];
  int last;   // one past the last visited tile (0: none)

  __device__ __forceinline__ int end() const { return last; }
  // The first tile >= t inside some interval, end() when none.
  __device__ __forceinline__ int next(int t) const {
    int best = last;
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const int c = t > lo[i] ? t : lo[i];
      if (c < hi[i] && c < best) best = c;
    }
    return best;
  }
  __device__ __forceinline__ int begin() const { return next(0); }
};

// Tile intervals of the kv intervals [lo[i], hi[i]) clamped to [0, kv_len),
// in tiles of block_n keys.
template <int N>
__device__ __forceinline__ void maskc_walk_from(MaskcTileWalk<N>& w, const long long* lo, const long long* hi,
                                                int kv_len, int block_n) {
  w.last = 0;
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const long long a = lo[i] < 0 ? 0 : lo[i], b = hi[i] > kv_len ? kv_len : hi[i];
    const bool some = a < b;
    w.lo[i] = some ? (int)(a / block_n) : 0;
    w.hi[i] = some ? (int)((b + block_n - 1) / block_n) : 0;
    w.last = w.hi[i] > w.last ? w.hi[i] : w.last;
  }
}

// The walk of the query rows [q_lo, q_hi) of (b, h): the key tiles that
// meet some disjunct's kv interval (maskc_kv_intervals).
__device__ __forceinline__ void maskc_walk_build(MaskcTileWalk<maskc_kv_interval_count>& w, const MaskcBuffers& buf,
                                                 long long B, long long H, long long HKV, long long Q, long long KV,
                                                 long long b, long long h, long long q_lo, long long q_hi,
                                                 int block_n) {
  long long lo[maskc_kv_interval_count], hi[maskc_kv_interval_count];
  maskc_kv_intervals(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, lo, hi);
  maskc_walk_from(w, lo, hi, (int)KV, block_n);
}

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

// Scheduling. Blocks start in blockIdx order (x fastest); block
// (x, y, z) of the (n_qt, H, B) grid runs the q tile of rank r (0: the
// last, longest for causal-like masks) of head pair p, where the blocks are
// numbered rank-major within groups of MASKC_SCHED_GROUP (b, h) pairs: the
// heads of a group share their first wave, and a group's K and V (G * Skv *
// D * 4 bytes) stay in L2 while its q tiles run. Group 1 is the plain
// order: every q tile of (0, 0), longest first, then (0, 1). On the H200
// (gpu/NOTES.md, run 14) 4 beat 1 on every case measured: prefix2048 +6%,
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

#endif  // MASKC_TILE_WALK_H
