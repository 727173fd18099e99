package eval

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/maskc/maskc/dsl"
)

func tensor(dims []int, data ...float64) *Tensor { return &Tensor{Dims: dims, Data: data} }

func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

func checkTensor(t *testing.T, what string, got *Tensor, want []float64) {
	t.Helper()
	if len(got.Data) != len(want) {
		t.Fatalf("%s has %d elements, want %d", what, len(got.Data), len(want))
	}
	for i := range want {
		if !near(got.Data[i], want[i]) {
			t.Errorf("%s = %v, want %v", what, got.Data, want)
			return
		}
	}
}

// handInputs is the hand-computed case: B=H=HKV=1, Q=2, KV=3, D=Dv=2,
//
//	q = [[1,0],[0,1]]  k = [[1,0],[0,1],[1,1]]  v = [[1,0],[0,1],[2,2]]
//
// and scale ln 2, so that the logits are multiples of ln 2:
//
//	row 0: q.k = [1,0,1] -> exp = [2,1,2], sum 5, p = [.4,.2,.4]
//	       out = .4*[1,0] + .2*[0,1] + .4*[2,2] = [1.2, 1.0], lse = ln 5
//	row 1: q.k = [0,1,1] -> exp = [1,2,2], sum 5, p = [.2,.4,.4]
//	       out = .2*[1,0] + .4*[0,1] + .4*[2,2] = [1.0, 1.2], lse = ln 5
//
// With the causal mask q >= kv, row 0 keeps kv 0 only (out = v0 = [1,0],
// lse = ln 2) and row 1 keeps kv 0 and 1 (exp = [1,2], p = [1/3, 2/3],
// out = [1/3, 2/3], lse = ln 3).
func handInputs() (q, k, v *Tensor) {
	return tensor([]int{1, 1, 2, 2}, 1, 0, 0, 1),
		tensor([]int{1, 1, 3, 2}, 1, 0, 0, 1, 1, 1),
		tensor([]int{1, 1, 3, 2}, 1, 0, 0, 1, 2, 2)
}

func TestAttentionHandComputed(t *testing.T) {
	causal := mustCompile(mask(cmp(dsl.OpGE, q, kv)))
	nothingKept := mustCompile(mask(blit(false)))
	firstRowMasked := mustCompile(mask(cmp(dsl.OpGE, q, ilit(1))))
	ln := math.Log
	tests := []struct {
		name     string
		spec     AttentionSpec
		out, lse []float64
	}{
		{"no mask", AttentionSpec{Scale: ln(2)}, []float64{1.2, 1.0, 1.0, 1.2}, []float64{ln(5), ln(5)}},
		{"causal", AttentionSpec{Mask: causal, Scale: ln(2)}, []float64{1, 0, 1.0 / 3, 2.0 / 3}, []float64{ln(2), ln(3)}},
		// A sink of ln 5 adds 5 to each denominator: row 0 p = [.2,.1,.2],
		// out = [.2+.4, .1+.4] = [.6, .5], lse = ln 10; row 1 likewise
		// [.5, .6].
		{"sink", AttentionSpec{Scale: ln(2), Sink: []float64{ln(5)}}, []float64{0.6, 0.5, 0.5, 0.6}, []float64{ln(10), ln(10)}},
		{"fully masked", AttentionSpec{Mask: nothingKept, Scale: ln(2)}, []float64{0, 0, 0, 0}, []float64{math.Inf(-1), math.Inf(-1)}},
		{"fully masked with a sink", AttentionSpec{Mask: nothingKept, Scale: ln(2), Sink: []float64{0.25}}, []float64{0, 0, 0, 0}, []float64{0.25, 0.25}},
		{"first row masked", AttentionSpec{Mask: firstRowMasked, Scale: ln(2)}, []float64{0, 0, 1.0, 1.2}, []float64{math.Inf(-1), ln(5)}},
		// The score mod where(q >= kv, score, -inf) is the causal mask.
		{"causal as a score", AttentionSpec{Score: mustCompile(score(call("where", cmp(dsl.OpGE, q, kv), scoreVar, neg(flit(inf))))), Scale: ln(2)},
			[]float64{1, 0, 1.0 / 3, 2.0 / 3}, []float64{ln(2), ln(3)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qt, kt, vt := handInputs()
			out, lse, err := Attention(tt.spec, qt, kt, vt)
			if err != nil {
				t.Fatal(err)
			}
			checkTensor(t, "out", out, tt.out)
			checkTensor(t, "lse", lse, tt.lse)
		})
	}
}

// TestAttentionDefaultScale checks that Scale 0 means 1/sqrt(D).
func TestAttentionDefaultScale(t *testing.T) {
	qt, kt, vt := handInputs()
	o1, l1, err1 := Attention(AttentionSpec{}, qt, kt, vt)
	o2, l2, err2 := Attention(AttentionSpec{Scale: 1 / math.Sqrt(2)}, qt, kt, vt)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	checkTensor(t, "out", o1, o2.Data)
	checkTensor(t, "lse", l1, l2.Data)
}

