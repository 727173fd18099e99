// Package hostcuda is the C++ text by which maskc's tests run kernel code
// on the host as plain C++ (g++): CUDA's qualifiers and built-in indices
// (Prelude) and a grid runner with a block's threads as pthreads
// (GridRunner), and the compiler they need (Cxx). One definition, so that
// a kernel that starts to use another CUDA name (a __shared__ array, a
// __syncthreads) fails or passes every host test alike.
//
// Only tests import this package.
package hostcuda

import (
	"os"
	"os/exec"
	"testing"
)

// Prelude opens a host program that runs kernel code: the headers the
// tests use, CUDA's function and variable qualifiers as plain C++
// (__shared__ a static: a block's threads share it, and blocks run one
// after another), and blockIdx, threadIdx (each thread's own) and gridDim.
// __syncthreads and the block's votes are the program's: they depend on
// how it runs a block's threads.
const Prelude = `#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
struct MaskcDim { unsigned x, y, z; };
static thread_local MaskcDim blockIdx, threadIdx;
static MaskcDim gridDim;
`

// GridRunner is the grid runner of host programs opened by Prelude:
// launch(grid, fn) runs fn in every block of grid in turn (gridDim set, and
// each thread's blockIdx and threadIdx), HOST_THREADS threads a block as
// pthreads, with block_bar (the program's pthread_barrier_t) a barrier of
// HOST_THREADS and HOST_LAUNCH_INIT() run first (the program's other
// barriers).
const GridRunner = `
template <typename F>
static void launch(MaskcDim grid, F fn) {
  gridDim = grid;
  pthread_barrier_init(&block_bar, nullptr, HOST_THREADS);
  HOST_LAUNCH_INIT()
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        std::vector<pthread_t> ts(HOST_THREADS);
        struct Arg { F* fn; MaskcDim block; unsigned t; };
        std::vector<Arg> args(HOST_THREADS);
        for (int t = 0; t < HOST_THREADS; ++t) {
          args[t] = {&fn, {x, y, z}, (unsigned)t};
          pthread_create(&ts[t], nullptr, [](void* p) -> void* {
            Arg* a = (Arg*)p;
            blockIdx = a->block;
            threadIdx = {a->t, 0, 0};
            (*a->fn)();
            return nullptr;
          }, &args[t]);
        }
        for (auto& t : ts) pthread_join(t, nullptr);
      }
  pthread_barrier_destroy(&block_bar);
}
`

// Cxx returns the host's g++ for the tests that run kernel code on the
// host: required in CI (CI set), where its absence fails t; elsewhere t
// is skipped.
func Cxx(t testing.TB) string {
	t.Helper()
	cxx, err := exec.LookPath("g++")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("g++ is required in CI to run kernel code on the host")
		}
		t.Skip("g++ not found: the host test of kernel code needs a C++ compiler")
	}
	return cxx
}
