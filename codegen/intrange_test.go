package codegen

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/internal/hostcuda"
)

// lowerInt checks `mask m(...) = (E) == 0` and returns the lowered mask and
// E's node.
func lowerInt(t *testing.T, decls, e string) (*dsl.Lowered, dsl.Expr) {
	t.Helper()
	p := checkSource(t, "r.flex", decls+"mask m(b, h, q, kv) = ("+e+") == 0\nattention a {\n    mask = m\n}\n")
	l := p.Attentions[0].Mask
	cmp, ok := l.Expr.(*dsl.CompareExpr)
	if !ok {
		t.Fatalf("%s: lowered to %T, not a comparison", e, l.Expr)
	}
	return l, cmp.Operands[0]
}

// TestIntRanges pins the interval analysis and the int32/int64 choice: a
// node is int32 only when its value and every int operand fit.
func TestIntRanges(t *testing.T) {
	const n = MaxSeqLen - 1 // largest q or kv
	full := fullRange
	for _, tc := range []struct {
		decls, expr string
		want        interval
		narrow      bool
	}{
		{"", "q - kv", iv(-n, n), true},
		{"", "kv - q + KV - 1", iv(-n-1, n+MaxSeqLen-1), false},
		{"", "q + kv", iv(0, 2*n), false},
		{"", "q * 2", iv(0, 2*n), false},
		{"", "q * kv", iv(0, n*n), false},
		{"", "(q * kv) % 8", iv(0, 7), false}, // fits, but its operand does not
		{"", "(q * kv) % 8 + 1", iv(1, 8), true},
		{"", "q // 2", iv(0, n/2), true},
		{"", "(q - kv) // 4", iv(-(n+3)/4, n/4), true},
		{"", "(q - kv) % 2", iv(0, 1), true},
		{"", "(q - kv) % -3", iv(-2, 0), true},
		{"", "abs(q - kv)", iv(0, n), true},
		{"", "min(q, 5) - max(kv, 3)", iv(-n, 2), true},
		{"", "h * 64 - b", iv(-(math.MaxInt32 - 1), (math.MaxInt32-1)*64), false},
		{"", "h % 4 * 64 - b % 8", iv(-7, 192), true},
		{"", "q ** 2", iv(0, n*n), false},
		{"", "(q - kv) ** 1", iv(-n, n), true},
		{"", "(q >= kv) + (kv >= 3)", iv(0, 2), true},
		{"", "q & 6", iv(0, 6), true},
		{"", "-2147483647 - 1 + q * 0", iv(math.MinInt32, math.MinInt32), true},
		{"", "q // (kv - 5)", iv(-n, n), true},
		{"", "(q - kv - 1) // (kv - 5)", iv(-n-1, n+1), true},
		{"buffer t: i32[KV]\n", "t[q] // (kv - 5)", iv(math.MinInt32, -math.MinInt32), false}, // INT_MIN // -1
		{"buffer t: i32[KV]\n", "t[q]", int32Range, true},
		{"buffer t: i32[KV]\n", "t[q] + 1", iv(math.MinInt32+1, math.MaxInt32+1), false},
		{"buffer t: i32[KV]\n", "t[q] // 2", iv(math.MinInt32/2, math.MaxInt32/2), true},
		{"buffer t: i64[KV]\n", "t[q] % 5", iv(0, 4), false},
		{"buffer t: i64[KV]\n", "t[q]", full, false},
		{"", "int(q >= kv) * 16", iv(0, 16), true},
		{"", "int(q - kv)", iv(-n, n), true},
		// A float's range, truncated and widened by 0.1% + 2 for rounding.
		{"", "int(float(q) * 0.5)", iv(-2, 1074815439), false},
		{"", "int(log(float(q) / 8) * 2.0) + 8", iv(math.MinInt64+8, 49), false},
		{"buffer f: f32[KV]\n", "int(f[kv])", full, false},
	} {
		l, e := lowerInt(t, tc.decls, tc.expr)
		bufs, _ := BufferTable(nil, l)
		byName := map[string]*BufferABI{}
		for i := range bufs {
			byName[bufs[i].Name] = &bufs[i]
		}
		a := newRangeAnalysis(l, byName)
		if got := a.of(e); got != tc.want {
			t.Errorf("%s: range [%d, %d], want [%d, %d]", tc.expr, got.Lo, got.Hi, tc.want.Lo, tc.want.Hi)
		}
		if got := a.narrow(e); got != tc.narrow {
			t.Errorf("%s: narrow = %v, want %v", tc.expr, got, tc.narrow)
		}
	}
}

