package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/harness"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime"
	"github.com/maskc/maskc/runtime/host"
	"github.com/maskc/maskc/runtime/kcache"
)

// Limits of `maskc run`.
const (
	// checkTolerance is the largest relative error of O and LSE that
	// --check accepts for bf16 and fp16 kernels.
	checkTolerance = 1e-2
	// maxSampledRows is the most query rows --check samples when the
	// reference of every row is over checkWorkLimit.
	maxSampledRows = 256
	// minSampledRows is the fewest: below it --check is refused.
	minSampledRows = 8
	// maxTensorElems bounds each of Q, K, V and O, which are drawn on the
	// host.
	maxTensorElems = 1 << 30
	// maxCountPairs bounds the mask evaluations --bench spends counting
	// unmasked pairs exactly.
	maxCountPairs = 1 << 27
	// benchWarmup is the number of untimed forward calls before timing.
	benchWarmup = 3
	// maxShownValues is the longest buffer printed in full.
	maxShownValues = 24
)

// checkWorkLimit bounds B*H*rows*Skv*D for the float64 CPU reference of
// --check, about 4 flops each (seconds at this limit); above it rows are
// sampled. A variable so that tests can exercise sampling cheaply.
var checkWorkLimit int64 = 1 << 31

// openDevice opens the GPU; tests replace it with a fake device.
var openDevice = func() (*runtime.Device, error) { return runtime.Open(runtime.Options{}) }

// runConfig is a parsed `maskc run` command line.
type runConfig struct {
	path, attention    string
	b, h, hkv, sq, skv int
	d                  int
	dtype              string
	check, bench       bool
	backward, dlse     bool
	deterministic      bool
	iters              int
	seed               uint64
	target             string
	defines            defineFlags
	buffers            bufferFlags
}

// runRun implements `maskc run FILE --attention NAME --shape B,H,S,D`:
// it generates the block's kernel, runs it on the GPU on random inputs with
// poisoned outputs, and optionally checks it against the float64 reference
// (--check) and times it (--bench).
func runRun(e *env, args []string) int {
	cfg, code, ok := parseRunArgs(e, args)
	if !ok {
		return code
	}
	u, cu, status := buildPlan(e, cfg.path, cfg.target, cfg.defines)
	if cu == nil {
		return status
	}
	plan := cu.Plan
	a, dec, code, ok := pickAttention(e, cfg, u, plan)
	if !ok {
		return code
	}
	if a.KVHeads != 0 && cfg.hkv != 0 && cfg.hkv != a.KVHeads {
		return usageError(e.stderr, "--kv-heads %d, but attention %s declares kv_heads = %d", cfg.hkv, a.Name, a.KVHeads)
	}
	if cfg.hkv == 0 {
		cfg.hkv = orDefault(a.KVHeads, cfg.h)
	}
	if cfg.h%cfg.hkv != 0 {
		return usageError(e.stderr, "H = %d is not a multiple of the kv heads %d", cfg.h, cfg.hkv)
	}
	if a.HeadDim != 0 && a.HeadDim != cfg.d {
		return usageError(e.stderr, "--shape gives D = %d, but attention %s declares head_dim = %d", cfg.d, a.Name, a.HeadDim)
	}
	unit := cu.WithKernel(codegen.Options{HeadDim: cfg.d, DType: cfg.dtype, SourceName: cfg.path})
	k, kd := unit.Kernel(a.Name)
	if kd.HasErrors() {
		printDiags(e.stderr, kd)
		return exitError
	}
	fmt.Fprintf(e.stdout, "attention %s: %s\n", a.Name, planSummary(dec))
	fmt.Fprintf(e.stdout, "kernel: %s %s head_dim %d %s, sparsity %s, scale %.6g\n", k.Name, k.DType, k.HeadDim, k.Layout, k.Sparsity, k.Scale)

	r := &runner{e: e, cfg: cfg, unit: unit, prog: u.prog, attn: a, kernel: k}
	return r.run()
}

// orDefault returns v, or def when v is zero.
func orDefault(v, def int) int {
	if v != 0 {
		return v
	}
	return def
}

