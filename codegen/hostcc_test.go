package codegen

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/internal/hostcuda"
)

// The tests in this file compile the generated device functions as host C++
// (g++, with __device__ and __forceinline__ defined away) and run them on
// random tiles, comparing against the float64 reference evaluator:
//
//   - maskc_mask equals eval's Mask wherever eval defines a value (eval
//     refuses a division by zero or an out-of-range buffer read, where the
//     kernel's documented answer is the guarded one);
//   - no visible (q, kv) with q in [q_lo, q_hi) lies outside maskc_kv_range;
//   - maskc_tile_full is true only for tiles whose every pair is visible;
//   - no visible (q, kv) with kv in [kv_lo, kv_hi) and q in [q_lo, q_hi)
//     lies outside maskc_q_range;
//   - maskc_score equals eval's Score to fp32 accuracy.

// hostCase is one mask or score compiled into the host program.
type hostCase struct {
	name string
	// exact is set for masks whose analysis is exact: maskc_kv_range must
	// be the hull of the visible kv and maskc_tile_full must be true for
	// every tile without a masked pair.
	exact  bool
	prog   *check.Program
	attn   *check.Attention
	kernel *Kernel
}

// frameFacts are the generated facts that hipsrc/frame.h tests, defined
// around each case's copy of it in the host builds.
var frameFacts = []string{"MASKC_KV_SELECTION", "MASKC_KV_TILE_FILTER", "MASKC_TILE_FULL_ROWS"}

// hostPrelude makes the generated device code plain host C++.
const hostPrelude = `#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>
#define __device__
#define __forceinline__ inline
// A warp of 5 lanes, run one lane after another (warp-collective searches).
#define MASKC_WARP_SIZE 5
template <typename F>
int maskc_warp_count(F probe) {
  int n = 0;
  for (int lane = 0; lane < MASKC_WARP_SIZE; ++lane) n += probe(lane) ? 1 : 0;
  return n;
}
// maskc_g_seg_check's block as one thread.
static const struct { unsigned x; } threadIdx = {0}, blockDim = {1};
static inline int __syncthreads_or(int v) { return v != 0; }
// One thread: atomicOr (the segments check, the flagged buffer accessors) is a plain or.
static inline unsigned atomicOr(unsigned* p, unsigned v) { const unsigned o = *p; *p = o | v; return o; }
`

// readBuffers is the C++ the host mains read a case's buffers with: per
// buffer its slot, dtype code (i32 i64 f16 bf16 f32 f64 bool u8 i8 i16), its
// rank, its extents and the elements (writeBuffer); store keeps them alive.
// The extents past the rank are 1, as a launcher fills MaskcBuffers.dim.
// It returns 0, or the exit code of a malformed input.
const readBuffers = `
static int read_buffers(int nbuf, MaskcBuffers* buf, std::vector<std::vector<unsigned char> >* store) {
  memset(buf, 0, sizeof *buf);
  store->assign(nbuf, std::vector<unsigned char>());
  for (int i = 0; i < nbuf; ++i) {
    int slot, dt, rank;
    if (scanf("%d %d %d", &slot, &dt, &rank) != 3 || rank < 0 || rank > MASKC_MAX_BUFFER_RANK) return 4;
    long long n = 1;
    for (int d = 0; d < MASKC_MAX_BUFFER_RANK; ++d) {
      long long e = 1;
      if (d < rank && scanf("%lld", &e) != 1) return 4;
      buf->dim[slot][d] = e;
      n *= e;
    }
    const int size[] = {4, 8, 2, 2, 4, 8, 1, 1, 1, 2};
    (*store)[i].resize((size_t)(n * size[dt]) + 8);
    unsigned char* p = (*store)[i].data();
    for (long long j = 0; j < n; ++j) {
      double v;
      if (scanf("%lf", &v) != 1) return 5;
      switch (dt) {
        case 0: ((int*)p)[j] = (int)v; break;
        case 1: ((long long*)p)[j] = (long long)v; break;
        case 2: case 3: ((unsigned short*)p)[j] = (unsigned short)v; break;
        case 4: ((float*)p)[j] = (float)v; break;
        case 5: ((double*)p)[j] = v; break;
        case 6: p[j] = v != 0; break;
        case 7: p[j] = (unsigned char)v; break;
        case 8: ((signed char*)p)[j] = (signed char)v; break;
        case 9: ((short*)p)[j] = (short)v; break;
      }
    }
    buf->ptr[slot] = p;
  }
  return 0;
}
`

