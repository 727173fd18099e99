package hipsrc

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/internal/hostcuda"
)

// tileWalkMain exercises tile_walk.h on the host: random interval sets
// against a brute-force union of tiles, and the q-tile order over every
// block of small grids against a permutation with each (b, h)'s q tiles in
// decreasing order, and the flag walk (MaskcFlagWalk) run by a simulated
// warp of MASKC_WARP_SIZE threads in lock step (ballot and shuffle through a
// barrier) over random flag rows against the list of non-zero flags. It
// prints "ok" or the first failure.
const tileWalkMain = `
#include <stdio.h>
#include <stdlib.h>
#include <vector>
#include <pthread.h>
#define __device__
#define __forceinline__ inline
#define MASKC_WARP_SIZE 8
struct MaskcDim { unsigned x, y, z; };
static MaskcDim blockIdx, gridDim;
static thread_local MaskcDim threadIdx;
static pthread_barrier_t warp_bar;
static unsigned long long warp_vals[MASKC_WARP_SIZE];
#if defined(MASKC_PLATFORM_AMD)  // the AMD primitives tile_walk.h builds its own from
static unsigned long long __ballot(bool p) {
#else
static unsigned long long maskc_walk_ballot(bool p) {
#endif
  warp_vals[threadIdx.x] = p;
  pthread_barrier_wait(&warp_bar);
  unsigned long long m = 0;
  for (int i = 0; i < MASKC_WARP_SIZE; ++i) m |= warp_vals[i] << i;
  pthread_barrier_wait(&warp_bar);
  return m;
}
#if defined(MASKC_PLATFORM_AMD)
static unsigned __shfl(unsigned x, int src, int) {
#else
static unsigned long long maskc_walk_shfl64(unsigned long long x, int src) {
#endif
  warp_vals[threadIdx.x] = x;
  pthread_barrier_wait(&warp_bar);
  const unsigned long long r = warp_vals[src];
  pthread_barrier_wait(&warp_bar);
  return r;
}
#define __builtin_amdgcn_readlane(x, src) ((int)__shfl((unsigned)(x), (src), MASKC_WARP_SIZE))
#define __builtin_amdgcn_readfirstlane(x) ((int)__shfl((unsigned)(x), 0, MASKC_WARP_SIZE))
static int __ffs(unsigned x) { return __builtin_ffs((int)x); }
struct MaskcBuffers {};
constexpr int maskc_kv_interval_count = 3;
inline void maskc_kv_intervals(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long,
                               long long, long long, long long* lo, long long* hi) { for (int i = 0; i < 3; ++i) lo[i] = hi[i] = 0; }
constexpr int maskc_q_interval_count = 3;
inline void maskc_q_intervals(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long,
                              long long, long long, long long* lo, long long* hi) { for (int i = 0; i < 3; ++i) lo[i] = hi[i] = 0; }
TILE_WALK

// Every lane of a warp runs it alike (the same seed: the same walks), in
// lock step where next() is collective (AMD: a ballot and a lane read).
template <int N>
static int check_walk(unsigned seed) {
  unsigned st = seed;
  auto rnd = [&st] {
    st = st * 1103515245u + 12345u;
    return (int)((st >> 8) & 0x7fffff);
  };
#if defined(MASKC_PLATFORM_AMD)
  const int iters = 2000;  // every next() is 4 barriers of the simulated warp
#else
  const int iters = 20000;
#endif
  for (int it = 0; it < iters; ++it) {
    long long lo[N], hi[N];
    const int kv_len = 1 + rnd() % 60, bn = (int[]){1, 3, 4, 8}[rnd() % 4];
    for (int i = 0; i < N; ++i) {
      lo[i] = rnd() % 70 - 5;
      hi[i] = lo[i] + rnd() % 30 - 5;
    }
    MaskcTileWalk<N> w;
    maskc_walk_from(w, lo, hi, kv_len, bn);
    std::vector<int> got, want;
    for (int t = w.next(w.begin()); t < w.end(); t = w.next(t + 1)) got.push_back(t);
    const int n_kt = (kv_len + bn - 1) / bn;
    for (int t = 0; t < n_kt; ++t) {
      bool any = false;
      for (int i = 0; i < N; ++i) {
        const long long a = lo[i] > t * bn ? lo[i] : t * bn, b0 = (t + 1) * bn < kv_len ? (t + 1) * bn : kv_len;
        const long long b = hi[i] < b0 ? hi[i] : b0;
        any = any || a < b;
      }
      if (any) want.push_back(t);
    }
    if (w.count() != (int)got.size()) {
      printf("walk N=%d kv_len=%d bn=%d: count() %d, %zu tiles visited\n", N, kv_len, bn, w.count(), got.size());
      return 1;
    }
    if (got != want) {
      printf("walk N=%d kv_len=%d bn=%d: %zu tiles visited, %zu meet an interval\n", N, kv_len, bn, got.size(), want.size());
      return 1;
    }
    // The same walk stored as a table (MaskcWalkTable, the warp-specialized forward's shared
    // memory) and read back tile by tile, from its first tile and from a random one.
    MaskcWalkTable<N> tab;
    maskc_walk_table_store(tab, w);
    std::vector<int> from_table;
    for (int t = tab.next(tab.begin()); t < tab.end(); t = tab.next(t + 1)) from_table.push_back(t);
    const int start = rnd() % (n_kt + 2);
    if (from_table != want || tab.begin() != w.begin() || tab.end() != w.end() || tab.next(start) != w.next(start)) {
      printf("walk table N=%d kv_len=%d bn=%d: %zu tiles, %zu meet an interval; next(%d) %d, walk's %d\n", N, kv_len, bn,
             from_table.size(), want.size(), start, tab.next(start), w.next(start));
      return 1;
    }
  }
  return 0;
}

static int check_order() {
  for (int n_qt = 1; n_qt <= 7; ++n_qt)
    for (int H = 1; H <= 7; ++H)
      for (int B = 1; B <= 3; ++B) {
        gridDim = {(unsigned)n_qt, (unsigned)H, (unsigned)B};
        std::vector<int> seen(n_qt * H * B, 0), last(H * B, n_qt);
        for (long long L = 0; L < (long long)n_qt * H * B; ++L) {
          // blocks in launch order, x fastest
          blockIdx = {(unsigned)(L % n_qt), (unsigned)(L / n_qt % H), (unsigned)(L / n_qt / H)};
          int qt, h, b;
          maskc_q_tile_order(n_qt, H, B, &qt, &h, &b);
          if (qt < 0 || qt >= n_qt || h < 0 || h >= H || b < 0 || b >= B || seen[(b * H + h) * n_qt + qt]++) {
            printf("order n_qt=%d H=%d B=%d: block %lld runs (qt=%d, h=%d, b=%d) twice or out of range\n", n_qt, H, B, L, qt, h, b);
            return 1;
          }
          if (qt >= last[b * H + h]) {
            printf("order n_qt=%d H=%d B=%d: (h=%d, b=%d) runs q tile %d after %d\n", n_qt, H, B, h, b, qt, last[b * H + h]);
            return 1;
          }
          last[b * H + h] = qt;
        }
      }
  return 0;
}

// One flag row per round: every lane walks it (from tile 0 and from a
// random start) and records what it visits; lane 0's list must equal the
// brute-force one, and every lane's must equal lane 0's.
static std::vector<unsigned char> flag_row;
static int flag_start;
static std::vector<int> lane_got[MASKC_WARP_SIZE];
static void* flag_lane(void* arg) {
  threadIdx.x = (unsigned)(long)arg;
  std::vector<int>& got = lane_got[threadIdx.x];
  got.clear();
  MaskcFlagWalk w;
  w.init(flag_row.data(), (int)flag_row.size());
  for (int t = w.next(flag_start); t < (int)flag_row.size() && got.size() <= 2 * flag_row.size(); t = w.next(t + 1)) {
    got.push_back(t);
    got.push_back(w.flag);
  }
  got.push_back(w.next((int)flag_row.size()));  // past the end: n
  return nullptr;
}

static int check_flag_walk() {
  srand(7);
  for (int it = 0; it < 800; ++it) {
    const int n = 1 + rand() % 300, dens = rand() % 4;
    flag_row.assign(n, 0);
    for (int t = 0; t < n; ++t)
      if (dens == 3 || rand() % (dens == 0 ? 40 : 4) == 0) flag_row[t] = (unsigned char)(1 + rand() % 2);
    flag_start = it % 2 ? rand() % (n + 1) : 0;
    pthread_t th[MASKC_WARP_SIZE];
    for (long i = 0; i < MASKC_WARP_SIZE; ++i) pthread_create(&th[i], nullptr, flag_lane, (void*)i);
    for (int i = 0; i < MASKC_WARP_SIZE; ++i) pthread_join(th[i], nullptr);
    std::vector<int> want;
    for (int t = flag_start; t < n; ++t)
      if (flag_row[t] != 0) {
        want.push_back(t);
        want.push_back(flag_row[t]);
      }
    want.push_back(n);
    for (int i = 0; i < MASKC_WARP_SIZE; ++i)
      if (lane_got[i] != want) {
        printf("flag walk n=%d start=%d lane %d: %zu values, want %zu\n", n, flag_start, i, lane_got[i].size(), want.size());
        return 1;
      }
  }
  return 0;
}

// maskc_lpt_rank over random length rows (few distinct values, so ties
// are common): the places are a permutation, lengths do not increase along
// it, and equal lengths keep decreasing tile indices; with every length
// equal it is maskc_q_tile_order's reverse order.
static int check_lpt() {
  srand(11);
  for (int it = 0; it < 3000; ++it) {
    const int n = 1 + rand() % 70, spread = it % 3 == 0 ? 1 : 1 + rand() % 9;
    std::vector<int> len(n), at(n, -1);
    for (int t = 0; t < n; ++t) len[t] = rand() % spread;
    for (int t = 0; t < n; ++t) {
      const int r = maskc_lpt_rank(len.data(), n, t);
      if (r < 0 || r >= n || at[r] != -1) {
        printf("lpt n=%d: tile %d has place %d, out of range or taken\n", n, t, r);
        return 1;
      }
      at[r] = t;
    }
    for (int r = 1; r < n; ++r) {
      const int a = at[r - 1], b = at[r];
      if (len[a] < len[b] || (len[a] == len[b] && a < b)) {
        printf("lpt n=%d: place %d is tile %d (length %d) after tile %d (length %d)\n", n, r, b, len[b], a, len[a]);
        return 1;
      }
      if (spread == 1 && b != n - 1 - r) {
        printf("lpt n=%d, equal lengths: place %d is tile %d\n", n, r, b);
        return 1;
      }
    }
  }
  return 0;
}

static int walk_failed[MASKC_WARP_SIZE];
static void* walk_lane(void* arg) {
  threadIdx.x = (unsigned)(long)arg;
  walk_failed[threadIdx.x] = check_walk<1>(1) || check_walk<2>(2) || check_walk<3>(3) || check_walk<8>(4);
#if !defined(MASKC_PLATFORM_AMD)  // AMD's walk takes one lane an interval: this warp has 8
  walk_failed[threadIdx.x] = walk_failed[threadIdx.x] || check_walk<24>(5);  // codegen's maxKVIntervals
#endif
  return nullptr;
}

int main() {
  pthread_barrier_init(&warp_bar, nullptr, MASKC_WARP_SIZE);
  pthread_t th[MASKC_WARP_SIZE];
  for (long i = 0; i < MASKC_WARP_SIZE; ++i) pthread_create(&th[i], nullptr, walk_lane, (void*)i);
  for (int i = 0; i < MASKC_WARP_SIZE; ++i) pthread_join(th[i], nullptr);
  for (int i = 0; i < MASKC_WARP_SIZE; ++i)
    if (walk_failed[i]) return 1;
  if (check_order() || check_flag_walk() || check_lpt())
    return 1;
  printf("ok\n");
  return 0;
}
`

// TestTileWalkHost compiles tile_walk.h for the host and checks the walk
// against a brute-force union of the intervals' tiles, and that the q-tile
// order runs every (q tile, h, b) once, each (b, h)'s longest-first, and
// the flag walk against the list of a flag row's non-zero tiles, and the
// longest-first places of maskc_lpt_rank; without a platform and with AMD's
// (MaskcTileWalk::next across the warp's lanes: a ballot and a lane read).
func TestTileWalkHost(t *testing.T) {
	cxx := hostcuda.Cxx(t)
	for _, platform := range []string{"-DMASKC_PLATFORM_HOST", "-DMASKC_PLATFORM_AMD"} {
		runHostProgram(t, cxx, "walk", strings.Replace(tileWalkMain, "TILE_WALK", TileWalk, 1),
			platform, "-O1", "-std=c++14", "-Wno-unused-variable", "-pthread")
	}
}
