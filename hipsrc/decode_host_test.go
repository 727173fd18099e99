package hipsrc

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/internal/hostcuda"
)

// decodeHostMain runs attn_decode.h's two kernels on the host, as plain
// C++: every block of a grid in turn, its MASKC_DEC_THREADS threads as
// pthreads (block barriers, and warp shuffles and votes through per-warp
// barriers), over the real frame.h and tile_walk.h and a hand-written
// generated part in the global frame: a causal window whose width depends
// on the head (so the kernel's head loop and per-row tile tests matter), a
// tanh soft-cap score plus a per-head bias, and a sink. The queries are the
// last Sq positions of the keys (the position frame of a decode step).
// Each case checks every row's O (bf16) and LSE against a float64
// reference, with O and LSE poisoned (NaN) before the launch; it prints
// "ok" or the first failure.
const decodeHostMain = `
#include <math.h>
HOST_CUDA_PRELUDE
#if defined(MASKC_PLATFORM_AMD)
#define MASKC_WARP_SIZE 64
#else
#define MASKC_WARP_SIZE 32
#endif
#define MASKC_HEAD_DIM 64
#define MASKC_DTYPE_BF16 1
#define MASKC_HAS_MASK 1
#define MASKC_HAS_SCORE 1
#define MASKC_HAS_SINK 1
#define MASKC_SPARSITY_ANALYTIC 1
#define MASKC_MASK_USES_B 0
#define MASKC_MASK_USES_H 1
typedef unsigned short maskc_elem_t;
typedef unsigned int maskc_u32;
enum { MASKC_BF16 = 0, MASKC_F16 = 1 };
#define MASKC_DT MASKC_BF16
#define MASKC_LOG2E 1.4426950408889634f
#define MASKC_LN2 0.6931471805599453f
static float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
static unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static float maskc_neg_inf() { return -INFINITY; }
static float maskc_exp2(float x) { return exp2f(x); }
static float maskc_log2(float x) { return log2f(x); }
static int maskc_nonneg(int x) { return x; }
static int min(int a, int b) { return a < b ? a : b; }
static unsigned bf16(float x) {
  unsigned u = __float_as_uint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 0x40u;
  u += 0x7fffu + ((u >> 16) & 1u);
  return u >> 16;
}
template <int DT>
static maskc_u32 maskc_pack2(float lo, float hi) { return bf16(lo) | bf16(hi) << 16; }
// One block's threads: a barrier for the block and one per warp.
static pthread_barrier_t warp_bar[16];
static float warp_f[16][MASKC_WARP_SIZE];
#define HOST_THREADS MASKC_DEC_THREADS
#define HOST_LAUNCH_INIT() \
  for (int w = 0; w < MASKC_DEC_WARPS; ++w) pthread_barrier_init(&warp_bar[w], nullptr, MASKC_WARP_SIZE);
static float maskc_shfl_xor(float x, int m) {
  const int w = threadIdx.x / MASKC_WARP_SIZE, l = threadIdx.x % MASKC_WARP_SIZE;
  warp_f[w][l] = x;
  pthread_barrier_wait(&warp_bar[w]);
  const float r = warp_f[w][l ^ m];
  pthread_barrier_wait(&warp_bar[w]);
  return r;
}
static bool maskc_warp_all(bool p) {
  const int w = threadIdx.x / MASKC_WARP_SIZE, l = threadIdx.x % MASKC_WARP_SIZE;
  warp_f[w][l] = p;
  pthread_barrier_wait(&warp_bar[w]);
  bool all = true;
  for (int i = 0; i < MASKC_WARP_SIZE; ++i) all = all && warp_f[w][i] != 0.f;
  pthread_barrier_wait(&warp_bar[w]);
  return all;
}
#if defined(MASKC_PLATFORM_AMD)  // tile_walk.h's AMD primitives: MaskcTileWalk::next's ballot and lane read
static unsigned warp_u[16][MASKC_WARP_SIZE];
static unsigned long long __ballot(bool p) {
  const int w = threadIdx.x / MASKC_WARP_SIZE, l = threadIdx.x % MASKC_WARP_SIZE;
  warp_u[w][l] = p;
  pthread_barrier_wait(&warp_bar[w]);
  unsigned long long m = 0;
  for (int i = 0; i < MASKC_WARP_SIZE; ++i) m |= (unsigned long long)(warp_u[w][i] != 0) << i;
  pthread_barrier_wait(&warp_bar[w]);
  return m;
}
static unsigned __shfl(unsigned x, int src, int) {
  const int w = threadIdx.x / MASKC_WARP_SIZE, l = threadIdx.x % MASKC_WARP_SIZE;
  warp_u[w][l] = x;
  pthread_barrier_wait(&warp_bar[w]);
  const unsigned r = warp_u[w][src];
  pthread_barrier_wait(&warp_bar[w]);
  return r;
}
#define __builtin_amdgcn_readlane(x, src) ((int)__shfl((unsigned)(x), (src), MASKC_WARP_SIZE))
#define __builtin_amdgcn_readfirstlane(x) ((int)__shfl((unsigned)(x), 0, MASKC_WARP_SIZE))
// maskc_kernarg (prelude.h): the decode launch's parameter I.
static const void* host_kernarg[10];
#define MASKC_KERNARG_AS
template <class T, class F, int I>
static const T* maskc_kernarg() {
  if (host_kernarg[I] == nullptr) abort();
  return (const T*)host_kernarg[I];
}
#else
static unsigned long long maskc_walk_ballot(bool) { abort(); }
static unsigned long long maskc_walk_shfl64(unsigned long long, int) { abort(); }
#endif
ABI_HEADER
// The generated part, in the global frame: keys kv <= q within W(h) of q; with HOST_STRIDED also
// the keys a multiple of P back ((q - kv) % P == 0), a second term whose remainder the decode's
// walk filters per tile (MASKC_KV_TILE_FILTER: frame.h's maskc_kv_tile_live).
static long long W(long long h) { return 50 + 20 * (h % 4); }
#if defined(HOST_STRIDED)
#define MASKC_KV_TILE_FILTER 1
static const long long P = 150;
static bool host_keep(long long h, long long q, long long kv) { return kv <= q && (q - kv < W(h) || (q - kv) % P == 0); }
#else
static bool host_keep(long long h, long long q, long long kv) { return kv <= q && q - kv < W(h); }
#endif
struct MaskcMaskRow {};
struct MaskcMaskCol {};
struct MaskcScoreRow {};
struct MaskcScoreCol {};
struct MaskcScoreGradRead { int slot; long long idx; float d; };
#if defined(HOST_STRIDED)
constexpr int maskc_kv_interval_count = 2;
#else
constexpr int maskc_kv_interval_count = 1;
#endif
constexpr int maskc_q_interval_count = 1;
#define GA const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV
static MaskcMaskRow maskc_g_mask_row(GA, long long, long long, long long) { return {}; }
static MaskcMaskCol maskc_g_mask_col(GA, long long, long long, long long) { return {}; }
static bool maskc_g_mask(GA, long long b, long long h, long long q, long long kv) { return host_keep(h, q, kv); }
static bool maskc_g_mask_rc(GA, const MaskcMaskRow&, const MaskcMaskCol&, long long b, long long h, long long q, long long kv) {
  return maskc_g_mask(buf, B, H, HKV, Q, KV, b, h, q, kv);
}
static MaskcScoreRow maskc_g_score_row(GA, long long, long long, long long) { return {}; }
static MaskcScoreCol maskc_g_score_col(GA, long long, long long, long long) { return {}; }
static float maskc_g_score(GA, float s, long long b, long long h, long long q, long long kv) {
  return 20.f * tanhf(s / 20.f) + 0.01f * (float)h;
}
static float maskc_g_score_rc(GA, const MaskcScoreRow&, const MaskcScoreCol&, float s, long long b, long long h, long long q, long long kv) {
  return maskc_g_score(buf, B, H, HKV, Q, KV, s, b, h, q, kv);
}
static float maskc_g_score_grad(GA, float s, long long, long long, long long, long long, MaskcScoreGradRead*) { return 1.f; }
#if defined(HOST_STRIDED)
static void maskc_g_kv_range(GA, long long b, long long h, long long q_lo, long long q_hi, long long* lo, long long* hi) {
  *lo = 0;
  *hi = q_hi;
}
static void maskc_g_kv_intervals(GA, long long b, long long h, long long q_lo, long long q_hi, long long* lo, long long* hi) {
  lo[0] = q_lo - W(h) + 1, hi[0] = q_hi;  // the window
  lo[1] = 0, hi[1] = q_hi;                 // the stride: bounded by kv <= q only
}
static void maskc_g_q_range(GA, long long b, long long h, long long kv_lo, long long kv_hi, long long* lo, long long* hi) {
  *lo = kv_lo;
  *hi = Q;
}
// Term 1's remainder: some q - kv of the tile, at least 0, is a multiple of P.
static long long filter_rejects;  // tiles the filter turned down (the test asks for some)
static bool maskc_g_kv_term_live(GA, int i, long long b, long long h, long long q_lo, long long q_hi, long long kv_lo,
                                 long long kv_hi) {
  if (i == 0) return true;
  const long long d_lo = q_lo - (kv_hi - 1) > 0 ? q_lo - (kv_hi - 1) : 0, d_hi = q_hi - 1 - kv_lo;
  const bool live = d_lo <= d_hi && (d_lo + P - 1) / P * P <= d_hi;
  if (!live) __atomic_add_fetch(&filter_rejects, 1, __ATOMIC_RELAXED);
  return live;
}
#else
static void maskc_g_kv_range(GA, long long b, long long h, long long q_lo, long long q_hi, long long* lo, long long* hi) {
  *lo = q_lo - W(h) + 1;
  *hi = q_hi;
}
static void maskc_g_kv_intervals(GA, long long b, long long h, long long q_lo, long long q_hi, long long* lo, long long* hi) {
  maskc_g_kv_range(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, lo, hi);
}
static void maskc_g_q_range(GA, long long b, long long h, long long kv_lo, long long kv_hi, long long* lo, long long* hi) {
  *lo = kv_lo;
  *hi = kv_hi + W(h) - 1;
}
#endif
static void maskc_g_q_intervals(GA, long long b, long long h, long long kv_lo, long long kv_hi, long long* lo, long long* hi) {
  maskc_g_q_range(buf, B, H, HKV, Q, KV, b, h, kv_lo, kv_hi, lo, hi);
}
static bool maskc_g_tile_full(GA, long long b, long long h, long long q_lo, long long q_hi, long long kv_lo, long long kv_hi) {
  return kv_hi - 1 <= q_lo && q_hi - 1 - kv_lo < W(h);  // the window's (a tile inside it)
}
FRAME
TILE_WALK
DECODE

static float val(maskc_elem_t x) { return __uint_as_float((unsigned)x << 16); }

HOST_GRID_RUNNER

static int run(int B, int HKV, int G, int Sq, int Skv, int n_split, unsigned seed, int kv_off = 0) {
  const int H = HKV * G, D = MASKC_HEAD_DIM;
  srand(seed);
  auto rnd = [] { return (maskc_elem_t)bf16((float)rand() / RAND_MAX * 2.f - 1.f); };
  std::vector<maskc_elem_t> q((size_t)B * H * Sq * D), k((size_t)B * HKV * Skv * D), v(k.size());
  for (auto& x : q) x = rnd();
  for (auto& x : k) x = rnd();
  for (auto& x : v) x = rnd();
  std::vector<float> sink(H);
  for (int h = 0; h < H; ++h) sink[h] = (float)(h % 3) - 1.f;
  std::vector<maskc_elem_t> o(q.size(), 0x7fc0);  // NaN
  std::vector<float> lse((size_t)B * H * Sq, NAN), ws_o((size_t)B * H * Sq * n_split * D, NAN), ws_l((size_t)B * H * Sq * n_split, NAN);
  MaskcShape sh = {};
  sh.B = B, sh.H = H, sh.HKV = HKV, sh.Sq = Sq, sh.Skv = Skv;
  const long long qs[3] = {(long long)H * Sq * D, (long long)Sq * D, D}, ks[3] = {(long long)HKV * Skv * D, (long long)Skv * D, D};
  for (int i = 0; i < 3; ++i) sh.q_stride[i] = sh.o_stride[i] = qs[i], sh.k_stride[i] = sh.v_stride[i] = ks[i];
  sh.scale = 0.125f;
  sh.sink = sink.data();
  MaskcBuffers buf = {};
  buf.q_offset = Skv - Sq;  // the last Sq positions, or before every key with kv_off >= Skv
  buf.kv_offset = kv_off;
  buf.q_total = Skv;
  buf.kv_total = Skv + kv_off;
  const int row_blocks = (Sq * G + MASKC_DEC_ROWS - 1) / MASKC_DEC_ROWS;
  maskc_elem_t* o_p = o.data();
  float *lse_p = lse.data(), *ws_o_p = ws_o.data(), *ws_l_p = ws_l.data();
#if defined(MASKC_PLATFORM_AMD)
  host_kernarg[3] = &o_p;
  host_kernarg[4] = &lse_p;
  host_kernarg[5] = &sh;
  host_kernarg[6] = &buf;
  host_kernarg[7] = &ws_o_p;
  host_kernarg[8] = &ws_l_p;
#endif
  launch({(unsigned)(n_split * row_blocks), (unsigned)HKV, (unsigned)B}, [&] {
    maskc_attn_decode(q.data(), k.data(), v.data(), o_p, lse_p, sh, buf, ws_o_p, ws_l_p, n_split);
  });
  if (n_split > 1)
    launch({(unsigned)Sq, (unsigned)H, (unsigned)B}, [&] {
      maskc_attn_decode_merge(o.data(), lse.data(), sh, ws_o.data(), ws_l.data(), n_split);
    });
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < Sq; ++i) {
        const long long qg = Skv - Sq + i;
        const int hk = h / G;
        std::vector<double> x;
        std::vector<int> kv_of;
        for (int kv = 0; kv < Skv; ++kv) {
          if (!host_keep(h, qg, kv + kv_off)) continue;
          double s = 0;
          for (int d = 0; d < D; ++d)
            s += (double)val(q[(((size_t)b * H + h) * Sq + i) * D + d]) * val(k[(((size_t)b * HKV + hk) * Skv + kv) * D + d]);
          s *= 0.125;
          x.push_back(20.0 * tanh(s / 20.0) + 0.01 * h);
          kv_of.push_back(kv);
        }
        double mx = sink[h];
        for (double y : x) mx = y > mx ? y : mx;
        double sum = exp(sink[h] - mx);
        for (double y : x) sum += exp(y - mx);
        const double want_lse = mx + log(sum);
        const size_t row = ((size_t)b * H + h) * Sq + i;
        if (!(fabs(lse[row] - want_lse) <= 2e-3)) {
          printf("B=%d HKV=%d G=%d Sq=%d Skv=%d splits=%d: lse[b=%d h=%d q=%d] = %g, want %g\n", B, HKV, G, Sq, Skv, n_split, b, h, i,
                 lse[row], want_lse);
          return 1;
        }
        for (int d = 0; d < D; ++d) {
          double want = 0;
          for (size_t j = 0; j < x.size(); ++j)
            want += exp(x[j] - want_lse) * val(v[(((size_t)b * HKV + hk) * Skv + kv_of[j]) * D + d]);
          const double got = val(o[row * D + d]);
          if (!(fabs(got - want) <= 1e-2)) {
            printf("B=%d HKV=%d G=%d Sq=%d Skv=%d splits=%d: O[b=%d h=%d q=%d d=%d] = %g, want %g\n", B, HKV, G, Sq, Skv, n_split, b,
                   h, i, d, got, want);
            return 1;
          }
        }
      }
  return 0;
}

int main() {
  // (B, HKV, G, Sq, Skv, splits): two row blocks and several splits; one
  // split (O written by the kernel itself); more splits than visible tiles
  // (empty splits); 16 query rows of one head; a ragged last tile; keys
  // from position 40 (the frame's kv_offset); queries before every key
  // (fully masked rows: O = 0, the LSE the sink's), split and not.
  if (run(2, 2, 4, 3, 300, 3, 1) || run(1, 1, 8, 1, 200, 1, 2) || run(1, 2, 2, 2, 130, 7, 3) ||
      run(1, 1, 1, 16, 64, 2, 4) || run(1, 1, 4, 1, 301, 2, 5) || run(1, 2, 2, 2, 100, 1, 6, 40) ||
      run(1, 1, 2, 1, 100, 3, 7, 200) || run(1, 1, 2, 1, 100, 1, 8, 200))
    return 1;
#if defined(HOST_STRIDED)
  // Long caches, where most tiles past the window hold no multiple of P: split and not, several
  // heads a row block, and keys from position 40.
  if (run(1, 2, 2, 3, 1200, 4, 9) || run(1, 1, 4, 1, 1000, 1, 10) || run(1, 1, 1, 16, 900, 3, 11, 40))
    return 1;
  if (filter_rejects == 0) {
    printf("the filter turned down no tile: the test does not exercise it\n");
    return 1;
  }
#endif
  printf("ok\n");
  return 0;
}
`

// TestDecodeOnHost runs the decode kernel and its merge on the host against
// a float64 reference (decodeHostMain), in NVIDIA's geometry (32-lane
// warps, 4 rows a lane) and AMD's (64-lane wavefronts, 2 rows a lane), on
// a head-dependent window and on the window with a stride whose remainder
// the walk filters per tile (HOST_STRIDED, MASKC_DEC_FILTER).
func TestDecodeOnHost(t *testing.T) {
	cxx := hostcuda.Cxx(t)
	r := strings.NewReplacer("ABI_HEADER", ABIHeader(), "FRAME", Frame, "TILE_WALK", TileWalk, "DECODE", AttnDecode,
		"HOST_CUDA_PRELUDE", hostcuda.Prelude, "HOST_GRID_RUNNER", hostcuda.GridRunner)
	for _, platform := range []string{"-DMASKC_PLATFORM_HOST", "-DMASKC_PLATFORM_AMD"} {
		for _, mask := range []string{"-DHOST_WINDOW", "-DHOST_STRIDED"} {
			runHostProgram(t, cxx, "decode_host", r.Replace(decodeHostMain), platform, mask, "-std=c++17", "-O1", "-pthread",
				"-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-but-set-variable")
		}
	}
}
