package hipsrc

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/internal/hostcuda"
)

// flagsHostMain runs attn_fwd.h's pre-pass, maskc_tile_flags, on the host
// as plain C++: every block of its (kv tiles, q tiles) grid in turn, its
// MASKC_NUM_THREADS threads as pthreads (hostcuda's votes through a
// block barrier), over the real frame.h and a hand-written generated part
// in the global frame shaped like Gemma 4's sliding layer with images: a
// causal window of W keys, or-ed with both positions in the same image
// group (g[b][q] == g[b][kv] >= 0), the group ids read as the mask's row
// and column parts (MaskcMaskRow, MaskcMaskCol). Each case compares every
// flag with one computed pair by pair (0: no kept pair; 2: every pair of
// the tile's rows below Sq and its MASKC_BLOCK_N keys kept, keys past Skv
// counting as masked; else 1), the flags poisoned before the launch, and
// fails on a row part read past Sq or a column part past Skv; it prints
// "ok" or the first failure.
const flagsHostMain = `
HOST_CUDA_PRELUDE
#if defined(MASKC_PLATFORM_AMD)
#define MASKC_WARP_SIZE 64
#define MASKC_NUM_THREADS 512
#else
#define MASKC_WARP_SIZE 32
#define MASKC_NUM_THREADS 256
#endif
#define MASKC_BLOCK_M 128
#define MASKC_BLOCK_N 64
#define MASKC_HEAD_DIM 128
#define MASKC_HAS_MASK 1
#define MASKC_SPARSITY_PREPASS 1
#define MASKC_MASK_USES_B 1
#define MASKC_MASK_USES_H 0
static int maskc_nonneg(int x) { return x; }
static int min(int a, int b) { return a < b ? a : b; }
#define HOST_THREADS MASKC_NUM_THREADS
#define HOST_LAUNCH_INIT()
static unsigned long long maskc_walk_ballot(bool) { abort(); }
static unsigned long long maskc_walk_shfl64(unsigned long long, int) { abort(); }
ABI_HEADER
// The generated part, in the global frame: kv <= q within W of q, or the same image group.
static const long long W = 100;
static int host_B, host_Sq, host_Skv;
static std::vector<int> host_g;  // [B][max(Sq, Skv)] image group of each position, -1 for text
static int group(long long b, long long t) { return host_g[(size_t)b * (host_Sq > host_Skv ? host_Sq : host_Skv) + t]; }
static bool host_keep(long long b, long long q, long long kv) {
  return (kv <= q && q - kv < W) || (group(b, q) >= 0 && group(b, q) == group(b, kv));
}
static int bad_reads;
struct MaskcMaskRow { int g; };
struct MaskcMaskCol { int g; };
struct MaskcScoreRow {};
struct MaskcScoreCol {};
struct MaskcScoreGradRead { int slot; long long idx; float d; };
constexpr int maskc_kv_interval_count = 1;
constexpr int maskc_q_interval_count = 1;
#define GA const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV
static MaskcMaskRow maskc_g_mask_row(GA, long long b, long long, long long q) {
  if (b < 0 || b >= host_B || q < 0 || q >= host_Sq) return __atomic_add_fetch(&bad_reads, 1, __ATOMIC_RELAXED), MaskcMaskRow{-1};
  return {group(b, q)};
}
static MaskcMaskCol maskc_g_mask_col(GA, long long b, long long, long long kv) {
  if (b < 0 || b >= host_B || kv < 0 || kv >= host_Skv) return __atomic_add_fetch(&bad_reads, 1, __ATOMIC_RELAXED), MaskcMaskCol{-2};
  return {group(b, kv)};
}
static bool maskc_g_mask(GA, long long b, long long h, long long q, long long kv) { return host_keep(b, q, kv); }
static bool maskc_g_mask_rc(GA, const MaskcMaskRow& r, const MaskcMaskCol& c, long long b, long long h, long long q, long long kv) {
  return (kv <= q && q - kv < W) || (r.g >= 0 && r.g == c.g);
}
static MaskcScoreRow maskc_g_score_row(GA, long long, long long, long long) { return {}; }
static MaskcScoreCol maskc_g_score_col(GA, long long, long long, long long) { return {}; }
static float maskc_g_score(GA, float s, long long, long long, long long, long long) { return s; }
static float maskc_g_score_rc(GA, const MaskcScoreRow&, const MaskcScoreCol&, float s, long long, long long, long long, long long) { return s; }
static float maskc_g_score_grad(GA, float, long long, long long, long long, long long, MaskcScoreGradRead*) { return 1.f; }
static void maskc_g_kv_range(GA, long long, long long, long long, long long, long long* lo, long long* hi) { *lo = 0, *hi = KV; }
static void maskc_g_kv_intervals(GA, long long, long long, long long, long long, long long* lo, long long* hi) { *lo = 0, *hi = KV; }
static void maskc_g_q_range(GA, long long, long long, long long, long long, long long* lo, long long* hi) { *lo = 0, *hi = Q; }
static void maskc_g_q_intervals(GA, long long, long long, long long, long long, long long* lo, long long* hi) { *lo = 0, *hi = Q; }
static bool maskc_g_tile_full(GA, long long, long long, long long, long long, long long, long long) { return false; }
FRAME
FLAG_ROW
TILE_FLAGS

HOST_GRID_RUNNER

// images: (start, length) spans per batch, group ids numbered from 0.
static int run(int B, int Sq, int Skv, std::vector<std::vector<int>> images) {
  host_B = B, host_Sq = Sq, host_Skv = Skv;
  const int n = Sq > Skv ? Sq : Skv;
  host_g.assign((size_t)B * n, -1);
  for (int b = 0; b < B; ++b)
    for (size_t i = 0; i + 1 < images[b].size(); i += 2)
      for (int t = images[b][i]; t < images[b][i] + images[b][i + 1] && t < n; ++t) host_g[(size_t)b * n + t] = (int)(i / 2);
  const int n_qt = (Sq + MASKC_BLOCK_M - 1) / MASKC_BLOCK_M, n_kt = (Skv + MASKC_BLOCK_N - 1) / MASKC_BLOCK_N;
  std::vector<unsigned char> flags((size_t)B * n_qt * n_kt, 0xee);
  MaskcShape sh = {};
  sh.B = B, sh.H = 2, sh.HKV = 2, sh.Sq = Sq, sh.Skv = Skv;
  MaskcBuffers buf = {};
  bad_reads = 0;
  launch({(unsigned)n_kt, (unsigned)n_qt, 1}, [&] { maskc_tile_flags(sh, buf, flags.data()); });
  if (bad_reads) {
    printf("B=%d Sq=%d Skv=%d: %d reads of a row past Sq or a key past Skv\n", B, Sq, Skv, bad_reads);
    return 1;
  }
  for (int b = 0; b < B; ++b)
    for (int qt = 0; qt < n_qt; ++qt)
      for (int kt = 0; kt < n_kt; ++kt) {
        bool any = false, all = true;
        for (int q = qt * MASKC_BLOCK_M; q < Sq && q < (qt + 1) * MASKC_BLOCK_M; ++q)
          for (int kv = kt * MASKC_BLOCK_N; kv < (kt + 1) * MASKC_BLOCK_N; ++kv) {
            const bool keep = kv < Skv && host_keep(b, q, kv);
            any = any || keep;
            all = all && keep;
          }
        const int want = any ? (all ? 2 : 1) : 0, got = flags[((size_t)b * n_qt + qt) * n_kt + kt];
        if (got != want) {
          printf("B=%d Sq=%d Skv=%d: flag of b=%d q tile %d kv tile %d = %d, want %d\n", B, Sq, Skv, b, qt, kt, got, want);
          return 1;
        }
      }
  return 0;
}

int main() {
  // Images spanning whole tiles (full flags away from the window), a
  // ragged last q and kv tile, Sq != Skv, a batch without images, an image
  // across a tile edge.
  if (run(2, 300, 300, {{0, 20, 130, 150}, {64, 192}}) || run(1, 257, 200, {{10, 5, 200, 57}}) ||
      run(2, 130, 390, {{}, {128, 128, 300, 80}}) || run(1, 64, 64, {{0, 64}}))
    return 1;
  printf("ok\n");
  return 0;
}
`