// parseRunArgs reads and validates the command line.
func parseRunArgs(e *env, args []string) (*runConfig, int, bool) {
	fs := newFlagSet(e, "run", "FILE --attention NAME --shape B,H,S,D [--kv-heads N] [--dtype bf16|fp16] [--sq N] [--skv N] [--check] [--bench] [--backward [--dlse] [--deterministic]] [--seed N] [-D NAME=VALUE]... [--buffer NAME=v0,v1,...]...")
	cfg := &runConfig{defines: defineFlags{}, buffers: bufferFlags{}}
	fs.StringVar(&cfg.attention, "attention", "", "attention block to run (may be left out when the file has one)")
	shape := fs.String("shape", "", "problem size `B,H,S,D`: batch, query heads, sequence length, head dimension")
	fs.IntVar(&cfg.hkv, "kv-heads", 0, "key/value heads for GQA (default: the block's kv_heads, else H)")
	fs.StringVar(&cfg.dtype, "dtype", "", "bf16 or fp16 (default: the block's dtype)")
	fs.IntVar(&cfg.sq, "sq", 0, "query length (default S)")
	fs.IntVar(&cfg.skv, "skv", 0, "key/value length (default S)")
	fs.BoolVar(&cfg.check, "check", false, "compare O and LSE with the float64 CPU reference; exit 1 unless the relative errors are below 1e-2")
	fs.BoolVar(&cfg.bench, "bench", false, "time the forward with device events and report TFLOP/s over unmasked pairs")
	fs.IntVar(&cfg.iters, "iters", 20, "timed forward calls for --bench")
	fs.BoolVar(&cfg.backward, "backward", false, "also run the backward for random dO: dQ, dK, dV and the buffer and sink gradients (with --check against the float64 reference, with --bench timed, backward counted 2.5x the forward's FLOPs)")
	fs.BoolVar(&cfg.dlse, "dlse", false, "with --backward: pass a random gradient of the LSE too")
	fs.BoolVar(&cfg.deterministic, "deterministic", false, "with --backward: deterministic mode (dQ without atomics), run 3 times and checked bitwise equal")
	seed := fs.String("seed", "", "random seed for inputs and default buffers (default: from the clock)")
	fs.StringVar(&cfg.target, "target", "", "Turbo target profile for the plan (see 'maskc targets')")
	fs.Var(cfg.defines, "D", "override a param: `NAME=VALUE` (repeatable)")
	fs.Var(cfg.buffers, "buffer", "contents of a captured buffer, row-major: `NAME=v0,v1,...` or NAME=@FILE (repeatable; default random)")
	files, code, ok := parseArgs(fs, args)
	if !ok {
		return nil, code, false
	}
	if len(files) != 1 {
		return nil, usageError(e.stderr, "run takes exactly one FILE"), false
	}
	cfg.path = files[0]
	if *shape == "" {
		return nil, usageError(e.stderr, "run needs --shape B,H,S,D"), false
	}
	dims, err := parseShape(*shape)
	if err != nil {
		return nil, usageError(e.stderr, "--shape %s: %v", *shape, err), false
	}
	cfg.b, cfg.h, cfg.d = dims[0], dims[1], dims[3]
	cfg.sq, cfg.skv = orDefault(cfg.sq, dims[2]), orDefault(cfg.skv, dims[2])
	switch {
	case !hipsrc.HeadDimSupported(cfg.d):
		return nil, usageError(e.stderr, "head dimension D = %d: generated kernels support %s", cfg.d, hipsrc.HeadDimList()), false
	case cfg.sq < 1 || cfg.skv < 1 || cfg.hkv < 0:
		return nil, usageError(e.stderr, "--sq, --skv must be positive and --kv-heads non-negative"), false
	case cfg.dtype != "" && cfg.dtype != "bf16" && cfg.dtype != "fp16":
		return nil, usageError(e.stderr, "--dtype %s: want bf16 or fp16", cfg.dtype), false
	case cfg.iters < 1 || cfg.iters > 100000:
		return nil, usageError(e.stderr, "--iters must be between 1 and 100000"), false
	case int64(cfg.b)*int64(cfg.h)*int64(max(cfg.sq, cfg.skv))*int64(cfg.d) > maxTensorElems:
		return nil, usageError(e.stderr, "shape too large: B*H*S*D must be at most %d elements per tensor", maxTensorElems), false
	}
	if (cfg.dlse || cfg.deterministic) && !cfg.backward {
		return nil, usageError(e.stderr, "--dlse and --deterministic need --backward"), false
	}
	if work := int64(cfg.b) * int64(cfg.h) * int64(cfg.sq) * int64(cfg.skv) * int64(cfg.d); cfg.check && cfg.backward && work > checkWorkLimit {
		return nil, usageError(e.stderr, "--backward --check computes every row's gradient on the CPU in float64: B*H*Sq*Skv*D = %d is above the limit %d; use a smaller shape", work, checkWorkLimit), false
	}
	if work := int64(cfg.b) * int64(cfg.h) * int64(min(cfg.sq, minSampledRows)) * int64(cfg.skv) * int64(cfg.d); cfg.check && work > checkWorkLimit {
		return nil, usageError(e.stderr, "--check computes the reference on the CPU in float64: B*H*%d*Skv*D = %d (for %d sampled rows) is above the limit %d; use a smaller shape", min(cfg.sq, minSampledRows), work, min(cfg.sq, minSampledRows), checkWorkLimit), false
	}
	if *seed == "" {
		cfg.seed = uint64(time.Now().UnixNano())
	} else if cfg.seed, err = strconv.ParseUint(*seed, 10, 64); err != nil {
		return nil, usageError(e.stderr, "--seed %s: want a non-negative integer", *seed), false
	}
	return cfg, 0, true
}