// TestAttentionStable checks that large logits do not overflow: three
// equal logits of 1000 give the mean of v and lse = 1000 + ln 3.
func TestAttentionStable(t *testing.T) {
	qt := tensor([]int{1, 1, 1, 1}, 1000)
	kt := tensor([]int{1, 1, 3, 1}, 1, 1, 1)
	vt := tensor([]int{1, 1, 3, 1}, 1, 2, 6)
	out, lse, err := Attention(AttentionSpec{Scale: 1}, qt, kt, vt)
	if err != nil {
		t.Fatal(err)
	}
	checkTensor(t, "out", out, []float64{3})
	checkTensor(t, "lse", lse, []float64{1000 + math.Log(3)})
}

func randomTensor(r *rand.Rand, dims ...int) *Tensor {
	t := NewTensor(dims...)
	for i := range t.Data {
		t.Data[i] = r.NormFloat64()
	}
	return t
}

// slice returns x[b, h] of a [B, H, S, D] tensor as a [1, 1, S, D] tensor.
func slice(x *Tensor, b, h int) *Tensor {
	s, d := x.Dims[2], x.Dims[3]
	off := (b*x.Dims[1] + h) * s * d
	return tensor([]int{1, 1, s, d}, x.Data[off:off+s*d]...)
}

// TestAttentionGQA checks the head mapping: with H=4 and HKV=2, query
// heads 0 and 1 read kv head 0, heads 2 and 3 kv head 1 (h / (H/HKV), not
// h % HKV), each equal to a single-head attention on those slices.
func TestAttentionGQA(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	B, H, HKV, Q, KV, D, Dv := 2, 4, 2, 3, 5, 4, 3
	qt, kt, vt := randomTensor(r, B, H, Q, D), randomTensor(r, B, HKV, KV, D), randomTensor(r, B, HKV, KV, Dv)
	causal := mustCompile(mask(cmp(dsl.OpGE, bin(dsl.OpAdd, q, ilit(2)), kv)))
	env := &Env{B: int64(B), H: int64(H), HKV: int64(HKV), Q: int64(Q), KV: int64(KV)}
	out, lse, err := Attention(AttentionSpec{Mask: causal, Env: env}, qt, kt, vt)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Dims; len(got) != 4 || got[0] != B || got[1] != H || got[2] != Q || got[3] != Dv {
		t.Fatalf("out dims %v", got)
	}
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			o1, l1, err := Attention(AttentionSpec{Mask: causal}, slice(qt, b, h), slice(kt, b, h/2), slice(vt, b, h/2))
			if err != nil {
				t.Fatal(err)
			}
			checkTensor(t, "out head", slice(out, b, h), o1.Data)
			checkTensor(t, "lse head", tensor([]int{Q}, lse.Data[(b*H+h)*Q:][:Q]...), l1.Data)
			wrong, _, _ := Attention(AttentionSpec{Mask: causal}, slice(qt, b, h), slice(kt, b, h%HKV), slice(vt, b, h%HKV))
			if h/2 != h%HKV && near(wrong.Data[0], o1.Data[0]) {
				t.Errorf("b=%d h=%d: the h %% HKV mapping gives the same answer; the test data cannot tell them apart", b, h)
			}
		}
	}
}

// TestAttentionSoftcap compares a tanh softcap score mod with the formula
// computed directly: p_j = exp(c tanh(s_j / c)) / sum.
func TestAttentionSoftcap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	Q, KV, D := 3, 4, 2
	qt, kt, vt := randomTensor(r, 1, 1, Q, D), randomTensor(r, 1, 1, KV, D), randomTensor(r, 1, 1, KV, D)
	const c, scale = 2.0, 3.0 // a small cap and a large scale so the cap bites
	softcap := mustCompile(score(bin(dsl.OpMul, flit(c), call("tanh", bin(dsl.OpDiv, scoreVar, flit(c))))))
	out, lse, err := Attention(AttentionSpec{Score: softcap, Scale: scale}, qt, kt, vt)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < Q; i++ {
		var w [4]float64
		sum := 0.0
		for j := 0; j < KV; j++ {
			s := scale * (qt.At(0, 0, i, 0)*kt.At(0, 0, j, 0) + qt.At(0, 0, i, 1)*kt.At(0, 0, j, 1))
			w[j] = math.Exp(c * math.Tanh(s/c))
			sum += w[j]
		}
		for d := 0; d < D; d++ {
			want := 0.0
			for j := 0; j < KV; j++ {
				want += w[j] / sum * vt.At(0, 0, j, d)
			}
			if got := out.At(0, 0, i, d); !near(got, want) {
				t.Errorf("out[%d,%d] = %v, want %v", i, d, got, want)
			}
		}
		if got, want := lse.At(0, 0, i), math.Log(sum); !near(got, want) {
			t.Errorf("lse[%d] = %v, want %v", i, got, want)
		}
	}
}