// readTileCase is the C++ the tile mains (hostMain, rowIntervalsMain) read
// a case with: the namespace index, B H HKV Q KV b h q_lo q_hi kv_lo kv_hi
// score, the number of buffers, then the buffers (readBuffers). It returns
// 0, or the exit code of a malformed input.
const readTileCase = readBuffers + `
struct TileCase {
  int idx;
  long long B, H, HKV, Q, KV, b, h, qlo, qhi, klo, khi;
  double score;
  MaskcBuffers buf;
  unsigned status[MASKC_STATUS_WORDS];
  std::vector<std::vector<unsigned char> > store;
};
// read_tile_case reads a case and, as a launcher does, gives it zeroed
// status words and runs the case's segments check (maskc_g_seg_check,
// SEG_CHECKS) over its buffers.
static int read_tile_case(TileCase* t) {
  int nbuf;
  if (scanf("%d %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lf %d", &t->idx, &t->B, &t->H, &t->HKV, &t->Q, &t->KV, &t->b, &t->h, &t->qlo, &t->qhi, &t->klo, &t->khi, &t->score, &nbuf) != 14) return 3;
  if (int rc = read_buffers(nbuf, &t->buf, &t->store)) return rc;
  memset(t->status, 0, sizeof t->status);
  t->buf.status = t->status;
  seg_checks[t->idx](t->buf);
  return 0;
}
// for_each_tile_case reads the number of cases, then each case, and runs
// run(t) on it; it returns 0, or the exit code of a malformed input.
template <typename F>
static int for_each_tile_case(F run) {
  int ncases;
  if (scanf("%d", &ncases) != 1) return 2;
  for (int c = 0; c < ncases; ++c) {
    TileCase t;
    if (int rc = read_tile_case(&t)) return rc;
    run(t);
  }
  return 0;
}
typedef bool (*mask_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long);
`

// hostMain reads cases from stdin. Per case: the namespace index, B H HKV Q
// KV b h q_lo q_hi kv_lo kv_hi score, the number of buffers, and per buffer
// its slot, dtype code, two extents and the elements. It prints
// "lo hi full qlo qhi" (qlo, qhi: maskc_q_range of [kv_lo, kv_hi)), then one line of 0/1 per q in [q_lo, q_hi) over kv in
// [0, KV), then one line of scores over the tile.
const hostMain = readTileCase + `
typedef float (*score_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, float, long long, long long, long long, long long);
typedef void (*range_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long*, long long*);
typedef bool (*full_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long);
struct Fns { mask_fn mask; score_fn score; range_fn range; full_fn full; range_fn qrange; range_fn intervals; int nint; range_fn qintervals; int nqint; };
static const Fns fns[] = { FNS };

int main() {
  return for_each_tile_case([](TileCase& t) {
    const int idx = t.idx;
    const long long B = t.B, H = t.H, HKV = t.HKV, Q = t.Q, KV = t.KV, b = t.b, h = t.h;
    const long long qlo = t.qlo, qhi = t.qhi, klo = t.klo, khi = t.khi;
    const double score = t.score;
    const MaskcBuffers& buf = t.buf;
    const Fns& f = fns[idx];
    long long lo = -1, hi = -1;
    f.range(buf, B, H, HKV, Q, KV, b, h, qlo, qhi, &lo, &hi);
    long long qlo_r = -1, qhi_r = -1;
    f.qrange(buf, B, H, HKV, Q, KV, b, h, klo, khi, &qlo_r, &qhi_r);
    printf("%lld %lld %d %lld %lld %d\n", lo, hi, f.full(buf, B, H, HKV, Q, KV, b, h, qlo, qhi, klo, khi) ? 1 : 0, qlo_r, qhi_r,
           full_rows[idx](buf, B, H, HKV, Q, KV, b, h, qlo, qhi, klo, khi) ? 1 : 0);
    std::vector<long long> ilo(f.nint, -7), ihi(f.nint, -7);
    f.intervals(buf, B, H, HKV, Q, KV, b, h, qlo, qhi, ilo.data(), ihi.data());
    printf("%d", f.nint);
    for (int i = 0; i < f.nint; ++i) printf(" %lld %lld", ilo[i], ihi[i]);
    putchar('\n');
    std::vector<long long> qlo_i(f.nqint, -7), qhi_i(f.nqint, -7);
    f.qintervals(buf, B, H, HKV, Q, KV, b, h, klo, khi, qlo_i.data(), qhi_i.data());
    printf("%d", f.nqint);
    for (int i = 0; i < f.nqint; ++i) printf(" %lld %lld", qlo_i[i], qhi_i[i]);
    putchar('\n');
    for (long long q = qlo; q < qhi; ++q) {
      for (long long kv = 0; kv < KV; ++kv) putchar(f.mask(buf, B, H, HKV, Q, KV, b, h, q, kv) ? '1' : '0');
      putchar('\n');
    }
    for (long long q = qlo; q < qhi; ++q)
      for (long long kv = klo; kv < khi; ++kv) printf("%.9g ", (double)f.score(buf, B, H, HKV, Q, KV, (float)score, b, h, q, kv));
    putchar('\n');
  });
}
`