// parseShape reads "B,H,S,D" as four positive integers.
func parseShape(s string) ([4]int, error) {
	var out [4]int
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return out, errors.New("want four comma-separated sizes B,H,S,D")
	}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > math.MaxInt32 {
			return out, fmt.Errorf("%q is not a positive integer", p)
		}
		out[i] = n
	}
	return out, nil
}

// pickAttention finds the block --attention names (or the only one).
func pickAttention(e *env, cfg *runConfig, u *unit, plan *classify.Plan) (*check.Attention, *classify.Decision, int, bool) {
	var names []string
	for _, a := range u.prog.Attentions {
		names = append(names, a.Name)
	}
	name := cfg.attention
	if name == "" {
		if len(names) != 1 {
			return nil, nil, usageError(e.stderr, "%s has %d attention blocks; choose one with --attention (%s)", cfg.path, len(names), strings.Join(names, ", ")), false
		}
		name = names[0]
	}
	a := u.prog.Attention(name)
	if a == nil {
		return nil, nil, usageError(e.stderr, "%s: no attention block named %q (have %s)", cfg.path, name, strings.Join(names, ", ")), false
	}
	for _, d := range plan.Attentions {
		if d.Name == name {
			return a, d, 0, true
		}
	}
	return nil, nil, usageError(e.stderr, "attention %s is not in the plan", name), false
}

// planSummary says what the plan does with the block and which kernel runs.
func planSummary(d *classify.Decision) string {
	switch {
	case d.Pattern == compiler.Generated:
		return "the plan runs a generated kernel (" + d.Reason + ")"
	case d.Fallback == compiler.Generated:
		return fmt.Sprintf("the plan calls Turbo %s (%s) when %s; running maskc's generated fallback kernel", d.Entry, d.Pattern, strings.Join(d.Preconditions, " and "))
	}
	return fmt.Sprintf("the plan calls Turbo %s (%s); running maskc's generated kernel for it anyway", d.Entry, d.Pattern)
}

// printRunError prints diagnostics in full and other errors on one line,
// returning exitError.
func printRunError(e *env, err error) int {
	var diags dsl.Diagnostics
	if errors.As(err, &diags) {
		printDiags(e.stderr, diags)
	} else {
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
	}
	return exitError
}

// runner carries one `maskc run` through the device.
type runner struct {
	e      *env
	cfg    *runConfig
	unit   *compiler.Unit
	prog   *check.Program
	attn   *check.Attention
	kernel *codegen.Kernel
	half   host.Half

	dev    *runtime.Device
	stream runtime.Stream
	allocs []runtime.DevicePtr
}

// hostInputs are the drawn inputs, in the kernel's layout for the device
// and as float64 bhsd tensors (the values the kernel sees) for the
// reference.
type hostInputs struct {
	q, k, v          []uint16
	qRef, kRef, vRef *eval.Tensor
	env              *eval.Env
	sink             []float64
	buffers          map[string][]byte // device bytes by buffer name
}

