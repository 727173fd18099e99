package eval

import (
	"testing"

	"github.com/maskc/maskc/dsl"
)

// documentCausal is `doc[q] == doc[kv] and q >= kv` over documents of 64
// tokens in a sequence of n.
func documentCausal(n int) (*Func, *Env) {
	doc := NewTensor(n)
	for i := range doc.Data {
		doc.Data[i] = float64(i / 64)
	}
	l := mask(bin(dsl.OpAnd, cmp(dsl.OpEQ, index("doc", q), index("doc", kv)), cmp(dsl.OpGE, q, kv)), buffer("doc", "i32", ident("KV")))
	return mustCompile(l), &Env{B: 1, H: 1, HKV: 1, Q: int64(n), KV: int64(n), Buffers: map[string]*Tensor{"doc": doc}}
}

// BenchmarkMaskEval measures one point of a document-causal mask through a
// Bound (the soundness tests' path); ns/op is ns per point.
func BenchmarkMaskEval(b *testing.B) {
	fn, env := documentCausal(1024)
	bd, err := fn.Bind(env)
	if err != nil {
		b.Fatal(err)
	}
	kept := 0
	i := int64(0)
	for b.Loop() {
		i++
		keep, err := bd.Mask(0, 0, (i>>10)&1023, i&1023)
		if err != nil {
			b.Fatal(err)
		}
		if keep {
			kept++
		}
	}
	if b.N > 1<<20 && kept == 0 {
		b.Fatal("no point kept")
	}
}

// BenchmarkMaskEvalUnbound measures Func.Mask, which binds the Env on
// every call.
func BenchmarkMaskEvalUnbound(b *testing.B) {
	fn, env := documentCausal(1024)
	i := int64(0)
	for b.Loop() {
		i++
		if _, err := fn.Mask(env, 0, 0, (i>>10)&1023, i&1023); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScoreEval measures a tanh softcap score mod per point.
func BenchmarkScoreEval(b *testing.B) {
	fn := mustCompile(score(bin(dsl.OpMul, flit(30), call("tanh", bin(dsl.OpDiv, scoreVar, flit(30))))))
	bd, err := fn.Bind(&Env{B: 1, H: 1, HKV: 1, Q: 1024, KV: 1024})
	if err != nil {
		b.Fatal(err)
	}
	i := int64(0)
	for b.Loop() {
		i++
		if _, err := bd.Score(float64(i&255)*0.1, 0, 0, (i>>10)&1023, i&1023); err != nil {
			b.Fatal(err)
		}
	}
}
