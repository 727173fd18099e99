package compiler

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/runtime"
	"github.com/maskc/maskc/runtime/fake"
)

const examples = "../examples/"

// TestCompileExamplesGeneratesNeededKernels compiles every example and
// checks that exactly the blocks whose plan needs a generated kernel have
// one after Compile.
func TestCompileExamplesGeneratesNeededKernels(t *testing.T) {
	files, err := filepath.Glob(examples + "*.flex")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			u, diags, err := CompileFile(f, Options{})
			if err != nil || diags.HasErrors() {
				t.Fatal(err, diags)
			}
			if len(u.Plan.Attentions) != len(u.Program.Attentions) || len(u.Names()) != len(u.Program.Attentions) {
				t.Fatalf("plan has %d decisions for %d blocks", len(u.Plan.Attentions), len(u.Program.Attentions))
			}
			for _, d := range u.Plan.Attentions {
				_, generated := u.kernels[d.Name]
				if generated != NeedsKernel(d) {
					t.Errorf("%s: pattern %s fallback %q: kernel generated = %v", d.Name, d.Pattern, d.Fallback, generated)
				}
				if u.Decision(d.Name) != d {
					t.Errorf("Decision(%s) is not the plan's decision", d.Name)
				}
			}
		})
	}
}

func TestCompileReportsDiagnostics(t *testing.T) {
	tests := []struct {
		name, text string
		opts       Options
		code       dsl.Code
	}{
		{"syntax", "mask m(b, h, q, kv) = q >=\n", Options{}, "E0"},
		{"unknown name", "attention a { mask = nope }\n", Options{}, "E02"},
		{"bad define", "param W = 4\nmask m(b, h, q, kv) = q - kv < W\nattention a { mask = m }\n", Options{Defines: map[string]string{"W": "x"}}, "E0"},
		{"codegen refusal", "mask m(b, h, q, kv) = q % 3 == kv % 3\nattention a { mask = m\n head_dim = 96 }\n", Options{}, "E300"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, diags := Compile(tc.name+".flex", []byte(tc.text), tc.opts)
			if u != nil || !diags.HasErrors() {
				t.Fatalf("want diagnostics, got unit %v, diagnostics %v", u, diags)
			}
			if !strings.HasPrefix(string(diags[0].Code), string(tc.code)) && !containsCode(diags, tc.code) {
				t.Fatalf("want a %s diagnostic, got:\n%s", tc.code, diags.Render())
			}
		})
	}
}

func containsCode(ds dsl.Diagnostics, code dsl.Code) bool {
	for _, d := range ds {
		if strings.HasPrefix(string(d.Code), string(code)) {
			return true
		}
	}
	return false
}