func (r *runner) run() int {
	cfg := r.cfg
	var err error
	if r.half, err = host.ParseHalf(r.kernel.DType); err != nil {
		return printRunError(r.e, err)
	}
	t0 := time.Now()
	r.dev, err = openDevice()
	if err != nil {
		return printRunError(r.e, err)
	}
	defer r.dev.Close()
	info := r.dev.Info()
	fmt.Fprintf(r.e.stdout, "device: %s (%s %s, %s), opened in %s\n", info.Name, info.Backend, info.Arch, info.DriverVersion, ms(time.Since(t0)))
	if err := r.dev.CacheError(); err != nil {
		fmt.Fprintf(r.e.stdout, "cache: off: %v\n", err)
	}
	t1 := time.Now()
	attn, err := r.unit.Load(r.dev, r.attn.Name)
	if err != nil {
		return printRunError(r.e, err)
	}
	defer attn.Close()
	st := attn.CompileStats()
	wall := time.Since(t1)
	if st.Cache == kcache.Hit {
		fmt.Fprintf(r.e.stdout, "compile: cache hit, loaded in %s (%s %d KiB for %s from %s)\n", ms(wall), st.Image, st.ImageBytes>>10, st.Arch, r.dev.CacheDir())
	} else {
		fmt.Fprintf(r.e.stdout, "compile: cold, %s (compiler %s, load %s, %s %d KiB for %s; cache %s)\n", ms(wall), ms(st.Compile), ms(st.Load), st.Image, st.ImageBytes>>10, st.Arch, st.Cache)
	}
	if st.CacheErr != nil {
		fmt.Fprintf(r.e.stdout, "cache: %v\n", st.CacheErr)
	}

	fmt.Fprintf(r.e.stdout, "shape: B=%d H=%d HKV=%d Sq=%d Skv=%d D=%d %s, seed %d\n", cfg.b, cfg.h, cfg.hkv, cfg.sq, cfg.skv, cfg.d, r.kernel.Layout, cfg.seed)
	in, err := r.drawInputs()
	if err != nil {
		return printRunError(r.e, err)
	}
	if r.stream, err = r.dev.NewStream(); err != nil {
		return printRunError(r.e, err)
	}
	defer r.dev.DestroyStream(r.stream)
	defer r.freeAll()
	t, err := r.upload(attn, in)
	if err != nil {
		return printRunError(r.e, err)
	}
	sizes := compiler.Sizes{B: cfg.b, H: cfg.h, HKV: cfg.hkv, Sq: cfg.sq, Skv: cfg.skv}
	forward := func() error { return attn.Forward(r.stream, t.q, t.k, t.v, t.o, t.lse, sizes) }
	if err := forward(); err != nil {
		return printRunError(r.e, err)
	}
	if err := r.dev.SynchronizeStream(r.stream); err != nil {
		return printRunError(r.e, fmt.Errorf("forward: %w", err))
	}
	out, lse, err := r.download(t)
	if err != nil {
		return printRunError(r.e, err)
	}
	unwrittenO, unwrittenL := countNaN(out), countNaN(lse)
	result := "ok"
	if unwrittenO+unwrittenL > 0 {
		result = "FAIL"
	}
	fmt.Fprintf(r.e.stdout, "forward: %s: %d of %d O values and %d of %d LSE values left unwritten (NaN)\n", result, unwrittenO, len(out), unwrittenL, len(lse))
	failed := unwrittenO+unwrittenL > 0
	if cfg.check {
		pass, err := r.check(in, out, lse)
		if err != nil {
			return printRunError(r.e, err)
		}
		failed = failed || !pass
	}
	if cfg.bench {
		if err := r.bench(in, forward); err != nil {
			return printRunError(r.e, err)
		}
	}
	if cfg.backward {
		pass, err := r.backward(attn, in, t, sizes, forward)
		if err != nil {
			return printRunError(r.e, err)
		}
		failed = failed || !pass
	}
	if failed {
		return exitError
	}
	return exitOK
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

// drawInputs draws Q, K, V (normal, rounded to the kernel's dtype), the
// sink and the captured buffers (given with --buffer or random), and
// prints how the buffers were chosen.
func (r *runner) drawInputs() (*hostInputs, error) {
	cfg := r.cfg
	rng := harness.NewRand(cfg.seed)
	in := &hostInputs{buffers: map[string][]byte{}}
	in.env = &eval.Env{B: int64(cfg.b), H: int64(cfg.h), HKV: int64(cfg.hkv), Q: int64(cfg.sq), KV: int64(cfg.skv), Buffers: map[string]*eval.Tensor{}}
	draw := func(heads, n int) ([]uint16, *eval.Tensor) {
		return harness.Tensor(rng, r.half, r.kernel.Layout, cfg.b, heads, n, cfg.d, cfg.check)
	}
	in.q, in.qRef = draw(cfg.h, cfg.sq)
	in.k, in.kRef = draw(cfg.hkv, cfg.skv)
	in.v, in.vRef = draw(cfg.hkv, cfg.skv)

	var bufs []*check.Buffer
	for _, b := range r.kernel.Buffers {
		bufs = append(bufs, r.prog.Buffer(b.Name))
	}
	if r.attn.Sink != nil {
		bufs = append(bufs, r.attn.Sink)
	}
	for name := range cfg.buffers {
		if !slices.ContainsFunc(bufs, func(b *check.Buffer) bool { return b.Name == name }) {
			return nil, fmt.Errorf("--buffer %s: attention %s reads no buffer %s", name, r.attn.Name, name)
		}
	}
	sizes := map[dsl.Var]int64{dsl.SizeB: in.env.B, dsl.SizeH: in.env.H, dsl.SizeHKV: in.env.HKV, dsl.SizeQ: in.env.Q, dsl.SizeKV: in.env.KV}
	for _, b := range bufs {
		if b == nil {
			return nil, errors.New("a buffer of the kernel is not declared in the program")
		}
		dims, vals, how, err := bufferValues(cfg, b, sizes, rng)
		if err != nil {
			return nil, err
		}
		data, seen, err := host.EncodeBuffer(b.DType, vals)
		if err != nil {
			return nil, fmt.Errorf("buffer %s: %v", b.Name, err)
		}
		in.buffers[b.Name] = data
		if b == r.attn.Sink {
			in.sink = seen
		} else {
			in.env.Buffers[b.Name] = &eval.Tensor{Dims: dims, Data: seen}
		}
		fmt.Fprintf(r.e.stdout, "buffer %s %s%v: %s\n", b.Name, b.DType, dims, harness.Describe(seen, how, b.Segments, dims, maxShownValues))
	}
	return in, nil
}

// deviceTensors are the device allocations of one run.
type deviceTensors struct {
	q, k, v, o, lse runtime.DevicePtr
}

// alloc allocates n bytes and remembers them for freeAll.
func (r *runner) alloc(n int64, what string) (runtime.DevicePtr, error) {
	p, err := r.dev.Alloc(n)
	if err != nil {
		return 0, fmt.Errorf("allocating %d bytes for %s: %w", n, what, err)
	}
	r.allocs = append(r.allocs, p)
	return p, nil
}

func (r *runner) freeAll() {
	for _, p := range r.allocs {
		if err := r.dev.Free(p); err != nil {
			fmt.Fprintf(r.e.stderr, "maskc: freeing device memory: %v\n", err)
		}
	}
	r.allocs = nil
}

// upload allocates and fills Q, K, V and the buffers, binds the buffers,
// and poisons O and LSE with NaN.
func (r *runner) upload(attn *compiler.Attention, in *hostInputs) (*deviceTensors, error) {
	t := &deviceTensors{}
	var err error
	for _, x := range []struct {
		p    *runtime.DevicePtr
		data []uint16
		name string
	}{{&t.q, in.q, "Q"}, {&t.k, in.k, "K"}, {&t.v, in.v, "V"}} {
		if *x.p, err = r.alloc(int64(len(x.data))*2, x.name); err != nil {
			return nil, err
		}
		if err := r.dev.CopyHtoD(*x.p, halfBytes(x.data)); err != nil {
			return nil, fmt.Errorf("copying %s to the device: %w", x.name, err)
		}
	}
	oBytes := int64(len(in.q)) * 2
	lseBytes := int64(r.cfg.b) * int64(r.cfg.h) * int64(r.cfg.sq) * 4
	if t.o, err = r.alloc(oBytes, "O"); err != nil {
		return nil, err
	}
	if t.lse, err = r.alloc(lseBytes, "LSE"); err != nil {
		return nil, err
	}
	for _, name := range attn.Buffers() {
		data := in.buffers[name]
		p, err := r.alloc(int64(len(data)), "buffer "+name)
		if err != nil {
			return nil, err
		}
		if err := r.dev.CopyHtoD(p, data); err != nil {
			return nil, fmt.Errorf("copying buffer %s to the device: %w", name, err)
		}
		if err := attn.Bind(name, p); err != nil {
			return nil, err
		}
	}
	// 0xff bytes are NaN in bf16, fp16 and fp32.
	if err := r.dev.Memset(t.o, 0xff, oBytes); err != nil {
		return nil, fmt.Errorf("poisoning O: %w", err)
	}
	if err := r.dev.Memset(t.lse, 0xff, lseBytes); err != nil {
		return nil, fmt.Errorf("poisoning LSE: %w", err)
	}
	return t, nil
}

// halfBytes lays out 16-bit values little-endian.
func halfBytes(xs []uint16) []byte {
	out := make([]byte, 2*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint16(out[2*i:], x)
	}
	return out
}

// download reads O (widened, in the kernel's layout) and LSE ([B, H, Sq]).
func (r *runner) download(t *deviceTensors) (out, lse []float64, err error) {
	n := r.cfg.b * r.cfg.h * r.cfg.sq
	ob := make([]byte, n*r.cfg.d*2)
	if err := r.dev.CopyDtoH(ob, t.o); err != nil {
		return nil, nil, fmt.Errorf("copying O to the host: %w", err)
	}
	lb := make([]byte, n*4)
	if err := r.dev.CopyDtoH(lb, t.lse); err != nil {
		return nil, nil, fmt.Errorf("copying LSE to the host: %w", err)
	}
	out = make([]float64, n*r.cfg.d)
	for i := range out {
		out[i] = float64(r.half.Decode(binary.LittleEndian.Uint16(ob[2*i:])))
	}
	lse = make([]float64, n)
	for i := range lse {
		lse[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(lb[4*i:])))
	}
	return out, lse, nil
}

