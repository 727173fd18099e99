package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/grad"
	"github.com/maskc/maskc/parser"
)

// fdResult counts the comparisons of one finite-difference check.
type fdResult struct {
	checked, skipped int
}

// centralDiff returns (f(x+h) - f(x-h)) / 2h and whether f was defined and
// finite on both sides.
func centralDiff(f func(float64) (float64, error), x, h float64) (float64, bool) {
	hi, err1 := f(x + h)
	lo, err2 := f(x - h)
	if err1 != nil || err2 != nil || math.IsInf(hi, 0) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsNaN(lo) {
		return 0, false
	}
	return (hi - lo) / (2 * h), true
}

// compareFD checks an analytic derivative d of f at x against central
// differences in float64. A point where the differences with steps h and
// 16h disagree lies near a kink or a jump (where the derivative is one-sided
// and torch's convention picks a side), and is skipped, as are points where
// f is undefined or not finite.
func compareFD(t *testing.T, what string, f func(float64) (float64, error), x, d float64, r *fdResult) {
	t.Helper()
	h := 1e-6 * math.Max(1, math.Abs(x))
	fd1, ok1 := centralDiff(f, x, h)
	fd2, ok2 := centralDiff(f, x, 16*h)
	scale := math.Max(1, math.Abs(fd1))
	if !ok1 || !ok2 || math.Abs(fd1-fd2) > 1e-4*scale || math.IsNaN(d) || math.IsInf(d, 0) {
		r.skipped++
		return
	}
	r.checked++
	if math.Abs(d-fd1) > 1e-5*math.Max(1, math.Abs(d)) {
		t.Errorf("%s: analytic %.17g, central difference %.17g", what, d, fd1)
	}
}

// checkGradFD compares every derivative of score l with central
// differences at n random points of env: d/d score, and d/d buf[i] for
// every element a differentiable read touches (the sum over the reads of
// that element).
func checkGradFD(t *testing.T, l *dsl.Lowered, env *Env, rng *rand.Rand, n int) fdResult {
	t.Helper()
	var r fdResult
	g, err := grad.Differentiate(l)
	require.NoError(t, err)
	fn, err := Compile(l)
	require.NoError(t, err)
	bg, err := BindGrad(g, env)
	require.NoError(t, err)
	for range n {
		s := rng.NormFloat64() * 3
		b, h := rng.Int64N(env.B), rng.Int64N(env.H)
		q, kv := rng.Int64N(env.Q), rng.Int64N(env.KV)
		ds, reads, err := bg.Grad(s, b, h, q, kv)
		if err != nil {
			r.skipped++
			continue
		}
		where := fmt.Sprintf("%s at score=%v b=%d h=%d q=%d kv=%d", l.Name, s, b, h, q, kv)
		compareFD(t, where+": d/d score", func(x float64) (float64, error) { return fn.Score(env, x, b, h, q, kv) }, s, ds, &r)
		total := map[string]float64{}
		var order []string
		for _, rd := range reads {
			if rd.Outside {
				continue
			}
			k := fmt.Sprintf("%s%v", rd.Buffer, rd.Index)
			if _, ok := total[k]; !ok {
				order = append(order, k)
			}
			total[k] += rd.D
		}
		for _, rd := range reads {
			k := fmt.Sprintf("%s%v", rd.Buffer, rd.Index)
			d, ok := total[k]
			if !ok {
				continue // already compared
			}
			delete(total, k)
			buf := env.Buffers[rd.Buffer]
			idx := make([]int, len(rd.Index))
			for i, x := range rd.Index {
				idx[i] = int(x)
			}
			off, ok := buf.Offset(idx...)
			require.True(t, ok, "%s: read outside %s", where, k)
			orig := buf.Data[off]
			f := func(x float64) (float64, error) {
				buf.Data[off] = x
				defer func() { buf.Data[off] = orig }()
				return fn.Score(env, s, b, h, q, kv)
			}
			compareFD(t, where+": d/d "+k, f, orig, d, &r)
		}
	}
	return r
}

// gradEnv has random float buffers for the declarations of p.
func gradEnv(p *check.Program, rng *rand.Rand) *Env {
	env := &Env{B: 2, H: 3, HKV: 3, Q: 5, KV: 7, Buffers: map[string]*Tensor{}}
	sizes := map[dsl.Var]int64{dsl.SizeB: env.B, dsl.SizeH: env.H, dsl.SizeHKV: env.HKV, dsl.SizeQ: env.Q, dsl.SizeKV: env.KV}
	for _, b := range p.Buffers {
		dims := make([]int, len(b.Dims))
		for i, d := range b.Dims {
			dims[i] = int(d.Eval(sizes))
		}
		t := NewTensor(dims...)
		for i := range t.Data {
			if b.ElemType() == dsl.TypeFloat {
				t.Data[i] = rng.NormFloat64()
			} else {
				t.Data[i] = float64(rng.IntN(3))
			}
		}
		env.Buffers[b.Name] = t
	}
	return env
}

