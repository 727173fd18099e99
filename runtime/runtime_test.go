package runtime

import (
	"errors"
	"math"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/fake"
	"github.com/maskc/maskc/runtime/kcache"
)

// attnSource is what the fake compiler sees: it only needs the entry
// points (and #error lines in the error tests).
const attnSource = `
#line 5 "probe.flex"
__device__ bool maskc_mask();
#line 1 "probe.cu"
extern "C" __global__ void maskc_attn_fwd(const T* Q, const T* K, const T* V, T* O, float* LSE, MaskcShape shape, MaskcBuffers buf, const MaskcTensorMaps maps) {}
extern "C" __global__ void maskc_tile_flags(MaskcShape shape, MaskcBuffers buf, unsigned char* flags) {}
extern "C" __global__ void maskc_seg_check(MaskcBuffers buf) {}
`

// launchRecord is what the fake attention kernels saw.
type launchRecord struct {
	entry           string
	grid, block     backend.Dim3
	shared          uint32
	stream          backend.Stream
	q, k, v, o, lse uintptr
	shape           cShape
	buf             cBuffers
	maps            cTensorMaps
	flags           uintptr
}

type recorder struct {
	mu      sync.Mutex
	records []launchRecord
}

func (r *recorder) register(b *fake.Backend) {
	b.Register(AttentionEntry, func(mem *fake.Backend, l fake.Launch) error {
		rec := launchRecord{
			entry: AttentionEntry, grid: l.Grid, block: l.Block, shared: l.SharedBytes, stream: l.Stream,
			q: fake.Param[uintptr](l.Params, 0), k: fake.Param[uintptr](l.Params, 1), v: fake.Param[uintptr](l.Params, 2),
			o: fake.Param[uintptr](l.Params, 3), lse: fake.Param[uintptr](l.Params, 4),
			shape: fake.Param[cShape](l.Params, 5), buf: fake.Param[cBuffers](l.Params, 6),
			maps: fake.Param[cTensorMaps](l.Params, 7),
		}
		// Touch the output so that a wrong pointer is an error.
		out, err := mem.Bytes(backend.DevicePtr(rec.lse), 4)
		if err != nil {
			return err
		}
		out[0] = 0x7f
		r.mu.Lock()
		r.records = append(r.records, rec)
		r.mu.Unlock()
		return nil
	})
	b.Register(TileFlagsEntry, func(mem *fake.Backend, l fake.Launch) error {
		rec := launchRecord{
			entry: TileFlagsEntry, grid: l.Grid, block: l.Block, shared: l.SharedBytes, stream: l.Stream,
			shape: fake.Param[cShape](l.Params, 0), buf: fake.Param[cBuffers](l.Params, 1), flags: fake.Param[uintptr](l.Params, 2),
		}
		n := int64(l.Grid.X) * int64(l.Grid.Y)
		flags, err := mem.Bytes(backend.DevicePtr(rec.flags), n)
		if err != nil {
			return err
		}
		for i := range flags {
			flags[i] = TileFull
		}
		r.mu.Lock()
		r.records = append(r.records, rec)
		r.mu.Unlock()
		return nil
	})
}

func newFakeDevice(t testing.TB, cacheDir string) (*Device, *fake.Backend, *recorder) {
	fb := fake.New()
	rec := &recorder{}
	rec.register(fb)
	opts := Options{CacheDir: cacheDir, DisableCache: cacheDir == ""}
	return NewDevice(fb, opts), fb, rec
}

func probeFlex(t testing.TB) *dsl.Source {
	text, err := os.ReadFile("testdata/probe.flex")
	if err != nil {
		t.Fatal(err)
	}
	return dsl.NewSource("probe.flex", text)
}

// Sparsity and its values name the descriptor's sparsity in these tests.
type Sparsity = hipsrc.Sparsity

const (
	SparsityNone     = hipsrc.SparsityNone
	SparsityAnalytic = hipsrc.SparsityAnalytic
	SparsityPrepass  = hipsrc.SparsityPrepass
)

// probeSpec is a spec of the probe kernel on the NVIDIA platform: 256
// threads, key tile 64, 64 KiB of shared memory, flags per head.
func probeSpec(t testing.TB, sparsity Sparsity) AttentionSpec {
	kd := hipsrc.KernelDesc{
		ID: "probe", SourceFile: "probe.cu", Attention: "probe", Entry: AttentionEntry, HeadDim: 128, Sparsity: sparsity,
		MaskUsesB: false, MaskUsesH: true,
		Launch: map[string]hipsrc.LaunchConfig{"nvidia": {BlockN: 64, Threads: 256, SharedMemBytes: 64 << 10}},
		Slots: []hipsrc.BufferSlot{
			{Name: "doc", Slot: 0, DType: "f32", ElemBytes: 4, Dims: []string{"KV"}},
			{Name: "bias", Slot: 1, DType: "f32", ElemBytes: 4, Dims: []string{"H", "64"}},
		},
	}
	if sparsity == SparsityPrepass {
		kd.FlagsEntry = TileFlagsEntry
	}
	return AttentionSpec{Kernel: kd, Platform: hipsrc.NVIDIA, Source: attnSource, Flex: probeFlex(t)}
}

