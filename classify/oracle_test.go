package classify

import (
	"fmt"
	"github.com/maskc/maskc/codegen"
	"math"
	"math/rand"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/normal/normaltest"
	"github.com/maskc/maskc/parser"
)

// This file is the test oracle: the kernels' semantics implemented once,
// straight from turbo-contract.md, and the comparison of every claim the
// classifier makes with the reference evaluator.

// kernelVisible is the dense kernels' mask (turbo-contract.md, "Semantics
// that decide exactness"): causal and window_size are aligned bottom-right,
// row i of sq may see key j of skv when j <= i + skv - sq (causal) and
// j lies in [i + skv - sq - left, i + skv - sq + right], -1 unbounded.
func kernelVisible(causal bool, left, right, sq, skv, i, j int64) bool {
	off := skv - sq
	if causal && j > i+off {
		return false
	}
	if left >= 0 && j < i+off-left {
		return false
	}
	if right >= 0 && j > i+off+right {
		return false
	}
	return true
}

// kernelAlibi is the bias the kernel adds: -slope * |i + skv - sq - j|.
func kernelAlibi(slope float64, sq, skv, i, j int64) float64 {
	return -slope * math.Abs(float64(i+skv-sq-j))
}

// runs splits one batch row of a segments buffer into documents as
// PLAN.md derives cu_seqlens: a new run starts wherever the id changes.
// It returns, per token, the start and length of its run.
func runs(doc []int64) (start, length []int64) {
	start = make([]int64, len(doc))
	length = make([]int64, len(doc))
	s := 0
	for t := 1; t <= len(doc); t++ {
		if t == len(doc) || doc[t] != doc[t-1] {
			for u := s; u < t; u++ {
				start[u], length[u] = int64(s), int64(t-s)
			}
			s = t
		}
	}
	return start, length
}

// kernel is a decision's Turbo call, made concrete for one shape and one
// set of buffer contents.
type kernel struct {
	d             *Decision
	causal        bool
	left, right   int64
	sq, skv       int64
	start, length [][]int64 // varlen: per batch, per token
}

func newKernel(t *testing.T, d *Decision, e *eval.Env) *kernel {
	t.Helper()
	k := &kernel{d: d, sq: e.Q, skv: e.KV}
	k.causal, _ = d.Kwargs["causal"].(bool)
	w, ok := d.Kwargs["window_size"].([]int64)
	if !ok || len(w) != 2 {
		t.Fatalf("%s: window_size %v", d.Name, d.Kwargs["window_size"])
	}
	k.left, k.right = w[0], w[1]
	if d.Segments != "" {
		for _, key := range []string{"cu_seqlens_q", "cu_seqlens_k"} {
			if d.Kwargs[key] != d.Segments {
				t.Fatalf("%s: %s = %v, want the segments buffer %s", d.Name, key, d.Kwargs[key], d.Segments)
			}
		}
		buf := e.Buffers[d.Segments]
		for b := int64(0); b < e.B; b++ {
			row := make([]int64, buf.Dims[len(buf.Dims)-1])
			for u := range row {
				if len(buf.Dims) == 2 {
					row[u] = int64(buf.At(int(b), u))
				} else {
					row[u] = int64(buf.At(u))
				}
			}
			s, l := runs(row)
			k.start, k.length = append(k.start, s), append(k.length, l)
		}
	}
	return k
}

// visible says whether the call lets (b, i) see (b, j).
func (k *kernel) visible(b, i, j int64) bool {
	if k.start == nil {
		return kernelVisible(k.causal, k.left, k.right, k.sq, k.skv, i, j)
	}
	s, l := k.start[b], k.length[b]
	if s[i] != s[j] {
		return false
	}
	return kernelVisible(k.causal, k.left, k.right, l[i], l[i], i-s[i], j-s[j])
}

// preconditionsHold evaluates a decision's preconditions for a shape.
func preconditionsHold(t *testing.T, d *Decision, e *eval.Env) bool {
	for _, p := range d.Preconditions {
		switch p {
		case "sq == skv":
			if e.Q != e.KV {
				return false
			}
		default:
			t.Fatalf("%s: unknown precondition %q", d.Name, p)
		}
	}
	return true
}

