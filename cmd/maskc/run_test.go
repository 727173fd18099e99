package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/runtime"
	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/fake"
	"github.com/maskc/maskc/runtime/host"
)

// abiShape and abiBuffers mirror struct MaskcShape and MaskcBuffers (see
// runtime/abi.go) for the fake kernel.
type abiShape struct {
	B, H, HKV, Sq, Skv                 int32
	_                                  int32
	QStride, KStride, VStride, OStride [3]int64
	Scale                              float32
	_                                  int32
	Sink, TileFlags                    uintptr
}

type abiBuffers struct {
	Ptr [8]uintptr
	Dim [8][2]int64
}

// faultKind makes the fake kernel misbehave in a chosen way.
type faultKind int

const (
	faultNone        faultKind = iota
	faultSkipLastRow           // leave the last query row of O unwritten
	faultPerturbO              // add 0.25 to every O value
)

// cpuAttention is a fake maskc_attn_fwd that computes the attention of the
// attention block with the float64 reference, reading its inputs from fake
// device memory through the ABI exactly as a generated kernel does, so that
// `maskc run` is tested end to end without a GPU.
func cpuAttention(t *testing.T, file, name string, opts compiler.Options, fault faultKind) fake.Kernel {
	u, diags, err := compiler.CompileFile(file, opts)
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	a := u.Program.Attention(name)
	k, kd := u.Kernel(name)
	if kd.HasErrors() {
		t.Fatal(kd)
	}
	half, err := host.ParseHalf(k.DType)
	if err != nil {
		t.Fatal(err)
	}
	var spec eval.AttentionSpec
	if a.Mask != nil {
		if spec.Mask, err = eval.Compile(a.Mask); err != nil {
			t.Fatal(err)
		}
	}
	if a.Score != nil {
		if spec.Score, err = eval.Compile(a.Score); err != nil {
			t.Fatal(err)
		}
	}
	D := k.HeadDim
	return func(mem *fake.Backend, l fake.Launch) error {
		sh := fake.Param[abiShape](l.Params, 5)
		bufs := fake.Param[abiBuffers](l.Params, 6)
		B, H, HKV, Sq, Skv := int(sh.B), int(sh.H), int(sh.HKV), int(sh.Sq), int(sh.Skv)
		read := func(param int, st [3]int64, heads, n int) (*eval.Tensor, error) {
			p := backend.DevicePtr(fake.Param[uintptr](l.Params, param))
			t := eval.NewTensor(B, heads, n, D)
			for b := 0; b < B; b++ {
				for h := 0; h < heads; h++ {
					for s := 0; s < n; s++ {
						raw, err := mem.Bytes(p+backend.DevicePtr(2*(int64(b)*st[0]+int64(h)*st[1]+int64(s)*st[2])), int64(2*D))
						if err != nil {
							return nil, err
						}
						for d := 0; d < D; d++ {
							t.Set(float64(half.Decode(binary.LittleEndian.Uint16(raw[2*d:]))), b, h, s, d)
						}
					}
				}
			}
			return t, nil
		}
		q, err := read(0, sh.QStride, H, Sq)
		if err != nil {
			return err
		}
		kk, err := read(1, sh.KStride, HKV, Skv)
		if err != nil {
			return err
		}
		v, err := read(2, sh.VStride, HKV, Skv)
		if err != nil {
			return err
		}
		env := &eval.Env{B: int64(B), H: int64(H), HKV: int64(HKV), Q: int64(Sq), KV: int64(Skv), Buffers: map[string]*eval.Tensor{}}
		for i, b := range k.Buffers {
			decl := u.Program.Buffer(b.Name)
			n := bufs.Dim[i][0] * bufs.Dim[i][1]
			raw, err := mem.Bytes(backend.DevicePtr(bufs.Ptr[i]), n*int64(host.ElemSize(b.DType)))
			if err != nil {
				return err
			}
			dims := []int{int(bufs.Dim[i][0])}
			if len(decl.Dims) == 2 {
				dims = append(dims, int(bufs.Dim[i][1]))
			}
			env.Buffers[b.Name] = &eval.Tensor{Dims: dims, Data: decodeBuffer(b.DType, raw)}
		}
		s := spec
		s.Env, s.Scale, s.Sink = env, float64(sh.Scale), nil
		if sh.Sink != 0 {
			raw, err := mem.Bytes(backend.DevicePtr(sh.Sink), int64(4*H))
			if err != nil {
				return err
			}
			s.Sink = decodeBuffer("f32", raw)
		}
		out, lse, err := eval.Attention(s, q, kk, v)
		if err != nil {
			return err
		}
		op := backend.DevicePtr(fake.Param[uintptr](l.Params, 3))
		lp := backend.DevicePtr(fake.Param[uintptr](l.Params, 4))
		for b := 0; b < B; b++ {
			for h := 0; h < H; h++ {
				for i := 0; i < Sq; i++ {
					if fault == faultSkipLastRow && i == Sq-1 {
						continue
					}
					raw, err := mem.Bytes(op+backend.DevicePtr(2*(int64(b)*sh.OStride[0]+int64(h)*sh.OStride[1]+int64(i)*sh.OStride[2])), int64(2*D))
					if err != nil {
						return err
					}
					for d := 0; d < D; d++ {
						x := out.At(b, h, i, d)
						if fault == faultPerturbO {
							x += 0.25
						}
						binary.LittleEndian.PutUint16(raw[2*d:], half.Encode(x))
					}
					lr, err := mem.Bytes(lp+backend.DevicePtr(4*((b*H+h)*Sq+i)), 4)
					if err != nil {
						return err
					}
					binary.LittleEndian.PutUint32(lr, math.Float32bits(float32(lse.At(b, h, i))))
				}
			}
		}
		return nil
	}
}