// hostRun compiles src (the runtime, then body) as host C++ and returns
// its standard output.
func hostRun(t *testing.T, body string) string {
	t.Helper()
	cxx := hostcuda.Cxx(t)
	dir := t.TempDir()
	srcPath, exe := filepath.Join(dir, "b.cc"), filepath.Join(dir, "b")
	if err := os.WriteFile(srcPath, []byte(hostPrelude+hipsrc.ABIHeader()+hipsrc.Runtime+body), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cxx, "-O2", "-std=c++14", "-Wall", "-Wno-unused-variable", "-Wno-unused-but-set-variable",
		"-Wno-tautological-compare", "-fsanitize=undefined", "-fno-sanitize-recover", "-o", exe, srcPath).CombinedOutput(); err != nil {
		t.Fatalf("g++ failed: %v\n%s", err, out)
	}
	out, err := exec.Command(exe).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("host program: %v\n%s", err, ee.Stderr)
	} else if err != nil {
		t.Fatalf("host program: %v", err)
	}
	return string(out)
}

// TestPow2FloorForms checks the floor forms divByConst emits against
// Python's floor semantics (the 64-bit helpers the property tests check
// against eval): a >> k and a & (2^k - 1) for // and % by 2^k, and the
// branch-free maskc_py_floordiv_pos / floormod_pos, in int and long long,
// on every 16-bit value and around the int32 and int64 extremes, under
// -fsanitize=undefined (no overflow in any form).
func TestPow2FloorForms(t *testing.T) {
	out := hostRun(t, `
static long long vals[200000];
int main() {
  int n = 0;
  for (long long a = -32768; a <= 32767; ++a) vals[n++] = a;
  for (long long d = 0; d < 300; ++d) {
    vals[n++] = -2147483647LL - 1 + d; vals[n++] = 2147483647LL - d;
  }
  const long long cs[] = {1, 2, 3, 4, 5, 7, 8, 64, 1000, 1024, 65536, 1000003, 1LL << 30};
  long long bad = 0, checked = 0;
  for (long long c : cs) {
    int k = 0;
    while ((1LL << k) < c) ++k;
    const bool pow2 = (1LL << k) == c;
    for (int i = 0; i < n; ++i) {
      const long long a = vals[i];
      const long long wd = maskc_py_floordiv(a, c), wm = maskc_py_floormod(a, c);
      const int a32 = (int)a, c32 = (int)c;
      if (pow2) {
        bad += (a32 >> k) != wd || (a32 & (c32 - 1)) != wm || (a >> k) != wd || (a & (c - 1)) != wm;
      }
      bad += maskc_py_floordiv_pos(a32, c32) != wd || maskc_py_floormod_pos(a32, c32) != wm;
      bad += maskc_py_floordiv_pos(a, c) != wd || maskc_py_floormod_pos(a, c) != wm;
      checked++;
    }
  }
  const long long big[] = {-9223372036854775807LL - 1, -9223372036854775807LL, 9223372036854775807LL};
  for (long long a : big) {
    bad += (a >> 3) != maskc_py_floordiv(a, 8LL) || (a & 7) != maskc_py_floormod(a, 8LL);
    bad += maskc_py_floordiv_pos(a, 7LL) != maskc_py_floordiv(a, 7LL) || maskc_py_floormod_pos(a, 7LL) != maskc_py_floormod(a, 7LL);
  }
  printf("%lld %lld\n", checked, bad);
  return 0;
}
`)
	var checked, bad int64
	if _, err := fmt.Sscan(out, &checked, &bad); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if checked < 13*65536 || bad != 0 {
		t.Errorf("%d of %d floor forms differ from Python's semantics", bad, checked)
	}
}