// TestGradFDRules checks the derivative of one score per rule
// (../grad/testdata/scores.flex) against central differences.
func TestGradFDRules(t *testing.T) {
	text, err := os.ReadFile("../grad/testdata/scores.flex")
	require.NoError(t, err)
	p := checkFlex(t, string(text), nil)
	rng := rand.New(rand.NewPCG(1, 2))
	env := gradEnv(p, rng)
	var total fdResult
	for _, m := range p.Mods {
		if m.Kind != dsl.ScoreMod {
			continue
		}
		l, diags := p.LowerMod(m.Name)
		require.False(t, diags.HasErrors(), diags.Render())
		r := checkGradFD(t, l, env, rng, 40)
		total.checked += r.checked
		total.skipped += r.skipped
	}
	t.Logf("%d derivatives compared, %d points skipped", total.checked, total.skipped)
	assert.Greater(t, total.checked, 5*total.skipped, "too many points skipped")
}

// TestGradFDExamples checks the derivatives of every example's scores.
func TestGradFDExamples(t *testing.T) {
	files, err := filepath.Glob("../examples/*.flex")
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	n := 0
	for _, path := range files {
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		p := checkFlex(t, string(text), nil)
		env := gradEnv(p, rng)
		for _, a := range p.Attentions {
			if a.Score == nil {
				continue
			}
			r := checkGradFD(t, a.Score, env, rng, 50)
			assert.GreaterOrEqual(t, r.checked, 45, "%s: %s", path, a.Name)
			n++
		}
	}
	assert.GreaterOrEqual(t, n, 3, "examples with a score")
}

// randScore writes a random score body over score, the float buffers
// slopes[H] and bias[H, KV], the int buffer doc[KV], and the indices, using
// every differentiable construct and the ones that stop a gradient.
func randScore(rng *rand.Rand, depth int) string {
	if depth == 0 || rng.IntN(4) == 0 {
		return []string{"score", "score", "slopes[h]", "bias[h, kv]", "0.5", "2.0", "(q - kv)", "doc[kv]", "bias[h, doc[kv]]"}[rng.IntN(9)]
	}
	e := func() string { return randScore(rng, depth-1) }
	switch rng.IntN(28) {
	case 0:
		return "(" + e() + " + " + e() + ")"
	case 1:
		return "(" + e() + " - " + e() + ")"
	case 2:
		return "(" + e() + " * " + e() + ")"
	case 3:
		return "(" + e() + " / (abs(" + e() + ") + 1.0))"
	case 4:
		return "-" + e()
	case 5:
		return "tanh(" + e() + ")"
	case 6:
		return "exp(tanh(" + e() + "))"
	case 7:
		return "log(abs(" + e() + ") + 0.5)"
	case 8:
		return "sqrt(abs(" + e() + ") + 0.25)"
	case 9:
		return "sigmoid(" + e() + ")"
	case 10:
		return "abs(" + e() + ")"
	case 11:
		return "min(" + e() + ", " + e() + ")"
	case 12:
		return "max(" + e() + ", " + e() + ")"
	case 13:
		return "clamp(" + e() + ", -1.0, 1.5)"
	case 14:
		// Not the same bound twice: clamp(x, c, c) is c, of derivative 1
		// in c, where torch's convention gives the bounds nothing.
		x, lo, hi := e(), e(), e()
		if lo == hi {
			hi += " + 0.5"
		}
		return "clamp(" + x + ", " + lo + ", " + hi + ")"
	case 15:
		return "where(" + e() + " > " + e() + ", " + e() + ", " + e() + ")"
	case 16:
		return "(" + e() + " if " + e() + " < 0.0 else " + e() + ")"
	case 17:
		return "(" + e() + ") ** 2"
	case 18:
		return "(abs(" + e() + ") + 0.5) ** (" + e() + ")"
	case 19:
		return "2.0 ** tanh(" + e() + ")"
	case 20:
		return "(" + e() + " % 1.5)"
	case 21:
		return "(floor(" + e() + ") + " + e() + ")"
	case 22:
		return "exp2(tanh(" + e() + ")) + log2(abs(" + e() + ") + 1.0)"
	case 24:
		return "torch.sin(" + e() + ") * torch.cos(" + e() + ")"
	case 25:
		return "tan(tanh(" + e() + "))" // |argument| < 1 < pi/2: no pole
	case 26:
		return "erf(" + e() + ")"
	case 27:
		return "(" + e() + ").cos() + (" + e() + ").sin()"
	default:
		return "(" + e() + " // 2.0 + " + e() + ")"
	}
}

