package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/grad"
	"github.com/maskc/maskc/harness"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime"
)

// Limits of `maskc run --backward`.
const (
	// deterministicRuns is how many backward runs --deterministic compares.
	deterministicRuns = 3
	// bwdFlopsFactor counts the backward as this many forwards (the usual
	// convention: five matrix products against two, at 2.5x).
	bwdFlopsFactor = 2.5
)

// bwdTensors are the backward's device tensors beyond the forward's.
type bwdTensors struct {
	dO, dLSE, dq, dk, dv runtime.DevicePtr
	dbufs                []runtime.DevicePtr
	dbufNames            []string
	dbufElems            []int
	qBytes, kvBytes      int64
}

// bwdOutputs are the backward's results read back: dQ, dK, dV widened in
// the kernel's layout, each gradient buffer as fp32, and the raw bytes
// (for bitwise comparisons).
type bwdOutputs struct {
	dq, dk, dv []float64
	dbufs      [][]float64
	raw        [][]byte
}

// backwardInputs draws dO (and dLSE with --dlse), allocates the gradients
// and returns the host copies the reference needs.
func (r *runner) backwardInputs(attn *compiler.Attention, in *hostInputs) (*bwdTensors, *eval.Tensor, *eval.Tensor, error) {
	cfg := r.cfg
	rng := harness.NewRand(cfg.seed ^ 0xb5d)
	dOdev, dORef := harness.Tensor(rng, r.half, r.kernel.Layout, cfg.b, cfg.h, cfg.sq, cfg.d, true)
	t := &bwdTensors{qBytes: int64(len(in.q)) * 2, kvBytes: int64(len(in.k)) * 2}
	var err error
	if t.dO, err = r.alloc(t.qBytes, "dO"); err != nil {
		return nil, nil, nil, err
	}
	if err := r.dev.CopyHtoD(t.dO, halfBytes(dOdev)); err != nil {
		return nil, nil, nil, fmt.Errorf("copying dO to the device: %w", err)
	}
	var dLSERef *eval.Tensor
	if cfg.dlse {
		dLSERef = eval.NewTensor(cfg.b, cfg.h, cfg.sq)
		raw := make([]byte, 4*len(dLSERef.Data))
		for i := range dLSERef.Data {
			x := float32(rng.NormFloat64())
			dLSERef.Data[i] = float64(x)
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
		}
		if t.dLSE, err = r.alloc(int64(len(raw)), "dLSE"); err != nil {
			return nil, nil, nil, err
		}
		if err := r.dev.CopyHtoD(t.dLSE, raw); err != nil {
			return nil, nil, nil, fmt.Errorf("copying dLSE to the device: %w", err)
		}
	}
	for _, x := range []struct {
		p    *runtime.DevicePtr
		n    int64
		name string
	}{{&t.dq, t.qBytes, "dQ"}, {&t.dk, t.kvBytes, "dK"}, {&t.dv, t.kvBytes, "dV"}} {
		if *x.p, err = r.alloc(x.n, x.name); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, name := range attn.GradBuffers() {
		n := cfg.h // the sink: f32[H]
		if tt := in.env.Buffers[name]; tt != nil {
			n = len(tt.Data)
		}
		p, err := r.alloc(int64(4*n), "gradient of "+name)
		if err != nil {
			return nil, nil, nil, err
		}
		t.dbufs, t.dbufNames, t.dbufElems = append(t.dbufs, p), append(t.dbufNames, name), append(t.dbufElems, n)
	}
	return t, dORef, dLSERef, nil
}

// runBackward poisons the gradients with NaN, runs the backward and reads
// the results back.
func (r *runner) runBackward(attn *compiler.Attention, t *deviceTensors, bt *bwdTensors, sizes compiler.Sizes) (*bwdOutputs, error) {
	for i, x := range append([]runtime.DevicePtr{bt.dq, bt.dk, bt.dv}, bt.dbufs...) {
		n := []int64{bt.qBytes, bt.kvBytes, bt.kvBytes}
		var bytes int64
		if i < 3 {
			bytes = n[i]
		} else {
			bytes = int64(4 * bt.dbufElems[i-3])
		}
		if err := r.dev.Memset(x, 0xff, bytes); err != nil {
			return nil, fmt.Errorf("poisoning the gradients: %w", err)
		}
	}
	if err := attn.Backward(r.stream, bt.dO, t.q, t.k, t.v, t.o, t.lse, bt.dLSE, bt.dq, bt.dk, bt.dv, bt.dbufs, sizes, r.cfg.deterministic); err != nil {
		return nil, err
	}
	if err := r.dev.SynchronizeStream(r.stream); err != nil {
		return nil, fmt.Errorf("backward: %w", err)
	}
	out := &bwdOutputs{}
	read := func(p runtime.DevicePtr, n int64, what string) ([]byte, error) {
		b := make([]byte, n)
		if err := r.dev.CopyDtoH(b, p); err != nil {
			return nil, fmt.Errorf("copying %s to the host: %w", what, err)
		}
		out.raw = append(out.raw, b)
		return b, nil
	}
	for _, x := range []struct {
		p    runtime.DevicePtr
		n    int64
		dst  *[]float64
		name string
	}{{bt.dq, bt.qBytes, &out.dq, "dQ"}, {bt.dk, bt.kvBytes, &out.dk, "dK"}, {bt.dv, bt.kvBytes, &out.dv, "dV"}} {
		b, err := read(x.p, x.n, x.name)
		if err != nil {
			return nil, err
		}
		*x.dst = make([]float64, len(b)/2)
		for i := range *x.dst {
			(*x.dst)[i] = float64(r.half.Decode(binary.LittleEndian.Uint16(b[2*i:])))
		}
	}
	for i, p := range bt.dbufs {
		b, err := read(p, int64(4*bt.dbufElems[i]), "the gradient of "+bt.dbufNames[i])
		if err != nil {
			return nil, err
		}
		g := make([]float64, bt.dbufElems[i])
		for j := range g {
			g[j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:])))
		}
		out.dbufs = append(out.dbufs, g)
	}
	return out, nil
}