func countNaN(xs []float64) int {
	n := 0
	for _, x := range xs {
		if math.IsNaN(x) {
			n++
		}
	}
	return n
}

// reference computes the float64 reference attention of the inputs
// (eval.Attention) on the given query rows, all when rows is nil: O as
// [B, H, rows, D] and LSE as [B, H, rows].
func (r *runner) reference(in *hostInputs, rows []int) (out, lse []float64, err error) {
	spec := eval.AttentionSpec{Scale: r.kernel.Scale, Sink: in.sink, Env: in.env, Rows: rows}
	var fn *eval.Func
	if r.kernel.Mask != nil {
		if fn, err = eval.Compile(r.kernel.Mask); err != nil {
			return nil, nil, r.locate(err)
		}
		spec.Mask = fn
	}
	if r.kernel.Score != nil {
		if fn, err = eval.Compile(r.kernel.Score); err != nil {
			return nil, nil, r.locate(err)
		}
		spec.Score = fn
	}
	o, l, err := eval.Attention(spec, in.qRef, in.kRef, in.vRef)
	if err != nil {
		return nil, nil, r.locate(err)
	}
	return o.Data, l.Data, nil
}

// locate adds the .flex position to a reference evaluation error.
func (r *runner) locate(err error) error {
	var ee *eval.Error
	if errors.As(err, &ee) {
		return fmt.Errorf("reference: %s", ee.Locate(r.prog.File.Source))
	}
	return fmt.Errorf("reference: %w", err)
}

