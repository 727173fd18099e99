package tilemap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/internal/hostcuda"
)

// The test in this file builds the kernel's own pre-pass, maskc_tile_flags
// as hipsrc/attn_fwd.h writes it, with the generated maskc_mask, as host
// C++ (g++): one std::thread per GPU thread, block-wide votes through
// hostcuda's block barrier, every block of the grid in turn. The flags it writes must
// be the tile map's: for a pre-pass kernel its states, for every kernel its
// tiles with kept pairs (flag != 0) and tiles that keep every pair (flag 2).

// hostShim makes the pre-pass's device code host C++ after hostcuda.Prelude
// (whose block barrier and votes the threads of hostPrepassRun meet at).
const hostShim = `#include <algorithm>
#include <math.h>
#include <thread>
using std::max;
using std::min;
#define __builtin_assume(x) ((void)0)
// Warp-collective segment searches, one lane after another.
#define MASKC_WARP_SIZE 5
template <typename F>
int maskc_warp_count(F probe) {
  int n = 0;
  for (int lane = 0; lane < MASKC_WARP_SIZE; ++lane) n += probe(lane) ? 1 : 0;
  return n;
}
// What maskc_seg_check's body (compiled here, not run) needs.
static MaskcDim blockDim;
static unsigned atomicOr(unsigned* p, unsigned v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
`

// hostPrepassRun is one grid run, compiled once per (kernel, platform) in
// its own namespace: it runs every block and returns the flags.
const hostPrepassRun = `
std::vector<unsigned char> run(MaskcShape shape, MaskcBuffers buf, int* dims) {
  const int n_qt = (shape.Sq + MASKC_BLOCK_M - 1) / MASKC_BLOCK_M;
  const int n_kt = (shape.Skv + MASKC_BLOCK_N - 1) / MASKC_BLOCK_N;
  const int nb = MASKC_MASK_USES_B ? shape.B : 1, nh = MASKC_MASK_USES_H ? shape.H : 1;
  dims[0] = nb, dims[1] = nh, dims[2] = n_qt, dims[3] = n_kt;
  std::vector<unsigned char> flags((size_t)nb * nh * n_qt * n_kt, 7);
  pthread_barrier_init(&block_bar, nullptr, MASKC_NUM_THREADS);
  host_block_threads = MASKC_NUM_THREADS;
  std::vector<std::thread> threads;
  for (int t = 0; t < MASKC_NUM_THREADS; ++t)
    threads.emplace_back([&, t] {
      threadIdx = MaskcDim{(unsigned)t, 0, 0};
      for (int qt = 0; qt < n_qt; ++qt)
        for (int kt = 0; kt < n_kt; ++kt) {
          blockIdx = MaskcDim{(unsigned)kt, (unsigned)qt, 0};
          maskc_tile_flags(shape, buf, flags.data());
        }
    });
  for (auto& th : threads) th.join();
  pthread_barrier_destroy(&block_bar);
  return flags;
}
`

// hostPrepassMain reads per run: its index, B H HKV Sq Skv, the buffers
// (per buffer: slot, two extents, the int elements); it prints the flag
// dimensions and the flags.
const hostPrepassMain = `
typedef std::vector<unsigned char> (*run_fn)(MaskcShape, MaskcBuffers, int*);
static const run_fn runs[] = { RUNS };

int main() {
  int nruns;
  if (scanf("%d", &nruns) != 1) return 2;
  for (int r = 0; r < nruns; ++r) {
    MaskcShape shape;
    memset(&shape, 0, sizeof shape);
    int idx, nbuf;
    if (scanf("%d %d %d %d %d %d %d", &idx, &shape.B, &shape.H, &shape.HKV, &shape.Sq, &shape.Skv, &nbuf) != 7) return 3;
    MaskcBuffers buf;
    memset(&buf, 0, sizeof buf);
    std::vector<std::vector<int> > store(nbuf);
    for (int i = 0; i < nbuf; ++i) {
      int slot;
      long long d0, d1;
      if (scanf("%d %lld %lld", &slot, &d0, &d1) != 3) return 4;
      store[i].resize(d0 * d1);
      for (long long j = 0; j < d0 * d1; ++j)
        if (scanf("%d", &store[i][j]) != 1) return 5;
      buf.ptr[slot] = store[i].data();
      buf.dim[slot][0] = d0;
      buf.dim[slot][1] = d1;
    }
    int dims[4];
    std::vector<unsigned char> flags = runs[idx](shape, buf, dims);
    printf("%d %d %d %d ", dims[0], dims[1], dims[2], dims[3]);
    for (size_t i = 0; i < flags.size(); ++i) putchar('0' + flags[i]);
    putchar('\n');
  }
  return 0;
}
`