// TestCLayoutMatchesABI checks the Go mirror of the ABI structs against
// their one definition, hipsrc.ShapeStruct, hipsrc.BuffersStruct and
// hipsrc.TensorMapsStruct (whose alignment, 64, the mirror need not have:
// a launch copies parameters into the kernel's own aligned layout).
func TestCLayoutMatchesABI(t *testing.T) {
	var s cShape
	var b cBuffers
	var m cTensorMaps
	tests := []struct {
		st    hipsrc.Struct
		size  uintptr
		field map[string]uintptr
	}{
		{hipsrc.ShapeStruct, unsafe.Sizeof(s), map[string]uintptr{
			"B": unsafe.Offsetof(s.B), "H": unsafe.Offsetof(s.H), "HKV": unsafe.Offsetof(s.HKV), "Sq": unsafe.Offsetof(s.Sq),
			"Skv": unsafe.Offsetof(s.Skv), "q_stride": unsafe.Offsetof(s.QStride), "k_stride": unsafe.Offsetof(s.KStride),
			"v_stride": unsafe.Offsetof(s.VStride), "o_stride": unsafe.Offsetof(s.OStride), "scale": unsafe.Offsetof(s.Scale),
			"sink": unsafe.Offsetof(s.Sink), "tile_flags": unsafe.Offsetof(s.TileFlags),
		}},
		{hipsrc.BuffersStruct, unsafe.Sizeof(b), map[string]uintptr{"ptr": unsafe.Offsetof(b.Ptr), "dim": unsafe.Offsetof(b.Dim),
			"q_offset": unsafe.Offsetof(b.QOffset), "kv_offset": unsafe.Offsetof(b.KVOffset), "h_offset": unsafe.Offsetof(b.HOffset),
			"q_total": unsafe.Offsetof(b.QTotal), "kv_total": unsafe.Offsetof(b.KVTotal), "h_total": unsafe.Offsetof(b.HTotal),
			"status": unsafe.Offsetof(b.Status)}},
		{hipsrc.TensorMapsStruct, unsafe.Sizeof(m), map[string]uintptr{"q": unsafe.Offsetof(m.Q), "k": unsafe.Offsetof(m.K),
			"v": unsafe.Offsetof(m.V), "dout": unsafe.Offsetof(m.Dout), "ok": unsafe.Offsetof(m.OK)}},
	}
	for _, tc := range tests {
		if int(tc.size) != tc.st.Size {
			t.Errorf("sizeof(%s): Go %d, ABI %d", tc.st.Name, tc.size, tc.st.Size)
		}
		if len(tc.field) != len(tc.st.Fields) {
			t.Errorf("%s: Go mirrors %d fields, the ABI has %d", tc.st.Name, len(tc.field), len(tc.st.Fields))
		}
		for _, f := range tc.st.Fields {
			if got, ok := tc.field[f.Name]; !ok || int(got) != f.Offset {
				t.Errorf("%s.%s at %d (mirrored %v), the ABI puts it at %d", tc.st.Name, f.Name, got, ok, f.Offset)
			}
		}
	}
}

func TestCodesAreDescribedAndInRange(t *testing.T) {
	all := []dsl.Code{CodeNoRuntime, CodeCompileFlex, CodeCompileKernel, CodeNoCompiler, CodeModule, CodeLaunch, CodeShape, CodeBuffers, CodeSpec, CodeBackendName, CodeReadRange}
	if len(all) != len(Codes) {
		t.Errorf("%d codes declared, %d described", len(all), len(Codes))
	}
	re := regexp.MustCompile(`^E4\d\d$`)
	for _, c := range all {
		if Codes[c] == "" || !re.MatchString(string(c)) {
			t.Errorf("code %q: description %q", c, Codes[c])
		}
	}
}

func TestOpenUnknownBackend(t *testing.T) {
	_, err := Open(Options{Backend: "metal"})
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeBackendName || !strings.Contains(err.Error(), "metal") {
		t.Fatalf("got %v", err)
	}
}