// decodeBuffer widens a little-endian buffer of dtype.
func decodeBuffer(dtype string, raw []byte) []float64 {
	size := host.ElemSize(dtype)
	out := make([]float64, len(raw)/size)
	for i := range out {
		p := raw[i*size:]
		switch dtype {
		case "i32":
			out[i] = float64(int32(binary.LittleEndian.Uint32(p)))
		case "i64":
			out[i] = float64(int64(binary.LittleEndian.Uint64(p)))
		case "f32":
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
		case "f64":
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(p))
		case "f16":
			out[i] = float64(host.FP16ToFloat32(binary.LittleEndian.Uint16(p)))
		case "bf16":
			out[i] = float64(host.BF16ToFloat32(binary.LittleEndian.Uint16(p)))
		case "bool":
			out[i] = float64(p[0])
		}
	}
	return out
}

// withFakeDevice makes `maskc run` use a fake device whose attention kernel
// is kern, for the duration of the test.
func withFakeDevice(t *testing.T, kern fake.Kernel) {
	t.Helper()
	fb := fake.New()
	fb.Register(runtime.AttentionEntry, kern)
	fb.Register(runtime.TileFlagsEntry, func(*fake.Backend, fake.Launch) error { return nil })
	fb.Register(runtime.SegCheckEntry, func(*fake.Backend, fake.Launch) error { return nil })
	old := openDevice
	openDevice = func() (*runtime.Device, error) {
		return runtime.NewDevice(fb, runtime.Options{DisableCache: true}), nil
	}
	t.Cleanup(func() { openDevice = old })
}

func runMaskc(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = mainArgs(args, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb})
	return out.String(), errb.String(), code
}

