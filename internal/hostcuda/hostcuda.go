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
// after another), blockIdx, threadIdx (each thread's own) and gridDim, and
// a block's meeting point: block_bar, a barrier of host_block_threads
// threads (the runner initializes both, as GridRunner does), with
// __syncthreads and the block-wide votes (__syncthreads_or, and
// prelude.h's maskc_block_any and maskc_block_all, which the programs do
// not include): each thread's vote is written, then read by all, between
// two waits.
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
static pthread_barrier_t block_bar;
static int host_block_threads;
static bool host_votes[1024];
static void __syncthreads() { pthread_barrier_wait(&block_bar); }
static bool host_block_vote(bool p, bool all) {
  host_votes[threadIdx.x] = p;
  pthread_barrier_wait(&block_bar);
  bool r = all;
  for (int i = 0; i < host_block_threads; ++i) r = all ? r && host_votes[i] : r || host_votes[i];
  pthread_barrier_wait(&block_bar);
  return r;
}
static bool maskc_block_any(bool p) { return host_block_vote(p, false); }
static bool maskc_block_all(bool p) { return host_block_vote(p, true); }
static int __syncthreads_or(int p) { return host_block_vote(p != 0, false); }
`

// GridRunner is the grid runner of host programs opened by Prelude:
// launch(grid, fn) runs fn in every block of grid in turn (gridDim set, and
// each thread's blockIdx and threadIdx), HOST_THREADS threads a block as
// pthreads, with block_bar a barrier of HOST_THREADS and HOST_LAUNCH_INIT()
// run first (the program's other barriers).
const GridRunner = `
template <typename F>
static void launch(MaskcDim grid, F fn) {
  gridDim = grid;
  pthread_barrier_init(&block_bar, nullptr, HOST_THREADS);
  host_block_threads = HOST_THREADS;
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
