package hipsrc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostCxx returns the host's g++ for the tests that run device-side helpers
// of the kernel sources as plain C++; it is required in CI and skips the
// test elsewhere when missing.
func hostCxx(t *testing.T) string {
	t.Helper()
	cxx, err := exec.LookPath("g++")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("g++ is required in CI to test the kernel sources' helpers on the host")
		}
		t.Skip("g++ not found")
	}
	return cxx
}

// cutSource returns text from the first occurrence of from up to and
// including the next occurrence of to, failing t with what when either is
// missing.
func cutSource(t *testing.T, text, from, to, what string) string {
	t.Helper()
	start := strings.Index(text, from)
	if start < 0 {
		t.Fatalf("%s not found", what)
	}
	end := strings.Index(text[start:], to)
	if end < 0 {
		t.Fatalf("the end of %s not found", what)
	}
	return text[start : start+end+len(to)]
}

// runHostProgram compiles program with cxx and flags (plus -Wall) in a
// temporary directory and runs it; the check passes when it prints "ok".
// A compile error fails t at once, a failed check is reported with
// t.Errorf so that a table of programs goes on.
func runHostProgram(t *testing.T, cxx, name, program string, flags ...string) {
	t.Helper()
	dir := t.TempDir()
	src, exe := filepath.Join(dir, name+".cc"), filepath.Join(dir, name)
	if err := os.WriteFile(src, []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{}, flags...), "-Wall", "-o", exe, src)
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: g++: %v\n%s", name, err, out)
	}
	out, err := exec.Command(exe).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("%s: %v\n%s", name, err, out)
	}
}

// hostGridRunner (HOST_GRID_RUNNER in their programs) is the C++ grid runner of the tests that run a kernel on the
// host: launch(grid, fn) runs fn in every block of grid in turn (blockIdx,
// gridDim set), HOST_THREADS threads a block as pthreads (threadIdx set),
// with block_bar a barrier of HOST_THREADS and HOST_LAUNCH_INIT() run
// first (the program's other barriers).
const hostGridRunner = `
template <typename F>
static void launch(MaskcDim grid, F fn) {
  gridDim = grid;
  pthread_barrier_init(&block_bar, nullptr, HOST_THREADS);
  HOST_LAUNCH_INIT()
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = {x, y, z};
        std::vector<pthread_t> ts(HOST_THREADS);
        struct Arg { F* fn; unsigned t; };
        std::vector<Arg> args(HOST_THREADS);
        for (int t = 0; t < HOST_THREADS; ++t) {
          args[t] = {&fn, (unsigned)t};
          pthread_create(&ts[t], nullptr, [](void* p) -> void* {
            Arg* a = (Arg*)p;
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

// hostCUDAPrelude (HOST_CUDA_PRELUDE) opens the programs of the tests that
// run a kernel on the host: the headers they use, CUDA's function and
// variable qualifiers as plain C++ (__shared__ a static, so that a block's
// threads share it), and blockIdx, gridDim and the per-thread threadIdx.
const hostCUDAPrelude = `#include <pthread.h>
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
static MaskcDim blockIdx, gridDim;
static thread_local MaskcDim threadIdx;
`