// TestTileFlagsOnHost runs the pre-pass (maskc_tile_flags, attn_fwd.h) on
// the host against flags computed pair by pair (flagsHostMain), in
// NVIDIA's block (256 threads, 32-lane warps) and AMD's (512, 64), on a
// mask whose row and column parts read a buffer (Gemma 4's image groups
// or-ed with a causal window).
func TestTileFlagsOnHost(t *testing.T) {
	cxx := hostcuda.Cxx(t)
	flagRow := cutSource(t, AttnFwd, "// Index of the first pre-pass flag of (b, h, q_tile).", "\n}\n", "maskc_flag_row")
	flags := cutSource(t, AttnFwd, "// Pre-pass for masks without a closed-form block structure", "\n}\n\n#if defined(MASKC_SEG_CHECK)", "maskc_tile_flags")
	flags = strings.TrimSuffix(flags, "#if defined(MASKC_SEG_CHECK)")
	r := strings.NewReplacer("ABI_HEADER", ABIHeader(), "FRAME", Frame, "FLAG_ROW", flagRow, "TILE_FLAGS", flags,
		"HOST_CUDA_PRELUDE", hostcuda.Prelude, "HOST_GRID_RUNNER", hostcuda.GridRunner)
	for _, platform := range []string{"-DMASKC_PLATFORM_HOST", "-DMASKC_PLATFORM_AMD"} {
		runHostProgram(t, cxx, "flags_host", r.Replace(flagsHostMain), platform, "-std=c++17", "-O1", "-pthread",
			"-Wno-unused-function", "-Wno-unused-variable", "-Wno-unused-but-set-variable")
	}
}
