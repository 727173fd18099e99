package compiler

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime"
	"github.com/maskc/maskc/runtime/fake"
)

// TestReadsRefusedBeforeLaunch runs the cases of issue 33
// (testdata/reads/issue33.flex) through the Go runtime on the fake
// device: a call at sizes where a read falls outside its buffer fails with
// E410 naming the read, its range and the extent, and launches nothing;
// the same block at sizes that fit launches as before (forward and
// backward).
func TestReadsRefusedBeforeLaunch(t *testing.T) {
	u := compileFile(t, "../testdata/reads/issue33.flex")
	tests := []readCase{
		{"rel_layer", Sizes{B: 1, H: 2, Sq: 5, Skv: 5}, ""},
		{"rel_layer", Sizes{B: 1, H: 2, Sq: 6, Skv: 6}, "issue33.flex:13:46: rel[q - kv + 3] reads rel outside its extents: index 3..8 at B=1 H=2 HKV=2 Q=6 KV=6, but rel is declared [8] = 8 there (valid 0..7)"},
		{"sandwich_layer", Sizes{B: 1, H: 1, Sq: 8192, Skv: 8192}, ""},
		{"sandwich_layer", Sizes{B: 1, H: 1, Sq: 16384, Skv: 16384}, "index -8192..24574 at B=1 H=1 HKV=1 Q=16384 KV=16384, but sandwich is declared [16384]"},
		{"t5_layer", Sizes{B: 1, H: 2, Sq: 300, Skv: 300}, ""},
		{"t5_small_layer", Sizes{B: 1, H: 2, Sq: 300, Skv: 300}, "t5_small[h, relative_buckets] reads t5_small outside its extents: index in dimension 1 0..31"},
		{"prefix_layer", Sizes{B: 4, H: 1, Sq: 64, Skv: 64}, ""},
		{"prefix_layer", Sizes{B: 5, H: 1, Sq: 64, Skv: 64}, "prefix_len[b] reads prefix_len outside its extents: index 0..4 at B=5"},
		{"index_layer", Sizes{B: 1, H: 1, Sq: 64, Skv: 64}, ""}, // value-dependent: flagged by the kernel, not refused
	}
	for _, tt := range tests {
		checkForwardReads(t, u, tt.block, tt.sz, tt.want, 64)
	}
}

// TestBackwardReadsRefusedBeforeLaunch: the backward checks the reads of a
// new shape the same way: rel[q - kv + 3] of rel[8] at Q = 6 launches no
// backward kernel; at Q = 5 the backward runs.
func TestBackwardReadsRefusedBeforeLaunch(t *testing.T) {
	u := compileFile(t, "../testdata/reads/issue33.flex")
	fb := fake.New()
	launches := 0
	for _, e := range append([]string{runtime.AttentionEntry, runtime.TileFlagsEntry}, hipsrc.BwdEntryNamesFor(true)...) {
		fb.Register(e, func(_ *fake.Backend, l fake.Launch) error { launches++; return nil })
	}
	d := runtime.NewDevice(fb, runtime.Options{DisableCache: true})
	a, err := u.Load(d, "rel_layer")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	p := func() runtime.DevicePtr { p, _ := d.Alloc(1 << 12); return p }
	for _, name := range a.Buffers() {
		if err := a.Bind(name, p()); err != nil {
			t.Fatal(err)
		}
	}
	dbufs := make([]runtime.DevicePtr, len(a.GradBuffers()))
	for i := range dbufs {
		dbufs[i] = p()
	}
	bwd := func(s int) error {
		return a.Backward(0, p(), p(), p(), p(), p(), p(), 0, p(), p(), p(), dbufs, Sizes{B: 1, H: 2, Sq: s, Skv: s}, false)
	}
	var rerr *runtime.Error
	if err := bwd(6); !errors.As(err, &rerr) || rerr.Code != runtime.CodeReadRange || launches != 0 {
		t.Errorf("backward at Q = 6: %v after %d launches, want E410 and none", err, launches)
	}
	if err := bwd(5); err != nil || launches == 0 {
		t.Errorf("backward at Q = 5: %v after %d launches, want launches", err, launches)
	}
}

// TestBlockTableReads: per-block tables declared with floor-divided
// extents (testdata/reads/block_tables.flex) through the Go runtime on the
// fake device. A table of Q // 64 rows has none for the last, partial
// block: a call whose Q is not a multiple of 64 is refused with E410
// naming the read and the extent evaluated at its sizes; at a multiple of
// 64 it launches. The ceiling spelling (Q + 63) // 64 launches at every
// size.
func TestBlockTableReads(t *testing.T) {
	u := compileFile(t, "../testdata/reads/block_tables.flex")
	tests := []readCase{
		{"floor_layer", Sizes{B: 1, H: 2, Sq: 128, Skv: 128}, ""},
		{"floor_layer", Sizes{B: 2, H: 2, Sq: 1024, Skv: 4096}, ""},
		{"floor_layer", Sizes{B: 1, H: 2, Sq: 100, Skv: 128}, "block_tables.flex:11:42: keep_floor[b, h, q_idx // BLOCK, kv_idx // BLOCK] reads keep_floor outside its extents: index in dimension 2 0..1 at B=1 H=2 HKV=2 Q=100 KV=128, but keep_floor is declared [B, H, Q // 64, KV // 64] = 1 there (valid 0..0)"},
		{"floor_layer", Sizes{B: 1, H: 2, Sq: 128, Skv: 129}, "index in dimension 3 0..2 at B=1 H=2 HKV=2 Q=128 KV=129, but keep_floor is declared [B, H, Q // 64, KV // 64] = 2 there (valid 0..1)"},
		{"ceil_layer", Sizes{B: 1, H: 2, Sq: 100, Skv: 129}, ""},
		{"ceil_layer", Sizes{B: 1, H: 2, Sq: 1, Skv: 1}, ""},
		{"ceil_layer", Sizes{B: 3, H: 1, Sq: 4097, Skv: 63}, ""},
		{"sel_layer", Sizes{B: 1, H: 2, Sq: 1000, Skv: 3}, ""},
	}
	for _, tt := range tests {
		checkForwardReads(t, u, tt.block, tt.sz, tt.want, 1<<16)
	}
}