// TestGradFDRandom is the property test: random scores, random points,
// every derivative against central differences.
func TestGradFDRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	header := "buffer slopes: f32[H]\nbuffer bias: f32[H, KV]\nbuffer doc: i32[KV]\n"
	var total fdResult
	for i := range 300 {
		body := randScore(rng, 4)
		src := header + "score s(score, b, h, q, kv) = " + body + "\n"
		f, diags := parser.ParseFile("random.flex", []byte(src))
		require.False(t, diags.HasErrors(), "%s\n%s", src, diags.Render())
		p, diags := check.Check(f, check.Options{})
		if diags.HasErrors() {
			// Constant folding may refuse a body (e.g. a constant division
			// by zero); those are not scores.
			require.True(t, strings.Contains(diags.Render(), "constant"), "%s\n%s", src, diags.Render())
			continue
		}
		l, diags := p.LowerMod("s")
		require.False(t, diags.HasErrors(), diags.Render())
		env := gradEnv(p, rng)
		r := checkGradFD(t, l, env, rng, 8)
		total.checked += r.checked
		total.skipped += r.skipped
		if t.Failed() {
			t.Fatalf("case %d: %s", i, body)
		}
	}
	t.Logf("%d derivatives compared, %d points skipped", total.checked, total.skipped)
	assert.Greater(t, total.checked, 2000)
	assert.Greater(t, total.checked, 4*total.skipped, "too many points skipped")
}

// TestGradKinks pins the derivative at kinks and special values to
// torch.autograd's conventions (gpu/grad_torch_check.py evaluates the same
// cases with torch).
func TestGradKinks(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		body  string
		score float64
		slope float64 // slopes[h]
		want  float64 // d/d score
		wantS float64 // d/d slopes[h], when the score reads it
	}{
		{"abs(score)", 0, 0, 0, 0},                              // sgn(0) = 0
		{"abs(score)", -2, 0, -1, 0},                            //
		{"min(score, slopes[h])", 1, 1, 0.5, 0.5},               // ties split evenly
		{"max(score, slopes[h])", 1, 1, 0.5, 0.5},               //
		{"max(score, slopes[h])", nan, 1, 1, 1},                 // NaN: no comparison holds, both get it
		{"clamp(score, -1.0, 1.0)", 1, 0, 1, 0},                 // the bounds pass the gradient
		{"clamp(score, -1.0, 1.0)", 1.5, 0, 0, 0},               //
		{"clamp(score, slopes[h], 1.0)", 0.5, 0.5, 1, 0},        // at min: self gets it, min does not
		{"clamp(score, slopes[h], 1.0)", 0.25, 0.5, 0, 1},       //
		{"sqrt(score)", 0, 0, inf, 0},                           // grad / (2 * 0)
		{"where(score > 0, log(score), 0.0)", 0, 0, nan, 0},     // torch's where-NaN: 0 / 0
		{"where(score > 0, score, 0.0)", -1, 0, 0, 0},           // the untaken branch gets 0
		{"score ** 2.0", 0, 0, 0, 0},                            //
		{"score ** 0.5", 0, 0, inf, 0},                          // 0.5 * 0 ** -0.5
		{"score ** slopes[h]", 0, 0, 0, 0},                      // exponent 0: 0; base 0, exponent >= 0: 0
		{"score ** slopes[h]", 0, -1, -inf, -inf},               // -1 * 0 ** -2; d/d exponent: 0 ** -1 * log(0)
		{"0.0 ** score", 2, 0, 0, 0},                            // base 0, exponent >= 0
		{"floor(score) + 2.0 * score", 0.5, 0, 2, 0},            // floor contributes 0
		{"score // 2.0 + score", 3, 0, 1, 0},                    // so does //
		{"score % slopes[h]", 3.5, 2, 1, -1},                    // remainder: other gets -floor(x / y)
		{"score + (score > 0)", 1, 0, 1, 0},                     // a comparison carries nothing
		{"where(q >= kv, score * slopes[h], -inf)", 2, 3, 3, 2}, // q = kv = 0
		{"tanh(score)", 0, 0, 1, 0},                             //
		{"sigmoid(score)", 0, 0, 0.25, 0},                       //
		{"exp2(score)", 0, 0, math.Ln2, 0},                      //
		{"log2(score)", 1, 0, 1 / math.Ln2, 0},                  //
		{"torch.sin(score)", 0, 0, 1, 0},                        // cos(0)
		{"torch.cos(score)", math.Pi / 2, 0, -1, 0},             // -sin(pi / 2)
		{"torch.tan(score)", 0, 0, 1, 0},                        // 1 + tan(0) ** 2
		{"torch.erf(score)", 0, 0, 2 / math.Sqrt(math.Pi), 0},   // 2 / sqrt(pi) * exp(0)
		{"score.sin() * slopes[h]", 0, 3, 3, 0},                 // d/d slopes: sin(0) = 0
		{"torch.cos(score * slopes[h])", 1, 0, 0, 0},            // sin(0) = 0 both ways
		{"score / slopes[h]", 1, 0, inf, -inf},                  // grad / 0; -grad * ((1 / 0) / 0)
	} {
		src := "buffer slopes: f32[H]\nscore s(score, b, h, q, kv) = " + tc.body + "\n"
		p := checkFlex(t, src, nil)
		l, diags := p.LowerMod("s")
		require.False(t, diags.HasErrors(), diags.Render())
		g, err := grad.Differentiate(l)
		require.NoError(t, err)
		slopes := NewTensor(1)
		slopes.Data[0] = tc.slope
		bg, err := BindGrad(g, &Env{B: 1, H: 1, HKV: 1, Q: 1, KV: 1, Buffers: map[string]*Tensor{"slopes": slopes}})
		require.NoError(t, err)
		ds, reads, err := bg.Grad(tc.score, 0, 0, 0, 0)
		require.NoError(t, err, tc.body)
		sameFloat(t, tc.want, ds, "%s at %v: d/d score", tc.body, tc.score)
		var dslope float64
		for _, r := range reads {
			dslope += r.D
		}
		sameFloat(t, tc.wantS, dslope, "%s at %v: d/d slopes[h]", tc.body, tc.score)
	}
}

