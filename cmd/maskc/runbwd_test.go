package main

import (
	"encoding/binary"
	"math"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/grad"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime"
	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/fake"
	"github.com/maskc/maskc/runtime/host"
)

// abiBwdShape mirrors struct MaskcBwdShape (hipsrc.BwdShapeStruct) for the
// fake backward kernels.
type abiBwdShape struct {
	B, H, HKV, Sq, Skv                       int32
	_                                        int32
	QStride, KStride, VStride, OStride       [3]int64
	DOStride, DQStride, DKStride, DVStride   [3]int64
	Scale                                    float32
	_                                        int32
	Sink, TileFlags, LSE, DLSE, Delta, DQAcc uintptr
	DQSem, DSink                             uintptr
	DBuf                                     [8]uintptr
}

// bwdFault makes the fake backward misbehave in a chosen way.
type bwdFault int

const (
	bwdFaultNone      bwdFault = iota
	bwdFaultPerturbDK          // add 0.5 to every dK value
	bwdFaultDrift              // dQ differs in its last bits from call to call
)

// cpuBackward registers fake backward kernels on fb that compute the
// gradients with eval.AttentionBackward from what they read through the
// ABI (the forward's inputs in fake device memory, MaskcBwdShape), and
// write them where the device kernels do: dK, dV directly, dQ through
// dq_acc (atomic mode) or maskc_attn_bwd_dq, buffer gradients as
// fixed-point sums, the sink's from maskc_attn_bwd_sink.
func cpuBackward(t *testing.T, fb *fake.Backend, file, name string, fault bwdFault) {
	u, diags, err := compiler.CompileFile(file, compiler.Options{})
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	if got := unsafe.Sizeof(abiBwdShape{}); int(got) != hipsrc.BwdShapeStruct.Size {
		t.Fatalf("abiBwdShape is %d bytes, MaskcBwdShape %d", got, hipsrc.BwdShapeStruct.Size)
	}
	a := u.Program.Attention(name)
	k, kd := u.Kernel(name)
	if kd.HasErrors() {
		t.Fatal(kd)
	}
	half, _ := host.ParseHalf(k.DType)
	var spec eval.AttentionSpec
	var gf *eval.GradFunc
	if a.Mask != nil {
		spec.Mask, _ = eval.Compile(a.Mask)
	}
	if a.Score != nil {
		spec.Score, _ = eval.Compile(a.Score)
		g, err := grad.Differentiate(a.Score)
		if err != nil {
			t.Fatal(err)
		}
		if gf, err = eval.CompileGrad(g); err != nil {
			t.Fatal(err)
		}
	}
	D := k.HeadDim
	var last *eval.Grads
	calls := 0
	readHalf := func(mem *fake.Backend, p uintptr, st [3]int64, B, heads, n int) (*eval.Tensor, error) {
		out := eval.NewTensor(B, heads, n, D)
		for b := 0; b < B; b++ {
			for h := 0; h < heads; h++ {
				for s := 0; s < n; s++ {
					raw, err := mem.Bytes(backend.DevicePtr(p)+backend.DevicePtr(2*(int64(b)*st[0]+int64(h)*st[1]+int64(s)*st[2])), int64(2*D))
					if err != nil {
						return nil, err
					}
					for d := 0; d < D; d++ {
						out.Set(float64(half.Decode(binary.LittleEndian.Uint16(raw[2*d:]))), b, h, s, d)
					}
				}
			}
		}
		return out, nil
	}
	writeHalf := func(mem *fake.Backend, p uintptr, st [3]int64, x *eval.Tensor, add float64) error {
		B, heads, n := x.Dims[0], x.Dims[1], x.Dims[2]
		for b := 0; b < B; b++ {
			for h := 0; h < heads; h++ {
				for s := 0; s < n; s++ {
					raw, err := mem.Bytes(backend.DevicePtr(p)+backend.DevicePtr(2*(int64(b)*st[0]+int64(h)*st[1]+int64(s)*st[2])), int64(2*D))
					if err != nil {
						return err
					}
					for d := 0; d < D; d++ {
						binary.LittleEndian.PutUint16(raw[2*d:], half.Encode(x.At(b, h, s, d)+add))
					}
				}
			}
		}
		return nil
	}
	floats := func(mem *fake.Backend, p uintptr, n int) ([]float64, error) {
		raw, err := mem.Bytes(backend.DevicePtr(p), int64(4*n))
		if err != nil {
			return nil, err
		}
		return decodeBuffer("f32", raw), nil
	}
	fb.Register(hipsrc.BwdPreEntry, func(*fake.Backend, fake.Launch) error { return nil })
	// maskc_attn_bwd and, where dQ is ordered, maskc_attn_bwd_ordered
	// (ordered): the float64 backward, dQ into dq_acc when it is given.
	main := func(ordered bool) func(mem *fake.Backend, l fake.Launch) error {
		return func(mem *fake.Backend, l fake.Launch) error {
			sh := fake.Param[abiBwdShape](l.Params, 6)
			bufs := fake.Param[abiBuffers](l.Params, 7)
			B, H, HKV, Sq, Skv := int(sh.B), int(sh.H), int(sh.HKV), int(sh.Sq), int(sh.Skv)
			q, err := readHalf(mem, fake.Param[uintptr](l.Params, 0), sh.QStride, B, H, Sq)
			if err != nil {
				return err
			}
			kk, _ := readHalf(mem, fake.Param[uintptr](l.Params, 1), sh.KStride, B, HKV, Skv)
			v, _ := readHalf(mem, fake.Param[uintptr](l.Params, 2), sh.VStride, B, HKV, Skv)
			dO, err := readHalf(mem, fake.Param[uintptr](l.Params, 3), sh.DOStride, B, H, Sq)
			if err != nil {
				return err
			}
			env := &eval.Env{B: int64(B), H: int64(H), HKV: int64(HKV), Q: int64(Sq), KV: int64(Skv), Buffers: map[string]*eval.Tensor{}}
			for i, b := range k.Buffers {
				n := bufs.Dim[i][0] * bufs.Dim[i][1]
				raw, err := mem.Bytes(backend.DevicePtr(bufs.Ptr[i]), n*int64(host.ElemSize(b.DType)))
				if err != nil {
					return err
				}
				dims := []int{int(bufs.Dim[i][0])}
				if len(u.Program.Buffer(b.Name).Dims) == 2 {
					dims = append(dims, int(bufs.Dim[i][1]))
				}
				env.Buffers[b.Name] = &eval.Tensor{Dims: dims, Data: decodeBuffer(b.DType, raw)}
			}
			s := spec
			s.Env, s.Scale = env, float64(sh.Scale)
			if sh.Sink != 0 {
				if s.Sink, err = floats(mem, sh.Sink, H); err != nil {
					return err
				}
			}
			var dLSE *eval.Tensor
			if sh.DLSE != 0 {
				d, err := floats(mem, sh.DLSE, B*H*Sq)
				if err != nil {
					return err
				}
				dLSE = &eval.Tensor{Dims: []int{B, H, Sq}, Data: d}
			}
			g, err := eval.AttentionBackward(s, gf, q, kk, v, dO, dLSE)
			if err != nil {
				return err
			}
			last = g
			calls++
			add := 0.0
			if fault == bwdFaultPerturbDK {
				add = 0.5
			}
			if err := writeHalf(mem, fake.Param[uintptr](l.Params, 4), sh.DKStride, g.DK, add); err != nil {
				return err
			}
			if err := writeHalf(mem, fake.Param[uintptr](l.Params, 5), sh.DVStride, g.DV, 0); err != nil {
				return err
			}
			if sh.DQAcc != 0 {
				raw, err := mem.Bytes(backend.DevicePtr(sh.DQAcc), int64(4*len(g.DQ.Data)))
				if err != nil {
					return err
				}
				drift := 0.0
				if fault == bwdFaultDrift && ordered {
					drift = float64(calls) * 1e-2
				}
				for i, x := range g.DQ.Data {
					binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(x+drift)))
				}
			}
			for i, b := range k.Buffers {
				if sh.DBuf[i] == 0 {
					continue
				}
				d := g.DBufs[b.Name]
				raw, err := mem.Bytes(backend.DevicePtr(sh.DBuf[i]), int64(8*len(d.Data)))
				if err != nil {
					return err
				}
				for j, x := range d.Data {
					old := int64(binary.LittleEndian.Uint64(raw[8*j:]))
					binary.LittleEndian.PutUint64(raw[8*j:], uint64(old+int64(math.Round(x*hipsrc.BwdFixOne))))
				}
			}
			return nil
		}
	}
	fb.Register(hipsrc.BwdMainEntry, main(false))
	fb.Register(hipsrc.BwdMainOrderedEntry, main(true))
	fb.Register(hipsrc.BwdDQEntry, func(mem *fake.Backend, l fake.Launch) error {
		sh := fake.Param[abiBwdShape](l.Params, 5)
		drift := 0.0
		if fault == bwdFaultDrift {
			drift = float64(calls) * 1e-2
		}
		return writeHalf(mem, fake.Param[uintptr](l.Params, 4), sh.DQStride, last.DQ, drift)
	})
	fb.Register(hipsrc.BwdDQConvertEntry, func(mem *fake.Backend, l fake.Launch) error {
		sh := fake.Param[abiBwdShape](l.Params, 1)
		acc, err := floats(mem, sh.DQAcc, len(last.DQ.Data))
		if err != nil {
			return err
		}
		return writeHalf(mem, fake.Param[uintptr](l.Params, 0), sh.DQStride, &eval.Tensor{Dims: last.DQ.Dims, Data: acc}, 0)
	})
	fb.Register(hipsrc.BwdSinkEntry, func(mem *fake.Backend, l fake.Launch) error {
		sh := fake.Param[abiBwdShape](l.Params, 0)
		raw, err := mem.Bytes(backend.DevicePtr(sh.DSink), int64(4*sh.H))
		if err != nil {
			return err
		}
		for h, x := range last.DSink {
			binary.LittleEndian.PutUint32(raw[4*h:], math.Float32bits(float32(x)))
		}
		return nil
	})
	fb.Register(hipsrc.BwdBufConvertEntry, func(mem *fake.Backend, l fake.Launch) error {
		n := fake.Param[int64](l.Params, 2)
		acc, err := mem.Bytes(backend.DevicePtr(fake.Param[uintptr](l.Params, 0)), 8*n)
		if err != nil {
			return err
		}
		out, err := mem.Bytes(backend.DevicePtr(fake.Param[uintptr](l.Params, 1)), 4*n)
		if err != nil {
			return err
		}
		for i := int64(0); i < n; i++ {
			x := float64(int64(binary.LittleEndian.Uint64(acc[8*i:]))) / hipsrc.BwdFixOne
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(x)))
		}
		return nil
	})
}

