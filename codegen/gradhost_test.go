package codegen

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/grad"
	"github.com/maskc/maskc/hipsrc"
)

// generatedMarker starts the generated part of a kernel source.
const generatedMarker = "// maskc generated part of attention"

// gradMain reads cases from stdin. Per case: the namespace index, B H HKV
// Q KV b h q kv score, the number of buffers, and the buffers as hostMain
// takes them. It prints maskc_score_grad's return value, then slot, idx
// and d of each of the case's reads.
const gradMain = readBuffers + `
typedef float (*grad_fn)(const MaskcBuffers&, long long, long long, long long, long long, long long, float, long long, long long, long long, long long, MaskcScoreGradRead*);
static const grad_fn fns[] = { FNS };
static const int nreads[] = { NREADS };

int main() {
  int ncases;
  if (scanf("%d", &ncases) != 1) return 2;
  for (int c = 0; c < ncases; ++c) {
    int idx, nbuf;
    long long B, H, HKV, Q, KV, b, h, q, kv;
    double score;
    if (scanf("%d %lld %lld %lld %lld %lld %lld %lld %lld %lld %lf %d", &idx, &B, &H, &HKV, &Q, &KV, &b, &h, &q, &kv, &score, &nbuf) != 12) return 3;
    MaskcBuffers buf;
    std::vector<std::vector<unsigned char> > store;
    if (int rc = read_buffers(nbuf, &buf, &store)) return rc;
    MaskcScoreGradRead reads[16];
    for (int i = 0; i < 16; ++i) { reads[i].slot = -7; reads[i].idx = -7; reads[i].d = -7.0f; }
    printf("%.9g\n", (double)fns[idx](buf, B, H, HKV, Q, KV, (float)score, b, h, q, kv, reads));
    for (int i = 0; i < nreads[idx]; ++i) printf("%d %lld %.9g\n", reads[i].slot, reads[i].idx, (double)reads[i].d);
  }
  return 0;
}
`