// sameFloat asserts want == got, NaN matching NaN and ±0 matching either.
func sameFloat(t *testing.T, want, got float64, format string, args ...any) {
	t.Helper()
	if math.IsNaN(want) && math.IsNaN(got) || want == got {
		return
	}
	t.Errorf(format+": want %v, got %v", append(args, want, got)...)
}

// TestGradReadOutside: a read in the branch of `x if c else y` that was not
// taken may lie outside its buffer; it is reported Outside with D = 0, and
// the point evaluates, as the forward does.
func TestGradReadOutside(t *testing.T) {
	p := checkFlex(t, "buffer t: f32[2]\nscore s(score, b, h, q, kv) = t[q] * score if q < 2 else score\n", nil)
	l, _ := p.LowerMod("s")
	g, err := grad.Differentiate(l)
	require.NoError(t, err)
	tt := NewTensor(2)
	tt.Data[0], tt.Data[1] = 3, 5
	bg, err := BindGrad(g, &Env{B: 1, H: 1, HKV: 1, Q: 4, KV: 1, Buffers: map[string]*Tensor{"t": tt}})
	require.NoError(t, err)
	ds, reads, err := bg.Grad(2, 0, 0, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, 5.0, ds)
	require.Len(t, reads, 1)
	assert.Equal(t, ReadGrad{Buffer: "t", Index: []int64{1}, D: 2}, reads[0])
	ds, reads, err = bg.Grad(2, 0, 0, 3, 0)
	require.NoError(t, err)
	assert.Equal(t, 1.0, ds)
	assert.Equal(t, ReadGrad{Buffer: "t", Index: []int64{3}, D: 0, Outside: true}, reads[0])
}

// BenchmarkGrad measures one point of the derivatives of a soft-capped
// score with a relative-position bias through a BoundGrad; ns/op is ns per
// point (d/d score and the one read).
func BenchmarkGrad(b *testing.B) {
	p := checkFlex(b, "buffer bias: f32[H, Q + KV - 1]\nscore s(score, b, h, q, kv) = 30.0 * tanh((score + bias[h, q - kv + KV - 1]) / 30.0)\n", nil)
	l, _ := p.LowerMod("s")
	g, err := grad.Differentiate(l)
	if err != nil {
		b.Fatal(err)
	}
	bias := NewTensor(2, 2*256-1)
	bg, err := BindGrad(g, &Env{B: 1, H: 2, HKV: 2, Q: 256, KV: 256, Buffers: map[string]*Tensor{"bias": bias}})
	if err != nil {
		b.Fatal(err)
	}
	i := int64(0)
	for b.Loop() {
		i++
		if _, _, err := bg.Grad(0.5, 0, i&1, (i>>1)&255, (i>>9)&255); err != nil {
			b.Fatal(err)
		}
	}
}