// errStats summarise the difference of a result from the reference.
type errStats struct {
	rel, maxAbs float64
}

// check compares O and LSE with the reference and prints the errors: on
// every row when the float64 reference fits the work budget, else on rows
// sampled across the sequence (always the first, the last and the ragged
// last query tile).
func (r *runner) check(in *hostInputs, out, lse []float64) (bool, error) {
	cfg := r.cfg
	t0 := time.Now()
	var rows []int
	var wantO, wantL []float64
	what := "all rows"
	if int64(cfg.b)*int64(cfg.h)*int64(cfg.sq)*int64(cfg.skv)*int64(cfg.d) <= checkWorkLimit {
		var err error
		if wantO, wantL, err = r.reference(in, nil); err != nil {
			return false, err
		}
		for i := 0; i < cfg.sq; i++ {
			rows = append(rows, i)
		}
	} else {
		budget := checkWorkLimit / (int64(cfg.b) * int64(cfg.h) * int64(cfg.skv) * int64(cfg.d))
		rows = harness.SampleRows(rand.New(rand.NewPCG(cfg.seed, 1)), cfg.sq, r.kernel.BlockM, int(min(budget, maxSampledRows)))
		var err error
		if wantO, wantL, err = r.reference(in, rows); err != nil {
			return false, err
		}
		what = fmt.Sprintf("%d sampled rows", len(rows))
	}
	gotO, gotL := r.gatherRows(out, lse, rows)
	oErr := compare(gotO, wantO)
	// LSE: the -inf rows (nothing visible) must match exactly.
	var finGot, finWant []float64
	infMismatch, emptyRows := 0, 0
	for i, w := range wantL {
		g := gotL[i]
		if math.IsInf(w, -1) {
			emptyRows++
			if !math.IsInf(g, -1) {
				infMismatch++
			}
			continue
		}
		if math.IsInf(g, 0) {
			infMismatch++
			continue
		}
		finGot, finWant = append(finGot, g), append(finWant, w)
	}
	lErr := compare(finGot, finWant)
	pass := oErr.rel < checkTolerance && lErr.rel < checkTolerance && infMismatch == 0
	verdict := "PASS"
	if !pass {
		verdict = "FAIL"
	}
	fmt.Fprintf(r.e.stdout, "check: O rel err %.2e (max abs %.2e), LSE rel err %.2e (max abs %.2e), %d empty rows, %d LSE -inf mismatches; tolerance %.0e, reference on %s in %s: %s\n",
		oErr.rel, oErr.maxAbs, lErr.rel, lErr.maxAbs, emptyRows, infMismatch, checkTolerance, what, ms(time.Since(t0)), verdict)
	return pass, nil
}