// TestZeroDBufferLaunch: a 0-d buffer (a captured scalar tensor) goes
// through the Go runtime as a slot of no extents: MaskcBuffers.dim holds
// 1 in every place for it (so its one element is the whole tensor), the
// forward and backward launch, and no read is refused.
func TestZeroDBufferLaunch(t *testing.T) {
	src := "buffer offset: i32[]\nbuffer temp: f32[]\n" +
		"mask shifted(b, h, q, kv) = kv <= q + offset\nscore cooled(score, b, h, q, kv) = score / temp\n" +
		"attention a {\n    mask = shifted\n    score = cooled\n}\n"
	u, diags := Compile("scalar.flex", []byte(src), Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	fb := fake.New()
	launches := 0
	for _, e := range append([]string{runtime.AttentionEntry, runtime.TileFlagsEntry}, hipsrc.BwdEntryNamesFor(true)...) {
		fb.Register(e, func(_ *fake.Backend, l fake.Launch) error { launches++; return nil })
	}
	d := runtime.NewDevice(fb, runtime.Options{DisableCache: true})
	a, err := u.Load(d, "a")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	spec := a.Launcher().Spec()
	for i, slot := range spec.Kernel.Slots {
		ext, err := spec.Extents(i, runtime.Sizes{B: 2, H: 4, HKV: 4, Q: 300, KV: 300})
		if len(slot.Dims) != 0 || err != nil || ext != (runtime.Extents{1, 1, 1, 1, 1, 1, 1, 1}) {
			t.Fatalf("slot %s: dims %q, extents %v, %v", slot.Name, slot.Dims, ext, err)
		}
	}
	p := func() runtime.DevicePtr { p, _ := d.Alloc(1 << 12); return p }
	for _, name := range a.Buffers() {
		if err := a.Bind(name, p()); err != nil {
			t.Fatal(err)
		}
	}
	sz := Sizes{B: 2, H: 4, Sq: 300, Skv: 300}
	if err := a.Forward(0, p(), p(), p(), p(), p(), sz); err != nil || launches == 0 {
		t.Fatalf("forward: %v after %d launches", err, launches)
	}
	dbufs := make([]runtime.DevicePtr, len(a.GradBuffers()))
	for i := range dbufs {
		dbufs[i] = p()
	}
	if got := a.GradBuffers(); len(got) != 1 || got[0] != "temp" {
		t.Fatalf("gradient buffers %q, want [temp]", got)
	}
	before := launches
	if err := a.Backward(0, p(), p(), p(), p(), p(), p(), 0, p(), p(), p(), dbufs, sz, false); err != nil || launches == before {
		t.Fatalf("backward: %v after %d launches", err, launches-before)
	}
}

// checkForwardReads launches block's forward at sz on a fake device, every
// buffer bound to bufBytes of device memory: want "" expects a launch,
// else E410 containing want and no launch.
func checkForwardReads(t *testing.T, u *Unit, block string, sz Sizes, want string, bufBytes int64) {
	t.Helper()
	fb := fake.New()
	launches := 0
	count := func(_ *fake.Backend, l fake.Launch) error { launches++; return nil }
	for _, e := range []string{runtime.AttentionEntry, runtime.TileFlagsEntry} {
		fb.Register(e, count)
	}
	d := runtime.NewDevice(fb, runtime.Options{DisableCache: true})
	a, err := u.Load(d, block)
	if err != nil {
		t.Fatalf("%s: %v", block, err)
	}
	for _, name := range a.Buffers() {
		p, _ := d.Alloc(bufBytes)
		if err := a.Bind(name, p); err != nil {
			t.Fatal(err)
		}
	}
	ptr := func() runtime.DevicePtr { p, _ := d.Alloc(64); return p }
	err = a.Forward(0, ptr(), ptr(), ptr(), ptr(), ptr(), sz)
	var rerr *runtime.Error
	switch {
	case want == "" && (err != nil || launches == 0):
		t.Errorf("%s %+v: %v after %d launches, want a launch", block, sz, err, launches)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &rerr) || rerr.Code != runtime.CodeReadRange):
		t.Errorf("%s %+v: got %v, want E410 containing %q", block, sz, err, want)
	case want != "" && launches != 0:
		t.Errorf("%s %+v: refused after %d launches", block, sz, launches)
	}
	a.Close()
}

// readCase is a forward call of checkForwardReads: block at sz, want ""
// for a launch, else a text of the E410 that refuses it.
type readCase struct {
	block string
	sz    Sizes
	want  string
}

// compileFile compiles the .flex file at path, failing t on errors.
func compileFile(t *testing.T, path string) *Unit {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u, diags := Compile(path, text, Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	return u
}