// TestHostIntBoundary runs generated masks and scores whose values cross
// the int32 boundary at the extremes the launch preconditions allow (q, kv
// up to MaxSeqLen - 1) and compares them with the reference evaluator:
// sums and products of indices must stay 64-bit, differences may narrow.
func TestHostIntBoundary(t *testing.T) {
	type boundaryCase struct{ mask, score string }
	cases := []boundaryCase{
		{"(q + kv) % 3 == 0", ""},
		{"q * kv % 7 == (q - kv) % 7", ""},
		{"(q + kv) // 2 >= kv", ""},
		{"(q - kv) // 3 == -5 or (kv - q) % 1000 < 500", ""},
		{"q // 4096 * 4096 + kv % 4096 > 2000000000", ""},
		{"abs(q - kv) % 4 == 0 and (q - kv) // 8 <= 100000000", ""},
		{"(q - kv) ** 2 > 4000000000000000000", ""},
		{"min(q + kv, 3000000000) - max(q, kv) > 1000000000", ""},
		{"(q | kv) > (q & kv) + 1073741824", ""},
		{"q >= kv", "score + (kv - q) * 0.5 + (q + kv) * 1e-9"},
		{"", "score + ((q * kv) % 1000003) * 1e-6 + (q - kv) // 7 * 1e-9"},
	}
	const n = MaxSeqLen - 1
	points := [][2]int64{{0, 0}, {n, 0}, {0, n}, {n, n}, {n, n - 1}, {n - 1, n}, {1 << 30, 1 << 30}, {1<<30 + 1, 1<<30 - 1},
		{math.MaxInt32 / 2, math.MaxInt32/2 + 1}, {n, 1}, {12345, n - 7}, {n - 4095, 3}, {2000000000, 1999999999}}
	var b strings.Builder
	var lows []*struct{ mask, score *eval.Bound }
	env := &eval.Env{B: 2, H: 16, HKV: 2, Q: MaxSeqLen, KV: MaxSeqLen}
	for i, c := range cases {
		var settings, decl string
		if c.mask != "" {
			decl += "mask m(b, h, q, kv) = " + c.mask + "\n"
			settings += "    mask = m\n"
		}
		if c.score != "" {
			decl += "score s_mod(score, b, h, q, kv) = " + c.score + "\n"
			settings += "    score = s_mod\n"
		}
		p := checkSource(t, fmt.Sprintf("boundary%d.flex", i), decl+"attention a {\n"+settings+"}\n")
		k, diags := Generate(p, p.Attentions[0], Options{})
		if diags.HasErrors() {
			t.Fatalf("%s: %s", c.mask, diags.Render())
		}
		fmt.Fprintf(&b, "namespace case%d {\n", i)
		for _, ln := range strings.Split(k.Generated, "\n") {
			if !strings.HasPrefix(ln, "#define ") {
				b.WriteString(ln + "\n")
			}
		}
		b.WriteString(hipsrc.Frame + "}\n")
		bound := &struct{ mask, score *eval.Bound }{}
		for _, m := range []struct {
			l   *dsl.Lowered
			dst **eval.Bound
		}{{p.Attentions[0].Mask, &bound.mask}, {p.Attentions[0].Score, &bound.score}} {
			if m.l == nil {
				continue
			}
			fn, err := eval.Compile(m.l)
			if err != nil {
				t.Fatal(err)
			}
			if *m.dst, err = fn.Bind(env); err != nil {
				t.Fatal(err)
			}
		}
		lows = append(lows, bound)
	}
	b.WriteString("int main() {\n  MaskcBuffers buf = {};\n  const long long pts[][2] = {")
	for _, pt := range points {
		fmt.Fprintf(&b, "{%dLL, %dLL}, ", pt[0], pt[1])
	}
	fmt.Fprintf(&b, "};\n  for (const auto& p : pts) {\n")
	for i := range cases {
		fmt.Fprintf(&b, "    printf(\"%%d %%.9g\\n\", case%[1]d::maskc_mask(buf, 2, 16, 2, %[2]d, %[2]d, 1, 15, p[0], p[1]) ? 1 : 0, "+
			"(double)case%[1]d::maskc_score(buf, 2, 16, 2, %[2]d, %[2]d, 1.25f, 1, 15, p[0], p[1]));\n", i, MaxSeqLen)
	}
	b.WriteString("  }\n  return 0;\n}\n")
	lines := strings.Split(strings.TrimSpace(hostRun(t, b.String())), "\n")
	if len(lines) != len(points)*len(cases) {
		t.Fatalf("host program printed %d lines, want %d", len(lines), len(points)*len(cases))
	}
	for pi, pt := range points {
		for ci, c := range cases {
			f := strings.Fields(lines[pi*len(cases)+ci])
			gotMask, gotScore := f[0] == "1", f[1]
			if lows[ci].mask != nil {
				want, err := lows[ci].mask.Mask(1, 15, pt[0], pt[1])
				if err != nil {
					t.Fatalf("eval %s at %v: %v", c.mask, pt, err)
				}
				if gotMask != want {
					t.Errorf("mask %s at q=%d kv=%d: kernel %v, Python %v", c.mask, pt[0], pt[1], gotMask, want)
				}
			}
			if lows[ci].score != nil {
				want, err := lows[ci].score.Score(1.25, 1, 15, pt[0], pt[1])
				if err != nil {
					t.Fatalf("eval %s at %v: %v", c.score, pt, err)
				}
				got, _ := strconv.ParseFloat(gotScore, 64)
				if math.Abs(got-want) > 1e-6*math.Max(1, math.Abs(want)) {
					t.Errorf("score %s at q=%d kv=%d: kernel %g, Python %g", c.score, pt[0], pt[1], got, want)
				}
			}
		}
	}
}