// gatherRows picks the given query rows of O (from the kernel's layout) and
// LSE, ordered [B, H, rows, D] and [B, H, rows].
func (r *runner) gatherRows(out, lse []float64, rows []int) (o, l []float64) {
	cfg, D := r.cfg, r.cfg.d
	o = make([]float64, 0, cfg.b*cfg.h*len(rows)*D)
	l = make([]float64, 0, cfg.b*cfg.h*len(rows))
	for b := 0; b < cfg.b; b++ {
		for h := 0; h < cfg.h; h++ {
			for _, i := range rows {
				at := ((b*cfg.h+h)*cfg.sq + i) * D
				if r.kernel.Layout == hipsrc.LayoutBSHD {
					at = ((b*cfg.sq+i)*cfg.h + h) * D
				}
				o = append(o, out[at:at+D]...)
				l = append(l, lse[(b*cfg.h+h)*cfg.sq+i])
			}
		}
	}
	return o, l
}

// compare returns ||got - want|| / ||want|| (the absolute norm when want
// is zero) and the largest absolute difference; a NaN gives +Inf.
func compare(got, want []float64) errStats {
	var num, den, maxAbs float64
	for i, w := range want {
		d := got[i] - w
		if math.IsNaN(d) {
			return errStats{math.Inf(1), math.Inf(1)}
		}
		num += d * d
		den += w * w
		maxAbs = max(maxAbs, math.Abs(d))
	}
	if den == 0 {
		return errStats{math.Sqrt(num), maxAbs}
	}
	return errStats{math.Sqrt(num / den), maxAbs}
}