// backward runs `--backward`: the gradients for random dO (and dLSE),
// checked for unwritten values, against the float64 reference (--check),
// for bitwise reproducibility (--deterministic) and timed (--bench).
func (r *runner) backward(attn *compiler.Attention, in *hostInputs, t *deviceTensors, sizes compiler.Sizes, forward func() error) (bool, error) {
	cfg := r.cfg
	bt, dORef, dLSERef, err := r.backwardInputs(attn, in)
	if err != nil {
		return false, err
	}
	mode := "atomic dQ"
	if cfg.deterministic {
		mode = "deterministic"
	}
	grads := "dQ, dK, dV"
	if len(bt.dbufNames) > 0 {
		grads += ", d" + strings.Join(bt.dbufNames, ", d")
	}
	t0 := time.Now()
	out, err := r.runBackward(attn, t, bt, sizes)
	if err != nil {
		return false, err
	}
	nan, total := 0, 0
	for _, xs := range append([][]float64{out.dq, out.dk, out.dv}, out.dbufs...) {
		nan += countNaN(xs)
		total += len(xs)
	}
	failed := nan > 0
	verdict := "ok"
	if failed {
		verdict = "FAIL"
	}
	fmt.Fprintf(r.e.stdout, "backward (%s, dLSE %v): %s: %d of %d gradient values left unwritten (NaN) in %s (%s)\n", mode, cfg.dlse, verdict, nan, total, grads, ms(time.Since(t0)))
	if cfg.check {
		pass, err := r.checkBackward(in, out, bt, dORef, dLSERef)
		if err != nil {
			return false, err
		}
		failed = failed || !pass
	}
	if cfg.deterministic {
		same := 0
		for run := 1; run < deterministicRuns; run++ {
			again, err := r.runBackward(attn, t, bt, sizes)
			if err != nil {
				return false, err
			}
			if slices.EqualFunc(out.raw, again.raw, bytes.Equal) {
				same++
			}
		}
		verdict := "PASS"
		if same != deterministicRuns-1 {
			verdict, failed = "FAIL", true
		}
		fmt.Fprintf(r.e.stdout, "deterministic: %d of %d further runs bitwise equal to the first (%s): %s\n", same, deterministicRuns-1, grads, verdict)
	}
	if cfg.bench {
		if err := r.benchBackward(attn, in, t, bt, sizes, forward); err != nil {
			return false, err
		}
	}
	return !failed, nil
}