// TestAttentionMaskedLanesDoNotReadBuffers checks that the score mod runs
// only on kept pairs: score + rel[q - kv] would read index -1 above the
// diagonal, which the causal mask removes.
func TestAttentionMaskedLanesDoNotReadBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	rel := buffer("rel", "f32", ident("KV"))
	env := &Env{B: 1, H: 1, HKV: 1, Q: 4, KV: 4, Buffers: map[string]*Tensor{"rel": tensor([]int{4}, 0, -1, -2, -3)}}
	qt, kt, vt := randomTensor(r, 1, 1, 4, 2), randomTensor(r, 1, 1, 4, 2), randomTensor(r, 1, 1, 4, 2)
	spec := AttentionSpec{
		Mask:  mustCompile(mask(cmp(dsl.OpGE, q, kv))),
		Score: mustCompile(score(bin(dsl.OpAdd, scoreVar, index("rel", bin(dsl.OpSub, q, kv))), rel)),
		Env:   env,
	}
	if _, _, err := Attention(spec, qt, kt, vt); err != nil {
		t.Fatalf("masked lanes were evaluated: %v", err)
	}
	spec.Mask = nil
	if _, _, err := Attention(spec, qt, kt, vt); !errors.Is(err, ErrIndexOutOfRange) {
		t.Fatalf("without the mask: err = %v, want ErrIndexOutOfRange", err)
	}
}

// TestAttentionShapeErrors checks that inconsistent inputs are refused.
func TestAttentionShapeErrors(t *testing.T) {
	qt, kt, vt := handInputs()
	tests := []struct {
		name    string
		spec    AttentionSpec
		q, k, v *Tensor
	}{
		{"nil q", AttentionSpec{}, nil, kt, vt},
		{"3-d k", AttentionSpec{}, qt, tensor([]int{1, 3, 2}, 1, 0, 0, 1, 1, 1), vt},
		{"head dim", AttentionSpec{}, qt, tensor([]int{1, 1, 2, 3}, 1, 0, 0, 1, 1, 1), vt},
		{"v length", AttentionSpec{}, qt, kt, tensor([]int{1, 1, 2, 2}, 1, 0, 0, 1)},
		{"short data", AttentionSpec{}, tensor([]int{1, 1, 2, 2}, 1), kt, vt},
		{"H not a multiple of HKV", AttentionSpec{}, tensor([]int{1, 3, 1, 2}, 1, 0, 0, 1, 1, 1), tensor([]int{1, 2, 1, 2}, 1, 0, 0, 1), tensor([]int{1, 2, 1, 2}, 1, 0, 0, 1)},
		{"sink length", AttentionSpec{Sink: []float64{1, 2}}, qt, kt, vt},
		{"env sizes", AttentionSpec{Env: &Env{B: 1, H: 1, HKV: 1, Q: 2, KV: 4}}, qt, kt, vt},
	}
	for _, tt := range tests {
		if _, _, err := Attention(tt.spec, tt.q, tt.k, tt.v); !errors.Is(err, ErrShape) {
			t.Errorf("%s: err = %v, want ErrShape", tt.name, err)
		}
	}
}

// TestAttentionRows checks that computing selected query rows gives those
// rows of the full result, in the order asked, and that a row outside the
// queries is a shape error.
func TestAttentionRows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	B, H, HKV, Q, KV, D := 2, 4, 2, 7, 5, 4
	qt, kt, vt := randomTensor(r, B, H, Q, D), randomTensor(r, B, HKV, KV, D), randomTensor(r, B, HKV, KV, D)
	causal := mustCompile(mask(cmp(dsl.OpGE, q, kv)))
	sink := []float64{0.5, -1, 2, 0}
	full, fullLSE, err := Attention(AttentionSpec{Mask: causal, Sink: sink}, qt, kt, vt)
	if err != nil {
		t.Fatal(err)
	}
	rows := []int{6, 0, 3}
	out, lse, err := Attention(AttentionSpec{Mask: causal, Sink: sink, Rows: rows}, qt, kt, vt)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Dims; got[2] != len(rows) || lse.Dims[2] != len(rows) {
		t.Fatalf("dims %v %v", out.Dims, lse.Dims)
	}
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for ri, i := range rows {
				checkTensor(t, "row", tensor([]int{D}, out.Data[((b*H+h)*len(rows)+ri)*D:][:D]...), full.Data[((b*H+h)*Q+i)*D:][:D])
				checkTensor(t, "lse", tensor([]int{1}, lse.Data[(b*H+h)*len(rows)+ri]), []float64{fullLSE.Data[(b*H+h)*Q+i]})
			}
		}
	}
	if _, _, err := Attention(AttentionSpec{Rows: []int{Q}}, qt, kt, vt); !errors.Is(err, ErrShape) {
		t.Errorf("row %d: %v", Q, err)
	}
}