// withFakeBackward is withFakeDevice with the fake backward kernels too.
func withFakeBackward(t *testing.T, file, name string, fault bwdFault) {
	t.Helper()
	fb := fake.New()
	fb.Register(runtime.AttentionEntry, cpuAttention(t, file, name, compiler.Options{}, faultNone))
	fb.Register(runtime.TileFlagsEntry, func(*fake.Backend, fake.Launch) error { return nil })
	fb.Register(runtime.SegCheckEntry, func(*fake.Backend, fake.Launch) error { return nil })
	cpuBackward(t, fb, file, name, fault)
	old := openDevice
	openDevice = func() (*runtime.Device, error) {
		return runtime.NewDevice(fb, runtime.Options{DisableCache: true}), nil
	}
	t.Cleanup(func() { openDevice = old })
}

// TestRunBackwardChecksAgainstReference runs `maskc run --backward --check`
// end to end on the fake device: buffer, sink and plain gradients, both
// modes, with and without dLSE, GQA and both layouts.
func TestRunBackwardChecksAgainstReference(t *testing.T) {
	for _, tc := range []struct {
		file, attention string
		args            []string
		want            []string
	}{
		{"relative_bias.flex", "biased_layer", []string{"--shape", "1,2,12,128", "--skv", "9", "--dlse"},
			[]string{`backward \(atomic dQ, dLSE true\): ok: 0 of \d+ gradient values left unwritten \(NaN\) in dQ, dK, dV, dbias`,
				`check backward: rel err dQ [\d.e+-]+, dK [\d.e+-]+, dV [\d.e+-]+, dbias [\d.e+-]+ of its terms' magnitude \(plain [\d.e+-]+\); .*: PASS`}},
		{"gpt_oss.flex", "layer_0", []string{"--shape", "1,4,20,64", "--kv-heads", "2", "--deterministic"},
			[]string{`in dQ, dK, dV, dsinks`, `check backward: .*dsinks .*: PASS`, `deterministic: 2 of 2 further runs bitwise equal to the first \(dQ, dK, dV, dsinks\): PASS`}},
		{"alibi.flex", "", []string{"--shape", "1,2,16,128", "--dlse", "--deterministic", "--bench", "--iters", "2"},
			[]string{`check backward: .*: PASS`, `bench backward: median [\d.]+ ms.*backward counted 2.5x`, `bench forward\+backward: median`}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := "../../examples/" + tc.file
			name := tc.attention
			if name == "" {
				u, _, _ := compiler.CompileFile(path, compiler.Options{})
				name = u.Names()[0]
			}
			withFakeBackward(t, path, name, bwdFaultNone)
			stdout, stderr, code := runMaskc(append([]string{"run", path, "--attention", name, "--check", "--backward", "--seed", "3"}, tc.args...)...)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			t.Log(stdout)
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(stdout) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestRunBackwardDetectsBadKernels: a wrong dK fails --check, a dQ that
// changes between runs fails --deterministic.
func TestRunBackwardDetectsBadKernels(t *testing.T) {
	path := "../../examples/relative_bias.flex"
	for _, tc := range []struct {
		fault bwdFault
		args  []string
		want  string
	}{
		{bwdFaultPerturbDK, []string{"--check"}, `check backward: rel err dQ [\d.e+-]+, dK [1-9][\d.e+-]+.*: FAIL`},
		{bwdFaultDrift, []string{"--deterministic"}, `deterministic: 0 of 2 further runs bitwise equal to the first .*: FAIL`},
	} {
		withFakeBackward(t, path, "biased_layer", tc.fault)
		stdout, stderr, code := runMaskc(append([]string{"run", path, "--shape", "1,2,10,128", "--backward"}, tc.args...)...)
		if code != exitError || !regexp.MustCompile(tc.want).MatchString(stdout) {
			t.Errorf("fault %d: exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", tc.fault, code, exitError, tc.want, stdout, stderr)
		}
	}
}

// TestRunBackwardRefusesBadCommandLines covers the flags' usage errors.
func TestRunBackwardRefusesBadCommandLines(t *testing.T) {
	ex := "../../examples/"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{ex + "causal.flex", "--shape", "1,2,8,128", "--deterministic"}, "--dlse and --deterministic need --backward"},
		{[]string{ex + "causal.flex", "--shape", "1,2,8,128", "--dlse"}, "--dlse and --deterministic need --backward"},
		{[]string{ex + "causal.flex", "--shape", "1,1,8,128", "--skv", "4194304", "--check", "--backward"}, "--backward --check computes every row's gradient"},
	} {
		withFakeDevice(t, func(*fake.Backend, fake.Launch) error { return nil })
		_, stderr, code := runMaskc(append([]string{"run"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q in:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
	}
}