// TestRunChecksAgainstReference runs generated kernels of the examples on a
// fake device whose kernel computes the reference attention: every check
// must pass, across layouts, ragged lengths, Sq != Skv, GQA, sinks, scores
// and captured buffers.
func TestRunChecksAgainstReference(t *testing.T) {
	tests := []struct {
		file, attention string
		opts            compiler.Options // what the arguments select
		args            []string
		want            []string // regexps the output must match
	}{
		{"causal.flex", "decoder", compiler.Options{}, []string{"--shape", "1,2,40,128"}, []string{`running maskc's generated fallback kernel`, `shape: B=1 H=2 HKV=2 Sq=40 Skv=40 D=128 bshd`}},
		{"causal.flex", "decoder", compiler.Options{}, []string{"--shape", "2,4,33,128", "--kv-heads", "2", "--sq", "17", "--skv", "45"}, []string{`HKV=2 Sq=17 Skv=45`}},
		{"causal.flex", "decoder", compiler.Options{Kernel: codegen.Options{DType: "fp16"}}, []string{"--shape", "1,2,20,128", "--sq", "30", "--dtype", "fp16"}, []string{`decoder fp16`, `\d+ empty rows`}},
		{"gpt_oss.flex", "layer_0", compiler.Options{}, []string{"--shape", "1,2,150,64"}, []string{`buffer sinks f32\[2\]: random normal: `}},
		{"document_causal.flex", "packed_layer", compiler.Options{}, []string{"--shape", "2,1,60,128"}, []string{`buffer doc i32\[60\]: random documents, lengths `}},
		{"document_causal.flex", "packed_layer", compiler.Options{}, []string{"--shape", "1,1,6,128", "--buffer", "doc=0,0,1,1,1,2"}, []string{`buffer doc i32\[6\]: given: 0,0,1,1,1,2`}},
		{"prefix_lm_per_batch.flex", "prefix_layer", compiler.Options{}, []string{"--shape", "3,2,24,128"}, []string{`buffer prefix_len i32\[3\]: random in \[0, 24\]: `}},
		{"relative_bias.flex", "biased_layer", compiler.Options{}, []string{"--shape", "1,2,16,128", "--skv", "20"}, []string{`buffer bias f32\[2 35\]: random normal, 70 values`}},
		{"softcap.flex", "capped_layer", compiler.Options{Defines: map[string]string{"CAP": "5"}}, []string{"--shape", "1,1,30,128", "-D", "CAP=5"}, nil},
		{"full.flex", "encoder", compiler.Options{}, []string{"--shape", "1,1,10,128"}, []string{`running maskc's generated kernel for it anyway`}},
		{"dilated_window.flex", "dilated_layer", compiler.Options{}, []string{"--shape", "1,1,50,128", "--bench", "--iters", "3"},
			[]string{`the plan runs a generated kernel`, `bench: median [\d.]+ ms, min [\d.]+ ms over 3 calls; .* TFLOP/s over 650 unmasked pairs \(counted exactly, 26.0% of all\)`}},
	}
	for _, tc := range tests {
		t.Run(tc.file+"/"+strings.Join(tc.args, " "), func(t *testing.T) {
			path := "../../examples/" + tc.file
			withFakeDevice(t, cpuAttention(t, path, tc.attention, tc.opts, faultNone))
			args := append([]string{"run", path, "--attention", tc.attention, "--check", "--seed", "7"}, tc.args...)
			stdout, stderr, code := runMaskc(args...)
			if code != exitOK || !regexp.MustCompile(`check: O rel err .*: PASS\n`).MatchString(stdout) {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(stdout) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

// TestRunSampledRowsMatchTheReference makes the reference budget small so
// that --check samples rows with its own row reference, and checks that
// against the fake kernel, which writes eval.Attention's full result: the
// LSE (stored as fp32) must agree to float32 precision.
func TestRunSampledRowsMatchTheReference(t *testing.T) {
	old := checkWorkLimit
	checkWorkLimit = 1 << 20
	t.Cleanup(func() { checkWorkLimit = old })
	lseErr := regexp.MustCompile(`LSE rel err ([0-9.e+-]+) .*reference on (\d+) sampled rows`)
	for _, tc := range []struct {
		file, attention string
		args            []string
	}{
		{"document_causal.flex", "packed_layer", []string{"--shape", "2,2,100,128"}},
		{"gpt_oss.flex", "layer_0", []string{"--shape", "1,4,300,64", "--kv-heads", "2"}},
		{"relative_bias.flex", "biased_layer", []string{"--shape", "1,2,90,128", "--sq", "70"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := "../../examples/" + tc.file
			withFakeDevice(t, cpuAttention(t, path, tc.attention, compiler.Options{}, faultNone))
			stdout, stderr, code := runMaskc(append([]string{"run", path, "--attention", tc.attention, "--check"}, tc.args...)...)
			m := lseErr.FindStringSubmatch(stdout)
			if code != exitOK || m == nil {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			t.Log(m[0])
			if e, _ := strconv.ParseFloat(m[1], 64); e > 1e-6 {
				t.Errorf("LSE rel err %v on %s sampled rows: the row reference disagrees with eval.Attention", e, m[2])
			}
		})
	}
}

// TestRunDetectsBadKernels checks that an unwritten output and a wrong
// output both fail the run with exit status 1.
func TestRunDetectsBadKernels(t *testing.T) {
	path := "../../examples/causal.flex"
	for _, tc := range []struct {
		fault faultKind
		want  string
	}{
		{faultSkipLastRow, `forward: FAIL: 256 of 2560 O values and 2 of 20 LSE values left unwritten`},
		{faultPerturbO, `check: O rel err .*: FAIL`},
	} {
		t.Run(fmt.Sprint(tc.fault), func(t *testing.T) {
			withFakeDevice(t, cpuAttention(t, path, "decoder", compiler.Options{}, tc.fault))
			stdout, stderr, code := runMaskc("run", path, "--shape", "1,2,10,128", "--check")
			if code != exitError || !regexp.MustCompile(tc.want).MatchString(stdout) {
				t.Fatalf("exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", code, exitError, tc.want, stdout, stderr)
			}
		})
	}
}

// TestRunSameSeedSameInputs checks that --seed reproduces a run.
func TestRunSameSeedSameInputs(t *testing.T) {
	path := "../../examples/document_causal.flex"
	withFakeDevice(t, cpuAttention(t, path, "packed_layer", compiler.Options{}, faultNone))
	first, _, _ := runMaskc("run", path, "--shape", "1,1,100,128", "--seed", "42", "--check")
	second, _, _ := runMaskc("run", path, "--shape", "1,1,100,128", "--seed", "42", "--check")
	third, _, _ := runMaskc("run", path, "--shape", "1,1,100,128", "--seed", "43", "--check")
	docs := regexp.MustCompile(`buffer doc .*`)
	if docs.FindString(first) == "" || docs.FindString(first) != docs.FindString(second) {
		t.Fatalf("same seed, different buffers:\n%s\n%s", first, second)
	}
	errs := regexp.MustCompile(`check: [^;]*`)
	if errs.FindString(first) != errs.FindString(second) {
		t.Errorf("same seed, different errors:\n%s\n%s", errs.FindString(first), errs.FindString(second))
	}
	if docs.FindString(first) == docs.FindString(third) && errs.FindString(first) == errs.FindString(third) {
		t.Errorf("seeds 42 and 43 drew the same inputs")
	}
}

// TestRunRefusesBadCommandLines covers the usage errors.
func TestRunRefusesBadCommandLines(t *testing.T) {
	ex := "../../examples/"
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{ex + "causal.flex"}, exitUsage, "run needs --shape B,H,S,D"},
		{[]string{ex + "causal.flex", "--shape", "1,2,3"}, exitUsage, "want four comma-separated sizes"},
		{[]string{ex + "causal.flex", "--shape", "1,2,0,128"}, exitUsage, `"0" is not a positive integer`},
		{[]string{ex + "causal.flex", "--shape", "1,2,8,96"}, exitUsage, "head dimension D = 96"},
		{[]string{ex + "causal.flex", "--shape", "1,2,8,64"}, exitUsage, "declares head_dim = 128"},
		{[]string{ex + "causal.flex", "--shape", "1,6,8,128", "--kv-heads", "4"}, exitUsage, "H = 6 is not a multiple of the kv heads 4"},
		{[]string{ex + "causal.flex", "--shape", "1,2,8,128", "--dtype", "fp8"}, exitUsage, "--dtype fp8: want bf16 or fp16"},
		{[]string{ex + "causal.flex", "--shape", "1,2,8,128", "--seed", "x"}, exitUsage, "--seed x"},
		{[]string{ex + "gpt_oss.flex", "--shape", "1,2,8,64"}, exitUsage, "has 4 attention blocks; choose one with --attention (layer_0, layer_1, layer_2, layer_3)"},
		{[]string{ex + "causal.flex", "--attention", "nope", "--shape", "1,2,8,128"}, exitUsage, `no attention block named "nope"`},
		{[]string{ex + "causal.flex", "--shape", "1,2,8,128", "--buffer", "doc=1,2"}, exitError, "attention decoder reads no buffer doc"},
		{[]string{ex + "document_causal.flex", "--shape", "1,2,8,128", "--buffer", "doc=1,2"}, exitError, "--buffer doc: 2 values given, its shape [8] holds 8"},
		{[]string{ex + "document_causal.flex", "--shape", "1,2,4,128", "--buffer", "doc=0,0.5,1,1"}, exitError, "not an integer"},
		{[]string{ex + "causal.flex", "--shape", "1,1,8,128", "--skv", "4194304", "--check"}, exitUsage, "above the limit"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			withFakeDevice(t, func(*fake.Backend, fake.Launch) error { return nil })
			_, stderr, code := runMaskc(append([]string{"run"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want %d and %q in:\n%s", code, tc.code, tc.want, stderr)
			}
		})
	}
}