// TestScoreGradHost compiles maskc_score_grad of every rule score
// (../grad/testdata/scores.flex) and every example score as host C++ and
// compares it, at random points, with the float64 derivatives of eval
// (to fp32 accuracy): d/d score, and for every read its slot, its element
// offset and its partial derivative.
func TestScoreGradHost(t *testing.T) {
	text, err := os.ReadFile("../grad/testdata/scores.flex")
	require.NoError(t, err)
	src := string(text)
	p := checkSource(t, "scores.flex", src)
	for _, m := range p.Mods {
		if m.Kind == dsl.ScoreMod {
			src += fmt.Sprintf("attention a_%s {\n    score = %s\n}\n", m.Name, m.Name)
		}
	}
	// A read that leaves its buffer (t has 4 elements, q goes further): the
	// forward reads 0 there, and the gradient read must be dropped.
	outside := "buffer t: f32[4]\nscore s(score, b, h, q, kv) = score * t[q] + t[kv]\nattention outside {\n    score = s\n}\n"
	// N-D buffers: the element offset of a 3-D and a 4-D read (row-major),
	// one of them leaving its buffer in its middle dimension.
	nd := "buffer t3: f32[H, 3, 5]\nbuffer t4: f32[B, 2, H, 4]\nscore s(score, b, h, q, kv) = score * t3[h, q - kv, kv % 5] + t4[b, q % 2, h, kv % 4] * t4[b, kv % 2, h, q % 4]\nattention nd {\n    score = s\n}\n"
	progs := []*check.Program{checkSource(t, "scores.flex", src), checkSource(t, "outside.flex", outside), checkSource(t, "nd.flex", nd)}
	files, err := filepath.Glob("../examples/*.flex")
	require.NoError(t, err)
	for _, f := range files {
		progs = append(progs, loadProgram(t, f))
	}
	var cases []hostCase
	var grads []*grad.Gradient
	for _, p := range progs {
		for _, a := range p.Attentions {
			k, diags := Generate(p, a, Options{})
			require.False(t, diags.HasErrors(), diags.Render())
			if k.Score == nil {
				continue
			}
			g, err := grad.Differentiate(k.Score)
			require.NoError(t, err)
			require.Equal(t, len(g.Reads), k.ScoreGradReads)
			cases = append(cases, hostCase{name: a.Name, prog: p, attn: a, kernel: k})
			grads = append(grads, g)
		}
	}
	require.Greater(t, len(cases), 20)
	var nreads []string
	for _, c := range cases {
		nreads = append(nreads, fmt.Sprint(c.kernel.ScoreGradReads))
	}
	exe := buildHostMain(t, cases, strings.Replace(gradMain, "NREADS", strings.Join(nreads, ", "), 1),
		func(i int) string { return fmt.Sprintf("case%d::maskc_score_grad", i) })

	r := rand.New(rand.NewSource(7))
	type point struct {
		tc    tileCase
		q, kv int64
	}
	var pts []point
	var in strings.Builder
	w := bufio.NewWriter(&in)
	for i, c := range cases {
		for range 20 {
			tc := randomTile(r, i, c)
			tc.score = r.NormFloat64() * 3
			pts = append(pts, point{tc, tc.qlo, tc.kvlo})
		}
	}
	fmt.Fprintf(w, "%d\n", len(pts))
	for _, pt := range pts {
		c, e := cases[pt.tc.idx], pt.tc.env
		fmt.Fprintf(w, "%d %d %d %d %d %d %d %d %d %d %.17g %d\n", pt.tc.idx, e.B, e.H, e.HKV, e.Q, e.KV, pt.tc.b, pt.tc.h,
			pt.q, pt.kv, float64(float32(pt.tc.score)), len(c.kernel.Buffers))
		for _, bb := range c.kernel.Buffers {
			writeBuffer(w, bb, e.Buffers[bb.Name].Dims, pt.tc.bits[bb.Name])
		}
	}
	w.Flush()
	cmd := exec.Command(exe)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	require.NoError(t, err)
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	next := func() string {
		require.True(t, sc.Scan(), "host output ended early")
		return sc.Text()
	}
	compared, skipped, dropped := 0, 0, 0
	close := func(what string, want, got float64) {
		if math.IsNaN(want) || math.IsInf(want, 0) || math.IsNaN(got) || math.IsInf(got, 0) || math.Abs(want) > 1e30 {
			if math.IsNaN(want) != math.IsNaN(got) && !math.IsInf(got, 0) && math.Abs(want) < 1e30 {
				t.Errorf("%s: eval %v, kernel %v", what, want, got)
			}
			skipped++
			return
		}
		compared++
		if math.Abs(want-got) > 2e-3*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: eval %.9g, kernel %.9g", what, want, got)
		}
	}
	for _, pt := range pts {
		c, g := cases[pt.tc.idx], grads[pt.tc.idx]
		var ds float64
		fmt.Sscan(next(), &ds)
		hostReads := make([][3]float64, c.kernel.ScoreGradReads)
		for i := range hostReads {
			var slot, idx int64
			var d float64
			fmt.Sscan(next(), &slot, &idx, &d)
			hostReads[i] = [3]float64{float64(slot), float64(idx), d}
		}
		for i, hr := range hostReads {
			// A reported read lies inside its buffer; one outside is dropped
			// with idx -1.
			if hr[0] >= 0 {
				n := len(pt.tc.env.Buffers[g.Reads[i].Buffer.Name.Name].Data)
				assert.True(t, hr[1] >= 0 && int(hr[1]) < n, "%s: read %d at %v outside [0, %d)", c.name, i, hr[1], n)
			} else if hr[1] == -1 {
				dropped++
			}
		}
		bg, err := eval.BindGrad(g, pt.tc.env)
		require.NoError(t, err)
		wantDS, reads, err := bg.Grad(float64(float32(pt.tc.score)), pt.tc.b, pt.tc.h, pt.q, pt.kv)
		if err != nil {
			skipped++ // e.g. a read outside its buffer, which eval refuses
			continue
		}
		where := fmt.Sprintf("%s at score=%v b=%d h=%d q=%d kv=%d", c.name, float32(pt.tc.score), pt.tc.b, pt.tc.h, pt.q, pt.kv)
		close(where+": d/d score", wantDS, ds)
		for i, rd := range reads {
			hr := hostReads[i]
			if rd.Outside {
				assert.Negative(t, int(hr[0]), "%s: read %d (%s%v) outside its buffer reported by the kernel", where, i, rd.Buffer, rd.Index)
				continue
			}
			var slot int
			for _, bb := range c.kernel.Buffers {
				if bb.Name == rd.Buffer {
					slot = bb.Slot
				}
			}
			idx := make([]int, len(rd.Index))
			for j, x := range rd.Index {
				idx[j] = int(x)
			}
			off, ok := pt.tc.env.Buffers[rd.Buffer].Offset(idx...)
			require.True(t, ok)
			if hr[0] < 0 {
				assert.Zero(t, rd.D, "%s: read %d (%s%v) skipped by the kernel", where, i, rd.Buffer, rd.Index)
				continue
			}
			assert.Equal(t, slot, int(hr[0]), "%s: read %d slot", where, i)
			assert.Equal(t, off, int(hr[1]), "%s: read %d offset", where, i)
			close(fmt.Sprintf("%s: d/d %s%v", where, rd.Buffer, rd.Index), rd.D, hr[2])
		}
	}
	t.Logf("%d derivatives compared, %d skipped (not finite, or eval undefined), %d reads outside their buffer dropped", compared, skipped, dropped)
	assert.Positive(t, dropped, "no read outside its buffer was exercised")
	assert.Greater(t, compared, 10*skipped)
}

