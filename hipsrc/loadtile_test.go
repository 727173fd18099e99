package hipsrc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/maskc/maskc/internal/hostcuda"
)

// loadTileMain runs attn_fwd.h's maskc_load_tile and maskc_load_tile_lean
// (MASKC_LOOP_LEAN) on the host for every thread of a block, recording each
// 16-byte copy, and checks that they make the same copies: the same shared
// elements, each from the same source element when valid, zero-filled
// (invalid) for the same elements, every invalid source a row-0 address of
// the tile's matrix. It prints "ok" or the first difference.
const loadTileMain = `
#include <stdio.h>
#include <map>
#include <utility>
#define __device__
#define __forceinline__ inline
typedef unsigned short maskc_elem_t;
struct Copy { long long src; bool valid; };
static std::map<long long, Copy>* rec;
static const maskc_elem_t* base_dst;
static const maskc_elem_t* base_src;
static bool dup;
inline void maskc_copy16(void* dst, const void* src, bool valid) {
  const long long d = (const maskc_elem_t*)dst - base_dst;
  if (rec->count(d)) dup = true;
  (*rec)[d] = Copy{(long long)((const maskc_elem_t*)src - base_src), valid};
}
SMEM_INDEX
TILE_INDEX
LOAD_TILE
static maskc_elem_t dst_mem[1 << 16], src_mem[1 << 22];
int main() {
  const long long stride = STRIDE;
  const int rows_cases[][2] = {{0, 1 << 20}, {TROWS, 1 << 20}, {TROWS, TROWS + 5}, {3 * TROWS, 3 * TROWS}, {2 * TROWS, 3 * TROWS - 1}};
  base_dst = dst_mem;
  base_src = src_mem;
  for (const auto& rc : rows_cases) {
    std::map<long long, Copy> a, b;
    dup = false;
    rec = &a;
    for (int tid = 0; tid < MASKC_NUM_THREADS; ++tid) maskc_load_tile<TROWS>(dst_mem, src_mem, stride, rc[0], rc[1], tid);
    if (dup) { printf("maskc_load_tile copies an element twice\n"); return 1; }
    rec = &b;
    for (int tid = 0; tid < MASKC_NUM_THREADS; ++tid) maskc_load_tile_lean<TROWS>(dst_mem, src_mem, stride, rc[0], rc[1], tid);
    if (dup) { printf("maskc_load_tile_lean copies an element twice\n"); return 1; }
    if (a.size() != b.size() || (int)a.size() != TROWS * MASKC_HEAD_DIM / 8) {
      printf("row0 %d nrows %d: %zu copies, lean %zu, want %d\n", rc[0], rc[1], a.size(), b.size(), TROWS * MASKC_HEAD_DIM / 8);
      return 1;
    }
    for (const auto& kv : a) {
      auto it = b.find(kv.first);
      if (it == b.end()) { printf("row0 %d: lean never writes shared element %lld\n", rc[0], kv.first); return 1; }
      const Copy &x = kv.second, &y = it->second;
      const bool src_ok = x.valid ? y.src == x.src : y.src >= 0 && y.src < MASKC_HEAD_DIM;
      if (x.valid != y.valid || !src_ok) {
        printf("row0 %d nrows %d, shared %lld: copy (%lld, %d), lean (%lld, %d)\n", rc[0], rc[1], kv.first, x.src, x.valid, y.src, y.valid);
        return 1;
      }
    }
  }
  printf("ok\n");
  return 0;
}
`

// TestLoadTileLeanHost pins maskc_load_tile_lean (MASKC_LOOP_LEAN, the key
// loop's K/V copies) to maskc_load_tile on the host, for the block shapes
// that use it: sm_90a's 256 threads and 64-key tiles in the wgmma layout,
// the mma.sync kernels' 128 and 256 threads and 32-key tiles in the
// row-swizzled layout, at head dims 64, 128 and 256, with full, ragged and
// empty tiles (rows at or past nrows zero-filled).
func TestLoadTileLeanHost(t *testing.T) {
	cxx := hostcuda.Cxx(t)
	smem := cutSource(t, Prelude, "#define MASKC_SWZ_MASK", "\n}\n", "prelude.h's maskc_smem_index")
	tile := cutSource(t, Prelude, "template <int ROWS, int D>\n__device__ __forceinline__ int maskc_tile_index", "\n}\n",
		"prelude.h's maskc_tile_index")
	load := cutSource(t, AttnFwd, "template <int ROWS>\n__device__ __forceinline__ void maskc_load_tile(",
		"\n#endif  // MASKC_LOOP_LEAN\n", "attn_fwd.h's maskc_load_tile and maskc_load_tile_lean")
	// The volatile PTX move is the identity on the host.
	asm := `asm volatile("mov.b32 %0, %1;" : "=r"(y) : "r"(x));`
	if !strings.Contains(load, asm) {
		t.Fatalf("attn_fwd.h: maskc_opaque_int's move %s not found", asm)
	}
	load = strings.Replace(load, asm, "y = x;", 1)
	for _, tc := range []struct{ d, threads, rows, wgmma int }{
		{128, 256, 64, 1}, {64, 256, 64, 1}, {256, 256, 64, 1},
		{128, 128, 32, 0}, {64, 128, 32, 0}, {256, 256, 32, 0}, {128, 256, 32, 0}, {256, 128, 32, 0},
	} {
		name := fmt.Sprintf("d%d_t%d_r%d_wg%d", tc.d, tc.threads, tc.rows, tc.wgmma)
		defs := fmt.Sprintf("#define MASKC_HEAD_DIM %d\n#define MASKC_NUM_THREADS %d\n#define TROWS %d\n#define STRIDE %d\n"+
			"#define MASKC_PLATFORM_NVIDIA 1\n#define MASKC_NV_WGMMA %d\n#define MASKC_LOOP_LEAN 1\n",
			tc.d, tc.threads, tc.rows, 3*tc.d+8, tc.wgmma)
		src := defs + strings.NewReplacer("SMEM_INDEX", smem, "TILE_INDEX", tile, "LOAD_TILE", load).Replace(loadTileMain)
		runHostProgram(t, cxx, name, src, "-std=c++17", "-O1")
	}
}