// bench times the forward and reports TFLOP/s over the unmasked pairs.
func (r *runner) bench(in *hostInputs, forward func() error) error {
	for i := 0; i < benchWarmup; i++ {
		if err := forward(); err != nil {
			return err
		}
	}
	times := make([]float64, r.cfg.iters)
	for i := range times {
		t, err := r.dev.TimeMs(r.stream, forward)
		if err != nil {
			return fmt.Errorf("timing the forward: %w", err)
		}
		times[i] = float64(t)
	}
	slices.Sort(times)
	median := times[len(times)/2]
	pairs, how, err := r.countPairs(in)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("bench: median %.4f ms, min %.4f ms over %d calls", median, times[0], len(times))
	if pairs >= 0 {
		flops := 4 * float64(r.cfg.d) * pairs
		line += fmt.Sprintf("; %.1f TFLOP/s over %.0f unmasked pairs (%s, %.1f%% of all)", flops/(median*1e-3)/1e12, pairs, how,
			100*pairs/(float64(r.cfg.b)*float64(r.cfg.h)*float64(r.cfg.sq)*float64(r.cfg.skv)))
	} else {
		line += "; " + how
	}
	fmt.Fprintln(r.e.stdout, line)
	return nil
}

// countPairs counts the (b, h, q, kv) the mask keeps, exactly on the host:
// for every (b, h) when the mask reads b or h and that fits the budget,
// else for b = 0, h = 0 scaled to B*H. It returns -1 when even one (b, h)
// is over the budget.
func (r *runner) countPairs(in *hostInputs) (float64, string, error) {
	cfg := r.cfg
	per := int64(cfg.sq) * int64(cfg.skv)
	total := float64(cfg.b) * float64(cfg.h) * float64(per)
	if r.kernel.Mask == nil {
		return total, "no mask", nil
	}
	if per > maxCountPairs {
		return -1, fmt.Sprintf("TFLOP/s not reported: counting %d pairs per (b, h) on the host is over the limit", per), nil
	}
	fn, err := eval.Compile(r.kernel.Mask)
	if err != nil {
		return 0, "", r.locate(err)
	}
	bd, err := fn.Bind(in.env)
	if err != nil {
		return 0, "", r.locate(err)
	}
	nb, nh, how := 1, 1, "counted for b=0 h=0, times B*H"
	if r.kernel.MaskUsesB || r.kernel.MaskUsesH {
		if per*int64(cfg.b)*int64(cfg.h) <= maxCountPairs {
			nb, nh, how = cfg.b, cfg.h, "counted exactly"
		} else {
			how = "estimated from b=0 h=0 (the mask varies with b or h)"
		}
	} else {
		how = "counted exactly"
	}
	count := 0.0
	for b := 0; b < nb; b++ {
		for h := 0; h < nh; h++ {
			for q := 0; q < cfg.sq; q++ {
				for kv := 0; kv < cfg.skv; kv++ {
					ok, err := bd.Mask(int64(b), int64(h), int64(q), int64(kv))
					if err != nil {
						return 0, "", r.locate(err)
					}
					if ok {
						count++
					}
				}
			}
		}
	}
	return count * float64(cfg.b*cfg.h) / float64(nb*nh), how, nil
}

// bufferValues returns buffer b's extents for sizes and its values: those
// given with --buffer (how is "given"), else drawn from rng as harness
// draws a buffer of its kind (how says so).
func bufferValues(cfg *runConfig, b *check.Buffer, sizes map[dsl.Var]int64, rng *rand.Rand) (dims []int, vals []float64, how string, err error) {
	dims = make([]int, len(b.Dims))
	n := 1
	for i, d := range b.Dims {
		x := d.Eval(sizes)
		if x < 1 || x > maxTensorElems {
			return nil, nil, "", fmt.Errorf("buffer %s: extent %d is %d for these sizes", b.Name, i, x)
		}
		dims[i] = int(x)
		n *= dims[i]
		if n > maxTensorElems {
			return nil, nil, "", fmt.Errorf("buffer %s: more than %d elements for these sizes", b.Name, maxTensorElems)
		}
	}
	vals, given := cfg.buffers[b.Name]
	if !given {
		vals, how = harness.Buffer(rng, b.DType, b.Segments, dims, cfg.skv)
		return dims, vals, how, nil
	}
	if len(vals) != n {
		return nil, nil, "", fmt.Errorf("--buffer %s: %d values given, its shape %v holds %d", b.Name, len(vals), dims, n)
	}
	return dims, vals, "given", nil
}