// attnFwdPiece returns the declaration of hipsrc.AttnFwd that starts with
// the line beginning with start, through the first line that closes it at
// column 0.
func attnFwdPiece(t *testing.T, start string) string {
	t.Helper()
	lines := strings.Split(hipsrc.AttnFwd, "\n")
	for i, ln := range lines {
		if !strings.HasPrefix(ln, start) {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == "}" || lines[j] == "};" {
				return strings.Join(lines[i:j+1], "\n") + "\n"
			}
		}
	}
	t.Fatalf("hipsrc.AttnFwd has no declaration starting %q", start)
	return ""
}

// attnFwdLine returns the line of hipsrc.AttnFwd that starts with start.
func attnFwdLine(t *testing.T, start string) string {
	t.Helper()
	for _, ln := range strings.Split(hipsrc.AttnFwd, "\n") {
		if strings.HasPrefix(ln, start) {
			return ln + "\n"
		}
	}
	t.Fatalf("hipsrc.AttnFwd has no line starting %q", start)
	return ""
}

// prepassRun is one kernel's pre-pass on one platform.
type prepassRun struct {
	k *codegen.Kernel
	p hipsrc.Platform
}

// buildPrepass compiles the pre-pass of every run into one host program.
func buildPrepass(t *testing.T, runs []prepassRun) string {
	t.Helper()
	cxx := hostcuda.Cxx(t)
	var b strings.Builder
	fmt.Fprintf(&b, "#define MASKC_BLOCK_M %d\n", hipsrc.BlockM)
	b.WriteString(hostcuda.Prelude + hostShim)
	b.WriteString(hipsrc.ABIHeader())
	b.WriteString(hipsrc.Runtime)
	pieces := attnFwdPiece(t, "__device__ __forceinline__ int maskc_nonneg(") +
		attnFwdPiece(t, "__device__ __forceinline__ long long maskc_flag_row(") +
		attnFwdLine(t, "#define MASKC_FLAGS_ROWS_SMEM ") +
		strings.Replace(attnFwdPiece(t, `extern "C" __global__ void __launch_bounds__(MASKC_NUM_THREADS)`), `extern "C" `, "", 1)
	var names []string
	for i, r := range runs {
		fmt.Fprintf(&b, "\n// run %d: %s on %s\n", i, r.k.Name, r.p)
		for name, v := range map[string]int{"MASKC_BLOCK_N": r.p.BlockN(), "MASKC_NUM_THREADS": r.p.NumThreads(),
			"MASKC_MASK_USES_B": b2i(r.k.MaskUsesB), "MASKC_MASK_USES_H": b2i(r.k.MaskUsesH)} {
			fmt.Fprintf(&b, "#undef %s\n#define %s %d\n", name, name, v)
		}
		b.WriteString("#undef MASKC_HAS_MASK\n")
		if r.k.HasMask {
			b.WriteString("#define MASKC_HAS_MASK 1\n")
		}
		// The generated facts the pre-pass and frame.h test (the #define lines
		// are not copied: the runs share one file).
		var facts []string
		for _, f := range []string{"MASKC_PREPASS_TERMS"} {
			if strings.Contains(r.k.Generated, "#define "+f+" 1\n") {
				facts = append(facts, f)
				fmt.Fprintf(&b, "#define %s 1\n", f)
			}
		}
		fmt.Fprintf(&b, "namespace run%d {\n", i)
		for _, ln := range strings.Split(r.k.Generated, "\n") {
			if !strings.HasPrefix(ln, "#define ") {
				b.WriteString(ln + "\n")
			}
		}
		b.WriteString(hipsrc.Frame + pieces + hostPrepassRun + "}\n")
		for _, f := range facts {
			fmt.Fprintf(&b, "#undef %s\n", f)
		}
		names = append(names, fmt.Sprintf("run%d::run", i))
	}
	b.WriteString(strings.Replace(hostPrepassMain, "RUNS", strings.Join(names, ", "), 1))
	dir := t.TempDir()
	src, exe := filepath.Join(dir, "prepass.cc"), filepath.Join(dir, "prepass")
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cxx, "-O0", "-std=c++20", "-pthread", "-w", "-o", exe, src).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ failed: %v\n%s", err, out)
	}
	return exe
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPrepassOnHost compares the tile maps with the flags of the kernel's
// pre-pass run on the host.
func TestPrepassOnHost(t *testing.T) {
	var runs []prepassRun
	var cases []mapCase
	terms := 0
	for _, c := range mapCases {
		k := kernelOf(t, c.file, c.attention)
		// Both key tiles for the pre-pass kernel; one for the others, whose
		// kept pairs per tile are what is compared (the threads' barriers
		// are slow on a small machine).
		platforms := []hipsrc.Platform{hipsrc.NVIDIAWGMMA}
		if k.Sparsity == codegen.SparsityPrepass {
			platforms = append(platforms, hipsrc.NVIDIA)
		}
		for _, p := range platforms {
			runs = append(runs, prepassRun{k, p})
			cases = append(cases, c)
		}
		// The pre-pass's tests per term (codegen's prepassTermTests: a
		// tile decided from its terms' row conditions and kv ranges before
		// its pairs): the same flags.
		if strings.Contains(k.Generated, "#define MASKC_PREPASS_TERMS 1\n") {
			terms++
		}
	}
	if terms < 1 {
		t.Errorf("%d pre-pass cases take the tests per term: Gemma 4's should", terms)
	}
	exe := buildPrepass(t, runs)
	var in strings.Builder
	fmt.Fprintf(&in, "%d\n", len(runs))
	for i, r := range runs {
		e := cases[i].env
		fmt.Fprintf(&in, "%d %d %d %d %d %d %d\n", i, e.B, e.H, e.HKV, e.Q, e.KV, len(r.k.Buffers))
		for _, bb := range r.k.Buffers {
			tn := e.Buffers[bb.Name]
			if len(tn.Dims) != 1 || bb.DType != "i32" {
				t.Fatalf("%s: the host pre-pass takes 1-D i32 buffers only", cases[i].file)
			}
			fmt.Fprintf(&in, "%d %d 1", bb.Slot, tn.Dims[0])
			for _, v := range tn.Data {
				fmt.Fprintf(&in, " %d", int64(v))
			}
			in.WriteString("\n")
		}
	}
	cmd := exec.Command(exe)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("host pre-pass: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(runs) {
		t.Fatalf("host pre-pass printed %d lines for %d runs", len(lines), len(runs))
	}
	prepassKernels := 0
	for i, r := range runs {
		c, k, p := cases[i], r.k, r.p
		var nb, nh, nqt, nkt int
		var flags string
		if _, err := fmt.Sscan(lines[i], &nb, &nh, &nqt, &nkt, &flags); err != nil {
			t.Fatalf("%s: host pre-pass output %q: %v", c.file, lines[i], err)
		}
		where := fmt.Sprintf("%s on %s", c.file, p)
		for b := 0; b < nb; b++ {
			for h := 0; h < nh; h++ {
				m, err := Build(k, c.env, Options{Platform: p, B: int64(b), H: int64(h)})
				if err != nil {
					t.Fatal(err)
				}
				if m.QTiles != nqt || m.KVTiles != nkt {
					t.Fatalf("%s: %dx%d tiles, the pre-pass has %dx%d", where, m.QTiles, m.KVTiles, nqt, nkt)
				}
				row := flags[(b*nh+h)*nqt*nkt:][:nqt*nkt]
				for i := range m.States {
					qt, kt := i/nkt, i%nkt
					flag := int(row[i] - '0')
					rows := min(m.BlockM, m.Sq-int64(qt)*m.BlockM)
					allKept := m.Kept[i] == rows*m.BlockN
					if (flag != hipsrc.TileEmpty) != (m.Kept[i] > 0) || (flag == hipsrc.TileFull) != allKept {
						t.Errorf("%s: tile (%d, %d) keeps %d pairs, the pre-pass flags it %d", where, qt, kt, m.Kept[i], flag)
					}
					if k.Sparsity != codegen.SparsityPrepass {
						continue
					}
					want := map[int]State{hipsrc.TileEmpty: Skipped, hipsrc.TilePartial: Partial, hipsrc.TileFull: Full}[flag]
					if flag == hipsrc.TileFull && int64(kt+1)*m.BlockN > m.Skv {
						want = Partial
					}
					if m.States[i] != want {
						t.Errorf("%s: tile (%d, %d) is %s, the pre-pass flags it %d", where, qt, kt, m.States[i], flag)
					}
				}
			}
		}
		if k.Sparsity == codegen.SparsityPrepass {
			prepassKernels++
		}
	}
	if prepassKernels == 0 {
		t.Error("no pre-pass kernel was compared")
	}
}