// compileSrc parses, checks and classifies a .flex text.
func compileSrc(t testing.TB, name, src string, target *Profile) (*check.Program, *Plan, dsl.Diagnostics) {
	t.Helper()
	f, diags := parser.ParseFile(name, []byte(src))
	if diags.HasErrors() {
		t.Fatalf("parse %s:\n%s\n%s", name, diags.Render(), src)
	}
	p, diags := check.Check(f, check.Options{})
	if diags.HasErrors() {
		t.Fatalf("check %s:\n%s\n%s", name, diags.Render(), src)
	}
	plan, cd := Classify(p, Options{Target: target})
	return p, plan, cd
}

// checker compares one program's plan and diagnostics with the evaluator.
type oracle struct {
	t       *testing.T
	prog    *check.Program
	plan    *Plan
	diags   dsl.Diagnostics
	rng     *rand.Rand
	maxRun  int
	checked map[string]int // points compared per claim kind
	bad     int
	maxBad  int
	// formLimit, when > 0, checks canonical forms only at shapes with
	// Q, KV <= formLimit (the pattern claims are checked at every shape).
	formLimit int64
	// kernels, when set, are codegen's kernels of the attention blocks
	// (nil where it refuses one), whose block sparsity is checked too
	// (consumers_test.go).
	kernels []*codegen.Kernel
}

func (o *oracle) failf(format string, args ...any) {
	o.bad++
	if o.bad <= o.maxBad {
		o.t.Errorf(format, args...)
	}
}

// diagFor returns the diagnostic with code for attention a, if any.
func (o *oracle) diagFor(a *check.Attention, code dsl.Code) *dsl.Diagnostic {
	for _, d := range o.diags {
		if d.Code == code && a.Decl != nil && d.Span.Start >= a.Decl.Sp.Start && d.Span.End <= a.Decl.Sp.End {
			return d
		}
	}
	return nil
}

// verifyShape checks every claim of every decision at one shape, over
// every (b, h, q, kv).
func (o *oracle) verifyShape(B, H, Q, KV int64) {
	e := &eval.Env{B: B, H: H, HKV: H, Q: Q, KV: KV}
	normaltest.FillBuffers(o.prog, e, o.rng, o.maxRun)
	for i, a := range o.prog.Attentions {
		d := o.plan.Attentions[i]
		var mask *eval.Bound
		if a.Mask != nil {
			fn, err := eval.Compile(a.Mask)
			if err != nil {
				o.t.Fatalf("%s: %v", a.Name, err)
			}
			if mask, err = fn.Bind(e); err != nil {
				o.t.Fatalf("%s: %v", a.Name, err)
			}
		}
		if o.kernels != nil && o.kernels[i] != nil && mask != nil {
			o.verifySparsity(a, o.kernels[i], e, mask)
		}
		var fe *normaltest.FormEval
		if !d.Form.TooComplex && (o.formLimit == 0 || (Q <= o.formLimit && KV <= o.formLimit)) {
			fe = normaltest.NewFormEval(o.t, d.Form, a.Mask, e)
		}
		var k *kernel
		if d.Pattern != PatternGenerated && preconditionsHold(o.t, d, e) {
			k = newKernel(o.t, d, e)
		}
		never := o.diagFor(a, CodeNeverTrue) != nil
		firstEmpty, lastEmpty := int64(0), int64(0)
		if w := o.diagFor(a, CodeEmptyFirstRows); w != nil {
			firstEmpty = d.Form.Terms[0].Bounds[0].Lo
		}
		if w := o.diagFor(a, CodeEmptyLastRows); w != nil && Q == KV {
			lastEmpty = -d.Form.Terms[0].Bounds[0].Hi
		}
		if fe == nil && k == nil && !never && firstEmpty == 0 && lastEmpty == 0 {
			continue // no claim about this block at this shape
		}
		for b := int64(0); b < B; b++ {
			for h := int64(0); h < H; h++ {
				for q := int64(0); q < Q; q++ {
					for kv := int64(0); kv < KV; kv++ {
						want := settingsVisible(a, Q, KV, q, kv)
						if mask != nil {
							v, err := mask.Mask(b, h, q, kv)
							if err != nil {
								continue // the mask itself is undefined here
							}
							want = v
						}
						if fe != nil {
							if got, ok := fe.At(e, b, h, q, kv); ok {
								o.checked["form"]++
								if got != want {
									o.failf("%s: canonical form %q = %v, evaluator %v at B=%d H=%d Q=%d KV=%d (b=%d h=%d q=%d kv=%d)\n%s",
										a.Name, d.Form, got, want, B, H, Q, KV, b, h, q, kv, o.src(a))
								}
							}
						}
						if k != nil {
							o.checked[d.Pattern]++
							if got := k.visible(b, q, kv); got != want {
								o.failf("%s: %s %v says visible=%v, evaluator %v at Q=%d KV=%d (b=%d h=%d q=%d kv=%d)\n%s",
									a.Name, d.Entry, d.Kwargs, got, want, Q, KV, b, h, q, kv, o.src(a))
							}
							if want && d.Score != ScoreNone && d.Score != "" {
								o.checkScore(a, d, e, b, h, q, kv)
							}
						}
						if never && want {
							o.failf("%s: E100 says never true, evaluator true at Q=%d KV=%d (b=%d h=%d q=%d kv=%d)\n%s", a.Name, Q, KV, b, h, q, kv, o.src(a))
						}
						if never {
							o.checked["never-true"]++
						}
						if want && (q < firstEmpty || q >= Q-lastEmpty) {
							o.failf("%s: empty-row warning, but row %d sees kv=%d at Q=%d KV=%d\n%s", a.Name, q, kv, Q, KV, o.src(a))
						}
						if q < firstEmpty || q >= Q-lastEmpty {
							o.checked["empty-rows"]++
						}
					}
				}
			}
		}
	}
}