// checkBackward compares the gradients with eval.AttentionBackward.
// dQ, dK and dV pass under the tolerance in relative error. A buffer or
// sink gradient is a sum of terms that may cancel (an ALiBi slope's
// dS * (kv - q) sums to almost nothing row by row), so that the bf16
// rounding of O inside delta, not the kernel, sets its relative error; it
// passes under the tolerance relative to the norm of the sum of its terms'
// magnitudes, and its plain relative error is printed beside it.
func (r *runner) checkBackward(in *hostInputs, out *bwdOutputs, bt *bwdTensors, dORef, dLSERef *eval.Tensor) (bool, error) {
	cfg := r.cfg
	t0 := time.Now()
	spec := eval.AttentionSpec{Scale: r.kernel.Scale, Sink: in.sink, Env: in.env}
	var gf *eval.GradFunc
	var err error
	if r.kernel.Mask != nil {
		if spec.Mask, err = eval.Compile(r.kernel.Mask); err != nil {
			return false, r.locate(err)
		}
	}
	if r.kernel.Score != nil {
		if spec.Score, err = eval.Compile(r.kernel.Score); err != nil {
			return false, r.locate(err)
		}
		g, err := grad.Differentiate(r.kernel.Score)
		if err != nil {
			return false, fmt.Errorf("reference: the score's gradient: %w", err)
		}
		if gf, err = eval.CompileGrad(g); err != nil {
			return false, r.locate(err)
		}
	}
	want, err := eval.AttentionBackward(spec, gf, in.qRef, in.kRef, in.vRef, dORef, dLSERef)
	if err != nil {
		return false, r.locate(err)
	}
	pass := true
	var parts []string
	for _, x := range []struct {
		name  string
		got   []float64
		want  *eval.Tensor
		heads int
		seq   int
	}{{"dQ", out.dq, want.DQ, cfg.h, cfg.sq}, {"dK", out.dk, want.DK, cfg.hkv, cfg.skv}, {"dV", out.dv, want.DV, cfg.hkv, cfg.skv}} {
		e := compare(r.toBHSD(x.got, x.heads, x.seq), x.want.Data)
		pass = pass && e.rel < checkTolerance
		parts = append(parts, fmt.Sprintf("%s %.2e", x.name, e.rel))
	}
	for i, name := range bt.dbufNames {
		w, mag := want.DBufs[name], want.DBufsAbs[name]
		if w == nil { // the sink
			w, mag = &eval.Tensor{Data: want.DSink}, &eval.Tensor{Data: want.DSinkAbs}
		}
		e := compare(out.dbufs[i], w.Data)
		em := compareScaled(out.dbufs[i], w.Data, mag.Data)
		pass = pass && em < checkTolerance
		parts = append(parts, fmt.Sprintf("d%s %.2e of its terms' magnitude (plain %.2e)", name, em, e.rel))
	}
	verdict := "PASS"
	if !pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(r.e.stdout, "check backward: rel err %s; tolerance %.0e, float64 reference in %s: %s\n", strings.Join(parts, ", "), checkTolerance, ms(time.Since(t0)), verdict)
	return pass, nil
}

// compareScaled returns ||got - want|| / ||mag|| (NaN: +Inf; mag zero: the
// absolute norm).
func compareScaled(got, want, mag []float64) float64 {
	var num, den float64
	for i, w := range want {
		d := got[i] - w
		if math.IsNaN(d) {
			return math.Inf(1)
		}
		num += d * d
		den += mag[i] * mag[i]
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}

// toBHSD reorders a [B, seq, heads, D] result of a bshd kernel to [B,
// heads, seq, D]; bhsd results are returned as they are.
func (r *runner) toBHSD(x []float64, heads, seq int) []float64 {
	if r.kernel.Layout != hipsrc.LayoutBSHD {
		return x
	}
	D := r.cfg.d
	out := make([]float64, len(x))
	for b := 0; b < r.cfg.b; b++ {
		for h := 0; h < heads; h++ {
			for s := 0; s < seq; s++ {
				copy(out[((b*heads+h)*seq+s)*D:][:D], x[((b*seq+s)*heads+h)*D:][:D])
			}
		}
	}
	return out
}

// benchBackward times the backward alone and forward + backward, counting
// the backward as bwdFlopsFactor forwards over the unmasked pairs.
func (r *runner) benchBackward(attn *compiler.Attention, in *hostInputs, t *deviceTensors, bt *bwdTensors, sizes compiler.Sizes, forward func() error) error {
	backward := func() error {
		return attn.Backward(r.stream, bt.dO, t.q, t.k, t.v, t.o, t.lse, bt.dLSE, bt.dq, bt.dk, bt.dv, bt.dbufs, sizes, r.cfg.deterministic)
	}
	both := func() error {
		if err := forward(); err != nil {
			return err
		}
		return backward()
	}
	pairs, how, err := r.countPairs(in)
	if err != nil {
		return err
	}
	for _, x := range []struct {
		name   string
		fn     func() error
		factor float64
	}{{"backward", backward, bwdFlopsFactor}, {"forward+backward", both, 1 + bwdFlopsFactor}} {
		for i := 0; i < benchWarmup; i++ {
			if err := x.fn(); err != nil {
				return err
			}
		}
		times := make([]float64, r.cfg.iters)
		for i := range times {
			ms, err := r.dev.TimeMs(r.stream, x.fn)
			if err != nil {
				return fmt.Errorf("timing the %s: %w", x.name, err)
			}
			times[i] = float64(ms)
		}
		slices.Sort(times)
		median := times[len(times)/2]
		line := fmt.Sprintf("bench %s: median %.4f ms, min %.4f ms over %d calls", x.name, median, times[0], len(times))
		if pairs >= 0 {
			flops := x.factor * 4 * float64(r.cfg.d) * pairs
			line += fmt.Sprintf("; %.1f TFLOP/s (backward counted %.1fx the forward's FLOPs) over %.0f unmasked pairs (%s)", flops/(median*1e-3)/1e12, bwdFlopsFactor, pairs, how)
		} else {
			line += "; " + how
		}
		fmt.Fprintln(r.e.stdout, line)
	}
	return nil
}