// TestAlwaysKept checks which masks the normal form or the interval
// analysis proves true for every launchable index (and so compiles as no
// mask).
func TestAlwaysKept(t *testing.T) {
	for _, tc := range []struct {
		mask string
		want bool
	}{
		{"q >= 0 and kv >= 0", true},
		{"q < 2147483391 or kv > q", true},
		{"h < 2147483647", true},
		{"q < Q", true},                 // the normal form's domain facts
		{"kv <= q or kv > q - 1", true}, // normal merges the two halves
		{"kv < KV - 1", false},
		{"q >= kv", false},
		{"q >= 1 and kv >= 0", false},
		{"q + kv >= 0", true},
		{"q != -1", true},
		{"(q - kv) % 2 == 0", false},
	} {
		p := checkSource(t, "k.flex", "mask m(b, h, q, kv) = "+tc.mask+"\nattention a {\n    mask = m\n}\n")
		k, diags := Generate(p, p.Attentions[0], Options{})
		if diags.HasErrors() {
			t.Fatalf("%s: %s", tc.mask, diags.Render())
		}
		if got := !k.HasMask; got != tc.want {
			t.Errorf("%s: compiled as no mask = %v, want %v", tc.mask, got, tc.want)
		}
	}
}

// TestHostTruncInt runs the kernels' maskc_py_int, under UBSan, on the
// values where a plain C cast is undefined, and compares it with
// dsl.TruncInt, the evaluator's int().
func TestHostTruncInt(t *testing.T) {
	values := []float64{0, 3.9, -3.9, 0.5, -0.5, math.NaN(), math.Inf(1), math.Inf(-1), 1e19, -1e19,
		9223372036854775807.0, -9223372036854775808.0, 9223372036854774784.0, -9223372036854774784.0, 4503599627370497.5}
	var body strings.Builder
	body.WriteString("int main() {\n")
	for _, v := range values {
		lit := strconv.FormatFloat(v, 'g', -1, 64)
		switch {
		case math.IsNaN(v):
			lit = "(0.0 / 0.0)"
		case math.IsInf(v, 1):
			lit = "(1.0 / 0.0)"
		case math.IsInf(v, -1):
			lit = "(-1.0 / 0.0)"
		}
		fmt.Fprintf(&body, "  printf(\"%%lld %%lld\\n\", maskc_py_int((double)%s), maskc_py_int((float)%s));\n", lit, lit)
	}
	body.WriteString("  return 0;\n}\n")
	lines := strings.Split(strings.TrimSpace(hostRun(t, body.String())), "\n")
	if len(lines) != len(values) {
		t.Fatalf("%d lines for %d values", len(lines), len(values))
	}
	for i, v := range values {
		var d, f int64
		if _, err := fmt.Sscanf(lines[i], "%d %d", &d, &f); err != nil {
			t.Fatal(err)
		}
		if want := dsl.TruncInt(v); d != want {
			t.Errorf("maskc_py_int(double %v) = %d, dsl.TruncInt = %d", v, d, want)
		}
		if want := dsl.TruncInt(float64(float32(v))); f != want {
			t.Errorf("maskc_py_int(float %v) = %d, dsl.TruncInt = %d", float32(v), f, want)
		}
	}
}
