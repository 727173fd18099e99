package eval

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/grad"
)

// backwardCase builds the reference spec of the only attention block of a
// .flex program, with random buffers (gradEnv) and sink.
func backwardCase(t *testing.T, src string, rng *rand.Rand, sz [5]int) (AttentionSpec, *GradFunc, *Env) {
	t.Helper()
	p := checkFlex(t, src, nil)
	a := p.Attentions[0]
	env := &Env{B: int64(sz[0]), H: int64(sz[1]), HKV: int64(sz[2]), Q: int64(sz[3]), KV: int64(sz[4]), Buffers: map[string]*Tensor{}}
	sizes := map[dsl.Var]int64{dsl.SizeB: env.B, dsl.SizeH: env.H, dsl.SizeHKV: env.HKV, dsl.SizeQ: env.Q, dsl.SizeKV: env.KV}
	for _, b := range p.Buffers {
		dims := make([]int, len(b.Dims))
		for i, d := range b.Dims {
			dims[i] = int(d.Eval(sizes))
		}
		env.Buffers[b.Name] = randTensor(rng, dims...)
	}
	spec := AttentionSpec{Env: env, Scale: 0.7}
	var gf *GradFunc
	if a.Mask != nil {
		spec.Mask = mustCompile(a.Mask)
	}
	if a.Score != nil {
		spec.Score = mustCompile(a.Score)
		g, err := grad.Differentiate(a.Score)
		require.NoError(t, err)
		gf, err = CompileGrad(g)
		require.NoError(t, err)
	}
	if a.Sink != nil {
		spec.Sink = env.Buffers[a.Sink.Name].Data
	}
	return spec, gf, env
}

func randTensor(rng *rand.Rand, dims ...int) *Tensor {
	t := NewTensor(dims...)
	for i := range t.Data {
		t.Data[i] = rng.NormFloat64()
	}
	return t
}

// TestAttentionBackwardFD checks every gradient AttentionBackward returns
// (q, k, v, the score's float buffers, the sink) against central
// differences of the loss sum(out * dO) + sum(lse * dLSE) computed by the
// forward reference, on masks with fully masked rows, GQA, a relative-bias
// table, a per-head slope and a sink.
func TestAttentionBackwardFD(t *testing.T) {
	cases := []struct {
		name, src string
		dLSE      bool
	}{
		{"relative bias, causal, sink", `
buffer bias: f32[H, Q + KV - 1]
buffer sinks: f32[H]
mask causal(b, h, q, kv) = q >= kv
score rel(s, b, h, q, kv) = s + bias[h, q - kv + KV - 1]
attention a { mask = causal
 score = rel
 sink = sinks }
`, true},
		{"alibi slope, window with empty rows", `
buffer slopes: f32[H]
mask win(b, h, q, kv) = kv - q >= 2 and kv - q <= 4
score alibi(s, b, h, q, kv) = s + slopes[h] * (kv - q)
attention a { mask = win
 score = alibi }
`, false},
		{"per-head temperature and softcap", `
buffer temp: f32[H]
score t(s, b, h, q, kv) = 3.0 * tanh(s * temp[h] / 3.0)
attention a { score = t }
`, true},
		{"no score, no mask", `attention a { causal = false }
`, true},
	}
	rng := rand.New(rand.NewPCG(12, 34))
	const B, H, HKV, Q, KV, D = 2, 4, 2, 5, 7, 3
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, gf, env := backwardCase(t, tc.src, rng, [5]int{B, H, HKV, Q, KV})
			q, k, v := randTensor(rng, B, H, Q, D), randTensor(rng, B, HKV, KV, D), randTensor(rng, B, HKV, KV, D)
			dO := randTensor(rng, B, H, Q, D)
			var dLSE *Tensor
			if tc.dLSE {
				dLSE = randTensor(rng, B, H, Q)
			}
			g, err := AttentionBackward(spec, gf, q, k, v, dO, dLSE)
			require.NoError(t, err)
			loss := func() float64 {
				out, lse, err := Attention(spec, q, k, v)
				require.NoError(t, err)
				l := 0.0
				for i, x := range out.Data {
					l += x * dO.Data[i]
				}
				if dLSE != nil {
					for i, x := range lse.Data {
						if !math.IsInf(x, -1) {
							l += x * dLSE.Data[i]
						}
					}
				}
				return l
			}
			check := func(what string, data []float64, got []float64) {
				t.Helper()
				for i := range data {
					old := data[i]
					const h = 1e-6
					data[i] = old + h
					hi := loss()
					data[i] = old - h
					lo := loss()
					data[i] = old
					fd := (hi - lo) / (2 * h)
					if math.Abs(fd-got[i]) > 1e-6*math.Max(1, math.Abs(fd)) {
						t.Errorf("%s[%d]: analytic %.10g, central difference %.10g", what, i, got[i], fd)
					}
				}
			}
			check("dq", q.Data, g.DQ.Data)
			check("dk", k.Data, g.DK.Data)
			check("dv", v.Data, g.DV.Data)
			for name, d := range g.DBufs {
				check("d"+name, env.Buffers[name].Data, d.Data)
			}
			if spec.Sink != nil {
				check("dsink", spec.Sink, g.DSink)
			}
			nonzero := 0
			for _, x := range g.DQ.Data {
				if x != 0 {
					nonzero++
				}
			}
			require.Greater(t, nonzero, len(g.DQ.Data)/3, "dq is mostly zero: the check would prove little")
		})
	}
}

// TestAttentionBackwardEmptyRowsAreZero: a row that sees nothing gets
// exact zero gradients, never NaN, and bad inputs are refused.
func TestAttentionBackwardEmptyRowsAreZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	spec, gf, env := backwardCase(t, `
mask none(b, h, q, kv) = q < 0
attention a { mask = none }
`, rng, [5]int{1, 1, 1, 3, 4})
	_ = env
	q, k, v, dO := randTensor(rng, 1, 1, 3, 2), randTensor(rng, 1, 1, 4, 2), randTensor(rng, 1, 1, 4, 2), randTensor(rng, 1, 1, 3, 2)
	g, err := AttentionBackward(spec, gf, q, k, v, dO, nil)
	require.NoError(t, err)
	for _, d := range [][]float64{g.DQ.Data, g.DK.Data, g.DV.Data} {
		for _, x := range d {
			require.Equal(t, 0.0, x)
		}
	}
	_, err = AttentionBackward(spec, gf, q, k, v, randTensor(rng, 1, 1, 3, 3), nil)
	require.ErrorIs(t, err, ErrShape)
	spec.Rows = []int{0}
	_, err = AttentionBackward(spec, gf, q, k, v, dO, nil)
	require.ErrorIs(t, err, ErrShape)
}