// TestOpenReportsWhatWasSearched runs where there is no GPU (CI) and checks
// the error; where a GPU exists it checks the device instead.
func TestOpenReportsWhatWasSearched(t *testing.T) {
	t.Setenv(BackendEnv, "")
	d, err := Open(Options{DisableCache: true})
	if err == nil {
		defer d.Close()
		if d.Info().Arch == "" {
			t.Fatalf("device without an architecture: %+v", d.Info())
		}
		return
	}
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeNoRuntime {
		t.Fatalf("want E400, got %v", err)
	}
	for _, want := range []string{"CUDA driver", "HIP runtime", "libcuda.so.1", "libamdhip64.so"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if diag := re.Diagnostic(); diag.Code != CodeNoRuntime || diag.Source != nil {
		t.Errorf("diagnostic %+v", diag)
	}
}

func TestCompileUsesCache(t *testing.T) {
	dir := t.TempDir()
	d1, fb1, _ := newFakeDevice(t, dir)
	m, err := d1.Compile(attnSource, CompileOptions{Name: "probe.cu"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Stats.Cache != kcache.Miss || fb1.Compiles() != 1 || m.Stats.Image != backend.ImageFake {
		t.Fatalf("cold: stats %+v, %d compiles", m.Stats, fb1.Compiles())
	}
	// A second device (a restart) finds the entry.
	d2, fb2, _ := newFakeDevice(t, dir)
	m2, err := d2.Compile(attnSource, CompileOptions{Name: "probe.cu"})
	if err != nil {
		t.Fatal(err)
	}
	if m2.Stats.Cache != kcache.Hit || fb2.Compiles() != 0 || m2.Stats.Key != m.Stats.Key {
		t.Fatalf("warm: stats %+v, %d compiles", m2.Stats, fb2.Compiles())
	}
	if _, err := m2.Kernel(AttentionEntry); err != nil {
		t.Fatal(err)
	}
	// Options change the key.
	m3, err := d2.Compile(attnSource, CompileOptions{Name: "probe.cu", Options: []string{"--use_fast_math"}})
	if err != nil || m3.Stats.Cache != kcache.Miss || m3.Stats.Key == m.Stats.Key {
		t.Fatalf("options did not change the key: %+v, %v", m3.Stats, err)
	}
	// So does an architecture override, which is what the code is built for.
	m6, err := d2.Compile(attnSource, CompileOptions{Name: "probe.cu", Arch: "sm_90a"})
	if err != nil || m6.Stats.Cache != kcache.Miss || m6.Stats.Key == m.Stats.Key || m6.Stats.Arch != "sm_90a" ||
		m.Stats.Arch != d2.Info().Arch {
		t.Fatalf("arch override: %+v (default %q), %v", m6.Stats, m.Stats.Arch, err)
	}
	// A corrupt entry is reported, replaced and still compiles.
	path := entryPath(dir, m.Stats.Key)
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	m4, err := d2.Compile(attnSource, CompileOptions{Name: "probe.cu"})
	if err != nil || m4.Stats.Cache != kcache.Corrupt || m4.Stats.CacheErr == nil || fb2.Compiles() != 3 {
		t.Fatalf("corrupt entry: %+v, %v, %d compiles", m4.Stats, err, fb2.Compiles())
	}
	m5, err := d2.Compile(attnSource, CompileOptions{Name: "probe.cu"})
	if err != nil || m5.Stats.Cache != kcache.Hit {
		t.Fatalf("after recompiling: %+v, %v", m5.Stats, err)
	}
}

func entryPath(dir, key string) string { return dir + "/" + key + ".kernel" }

func TestCompileWithoutCacheWritesNothing(t *testing.T) {
	d, fb, _ := newFakeDevice(t, "")
	for i := 0; i < 2; i++ {
		if _, err := d.Compile(attnSource, CompileOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if fb.Compiles() != 2 || d.CacheDir() != "" {
		t.Fatalf("%d compiles, cache dir %q", fb.Compiles(), d.CacheDir())
	}
}

func TestCompileErrorsPointAtFlexLines(t *testing.T) {
	flex := probeFlex(t)
	d, _, _ := newFakeDevice(t, "")
	src := "#line 5 \"probe.flex\"\n#error identifier \"doc_\" is undefined\n#line 200 \"probe.cu\"\n#error bad template\n"
	_, err := d.Compile(src, CompileOptions{Name: "probe.cu", Flex: flex})
	var diags dsl.Diagnostics
	if !errors.As(err, &diags) {
		t.Fatalf("want dsl.Diagnostics, got %T %v", err, err)
	}
	if len(diags) != 2 {
		t.Fatalf("got %d diagnostics:\n%s", len(diags), diags.Render())
	}
	var flexDiag, kernelDiag *dsl.Diagnostic
	for _, d := range diags {
		switch d.Code {
		case CodeCompileFlex:
			flexDiag = d
		case CodeCompileKernel:
			kernelDiag = d
		}
	}
	if flexDiag == nil || flexDiag.Position().Line != 5 || !strings.Contains(flexDiag.Message, `"doc_"`) {
		t.Errorf("flex diagnostic: %+v", flexDiag)
	}
	if kernelDiag == nil || !strings.Contains(kernelDiag.Message, "probe.cu:200") {
		t.Errorf("kernel diagnostic: %+v", kernelDiag)
	}
}

func TestArgsAndGenericLaunch(t *testing.T) {
	d, fb, _ := newFakeDevice(t, "")
	fb.Register("axpy", func(mem *fake.Backend, l fake.Launch) error {
		x := fake.Param[backend.DevicePtr](l.Params, 0)
		n := fake.Param[int32](l.Params, 1)
		a := fake.Param[float32](l.Params, 2)
		data, err := mem.Bytes(x, int64(n)*4)
		if err != nil {
			return err
		}
		xs := unsafe.Slice((*float32)(unsafe.Pointer(&data[0])), n)
		for i := range xs {
			xs[i] = a*xs[i] + 1
		}
		return nil
	})
	m, err := d.Compile(`extern "C" __global__ void axpy(float* x, int n, float a) {}`, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := m.Kernel("axpy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Kernel("missing"); err == nil {
		t.Error("lookup of a missing kernel succeeded")
	}
	buf, err := d.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	host := []float32{1, 2, 3, 4}
	if err := d.CopyHtoD(buf, unsafe.Slice((*byte)(unsafe.Pointer(&host[0])), 16)); err != nil {
		t.Fatal(err)
	}
	args, err := NewArgs(8, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer args.Free()
	args.SetPtr(0, buf)
	args.SetInt32(1, 4)
	args.SetFloat32(2, 2)
	cfg := LaunchConfig{Grid: dim3(1, 1, 1), Block: dim3(32, 1, 1)}
	if err := k.Launch(0, cfg, args); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 4)
	if err := d.CopyDtoH(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 16), buf); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float32{3, 5, 7, 9} {
		if out[i] != want {
			t.Errorf("x[%d] = %v, want %v", i, out[i], want)
		}
	}
	if err := k.Launch(0, LaunchConfig{Grid: dim3(0, 1, 1), Block: dim3(32, 1, 1)}, args); err == nil {
		t.Error("launch with an empty grid succeeded")
	}
	if _, err := NewArgs(8, 0); err == nil {
		t.Error("NewArgs accepted a zero-sized parameter")
	}
}

// tensors allocates q, k, v, o, lse and two buffers on the fake device.
func tensors(t testing.TB, d *Device) (q, k, v, o, lse backend.DevicePtr, bufs []backend.DevicePtr) {
	alloc := func() backend.DevicePtr {
		p, err := d.Alloc(1 << 16)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	return alloc(), alloc(), alloc(), alloc(), alloc(), []backend.DevicePtr{alloc(), alloc()}
}

func TestForwardMarshalsTheABI(t *testing.T) {
	for _, sparsity := range []Sparsity{SparsityAnalytic, SparsityPrepass} {
		d, _, rec := newFakeDevice(t, "")
		k, err := d.NewAttention(probeSpec(t, sparsity))
		if err != nil {
			t.Fatal(err)
		}
		q, kk, v, o, lse, bufs := tensors(t, d)
		shape := ContiguousShape(BSHD, 2, 8, 2, 300, 200, 128)
		shape.Sink = bufs[1]
		stream, _ := d.NewStream()
		if err := k.Forward(stream, q, kk, v, o, lse, shape, bufs); err != nil {
			t.Fatal(err)
		}
		want := 1
		if sparsity == SparsityPrepass {
			want = 2
		}
		if len(rec.records) != want {
			t.Fatalf("sparsity %s: %d launches, want %d", sparsity, len(rec.records), want)
		}
		fwd := rec.records[len(rec.records)-1]
		if fwd.entry != AttentionEntry || fwd.grid != (dim3(3, 8, 2)) || fwd.block != (dim3(256, 1, 1)) || fwd.shared != 64<<10 || fwd.stream != stream {
			t.Errorf("launch %+v", fwd)
		}
		if fwd.q != uintptr(q) || fwd.k != uintptr(kk) || fwd.v != uintptr(v) || fwd.o != uintptr(o) || fwd.lse != uintptr(lse) {
			t.Errorf("tensor pointers %+v", fwd)
		}
		s := fwd.shape
		if s.B != 2 || s.H != 8 || s.HKV != 2 || s.Sq != 300 || s.Skv != 200 {
			t.Errorf("sizes %+v", s)
		}
		if s.QStride != [3]int64{300 * 8 * 128, 128, 8 * 128} || s.KStride != [3]int64{200 * 2 * 128, 128, 2 * 128} {
			t.Errorf("strides q %v k %v", s.QStride, s.KStride)
		}
		if math.Abs(float64(s.Scale)-1/math.Sqrt(128)) > 1e-7 || s.Sink != uintptr(bufs[1]) {
			t.Errorf("scale %v sink %#x", s.Scale, s.Sink)
		}
		if fwd.buf.Ptr[0] != uintptr(bufs[0]) || fwd.buf.Ptr[1] != uintptr(bufs[1]) || fwd.buf.Ptr[2] != 0 {
			t.Errorf("buffer pointers %v", fwd.buf.Ptr)
		}
		if fwd.buf.Dim[0] != (Extents{200, 1, 1, 1, 1, 1, 1, 1}) || fwd.buf.Dim[1] != (Extents{8, 64, 1, 1, 1, 1, 1, 1}) {
			t.Errorf("buffer dims %v", fwd.buf.Dim[:2])
		}
		if sparsity == SparsityPrepass {
			pre := rec.records[0]
			// kv tiles x q tiles; flags per head (8) but not per batch.
			if pre.entry != TileFlagsEntry || pre.grid != (dim3(4, 3, 1)) || pre.stream != stream || pre.shared != 0 {
				t.Errorf("pre-pass launch %+v", pre)
			}
			if pre.flags == 0 || pre.flags != s.TileFlags || pre.shape.TileFlags != pre.flags {
				t.Errorf("flags %#x, shape.tile_flags %#x", pre.flags, s.TileFlags)
			}
			if _, err := d.Backend.(*fake.Backend).Bytes(backend.DevicePtr(pre.flags), 8*3*4); err != nil {
				t.Errorf("flags buffer too small: %v", err)
			}
		} else if s.TileFlags != 0 {
			t.Errorf("tile_flags %#x without a pre-pass", s.TileFlags)
		}
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
		if err := k.Forward(stream, q, kk, v, o, lse, shape, bufs); err == nil {
			t.Error("Forward after Close succeeded")
		}
	}
}

// statusOf returns the status words of k's (shape, stream) entry.
func statusOf(t *testing.T, k *AttentionKernel, shape Shape, s Stream) DevicePtr {
	t.Helper()
	e, ok := (*k.entries.Load())[shapeKey{shape: shape, stream: s}]
	if !ok {
		t.Fatalf("no entry for %+v on stream %v", shape, s)
	}
	return e.status
}

// TestStatusWords checks the status words' life cycle: zeroed when made,
// one set per (shape, stream), the same pointer in every launch of it
// (pre-pass and segments check included, the check first), bits a kernel
// ORs in read back by Status (or-ed over the sets) and cleared by
// ResetStatus, and the words freed by Close.
func TestStatusWords(t *testing.T) {
	d, fb, rec := newFakeDevice(t, "")
	setBit := uint32(0)
	var zeroAtFirst []bool
	fb.Register(AttentionEntry, func(mem *fake.Backend, l fake.Launch) error {
		buf := fake.Param[cBuffers](l.Params, 6)
		rec.mu.Lock()
		rec.records = append(rec.records, launchRecord{entry: AttentionEntry, buf: buf, stream: l.Stream})
		rec.mu.Unlock()
		w, err := mem.Bytes(backend.DevicePtr(buf.Status), 4*StatusWords)
		if err != nil {
			return err
		}
		zero := true
		for _, b := range w[4:] { // the slot words: the fake check below writes none
			zero = zero && b == 0
		}
		zeroAtFirst = append(zeroAtFirst, zero)
		*(*uint32)(unsafe.Pointer(&w[0])) |= setBit
		return nil
	})
	fb.Register(SegCheckEntry, func(mem *fake.Backend, l fake.Launch) error {
		rec.mu.Lock()
		rec.records = append(rec.records, launchRecord{entry: SegCheckEntry, buf: fake.Param[cBuffers](l.Params, 0), grid: l.Grid, block: l.Block, stream: l.Stream})
		rec.mu.Unlock()
		return nil
	})
	spec := probeSpec(t, SparsityPrepass)
	spec.Kernel.SegCheckEntry = SegCheckEntry
	k, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.Status(); err != nil || got != 0 {
		t.Errorf("Status() before any launch = %d, %v", got, err)
	}
	q, kk, v, o, lse, bufs := tensors(t, d)
	shape := ContiguousShape(BSHD, 1, 2, 2, 300, 200, 128)
	other, _ := d.NewStream()
	for i, bit := range []uint32{0, StatusSegmentsUnsorted, StatusReadOutOfRange} {
		setBit = bit
		s := Stream(0)
		if i == 2 {
			s = other
		}
		if err := k.Forward(s, q, kk, v, o, lse, shape, bufs); err != nil {
			t.Fatal(err)
		}
	}
	if len(zeroAtFirst) != 3 || !zeroAtFirst[0] {
		t.Errorf("status words not zeroed when made: %v", zeroAtFirst)
	}
	if got, err := k.Status(); err != nil || got != StatusSegmentsUnsorted|StatusReadOutOfRange {
		t.Errorf("Status() = %d, %v; want both sticky bits", got, err)
	}
	s0, s1 := statusOf(t, k, shape, 0), statusOf(t, k, shape, other)
	if s0 == s1 {
		t.Errorf("two streams share status words %#x", s0)
	}
	var entries []string
	for _, r := range rec.records {
		entries = append(entries, r.entry)
		want := s0
		if r.stream == other {
			want = s1
		}
		if r.buf.Status != uintptr(want) {
			t.Errorf("%s launched with status %#x, its (shape, stream) owns %#x", r.entry, r.buf.Status, want)
		}
		if r.entry == SegCheckEntry && (r.grid != dim3(1, 1, 1) || r.block != dim3(256, 1, 1) || r.buf.Ptr[0] != uintptr(bufs[0])) {
			t.Errorf("segments check launch %+v", r)
		}
	}
	one := SegCheckEntry + " " + TileFlagsEntry + " " + AttentionEntry
	if got := strings.Join(entries, " "); got != strings.Join([]string{one, one, one}, " ") {
		t.Errorf("launches %s; want the segments check first, then the pre-pass and the forward, per call", got)
	}
	if err := k.ResetStatus(); err != nil {
		t.Fatal(err)
	}
	if got, err := k.Status(); err != nil || got != 0 {
		t.Errorf("after ResetStatus: %d, %v", got, err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []DevicePtr{s0, s1} {
		if _, err := fb.Bytes(p, 4); err == nil {
			t.Error("status words still allocated after Close")
		}
	}
	if _, err := k.Status(); err == nil {
		t.Error("Status after Close succeeded")
	}
}

func TestForwardRejectsBadCalls(t *testing.T) {
	d, fb, _ := newFakeDevice(t, "")
	k, err := d.NewAttention(probeSpec(t, SparsityNone))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	q, kk, v, o, lse, bufs := tensors(t, d)
	good := ContiguousShape(BHSD, 1, 4, 4, 64, 64, 128)
	mod := func(f func(*Shape)) Shape { s := good; f(&s); return s }
	tests := []struct {
		name  string
		shape Shape
		bufs  []backend.DevicePtr
		q     backend.DevicePtr
		code  dsl.Code
	}{
		{"zero batch", mod(func(s *Shape) { s.B = 0 }), bufs, q, CodeShape},
		{"GQA mismatch", mod(func(s *Shape) { s.HKV = 3 }), bufs, q, CodeShape},
		{"too many heads for the grid", mod(func(s *Shape) { s.H, s.HKV = 70000, 70000 }), bufs, q, CodeShape},
		{"sequence longer than the 32-bit index bound", mod(func(s *Shape) { s.Skv = MaxSeqLen + 1 }), bufs, q, CodeShape},
		{"unset strides", Shape{B: 1, H: 1, HKV: 1, Sq: 8, Skv: 8}, bufs, q, CodeShape},
		{"negative stride", mod(func(s *Shape) { s.VStride[0] = -1 }), bufs, q, CodeShape},
		{"nan scale", mod(func(s *Shape) { s.Scale = float32(math.NaN()) }), bufs, q, CodeShape},
		{"null q", good, bufs, 0, CodeShape},
		{"missing buffer", good, bufs[:1], q, CodeBuffers},
		{"null buffer", good, []backend.DevicePtr{bufs[0], 0}, q, CodeBuffers},
	}
	for _, tc := range tests {
		err := k.Forward(0, tc.q, kk, v, o, lse, tc.shape, tc.bufs)
		var re *Error
		if !errors.As(err, &re) || re.Code != tc.code {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.code)
		}
	}
	if fb.Launches() != 0 {
		t.Errorf("%d launches after only bad calls", fb.Launches())
	}
	if err := k.Forward(0, q, kk, v, o, lse, good, bufs); err != nil {
		t.Fatalf("good call after bad ones: %v", err)
	}
}

func TestNewAttentionRejectsBadSpecs(t *testing.T) {
	d, _, _ := newFakeDevice(t, "")
	mod := func(f func(*AttentionSpec)) AttentionSpec { s := probeSpec(t, SparsityNone); f(&s); return s }
	tests := []struct {
		name string
		spec AttentionSpec
		code dsl.Code
	}{
		{"no source", mod(func(s *AttentionSpec) { s.Source = "" }), CodeSpec},
		{"zero block", mod(func(s *AttentionSpec) { s.Kernel.Launch = map[string]hipsrc.LaunchConfig{"nvidia": {Threads: 256}} }), CodeSpec},
		{"too many threads", mod(func(s *AttentionSpec) {
			s.Kernel.Launch = map[string]hipsrc.LaunchConfig{"nvidia": {BlockN: 64, Threads: 2048}}
		}), CodeSpec},
		{"no launch for the platform", mod(func(s *AttentionSpec) { s.Platform = hipsrc.AMD }), CodeSpec},
		{"head dim 96", mod(func(s *AttentionSpec) { s.Kernel.HeadDim = 96 }), CodeSpec},
		{"too much shared memory", mod(func(s *AttentionSpec) {
			s.Kernel.Launch = map[string]hipsrc.LaunchConfig{"nvidia": {BlockN: 64, Threads: 256, SharedMemBytes: 1 << 20}}
		}), CodeSpec},
		{"nine buffers", mod(func(s *AttentionSpec) { s.Kernel.Slots = make([]hipsrc.BufferSlot, 9) }), CodeSpec},
		// no extents is a 0-d buffer (a scalar tensor); more than the ABI holds is refused
		{"buffer of nine extents", mod(func(s *AttentionSpec) { s.Kernel.Slots[0].Dims = make([]string, 9) }), CodeSpec},
		{"slots out of order", mod(func(s *AttentionSpec) { s.Kernel.Slots[1].Slot = 0 }), CodeSpec},
		{"unknown sparsity", mod(func(s *AttentionSpec) { s.Kernel.Sparsity = "blocked" }), CodeSpec},
		{"prepass without flags", mod(func(s *AttentionSpec) { s.Kernel.Sparsity = SparsityPrepass }), CodeSpec},
		{"other entry", mod(func(s *AttentionSpec) { s.Kernel.Entry = "maskc_attn_decode" }), CodeSpec},
		{"no source file", mod(func(s *AttentionSpec) { s.Kernel.SourceFile = "" }), CodeSpec},
		{"backward without launch", mod(func(s *AttentionSpec) { s.BwdSource, s.Kernel.BwdSourceFile = bwdSource, "probe.bwd.cu" }), CodeSpec},
		{"no forward entry", mod(func(s *AttentionSpec) { s.Source = "extern \"C\" __global__ void other() {}" }), CodeModule},
	}
	for _, tc := range tests {
		_, err := d.NewAttention(tc.spec)
		var re *Error
		if !errors.As(err, &re) || re.Code != tc.code {
			t.Errorf("%s: got %v, want %s", tc.name, err, tc.code)
		}
	}
}

// TestForwardMarshalsNDExtents: a buffer of 3 and one of
// hipsrc.MaxBufferRank dimensions pass every extent, outermost first, and 1
// past the rank.
func TestForwardMarshalsNDExtents(t *testing.T) {
	d, _, rec := newFakeDevice(t, "")
	spec := probeSpec(t, SparsityNone)
	spec.Kernel.Slots[0].Dims = []string{"H", "KV // 8", "8"}
	spec.Kernel.Slots[1].Dims = []string{"2", "H // 4", "2", "2", "2", "2", "2", "1"}
	k, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	q, kk, v, o, lse, bufs := tensors(t, d)
	if err := k.Forward(0, q, kk, v, o, lse, ContiguousShape(BSHD, 2, 8, 2, 300, 200, 128), bufs); err != nil {
		t.Fatal(err)
	}
	fwd := rec.records[len(rec.records)-1]
	if fwd.buf.Dim[0] != (Extents{8, 25, 8, 1, 1, 1, 1, 1}) || fwd.buf.Dim[1] != (Extents{2, 2, 2, 2, 2, 2, 2, 1}) {
		t.Errorf("buffer dims %v", fwd.buf.Dim[:2])
	}
}

// TestExtentsElements: the element count of every rank, and the refusals
// (an extent below 1, a product past 2^62).
func TestExtentsElements(t *testing.T) {
	for _, tc := range []struct {
		e    Extents
		n    int64
		okay bool
	}{
		{Extents{5, 1, 1, 1, 1, 1, 1, 1}, 5, true},
		{Extents{2, 3, 4, 1, 1, 1, 1, 1}, 24, true},
		{Extents{2, 2, 2, 2, 2, 2, 2, 3}, 384, true},
		{Extents{2, 0, 4, 1, 1, 1, 1, 1}, 0, false},
		{Extents{1 << 31, 1 << 31, 1, 1, 1, 1, 1, 1}, 1 << 62, true},
		{Extents{1 << 31, 1 << 31, 2, 1, 1, 1, 1, 1}, 0, false},
		{Extents{1 << 40, 1 << 40, 1 << 40, 1, 1, 1, 1, 1}, 0, false},
	} {
		if n, ok := tc.e.Elements(); n != tc.n || ok != tc.okay {
			t.Errorf("%v: %d %v, want %d %v", tc.e, n, ok, tc.n, tc.okay)
		}
	}
}

func TestForwardBufferExtentsMustBePositive(t *testing.T) {
	d, _, _ := newFakeDevice(t, "")
	spec := probeSpec(t, SparsityNone)
	spec.Kernel.Slots[1].Dims = []string{"H - 4", "64"}
	k, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	q, kk, v, o, lse, bufs := tensors(t, d)
	err = k.Forward(0, q, kk, v, o, lse, ContiguousShape(BSHD, 1, 4, 4, 64, 64, 128), bufs)
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeBuffers {
		t.Fatalf("got %v", err)
	}
}

func TestForwardConcurrent(t *testing.T) {
	d, fb, rec := newFakeDevice(t, "")
	k, err := d.NewAttention(probeSpec(t, SparsityPrepass))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	q, kk, v, o, lse, bufs := tensors(t, d)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shape := ContiguousShape(BSHD, 1+g%2, 4, 2, 64*(1+g%3), 64, 128)
			for i := 0; i < 50; i++ {
				if err := k.Forward(backend.Stream(g%4), q, kk, v, o, lse, shape, bufs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if fb.Launches() != 16*50*2 {
		t.Fatalf("%d launches", fb.Launches())
	}
	for _, r := range rec.records {
		if r.entry == AttentionEntry && r.grid.X != uint32(r.shape.Sq+127)/128 {
			t.Fatalf("launch with grid %v for Sq %d: argument blocks were shared", r.grid, r.shape.Sq)
		}
	}
}

// TestForwardSteadyStateDoesNotAllocate is the guarantee BenchmarkForward
// reports: after the first call for a shape, Forward allocates nothing.
func TestForwardSteadyStateDoesNotAllocate(t *testing.T) {
	for _, sparsity := range []Sparsity{SparsityNone, SparsityPrepass} {
		d, fb := nopDevice()
		k, err := d.NewAttention(probeSpec(t, sparsity))
		if err != nil {
			t.Fatal(err)
		}
		q, kk, v, o, lse, bufs := tensors(t, d)
		shapes := []Shape{ContiguousShape(BSHD, 2, 16, 4, 4096, 4096, 128), ContiguousShape(BHSD, 1, 16, 16, 1024, 2048, 128)}
		for _, s := range shapes {
			if err := k.Forward(0, q, kk, v, o, lse, s, bufs); err != nil {
				t.Fatal(err)
			}
		}
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			i++
			if err := k.Forward(0, q, kk, v, o, lse, shapes[i%2], bufs); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("sparsity %s: Forward allocates %v times per call", sparsity, allocs)
		}
		if fb.Launches() == 0 {
			t.Fatal("no launches")
		}
		k.Close()
	}
}

// nopDevice is a fake device whose attention kernels do nothing, so that
// benchmarks measure the launcher alone.
func nopDevice() (*Device, *fake.Backend) {
	fb := fake.New()
	nop := func(*fake.Backend, fake.Launch) error { return nil }
	fb.Register(AttentionEntry, nop)
	fb.Register(TileFlagsEntry, nop)
	return NewDevice(fb, Options{DisableCache: true}), fb
}

func BenchmarkForward(b *testing.B) {
	d, _ := nopDevice()
	k, err := d.NewAttention(probeSpec(b, SparsityNone))
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	q, kk, v, o, lse, bufs := tensors(b, d)
	shape := ContiguousShape(BSHD, 2, 16, 4, 4096, 4096, 128)
	if err := k.Forward(0, q, kk, v, o, lse, shape, bufs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := k.Forward(0, q, kk, v, o, lse, shape, bufs); err != nil {
			b.Fatal(err)
		}
	}
}

func dim3(x, y, z uint32) Dim3 { return Dim3{X: x, Y: y, Z: z} }

// TestCheckSegments: the opt-in check reads a segments buffer back and
// applies dsl.CheckSegments; buffers not declared segments are not read.
func TestCheckSegments(t *testing.T) {
	d, _, _ := newFakeDevice(t, "")
	spec := probeSpec(t, SparsityNone)
	spec.Kernel.Slots[0].DType, spec.Kernel.Slots[0].Segments = "i32", true
	k, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	_, _, _, _, _, bufs := tensors(t, d)
	shape := ContiguousShape(BSHD, 1, 4, 4, 6, 6, 128)
	for _, tc := range []struct {
		ids  []int32
		want string
	}{
		{[]int32{0, 0, 1, 1, 1, 7}, ""},
		{[]int32{0, 1, 1, 0, 2, 2}, "element 3 (0) is smaller than element 2 (1)"},
	} {
		if err := d.CopyHtoD(bufs[0], unsafe.Slice((*byte)(unsafe.Pointer(&tc.ids[0])), 4*len(tc.ids))); err != nil {
			t.Fatal(err)
		}
		err := k.CheckSegments(shape, bufs)
		if tc.want == "" && err != nil {
			t.Errorf("%v: %v", tc.ids, err)
		}
		var re *Error
		if tc.want != "" && (!errors.As(err, &re) || re.Code != CodeBuffers || !strings.Contains(err.Error(), "segments buffer doc: "+tc.want)) {
			t.Errorf("%v: %v, want %q", tc.ids, err, tc.want)
		}
	}
}