// settingsVisible is what trainer-style settings mean: the kernel's own
// causal flag and window, so the contract's semantics; true without them.
func settingsVisible(a *check.Attention, sq, skv, i, j int64) bool {
	causal := a.Causal != nil && *a.Causal
	left, right := int64(-1), int64(-1)
	if a.Window != nil {
		left, right = a.Window[0], a.Window[1]
	}
	return kernelVisible(causal, left, right, sq, skv, i, j)
}

// checkScore compares the kernel's score with the evaluator's at a visible
// pair.
func (o *oracle) checkScore(a *check.Attention, d *Decision, e *eval.Env, b, h, q, kv int64) {
	if a.Score == nil {
		return
	}
	fn, err := eval.Compile(a.Score)
	if err != nil {
		o.t.Fatalf("%s: %v", a.Name, err)
	}
	s := 0.37*float64(q%7) - 0.91*float64(kv%5) + 0.25
	want, err := fn.Score(e, s, b, h, q, kv)
	if err != nil {
		return
	}
	var got float64
	switch d.Score {
	case ScoreAlibi:
		buf := e.Buffers[d.Kwargs["alibi_slopes"].(string)]
		var slope float64
		if len(buf.Dims) == 2 {
			slope = buf.At(int(b), int(h))
		} else {
			slope = buf.At(int(h))
		}
		got = s + kernelAlibi(slope, e.Q, e.KV, q, kv)
	case ScoreSoftcap:
		c := d.Kwargs["softcap"].(float64)
		got = c * math.Tanh(s/c)
	case ScoreScale:
		// The kernel computes q.k * softmax_scale; the score mod saw
		// q.k * base. Compare on the same q.k.
		base := 1 / math.Sqrt(float64(a.HeadDim))
		if a.Scale != nil {
			base = *a.Scale
		}
		got = s / base * d.Kwargs["softmax_scale"].(float64)
	default:
		o.failf("%s: unexpected score %q on a Turbo entry", a.Name, d.Score)
		return
	}
	o.checked["score-"+d.Score]++
	if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
		o.failf("%s: kernel score %v, evaluator %v at q=%d kv=%d (score %s)\n%s", a.Name, got, want, q, kv, d.Score, o.src(a))
	}
}

func (o *oracle) src(a *check.Attention) string {
	if a.Mask == nil {
		return ""
	}
	return fmt.Sprintf("mask: %s", format.Expr(a.Mask.Expr))
}
