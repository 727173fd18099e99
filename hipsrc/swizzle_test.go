package hipsrc

import (
	"strings"
	"testing"

	"github.com/maskc/maskc/internal/hostcuda"
)

// swizzleMain checks maskc_smem_index (prelude.h) on the host for every row
// width a tile uses (head dims, the backward's P^T and dS^T tiles of 32 and
// 64): each element of a [64][D] tile lands in its own row, and no two
// elements share a slot. It prints "ok" or the first failure.
const swizzleMain = `
#include <stdio.h>
#include <vector>
#define __device__
#define __forceinline__ inline
SMEM_INDEX
template <int D>
static int check() {
  const int rows = 64;
  std::vector<int> seen(rows * D, 0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < D; ++c) {
      const int i = maskc_smem_index<D>(r, c);
      if (i < r * D || i >= (r + 1) * D) { printf("D=%d (%d,%d) -> %d leaves its row\n", D, r, c, i); return 1; }
      if (seen[i]++) { printf("D=%d (%d,%d) -> %d twice\n", D, r, c, i); return 1; }
    }
  return 0;
}
int main() {
  if (check<16>() || check<32>() || check<64>() || check<128>() || check<256>()) return 1;
  printf("ok\n");
  return 0;
}
`

// TestSmemIndexHost pins the swizzled shared-memory layout: a bijection
// within each row at every width. The backward's 32 x 32 tiles (head dim
// 256, and AMD's 32-row tiles at 128) store P^T and dS^T with rows of 32
// elements, which the old row % 8 swizzle pushed into the next row.
func TestSmemIndexHost(t *testing.T) {
	cxx := hostcuda.Cxx(t)
	index := cutSource(t, Prelude, "#define MASKC_SWZ_MASK", "\n}\n", "prelude.h's maskc_smem_index and MASKC_SWZ_MASK")
	runHostProgram(t, cxx, "swizzle", strings.Replace(swizzleMain, "SMEM_INDEX", index, 1), "-std=c++14")
}
