package hipsrc

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/internal/hostcuda"
)

// dqLayoutMain checks, on the host, attn_bwd.h's dq_acc layout under
// MASKC_BWD_DQ_BULK (dQ added by bulk reductions of the wgmma kernel's
// shared-memory rows): maskc_bwd_dq_chunk (where a lane stores) and
// maskc_bwd_dq_chunk_col (what maskc_attn_bwd_dq_convert reads back) are
// inverse, every chunk of a row is written once, and a quarter-warp's eight
// 16-byte stores hit eight distinct bank groups. It prints "ok" or the first
// failure.
const dqLayoutMain = `
#include <stdio.h>
#include <vector>
#define __device__
#define __forceinline__ inline
#define MASKC_BWD_DQ_BULK 1
DQ_LAYOUT
template <int D>
static int check() {
  for (int q = 0; q < 64; ++q) {
    std::vector<int> seen(D / 4, 0);
    for (int nb = 0; nb < D / 64; ++nb)
      for (int jp = 0; jp < 4; ++jp)
        for (int t = 0; t < 4; ++t) {
          const int ch = maskc_bwd_dq_chunk(q, nb, jp, t);
          int d = 0;
          const int c = maskc_bwd_dq_chunk_col(q, ch, &d);
          if (ch < 0 || ch >= D / 4 || seen[ch]++) { printf("D=%d row %d: chunk %d twice or outside\n", D, q, ch); return 1; }
          if (c != nb * 64 + 16 * jp + 2 * t || d != 8) {
            printf("D=%d row %d (nb %d, jp %d, t %d): chunk %d reads back as column %d (+%d)\n", D, q, nb, jp, t, ch, c, d);
            return 1;
          }
        }
  }
  for (int nb = 0; nb < D / 64; ++nb)
    for (int jp = 0; jp < 4; ++jp)
      for (int g = 0; g < 8; g += 2) {  // a quarter-warp: lanes 4g .. 4g + 7
        int groups = 0;
        for (int l = 0; l < 8; ++l) groups |= 1 << (maskc_bwd_dq_chunk(g + l / 4, nb, jp, l % 4) % 8);
        if (groups != 0xff) { printf("D=%d rows %d, %d: bank groups %x\n", D, g, g + 1, groups); return 1; }
      }
  return 0;
}
int main() {
  if (check<64>() || check<128>()) return 1;
  printf("ok\n");
  return 0;
}
`

// TestDQLayoutHost pins the permuted dq_acc rows of the bulk-reduced dQ
// (MASKC_BWD_DQ_BULK): a wrong inverse would scramble dQ's columns with no
// other symptom than wrong gradients on the GPU.
func TestDQLayoutHost(t *testing.T) {
	cxx := hostcuda.Cxx(t)
	layout := cutSource(t, AttnBwd, "__device__ __forceinline__ int maskc_bwd_dq_chunk(", "#endif\n}\n",
		"attn_bwd.h's maskc_bwd_dq_chunk and maskc_bwd_dq_chunk_col")
	runHostProgram(t, cxx, "dqlayout", strings.Replace(dqLayoutMain, "DQ_LAYOUT", layout, 1), "-std=c++14")
}