func TestCompileFileErrors(t *testing.T) {
	if _, _, err := CompileFile(filepath.Join(t.TempDir(), "missing.flex"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestDefinesReachTheKernel(t *testing.T) {
	u, diags, err := CompileFile(examples+"prefix_lm.flex", Options{Defines: map[string]string{"PREFIX": "77"}})
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	k, kd := u.Kernel("prefix_layer")
	if kd.HasErrors() {
		t.Fatal(kd)
	}
	if !strings.Contains(k.Generated, "76") || strings.Contains(k.Generated, "2047") {
		t.Fatalf("PREFIX=77 not in the generated mask:\n%s", k.Generated)
	}
	if _, kd := u.Kernel("nope"); !kd.HasErrors() || kd[0].Code != CodeNoAttention || !strings.Contains(kd.Error(), `no attention block named "nope"`) {
		t.Fatalf("unknown block: %v", kd)
	}
}

// abiShape mirrors the head of struct MaskcShape.
type abiShape struct {
	B, H, HKV, Sq, Skv                 int32
	_                                  int32
	QStride, KStride, VStride, OStride [3]int64
	Scale                              float32
	_                                  int32
	Sink, TileFlags                    uintptr
}

// launch is what the fake forward kernel saw.
type launch struct {
	shape abiShape
	ptrs  [8]uintptr
	grid  runtime.Dim3
}

// fakeDevice returns a device whose forward kernel records its launches.
func fakeDevice(seen *[]launch) *runtime.Device {
	fb := fake.New()
	fb.Register(runtime.AttentionEntry, func(_ *fake.Backend, l fake.Launch) error {
		if seen != nil {
			*seen = append(*seen, launch{shape: fake.Param[abiShape](l.Params, 5), ptrs: fake.Param[[8]uintptr](l.Params, 6), grid: l.Grid})
		}
		return nil
	})
	fb.Register(runtime.TileFlagsEntry, func(*fake.Backend, fake.Launch) error { return nil })
	fb.Register(runtime.SegCheckEntry, func(*fake.Backend, fake.Launch) error { return nil })
	return runtime.NewDevice(fb, runtime.Options{DisableCache: true})
}

func loadGPTOSS(t testing.TB, d *runtime.Device) *Attention {
	t.Helper()
	u, diags, err := CompileFile(examples+"gpt_oss.flex", Options{})
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	a, err := u.Load(d, "layer_0")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func alloc(t testing.TB, d *runtime.Device) runtime.DevicePtr {
	t.Helper()
	p, err := d.Alloc(256)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestForwardPassesShapeSinkAndBuffers launches a block with a sink and a
// block with a captured buffer and checks what the kernel receives.
func TestForwardPassesShapeSinkAndBuffers(t *testing.T) {
	var seen []launch
	d := fakeDevice(&seen)
	a := loadGPTOSS(t, d)
	defer a.Close()
	if got := strings.Join(a.Buffers(), ","); got != "sinks" {
		t.Fatalf("Buffers() = %s, want sinks", got)
	}
	q, k, v, o, lse := alloc(t, d), alloc(t, d), alloc(t, d), alloc(t, d), alloc(t, d)
	sz := Sizes{B: 2, H: 8, HKV: 2, Sq: 300, Skv: 500}
	err := a.Forward(0, q, k, v, o, lse, sz)
	var re *runtime.Error
	if !errors.As(err, &re) || re.Code != runtime.CodeBuffers || !strings.Contains(err.Error(), "[sinks] are not bound") {
		t.Fatalf("Forward before Bind: %v", err)
	}
	sink := alloc(t, d)
	if err := a.Bind("sinks", sink); err != nil {
		t.Fatal(err)
	}
	if err := a.Forward(0, q, k, v, o, lse, sz); err != nil {
		t.Fatal(err)
	}
	got := seen[len(seen)-1]
	const D = 64
	want := abiShape{B: 2, H: 8, HKV: 2, Sq: 300, Skv: 500,
		QStride: [3]int64{300 * 8 * D, D, 8 * D}, KStride: [3]int64{500 * 2 * D, D, 2 * D},
		VStride: [3]int64{500 * 2 * D, D, 2 * D}, OStride: [3]int64{300 * 8 * D, D, 8 * D},
		Scale: 0.125, Sink: uintptr(sink)}
	if got.shape != want {
		t.Fatalf("kernel saw shape\n%+v\nwant\n%+v", got.shape, want)
	}
	if got.grid != (runtime.Dim3{X: (300 + uint32(a.Kernel.BlockM) - 1) / uint32(a.Kernel.BlockM), Y: 8, Z: 2}) {
		t.Errorf("grid %v", got.grid)
	}

	u, diags, err := CompileFile(examples+"document_causal.flex", Options{})
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	doc, err := u.Load(d, "packed_layer")
	if err != nil {
		t.Fatal(err)
	}
	defer doc.Close()
	docPtr := alloc(t, d)
	for _, bad := range []struct {
		name string
		p    runtime.DevicePtr
		want string
	}{{"segments", docPtr, "reads no buffer segments"}, {"doc", 0, "null pointer"}} {
		if err := doc.Bind(bad.name, bad.p); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Bind(%s, %#x) = %v, want %q", bad.name, bad.p, err, bad.want)
		}
	}
	if err := doc.Bind("doc", docPtr); err != nil {
		t.Fatal(err)
	}
	if err := doc.Forward(0, q, k, v, o, lse, Sizes{B: 1, H: 4, Sq: 64, Skv: 64}); err != nil {
		t.Fatal(err)
	}
	got = seen[len(seen)-1]
	if got.ptrs[0] != uintptr(docPtr) || got.shape.HKV != 4 || got.shape.Sink != 0 {
		t.Fatalf("doc kernel saw buffer %#x (want %#x), HKV %d (want H = 4), sink %#x", got.ptrs[0], docPtr, got.shape.HKV, got.shape.Sink)
	}
}

// TestForwardSteadyStateDoesNotAllocate checks the per-call path after the
// first call for a shape.
func TestForwardSteadyStateDoesNotAllocate(t *testing.T) {
	d := fakeDevice(nil)
	a := loadGPTOSS(t, d)
	defer a.Close()
	q, k, v, o, lse, sink := alloc(t, d), alloc(t, d), alloc(t, d), alloc(t, d), alloc(t, d), alloc(t, d)
	if err := a.Bind("sinks", sink); err != nil {
		t.Fatal(err)
	}
	sz := Sizes{B: 4, H: 16, HKV: 2, Sq: 4096, Skv: 4096}
	if err := a.Forward(0, q, k, v, o, lse, sz); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := a.Forward(0, q, k, v, o, lse, sz); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Forward allocates %v times per call", allocs)
	}
}

// BenchmarkForward measures the host-side cost of one Forward on the fake
// device (the launch itself does nothing).
func BenchmarkForward(b *testing.B) {
	d := fakeDevice(nil)
	a := loadGPTOSS(b, d)
	defer a.Close()
	q, k, v, o, lse, sink := alloc(b, d), alloc(b, d), alloc(b, d), alloc(b, d), alloc(b, d), alloc(b, d)
	if err := a.Bind("sinks", sink); err != nil {
		b.Fatal(err)
	}
	sz := Sizes{B: 4, H: 16, HKV: 2, Sq: 4096, Skv: 4096}
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Forward(0, q, k, v, o, lse, sz); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzCompile checks that no input makes Compile panic or return neither a
// unit nor an error.
func FuzzCompile(f *testing.F) {
	files, _ := filepath.Glob(examples + "*.flex")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	f.Add("attention a { mask = q >= kv }")
	f.Fuzz(func(t *testing.T, text string) {
		u, diags := Compile("fuzz.flex", []byte(text), Options{})
		if (u == nil) != diags.HasErrors() {
			t.Fatalf("unit %v and diagnostics %v", u, diags)
		}
	})
}

// TestStages runs the pipeline stage by stage and checks each stage's
// result and diagnostics.
func TestStages(t *testing.T) {
	tests := []struct {
		name, text  string
		wantProgram bool
		wantErrors  bool
	}{
		{"ok", "mask m(b, h, q, kv) = q >= kv\nattention a { mask = m }\n", true, false},
		{"syntax", "mask m(b, h, q, kv) = q >=\n", false, true},
		{"check", "attention a { mask = nope }\n", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, diags := ParseAndCheck(tt.name+".flex", []byte(tt.text), Options{})
			if c == nil || c.File == nil || (c.Program != nil) != tt.wantProgram || diags.HasErrors() != tt.wantErrors {
				t.Fatalf("checked %+v, diagnostics %v", c, diags)
			}
			if tt.wantErrors {
				return
			}
			plan, pd := Classify(c.Program, Options{})
			if pd.HasErrors() || len(plan.Attentions) != 1 {
				t.Fatalf("plan %+v, diagnostics %v", plan, pd)
			}
		})
	}
}

// TestPlanFile checks that the typed plan names a kernel exactly for the
// blocks that need one, under "kernel", by its manifest descriptor's ID.
func TestPlanFile(t *testing.T) {
	u, diags, err := CompileFile(examples+"prefix_lm.flex", Options{})
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	pf := u.NewPlanFile()
	for _, pa := range pf.Attentions {
		if !NeedsKernel(pa.Decision) {
			continue
		}
		k, kd := u.Kernel(pa.Name)
		if kd.HasErrors() {
			t.Fatal(kd)
		}
		d := KernelDesc(k, pa.Decision, pa.Name+".hip", "prefix_lm.flex")
		if d.ID != pa.Name || d.SourceFile != pa.Name+".hip" || d.BwdSourceFile != pa.Name+".bwd.hip" || d.Attention != pa.Name ||
			d.Sparsity == "" || len(d.BwdEntries) == 0 || d.BwdLaunch["amd"].Threads == 0 {
			t.Errorf("%s: descriptor %+v", pa.Name, d)
		}
		pa.Kernel = d.ID
	}
	b, err := pf.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version    int `json:"version"`
		Attentions []struct {
			Name    string  `json:"name"`
			Pattern string  `json:"pattern"`
			Kernel  *string `json:"kernel"`
		} `json:"attentions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != u.Plan.Version || len(doc.Attentions) == 0 {
		t.Fatalf("plan: %s", b)
	}
	for _, a := range doc.Attentions {
		if (a.Kernel != nil) != (a.Pattern == Generated || u.Decision(a.Name).Fallback == Generated) {
			t.Errorf("%s: kernel %+v for pattern %s", a.Name, a.Kernel, a.Pattern)
		}
		if a.Kernel != nil && *a.Kernel != a.Name {
			t.Errorf("%s: kernel %q", a.Name, *a.Kernel)
		}
	}
}

// TestPrepare: Prepare stops at parse and check errors (no Unit), and
// otherwise returns a Unit that has generated nothing yet; a block the
// generator refuses is refused when its kernel is asked for.
func TestPrepare(t *testing.T) {
	tests := []struct {
		name, text string
		unit       bool     // a Unit comes back
		code       dsl.Code // prefix of an error diagnostic, "" for none
		kernelCode dsl.Code // the error Unit.Kernel gives the first block, "" for none
	}{
		{"syntax", "mask m(b, h, q, kv) = q >=\n", false, "E0", ""},
		{"unknown name", "attention a { mask = nope }\n", false, "E02", ""},
		{"clean", "mask m(b, h, q, kv) = q >= kv\nattention a { mask = m }\n", true, "", ""},
		{"codegen refusal", "mask m(b, h, q, kv) = q % 3 == kv % 3\nattention a { mask = m\n head_dim = 96 }\n", true, "", "E300"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, diags := Prepare(tc.name+".flex", []byte(tc.text), Options{})
			if (u != nil) != tc.unit {
				t.Fatalf("unit %v, want one: %v; diagnostics:\n%s", u, tc.unit, diags.Render())
			}
			if tc.code == "" && diags.HasErrors() || tc.code != "" && !containsCode(diags.Errors(), tc.code) {
				t.Fatalf("want error %q, got:\n%s", tc.code, diags.Render())
			}
			if u == nil {
				return
			}
			if len(u.kernels) != 0 {
				t.Errorf("Prepare generated %d kernels", len(u.kernels))
			}
			k, kd := u.Kernel(u.Names()[0])
			if tc.kernelCode == "" && (k == nil || kd.HasErrors()) || tc.kernelCode != "" && (k != nil || !containsCode(kd, tc.kernelCode)) {
				t.Errorf("kernel %v, diagnostics:\n%s\nwant error %q", k != nil, kd.Render(), tc.kernelCode)
			}
		})
	}
}

// TestDecideAndWithKernel: Decide gives no Unit for a file with a
// classifier or generator error, and a Unit of the plan otherwise;
// WithKernel shares that plan and generates with its own options.
func TestDecideAndWithKernel(t *testing.T) {
	tests := []struct {
		name, text string
		code       dsl.Code // error prefix, "" for a Unit
	}{
		{"clean", "mask m(b, h, q, kv) = q >= kv\nattention a { mask = m }\n", ""},
		{"never true", "mask m(b, h, q, kv) = q < 0\nattention a { mask = m }\n", "E100"},
		{"generator refusal", "mask m(b, h, q, kv) = q % 3 == kv % 3\nattention a { mask = m\n head_dim = 96 }\n", "E300"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, diags := ParseAndCheck(tc.name+".flex", []byte(tc.text), Options{})
			if diags.HasErrors() {
				t.Fatal(diags.Render())
			}
			u, diags := Decide(c.Program, Options{})
			if tc.code != "" {
				if u != nil || !containsCode(diags.Errors(), tc.code) {
					t.Fatalf("unit %v, diagnostics:\n%s\nwant %s and no unit", u, diags.Render(), tc.code)
				}
				return
			}
			if u == nil || diags.HasErrors() || len(u.Plan.Attentions) != 1 {
				t.Fatalf("unit %v, diagnostics:\n%s", u, diags.Render())
			}
			w := u.WithKernel(codegen.Options{HeadDim: 64})
			k, kd := u.Kernel("a")
			k64, kd64 := w.Kernel("a")
			if kd.HasErrors() || kd64.HasErrors() || w.Plan != u.Plan {
				t.Fatalf("%s%s; plan shared: %v", kd.Render(), kd64.Render(), w.Plan == u.Plan)
			}
			if k.HeadDim != 128 || k64.HeadDim != 64 {
				t.Errorf("head dims %d and %d, want 128 and 64", k.HeadDim, k64.HeadDim)
			}
		})
	}
}
