package compiler

import (
	"os"
	"reflect"
	"testing"
	"unsafe"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/parser"
	"github.com/maskc/maskc/runtime"
	"github.com/maskc/maskc/runtime/fake"
)

func generateFirst(t *testing.T, path string) (*check.Program, *codegen.Kernel) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := parser.ParseFile(path, text)
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	p, diags := check.Check(f, check.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	k, diags := codegen.Generate(p, p.Attentions[0], codegen.Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	return p, k
}

// TestDocumentKernelLaunches builds the spec of a generated kernel with a
// captured buffer and launches it on the fake device, checking what the
// kernel receives.
func TestDocumentKernelLaunches(t *testing.T) {
	p, k := generateFirst(t, "../examples/document_causal.flex")
	for _, tt := range []struct{ backend, arch, platform string }{
		{"cuda", "sm_80", "nvidia"}, {"hip", "gfx942", "amd"}, {"cuda", "sm_90", "nvidia-sm90a"},
	} {
		backend, platform := tt.backend, tt.platform
		spec, err := KernelSpec(p, k, backend, tt.arch)
		if err != nil {
			t.Fatal(err)
		}
		abi := spec.Platform.ABI()
		wgmma := platform == "nvidia-sm90a"
		if spec.Platform.String() != platform || wgmma != (abi.Arch == "sm_90a") || wgmma != (len(abi.CompileOptions) == 1) {
			t.Errorf("%s: platform %s, arch %q, options %q", platform, spec.Platform, abi.Arch, abi.CompileOptions)
		}
		// The spec carries the kernel's descriptor itself, with the file
		// names the compile logs show.
		if spec.Kernel.HeadDim != 128 || spec.Flex != p.File.Source || len(spec.Kernel.Slots) != 1 || spec.Kernel.Sparsity != hipsrc.SparsityAnalytic ||
			spec.Kernel.Launch[platform] != k.Launch[platform] || spec.Kernel.SourceFile != k.Name+".cu" || spec.Kernel.BwdSourceFile != k.Name+".bwd.cu" ||
			spec.Source != k.Source || spec.BwdSource != k.BwdSource {
			t.Fatalf("%s: spec %+v", backend, spec.Kernel)
		}
	}
	spec, err := KernelSpec(p, k, "fake", "")
	if err != nil {
		t.Fatal(err)
	}
	if b := spec.Kernel.Slots[0]; b.DType != "i32" || !b.Segments {
		t.Errorf("doc buffer spec: dtype %q, segments %v; want i32, true (CheckSegments reads it)", b.DType, b.Segments)
	}
	if spec.Kernel.SegCheckEntry != runtime.SegCheckEntry {
		t.Error("a kernel with a segments buffer has no segments check")
	}
	fb := fake.New()
	segChecks := 0
	fb.Register(runtime.SegCheckEntry, func(*fake.Backend, fake.Launch) error { segChecks++; return nil })
	var gotDims [2]int64
	var gotGrid runtime.Dim3
	fb.Register(runtime.AttentionEntry, func(mem *fake.Backend, l fake.Launch) error {
		// MaskcBuffers is the 7th parameter: 8 pointers, then dim[8][2].
		buf := fake.Param[[8 + 16]int64](l.Params, 6)
		gotDims = [2]int64{buf[8], buf[9]}
		gotGrid = l.Grid
		return nil
	})
	fb.Register(runtime.TileFlagsEntry, func(*fake.Backend, fake.Launch) error { return nil })
	d := runtime.NewDevice(fb, runtime.Options{DisableCache: true})
	attn, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer attn.Close()
	alloc := func() runtime.DevicePtr {
		p, err := d.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	shape := KernelShape(k, 2, 4, 4, 1000, 1500)
	if err := attn.Forward(0, alloc(), alloc(), alloc(), alloc(), alloc(), shape, []runtime.DevicePtr{alloc()}); err != nil {
		t.Fatal(err)
	}
	if gotDims != [2]int64{1500, 1} {
		t.Errorf("doc extents %v, want [KV 1]", gotDims)
	}
	if segChecks != 1 {
		t.Errorf("%d segments checks launched before the forward, want 1", segChecks)
	}
	if want := (runtime.Dim3{X: uint32((1000 + k.BlockM - 1) / k.BlockM), Y: 4, Z: 2}); gotGrid != want {
		t.Errorf("grid %v, want %v", gotGrid, want)
	}
	if unsafe.Sizeof([8 + 16]int64{}) != 192 {
		t.Fatal("MaskcBuffers size")
	}
}

// TestLaunchGeometryMatchesTheTemplate checks the grids the launcher uses
// against hipsrc's, for the forward and the PREPASS kernel.
func TestLaunchGeometryMatchesTheTemplate(t *testing.T) {
	p, k := generateFirst(t, "../examples/document_causal.flex")
	spec, err := KernelSpec(p, k, "cuda", "sm_80")
	if err != nil {
		t.Fatal(err)
	}
	// the fake kernels stand in for the template's
	spec.Kernel.Sparsity, spec.Kernel.FlagsEntry = hipsrc.SparsityPrepass, hipsrc.TileFlagsEntry
	fb := fake.New()
	grids := map[string]runtime.Dim3{}
	record := func(name string) fake.Kernel {
		return func(_ *fake.Backend, l fake.Launch) error { grids[name] = l.Grid; return nil }
	}
	fb.Register(runtime.AttentionEntry, record(runtime.AttentionEntry))
	fb.Register(runtime.TileFlagsEntry, record(runtime.TileFlagsEntry))
	fb.Register(runtime.SegCheckEntry, record(runtime.SegCheckEntry))
	d := runtime.NewDevice(fb, runtime.Options{DisableCache: true})
	attn, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer attn.Close()
	ptr := func() runtime.DevicePtr { p, _ := d.Alloc(64); return p }
	const B, H, Sq, Skv = 3, 5, 777, 1000 // Sq <= Skv: the mask reads doc[q] of doc: i32[KV]
	if err := attn.Forward(0, ptr(), ptr(), ptr(), ptr(), ptr(), KernelShape(k, B, H, H, Sq, Skv), []runtime.DevicePtr{ptr()}); err != nil {
		t.Fatal(err)
	}
	dim := func(g [3]int) runtime.Dim3 { return runtime.Dim3{X: uint32(g[0]), Y: uint32(g[1]), Z: uint32(g[2])} }
	if got, want := grids[runtime.AttentionEntry], dim(hipsrc.AttnGrid(B, H, Sq)); got != want {
		t.Errorf("forward grid %v, hipsrc says %v", got, want)
	}
	if got, want := grids[runtime.TileFlagsEntry], dim(hipsrc.FlagsGrid(hipsrc.BlockN, Sq, Skv)); got != want {
		t.Errorf("pre-pass grid %v, hipsrc says %v", got, want)
	}
	for _, e := range hipsrc.Entries {
		if e.Name == hipsrc.SegCheckEntry {
			if got, want := grids[runtime.SegCheckEntry], dim(e.Eval(hipsrc.LaunchSizes{B: B, H: H, HKV: H, Sq: Sq, Skv: Skv}, hipsrc.BlockN)); got != want {
				t.Errorf("segments check grid %v, hipsrc says %v", got, want)
			}
		}
	}
}

// TestBackwardSpecPerHeadDim: the runtime spec's backward takes the
// platform's tile for the kernel's head dim (hipsrc.BwdTileFor): the
// 64 x 64 tile on two warpgroups split by the head dim at 256 (256
// threads), 64 x 64 on one at 128 on the H200 for short columns, and the
// warp-specialized 64 x 128 tile (384 threads) for columns that run to
// each document's end.
func TestBackwardSpecPerHeadDim(t *testing.T) {
	for _, tc := range []struct {
		file                    string
		blockM, blockN, threads int
		ws                      bool
	}{
		{"../gpu/bwd_cases/softcap_d256.flex", 64, 64, 256, false},
		{"../gpu/bench_cases_ext/chunked_causal.flex", 64, 64, 128, false},
		{"../examples/document_causal.flex", 64, 128, 384, true},
	} {
		p, k := generateFirst(t, tc.file)
		spec, err := KernelSpec(p, k, "cuda", "sm_90")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := hipsrc.BwdLaunchOn(hipsrc.NVIDIAWGMMA, k.HeadDim, hipsrc.BwdChoice{WarpSpecialized: !k.HasMask || tc.ws})
		want.DQOrdered = tc.ws // the ordered dQ with it (codegen's bwdDQOrdered)
		got := spec.Kernel.BwdLaunch[spec.Platform.String()]
		if spec.Source == "" || spec.BwdSource == "" || got.BlockM != tc.blockM || got.BlockN != tc.blockN ||
			got.MainThreads != tc.threads || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: forward %v, backward %+v, want %dx%d on %d threads", tc.file, spec.Source != "", got, tc.blockM, tc.blockN, tc.threads)
		}
	}
}