// buildHost compiles the cases into one host program and returns its path.
func buildHost(t *testing.T, cases []hostCase) string {
	t.Helper()
	return buildHostMain(t, cases, hostMain, func(i int) string {
		return fmt.Sprintf("{case%[1]d::maskc_mask, case%[1]d::maskc_score, case%[1]d::maskc_kv_range, case%[1]d::maskc_tile_full, case%[1]d::maskc_q_range, case%[1]d::maskc_kv_intervals, case%[1]d::maskc_kv_interval_count, case%[1]d::maskc_q_intervals, case%[1]d::maskc_q_interval_count}", i)
	})
}

// buildHostMain compiles the cases, each in its namespace, with main
// (whose FNS stands for the list of fn(i) over the cases).
func buildHostMain(t *testing.T, cases []hostCase, main string, fn func(i int) string) string {
	t.Helper()
	cxx := hostcuda.Cxx(t)
	var b strings.Builder
	b.WriteString(hostPrelude)
	b.WriteString(hipsrc.ABIHeader() + hipsrc.Runtime)
	var fns, checks, rows []string
	// One MaskcScoreGradRead for all cases, so that main can call any
	// case's maskc_score_grad.
	b.WriteString(gradReadStruct + "\n")
	for i, c := range cases {
		fmt.Fprintf(&b, "\n// case %d: %s\nnamespace case%d {\n", i, c.name, i)
		for _, ln := range strings.Split(c.kernel.Generated, "\n") {
			// The kernel's facts are per case; partBoolDef's type is the
			// same in every case (an identical redefinition).
			if strings.HasPrefix(ln, "#define ") && !strings.HasPrefix(ln, "#define "+partBool+" ") || ln == gradReadStruct {
				continue
			}
			b.WriteString(ln + "\n")
		}
		// The case's segments check as a launcher runs it before a launch
		// (a no-op without segments buffers).
		b.WriteString("inline void host_seg_check(const MaskcBuffers& buf) {\n")
		if strings.Contains(c.kernel.Generated, "maskc_g_seg_check(") {
			b.WriteString("  maskc_g_seg_check(buf);\n")
		} else {
			b.WriteString("  (void)buf;\n")
		}
		b.WriteString("}\n")
		// frame.h's parts for some masks, under the facts the case defines
		// (its #define lines are not copied: the cases share one file).
		var facts []string
		for _, f := range frameFacts {
			if strings.Contains(c.kernel.Generated, "#define "+f+" 1\n") {
				facts = append(facts, f)
			}
		}
		for _, f := range facts {
			b.WriteString("#define " + f + " 1\n")
		}
		b.WriteString(hipsrc.Frame)
		for _, f := range facts {
			b.WriteString("#undef " + f + "\n")
		}
		// The full test as the kernels that hold the rows' intervals ask it
		// (maskc_tile_full_rows, block selections), else maskc_tile_full.
		b.WriteString("inline bool host_full_rows(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,\n" +
			"                           long long b, long long h, long long q_lo, long long q_hi, long long kv_lo, long long kv_hi) {\n")
		if slices.Contains(facts, "MASKC_TILE_FULL_ROWS") {
			b.WriteString("  long long lo[maskc_kv_interval_count], hi[maskc_kv_interval_count];\n" +
				"  maskc_kv_intervals(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, lo, hi);\n" +
				"  return maskc_tile_full_rows(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, kv_lo, kv_hi, lo, hi);\n")
		} else {
			b.WriteString("  return maskc_tile_full(buf, B, H, HKV, Q, KV, b, h, q_lo, q_hi, kv_lo, kv_hi);\n")
		}
		b.WriteString("}\n}\n")
		fns = append(fns, fn(i))
		checks = append(checks, fmt.Sprintf("case%d::host_seg_check", i))
		rows = append(rows, fmt.Sprintf("case%d::host_full_rows", i))
	}
	fmt.Fprintf(&b, "\nstatic void (*const seg_checks[])(const MaskcBuffers&) = {%s};\n", strings.Join(checks, ", "))
	fmt.Fprintf(&b, "static bool (*const full_rows[])(const MaskcBuffers&, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long, long long) = {%s};\n", strings.Join(rows, ", "))
	b.WriteString(strings.Replace(main, "FNS", strings.Join(fns, ",\n  "), 1))
	dir := t.TempDir()
	srcPath, exe := filepath.Join(dir, "gen.cc"), filepath.Join(dir, "gen")
	if err := os.WriteFile(srcPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(cxx, "-O0", "-std=c++14", "-Wall", "-Wno-unused-variable", "-Wno-unused-but-set-variable", "-Wno-tautological-compare", "-o", exe, srcPath).CombinedOutput()
	if err != nil {
		t.Fatalf("g++ failed: %v\n%s", err, out)
	}
	if len(out) > 0 {
		t.Errorf("g++ warnings on generated code:\n%s", out)
	}
	return exe
}

// tileCase is one random tile of one hostCase, with its sizes and buffers.
type tileCase struct {
	idx                  int
	env                  *eval.Env
	bits                 map[string][]float64 // buffer elements as the host program stores them
	b, h                 int64
	qlo, qhi, kvlo, kvhi int64
	score                float64
}

// sorted reports whether every segments buffer of the tile holds
// non-decreasing rows: only then do the segment searches narrow the walk
// (an exact case's range is its visible hull only then).
func (tc tileCase) sorted(c hostCase) bool {
	for _, b := range c.kernel.Buffers {
		if t := tc.env.Buffers[b.Name]; b.Segments && t != nil && len(t.Data) > 0 && !sortedRows(t) {
			return false
		}
	}
	return true
}

var dtypeCode = map[string]int{"i32": 0, "i64": 1, "f16": 2, "bf16": 3, "f32": 4, "f64": 5, "bool": 6, "u8": 7, "i8": 8, "i16": 9}

func sizeMap(env *eval.Env) map[dsl.Var]int64 {
	return map[dsl.Var]int64{dsl.SizeB: env.B, dsl.SizeH: env.H, dsl.SizeHKV: env.HKV, dsl.SizeQ: env.Q, dsl.SizeKV: env.KV}
}

// f16ToFloat decodes IEEE half-precision bits.
func f16ToFloat(u uint16) float64 {
	sign := 1.0
	if u&0x8000 != 0 {
		sign = -1
	}
	e, m := int(u>>10)&0x1f, float64(u&0x3ff)
	switch e {
	case 0:
		return sign * m * math.Pow(2, -24)
	case 0x1f:
		if m == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * (1 + m/1024) * math.Pow(2, float64(e-15))
}

// segIDs draws n document ids the way packing code in the wild writes
// them: half the time non-decreasing (the `segments` promise), else
// restarting (each half counts from 0 again), padded (-1 runs between and
// after documents), documents in shuffled order, or ids reused for separate
// documents. The kernel must compute the mask as written for all of them.
func segIDs(r *rand.Rand, n int) []float64 {
	var docs []int // document lengths
	for left := n; left > 0; {
		l := min(left, 1+r.Intn(12))
		docs = append(docs, l)
		left -= l
	}
	ids := make([]float64, 0, n)
	put := func(id float64, l int) {
		for ; l > 0 && len(ids) < n; l-- {
			ids = append(ids, id)
		}
	}
	base := float64(r.Intn(5) - 2)
	switch mode := r.Intn(10); {
	case mode < 5: // sorted
		id := base
		for _, l := range docs {
			put(id, l)
			id += float64(1 + r.Intn(2))
		}
	case mode == 5: // restarting: the second half of the documents counts again
		for i, l := range docs {
			put(float64(i%max(1, (len(docs)+1)/2)), l)
		}
	case mode == 6: // padded: -1 between and after documents
		for i, l := range docs {
			if i%2 == 1 || i == len(docs)-1 {
				put(-1, l)
			} else {
				put(float64(i), l)
			}
		}
	case mode == 7 || mode == 8: // shuffled order
		perm := r.Perm(len(docs))
		for i, l := range docs {
			put(base+float64(perm[i]), l)
		}
	default: // reused: two ids alternate over separate documents
		for i, l := range docs {
			put(float64(i%2), l)
		}
	}
	return ids
}

// sortedRows reports whether every row of t (one for a 1-D tensor) is
// non-decreasing: what maskc_seg_check writes for it.
func sortedRows(t *eval.Tensor) bool {
	n := t.Dims[len(t.Dims)-1]
	for i := 1; i < len(t.Data); i++ {
		if i%n != 0 && t.Data[i] < t.Data[i-1] {
			return false
		}
	}
	return true
}

// randomTile draws sizes, buffer contents and a tile for case idx.
// Buffer extents follow the declarations; `segments` buffers hold ids from
// segIDs per row, sorted or not.
func randomTile(r *rand.Rand, idx int, c hostCase) tileCase {
	env := &eval.Env{B: 1 + r.Int63n(3), H: 1 + r.Int63n(4), Q: 1 + r.Int63n(70), KV: 1 + r.Int63n(70), Buffers: map[string]*eval.Tensor{}}
	if r.Intn(3) == 0 {
		env.KV = env.Q // equal lengths are the common case
	}
	env.HKV = env.H
	tc := tileCase{idx: idx, env: env, bits: map[string][]float64{}, b: r.Int63n(env.B), h: r.Int63n(env.H), score: r.NormFloat64() * 8}
	for _, bb := range c.kernel.Buffers {
		var dims []int
		for _, d := range c.prog.Buffer(bb.Name).Dims {
			dims = append(dims, int(d.Eval(sizeMap(env))))
		}
		t := eval.NewTensor(dims...)
		bits := make([]float64, len(t.Data))
		var ids []float64
		if bb.Segments && len(t.Data) > 0 {
			row := dims[len(dims)-1]
			for len(ids) < len(t.Data) {
				ids = append(ids, segIDs(r, row)...)
			}
		}
		for i := range t.Data {
			var v, raw float64
			switch bb.DType {
			case "bool":
				v = float64(r.Intn(2))
				raw = v
			case "i32", "i64", "u8", "i8", "i16":
				lo, hi, _ := buftype.IntRange(bb.DType)
				v = float64(max(lo, int64(r.Intn(41)-20)))
				if hi <= math.MaxInt16 && r.Intn(4) == 0 { // the extremes of a narrow type: sign and zero extension
					v = float64([]int64{lo, hi}[r.Intn(2)])
				}
				if bb.Segments {
					v = ids[i]
				}
				raw = v
			case "f32", "f64":
				v = float64(float32(r.NormFloat64() * 4))
				raw = v
			case "bf16":
				u := math.Float32bits(float32(r.NormFloat64()*4)) >> 16
				raw, v = float64(u), float64(math.Float32frombits(u<<16))
			case "f16":
				u := uint16(r.Intn(1 << 16))
				if (u>>10)&0x1f == 0x1f { // keep values finite
					u &^= 0x4000
				}
				raw, v = float64(u), f16ToFloat(u)
			}
			t.Data[i], bits[i] = v, raw
		}
		env.Buffers[bb.Name] = t
		tc.bits[bb.Name] = bits
	}
	tc.qlo = r.Int63n(env.Q)
	tc.qhi = tc.qlo + 1 + r.Int63n(env.Q-tc.qlo)
	tc.kvlo = r.Int63n(env.KV)
	tc.kvhi = tc.kvlo + 1 + r.Int63n(env.KV-tc.kvlo)
	if r.Intn(4) == 0 { // small tiles are full more often
		tc.qhi = min(tc.qhi, tc.qlo+1+r.Int63n(4))
		tc.kvhi = min(tc.kvhi, tc.kvlo+1+r.Int63n(4))
	}
	return tc
}

// writeTile writes a tile in the host program's input format.
func writeTile(w *bufio.Writer, c hostCase, tc tileCase) {
	e := tc.env
	fmt.Fprintf(w, "%d %d %d %d %d %d %d %d %d %d %d %d %.17g %d\n", tc.idx, e.B, e.H, e.HKV, e.Q, e.KV, tc.b, tc.h,
		tc.qlo, tc.qhi, tc.kvlo, tc.kvhi, tc.score, len(c.kernel.Buffers))
	for _, bb := range c.kernel.Buffers {
		writeBuffer(w, bb, e.Buffers[bb.Name].Dims, tc.bits[bb.Name])
	}
}

// writeBuffer writes one buffer in readBuffers's format: slot, dtype code,
// rank, extents, elements (as the host program stores them).
func writeBuffer(w *bufio.Writer, bb BufferABI, dims []int, bits []float64) {
	fmt.Fprintf(w, "%d %d %d", bb.Slot, dtypeCode[bb.DType], len(dims))
	for _, d := range dims {
		fmt.Fprintf(w, " %d", d)
	}
	for _, v := range bits {
		fmt.Fprintf(w, " %.17g", v)
	}
	w.WriteString("\n")
}

// hostResult is what the host program printed for one tile.
type hostResult struct {
	lo, hi int64
	// qlo, qhi: maskc_q_range of the tile's kv columns
	qlo, qhi int64
	full     bool
	// fullRows: maskc_tile_full_rows of the tile from the rows' intervals
	// (maskc_tile_full where the kernel takes no block selection)
	fullRows bool
	// ilo, ihi: maskc_kv_intervals of the tile's q rows; qilo, qihi:
	// maskc_q_intervals of its kv columns
	ilo, ihi, qilo, qihi []int64
	rows                 []string // mask bits per q in [qlo, qhi) over kv in [0, KV)
	scores               []float64
}

// runTiles runs a tile main (readTileCase's input) on the tiles and
// returns its output.
func runTiles(t *testing.T, exe string, cases []hostCase, tiles []tileCase) []byte {
	t.Helper()
	var in strings.Builder
	w := bufio.NewWriter(&in)
	fmt.Fprintf(w, "%d\n", len(tiles))
	for _, tc := range tiles {
		writeTile(w, cases[tc.idx], tc)
	}
	w.Flush()
	cmd := exec.Command(exe)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("host program: %v", err)
	}
	return out
}

// runHost runs the host program on the tiles and parses its output.
func runHost(t *testing.T, exe string, cases []hostCase, tiles []tileCase) []hostResult {
	t.Helper()
	out := runTiles(t, exe, cases, tiles)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	next := func() string {
		if !sc.Scan() {
			t.Fatalf("host program output ended early")
		}
		return sc.Text()
	}
	res := make([]hostResult, len(tiles))
	for i, tc := range tiles {
		var full, fullRows int
		if _, err := fmt.Sscan(next(), &res[i].lo, &res[i].hi, &full, &res[i].qlo, &res[i].qhi, &fullRows); err != nil {
			t.Fatalf("tile %d: %v", i, err)
		}
		res[i].full, res[i].fullRows = full == 1, fullRows == 1
		res[i].ilo, res[i].ihi = parseIntervals(t, i, next())
		res[i].qilo, res[i].qihi = parseIntervals(t, i, next())
		for q := tc.qlo; q < tc.qhi; q++ {
			res[i].rows = append(res[i].rows, next())
		}
		for _, f := range strings.Fields(next()) {
			var v float64
			fmt.Sscan(f, &v)
			res[i].scores = append(res[i].scores, v)
		}
	}
	return res
}

// checkTiles compares the host results with the reference evaluator and
// checks the soundness of kv ranges and full-tile answers. It returns the
// number of tiles found full and the number on which the host evaluator of
// the sparsity plan agreed with the compiled functions (to show the test
// exercises those paths).
func checkTiles(t *testing.T, cases []hostCase, tiles []tileCase, res []hostResult) (fullTiles, hostAgreed int) {
	t.Helper()
	errs := 0
	report := func(format string, args ...any) {
		errs++
		if errs <= 20 {
			t.Errorf(format, args...)
		}
	}
	for i, tc := range tiles {
		c, r := cases[tc.idx], res[i]
		where := fmt.Sprintf("%s: B=%d H=%d Q=%d KV=%d b=%d h=%d tile q[%d,%d) kv[%d,%d)", c.name, tc.env.B, tc.env.H, tc.env.Q, tc.env.KV, tc.b, tc.h, tc.qlo, tc.qhi, tc.kvlo, tc.kvhi)
		var mask, score *eval.Bound
		if c.attn.Mask != nil {
			fn, err := eval.Compile(c.attn.Mask)
			if err != nil {
				t.Fatalf("%s: eval.Compile: %v", c.name, err)
			}
			if mask, err = fn.Bind(tc.env); err != nil {
				t.Fatalf("%s: bind: %v", where, err)
			}
		}
		if c.attn.Score != nil {
			fn, err := eval.Compile(c.attn.Score)
			if err != nil {
				t.Fatalf("%s: eval.Compile: %v", c.name, err)
			}
			if score, err = fn.Bind(tc.env); err != nil {
				t.Fatalf("%s: bind: %v", where, err)
			}
		}
		// The host evaluator runs the plan these functions were printed
		// from: it must give the same answers (where the reference can
		// evaluate the plan's terms; the kernel reads zero out of range).
		if hs, err := c.kernel.HostSparsity(tc.env); err != nil {
			report("%s: HostSparsity: %v", where, err)
		} else {
			lo, hi, err1 := hs.KVRange(tc.b, tc.h, tc.qlo, tc.qhi)
			full, err2 := hs.TileFull(tc.b, tc.h, tc.qlo, tc.qhi, tc.kvlo, tc.kvhi)
			ilo, ihi, err3 := hs.KVIntervals(tc.b, tc.h, tc.qlo, tc.qhi)
			qlo, qhi, err4 := hs.QRange(tc.b, tc.h, tc.kvlo, tc.kvhi)
			switch {
			case err1 != nil || err2 != nil || err3 != nil || err4 != nil:
			case qlo != r.qlo || qhi != r.qhi:
				report("%s: host plan gives q range [%d, %d), maskc_q_range [%d, %d)", where, qlo, qhi, r.qlo, r.qhi)
			case lo != r.lo || hi != r.hi || full != r.full:
				report("%s: host plan gives range [%d, %d) full %v, maskc_kv_range [%d, %d) maskc_tile_full %v", where, lo, hi, full, r.lo, r.hi, r.full)
			case !slices.Equal(ilo, r.ilo) || !slices.Equal(ihi, r.ihi):
				report("%s: host plan gives intervals %v %v, maskc_kv_intervals %v %v", where, ilo, ihi, r.ilo, r.ihi)
			case len(hs.IntervalTerms()) != len(ilo):
				// tilemap's waste report counts per interval by these names.
				report("%s: %d interval names for %d intervals", where, len(hs.IntervalTerms()), len(ilo))
			default:
				hostAgreed++
			}
		}
		allFull := true
		hullLo, hullHi := tc.env.KV, int64(0)
		for qi, row := range r.rows {
			q := tc.qlo + int64(qi)
			if int64(len(row)) != tc.env.KV {
				t.Fatalf("%s: row %d has %d entries", where, q, len(row))
			}
			for kv := int64(0); kv < tc.env.KV; kv++ {
				got := row[kv] == '1'
				if mask != nil {
					if want, err := mask.Mask(tc.b, tc.h, q, kv); err == nil && want != got {
						report("%s: maskc_mask(q=%d, kv=%d) = %v, reference %v", where, q, kv, got, want)
					}
				} else if !got {
					report("%s: no mask, but maskc_mask(q=%d, kv=%d) is false", where, q, kv)
				}
				if got {
					hullLo, hullHi = min(hullLo, kv), max(hullHi, kv+1)
				}
				if got && (kv < r.lo || kv >= r.hi) {
					report("%s: (q=%d, kv=%d) is visible but maskc_kv_range gave [%d, %d)", where, q, kv, r.lo, r.hi)
				}
				if got && !inIntervals(kv, r.ilo, r.ihi) {
					report("%s: (q=%d, kv=%d) is visible but outside every maskc_kv_intervals interval %v %v", where, q, kv, r.ilo, r.ihi)
				}
				if !got && kv >= tc.kvlo && kv < tc.kvhi {
					allFull = false
				}
				if got && kv >= tc.kvlo && kv < tc.kvhi && !inIntervals(q, r.qilo, r.qihi) {
					report("%s: (q=%d, kv=%d) is visible but outside every maskc_q_intervals interval %v %v", where, q, kv, r.qilo, r.qihi)
				}
				if got && kv >= tc.kvlo && kv < tc.kvhi && (q < r.qlo || q >= r.qhi) {
					report("%s: (q=%d, kv=%d) is visible but maskc_q_range gave [%d, %d)", where, q, kv, r.qlo, r.qhi)
				}
			}
		}
		if c.exact && tc.sorted(c) {
			if hullLo >= hullHi && r.lo != r.hi || hullLo < hullHi && (r.lo != hullLo || r.hi != hullHi) {
				report("%s: maskc_kv_range gave [%d, %d), the visible kv span [%d, %d)", where, r.lo, r.hi, hullLo, hullHi)
			}
			if allFull && !r.full {
				report("%s: every pair of the tile is visible but maskc_tile_full is false", where)
			}
		}
		if r.full {
			fullTiles++
			if !allFull {
				report("%s: maskc_tile_full is true but the tile has masked pairs", where)
			}
		}
		if r.fullRows && !r.full {
			// maskc_tile_full_rows answers a selection from an interval inside
			// the block maskc_tile_full reads: never more often full.
			report("%s: maskc_tile_full_rows is true, maskc_tile_full false", where)
		}
		if score != nil {
			n := 0
			for q := tc.qlo; q < tc.qhi; q++ {
				for kv := tc.kvlo; kv < tc.kvhi; kv++ {
					got := r.scores[n]
					n++
					want, err := score.Score(float64(float32(tc.score)), tc.b, tc.h, q, kv)
					if err != nil {
						continue
					}
					if !closeF32(got, want) {
						report("%s: maskc_score(q=%d, kv=%d) = %g, reference %g", where, q, kv, got, want)
					}
				}
			}
		}
	}
	if errs > 20 {
		t.Errorf("... and %d more errors", errs-20)
	}
	return fullTiles, hostAgreed
}

// closeF32 compares an fp32 kernel result with the float64 reference.
func closeF32(got, want float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) == math.IsNaN(got)
	}
	if math.IsInf(want, 0) || math.IsInf(got, 0) {
		return got == want
	}
	return math.Abs(got-want) <= 1e-4*math.Max(1, math.Abs(want))
}

// inIntervals reports whether x lies in some [lo[i], hi[i]).
func inIntervals(x int64, lo, hi []int64) bool {
	for i := range lo {
		if lo[i] <= x && x < hi[i] {
			return true
		}
	}
	return false
}

// parseIntervals reads the host program's interval line "n lo0 hi0 ...".
func parseIntervals(t *testing.T, tile int, line string) (lo, hi []int64) {
	t.Helper()
	f := strings.Fields(line)
	var n int
	if len(f) > 0 {
		fmt.Sscan(f[0], &n)
	}
	if len(f) == 0 || len(f) != 1+2*n {
		t.Fatalf("tile %d: interval line %q", tile, line)
	}
	for j := 0; j < n; j++ {
		var a, b int64
		fmt.Sscan(f[1+2*j], &a)
		fmt.Sscan(f[2+2*j], &b)
		lo, hi = append(lo, a), append(hi, b)
	}
	return lo, hi
}