// TestScoreGradHipcc builds maskc_score_grad of every rule score and every
// example score for the AMD targets with hipcc, each called from a probe
// kernel so that its device code is generated, and checks that every
// probe is in the code object.
func TestScoreGradHipcc(t *testing.T) {
	hipcc, err := exec.LookPath("hipcc")
	objdump := findObjdump()
	if err != nil || objdump == "" {
		msg := "hipcc and llvm-objdump (LLVM 15) are needed: apt-get install hipcc (it depends on llvm-15)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	text, err := os.ReadFile("../grad/testdata/scores.flex")
	require.NoError(t, err)
	src := string(text)
	p := checkSource(t, "scores.flex", src)
	for _, m := range p.Mods {
		if m.Kind == dsl.ScoreMod {
			src += fmt.Sprintf("attention a_%s {\n    score = %s\n}\n", m.Name, m.Name)
		}
	}
	progs := []*check.Program{checkSource(t, "scores.flex", src)}
	files, err := filepath.Glob("../examples/*.flex")
	require.NoError(t, err)
	for _, f := range files {
		progs = append(progs, loadProgram(t, f))
	}
	var b strings.Builder
	n := 0
	for _, p := range progs {
		for _, a := range p.Attentions {
			k, diags := Generate(p, a, Options{})
			require.False(t, diags.HasErrors(), diags.Render())
			if n == 0 {
				// The platform prelude and runtime helpers: everything the
				// full source has before its generated part.
				at := strings.Index(k.Source, generatedMarker)
				require.Positive(t, at)
				b.WriteString(k.Source[:at] + gradReadStruct + "\n")
			}
			fmt.Fprintf(&b, "namespace case%d {\n", n)
			for _, ln := range strings.Split(k.Generated, "\n") {
				if !strings.HasPrefix(ln, "#define ") && ln != gradReadStruct {
					b.WriteString(ln + "\n")
				}
			}
			fmt.Fprintf(&b, "%s}\nextern \"C\" __global__ void maskc_grad_probe%d(MaskcBuffers buf, long long n, float* out, MaskcScoreGradRead* reads) {\n", hipsrc.Frame, n)
			fmt.Fprintf(&b, "  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n")
			fmt.Fprintf(&b, "  out[i] = case%d::maskc_score_grad(buf, 1, n, n, n, n, out[i], 0, i %% n, i, n - 1 - i %% n, reads + i * %d);\n}\n", n, max(k.ScoreGradReads, 1))
			n++
		}
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "grad.cu"), []byte(b.String()), 0o644))
	for _, arch := range hipTargets {
		args := append([]string{"-x", "hip", "--cuda-device-only", "--no-gpu-bundle-output", "-c"}, hipsrc.HIPOptions(arch)...)
		args = append(args, "-o", "grad-"+arch+".o", "grad.cu")
		cmd := exec.Command(hipcc, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "hipcc %s\n%s", strings.Join(args, " "), out)
		dis, err := exec.Command(objdump, "-d", filepath.Join(dir, "grad-"+arch+".o")).CombinedOutput()
		require.NoError(t, err, "%s", dis)
		for i := range n {
			assert.Contains(t, string(dis), fmt.Sprintf("<maskc_grad_probe%d>:", i), arch)
		}
	}
	t.Logf("hipcc built maskc_score_grad of %d scores for %v", n, hipTargets)
}
