package runtime

import (
	"errors"
	"math"
	"os"
	"testing"
	"time"
	"unsafe"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/kcache"
)

// GPU tests run only with MASKC_GPU_TESTS=1 on a machine with a CUDA or HIP
// device. Build them without cgo and run the binary there from the package
// directory (the CPU tests read testdata/):
//
//	CGO_ENABLED=0 go test -c -o .devbin/runtime.test ./runtime
//	cd runtime && MASKC_GPU_TESTS=1 ../.devbin/runtime.test -test.v
//
// Every generated example kernel is launched through the embedding API by
// the compiler package's TestGPUEveryExampleLaunches.
const gpuTestsEnv = "MASKC_GPU_TESTS"

func openGPU(t *testing.T, cacheDir string) *Device {
	t.Helper()
	if os.Getenv(gpuTestsEnv) != "1" {
		t.Skipf("set %s=1 to run GPU tests", gpuTestsEnv)
	}
	d, err := Open(Options{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// abiProbe has the attention entry points' exact signatures; instead of
// attention it writes back what it received, so that the Go mirror of the
// ABI structs is checked against the device compiler's layout.
var abiProbe = hipsrc.ABIHeader() + `
typedef unsigned short T;

extern "C" __global__ void maskc_attn_fwd(const T* Q, const T* K, const T* V, T* O, float* LSE, MaskcShape shape, MaskcBuffers buf, const MaskcTensorMaps maps) {
  extern __shared__ unsigned char smem[];
  smem[threadIdx.x] = 1;
  if (blockIdx.x != gridDim.x - 1 || blockIdx.y != gridDim.y - 1 || blockIdx.z != gridDim.z - 1 || threadIdx.x != 0) return;
  long long* out = (long long*)O;
  out[0] = shape.B; out[1] = shape.H; out[2] = shape.HKV; out[3] = shape.Sq; out[4] = shape.Skv;
  for (int i = 0; i < 3; ++i) {
    out[5 + i] = shape.q_stride[i]; out[8 + i] = shape.k_stride[i];
    out[11 + i] = shape.v_stride[i]; out[14 + i] = shape.o_stride[i];
  }
  out[17] = (long long)Q; out[18] = (long long)K; out[19] = (long long)V;
  out[20] = (long long)shape.sink; out[21] = (long long)shape.tile_flags;
  for (int i = 0; i < 8; ++i) { out[22 + i] = (long long)buf.ptr[i]; out[30 + 2*i] = buf.dim[i][0]; out[31 + 2*i] = buf.dim[i][1]; }
  out[46] = gridDim.x; out[47] = gridDim.y; out[48] = gridDim.z; out[49] = blockDim.x;
  out[50] = shape.tile_flags ? shape.tile_flags[0] : -1;
  out[51] = maps.ok; out[52] = sizeof(MaskcTensorMaps); out[53] = alignof(MaskcTensorMaps);
  for (int i = 0; i < 3 * 128; ++i) ((unsigned char*)O)[512 + i] = ((const unsigned char*)&maps)[i];
  LSE[0] = shape.scale;
}

extern "C" __global__ void maskc_tile_flags(MaskcShape shape, MaskcBuffers buf, unsigned char* flags) {
  if (threadIdx.x == 0) flags[blockIdx.y * gridDim.x + blockIdx.x] = 2;
}

extern "C" __global__ void axpy(float* x, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = a * x[i] + 1.0f;
}
`

func bytesOf[T any](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// gpuAlloc returns an allocator of n bytes on d that fails t on an error
// and frees what it gave when t ends.
func gpuAlloc(t *testing.T, d *Device) func(n int64) DevicePtr {
	return func(n int64) DevicePtr {
		p, err := d.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Free(p) })
		return p
	}
}

func TestGPUDeviceAndMemory(t *testing.T) {
	d := openGPU(t, t.TempDir())
	defer d.Close()
	info := d.Info()
	t.Logf("device: %s backend=%s arch=%s SMs=%d warp=%d smem/block=%d optin=%d smem/SM=%d mem=%.1f GiB %s",
		info.Name, info.Backend, info.Arch, info.MultiProcessors, info.WarpSize, info.SharedMemPerBlock,
		info.SharedMemPerBlockOptin, info.SharedMemPerMultiProcessor, float64(info.TotalMemory)/(1<<30), info.DriverVersion)
	if info.Arch == "" || info.MultiProcessors <= 0 || info.SharedMemPerBlockOptin < info.SharedMemPerBlock {
		t.Fatalf("implausible device info %+v", info)
	}
	const n = 1 << 20
	a, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(a)
	b, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(b)
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i * 31)
	}
	if err := d.CopyHtoD(a, src); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyDtoD(b, a, n); err != nil {
		t.Fatal(err)
	}
	if err := d.Memset(b, 0xab, 16); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := d.CopyDtoH(got, b); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		want := src[i]
		if i < 16 {
			want = 0xab
		}
		if got[i] != want {
			t.Fatalf("byte %d = %#x, want %#x", i, got[i], want)
		}
	}
}

func TestGPUCompileCacheLaunch(t *testing.T) {
	dir := t.TempDir()
	d := openGPU(t, dir)
	defer d.Close()

	t0 := time.Now()
	comp, err := d.Compiler()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compiler %s loaded in %v, options %v", comp.Version(), time.Since(t0), comp.BaseOptions(d.Info().Arch))

	cold, err := d.Compile(abiProbe, CompileOptions{Name: "probe.cu"})
	if err != nil {
		t.Fatal(err)
	}
	warmDev := NewDevice(d.Backend, Options{CacheDir: dir})
	t1 := time.Now()
	warm, err := warmDev.Compile(abiProbe, CompileOptions{Name: "probe.cu"})
	warmWall := time.Since(t1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("probe kernel: cold compile %v (compiler %v, %s %d bytes), warm load %v (cache %s)",
		cold.Stats.Total, cold.Stats.Compile, cold.Stats.Image, cold.Stats.ImageBytes, warmWall, warm.Stats.Cache)
	if cold.Stats.Cache != kcache.Miss || warm.Stats.Cache != kcache.Hit {
		t.Fatalf("cache: cold %s, warm %s", cold.Stats.Cache, warm.Stats.Cache)
	}

	// Generic launch: x = 2x + 1 on 1000 floats, timed with events.
	k, err := warm.Kernel("axpy")
	if err != nil {
		t.Fatal(err)
	}
	regs, _ := k.Attribute(backend.AttrNumRegs)
	host := make([]float32, 1000)
	for i := range host {
		host[i] = float32(i)
	}
	x, err := d.Alloc(4000)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free(x)
	if err := d.CopyHtoD(x, bytesOf(host)); err != nil {
		t.Fatal(err)
	}
	args, err := NewArgs(8, 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer args.Free()
	args.SetPtr(0, x)
	args.SetInt32(1, 1000)
	args.SetFloat32(2, 2)
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	ms, err := d.TimeMs(s, func() error {
		return k.Launch(s, LaunchConfig{Grid: dim3(4, 1, 1), Block: dim3(256, 1, 1)}, args)
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, 1000)
	if err := d.CopyDtoH(bytesOf(out), x); err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		if v != 2*float32(i)+1 {
			t.Fatalf("x[%d] = %v, want %v", i, v, 2*float32(i)+1)
		}
	}
	t.Logf("axpy: %d registers, %.4f ms by events", regs, ms)
}

func TestGPUAttentionABI(t *testing.T) {
	d := openGPU(t, t.TempDir())
	defer d.Close()
	platform := hipsrc.NVIDIA // the probe's own geometry, compiled for the device's architecture
	if d.Info().Backend == "hip" {
		platform = hipsrc.AMD
	}
	spec := AttentionSpec{
		Kernel: hipsrc.KernelDesc{
			SourceFile: "probe.cu", Entry: AttentionEntry, FlagsEntry: TileFlagsEntry, HeadDim: 128, Sparsity: SparsityPrepass, MaskUsesH: true,
			Launch: map[string]hipsrc.LaunchConfig{platform.String(): {BlockN: 64, Threads: 256, SharedMemBytes: 96 << 10}},
			Slots: []hipsrc.BufferSlot{
				{Name: "doc", Slot: 0, DType: "i32", ElemBytes: 4, Dims: []string{"KV"}},
				{Name: "bias", Slot: 1, DType: "f32", ElemBytes: 4, Dims: []string{"H", "8191"}},
			},
		},
		Platform: platform, Source: abiProbe,
	}
	k, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	alloc := gpuAlloc(t, d)
	q, kk, v, o, lse, sink, doc, bias := alloc(64), alloc(64), alloc(64), alloc(1024), alloc(64), alloc(64), alloc(64), alloc(64)
	shape := ContiguousShape(BSHD, 3, 8, 2, 300, 500, 128)
	shape.Sink = sink
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	if err := k.Forward(s, q, kk, v, o, lse, shape, []DevicePtr{doc, bias}); err != nil {
		t.Fatal(err)
	}
	if err := d.SynchronizeStream(s); err != nil {
		t.Fatal(err)
	}
	got := make([]int64, 54)
	if err := d.CopyDtoH(bytesOf(got), o); err != nil {
		t.Fatal(err)
	}
	scale := make([]float32, 1)
	if err := d.CopyDtoH(bytesOf(scale), lse); err != nil {
		t.Fatal(err)
	}
	want := []int64{3, 8, 2, 300, 500}
	for _, st := range [][3]int64{shape.QStride, shape.KStride, shape.VStride, shape.OStride} {
		want = append(want, st[:]...)
	}
	want = append(want, int64(q), int64(kk), int64(v), int64(sink), got[21], int64(doc), int64(bias), 0, 0, 0, 0, 0, 0,
		500, 1, 8, 8191)
	for i := 0; i < 12; i++ {
		want = append(want, 0)
	}
	want = append(want, 3, 8, 3, 256, 2, 0, 448, 64) // maps: none (the launch says no tensor_maps), sizeof, alignof
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("word %d: kernel saw %d, want %d", i, got[i], want[i])
		}
	}
	if got[21] == 0 {
		t.Error("tile_flags is null with PREPASS sparsity")
	}
	if math.Abs(float64(scale[0])-1/math.Sqrt(128)) > 1e-7 {
		t.Errorf("scale %v", scale[0])
	}

	// Per-call cost after the first call for the shape: no allocation;
	// host-side time per Forward (two launches) on the real driver.
	bufs := []DevicePtr{doc, bias}
	allocs := testing.AllocsPerRun(2000, func() {
		if err := k.Forward(s, q, kk, v, o, lse, shape, bufs); err != nil {
			t.Fatal(err)
		}
	})
	const calls = 20000
	t0 := time.Now()
	for i := 0; i < calls; i++ {
		if err := k.Forward(s, q, kk, v, o, lse, shape, bufs); err != nil {
			t.Fatal(err)
		}
	}
	host := time.Since(t0) / calls
	if err := d.SynchronizeStream(s); err != nil {
		t.Fatal(err)
	}
	t.Logf("Forward on %s: %v allocs/call, %v host time per call (pre-pass + forward launches)", d.Info().Backend, allocs, host)
	if allocs != 0 {
		t.Errorf("Forward allocates %v times per call", allocs)
	}
}

func TestGPUCompileErrorPointsAtFlex(t *testing.T) {
	d := openGPU(t, t.TempDir())
	defer d.Close()
	flex := dsl.NewSource("probe.flex", []byte("param W = 4\n\nmask m(b, h, q, kv) = q - kv < W_\n"))
	src := "#line 3 \"probe.flex\"\n__device__ long long maskc_probe(long long q) { return q - W_; }\n#line 1 \"probe.cu\"\n"
	_, err := d.Compile(src, CompileOptions{Name: "probe.cu", Flex: flex})
	var diags dsl.Diagnostics
	if !errors.As(err, &diags) {
		t.Fatalf("want diagnostics, got %v", err)
	}
	t.Logf("compiler error as diagnostics:\n%s", diags.Render())
	if len(diags) == 0 || diags[0].Code != CodeCompileFlex || diags[0].Position().Line != 3 {
		t.Fatalf("want E401 at probe.flex:3, got:\n%s", diags.Render())
	}
}

// TestGPUCompilesToolkitHeaders reports whether cuda_bf16.h resolves with
// the include path the compiler was given.
func TestGPUCompilesToolkitHeaders(t *testing.T) {
	d := openGPU(t, t.TempDir())
	defer d.Close()
	if d.Info().Backend != "cuda" {
		t.Skip("CUDA only")
	}
	src := "#include <cuda_bf16.h>\nextern \"C\" __global__ void cvt(const __nv_bfloat16* x, float* y) { y[threadIdx.x] = __bfloat162float(x[threadIdx.x]); }\n"
	m, err := d.Compile(src, CompileOptions{Name: "bf16.cu"})
	if err != nil {
		t.Fatalf("cuda_bf16.h: %v", err)
	}
	t.Logf("cuda_bf16.h compiled in %v", m.Stats.Compile)
}

// TestGPUAttentionTensorMaps: a forward whose launch says tensor_maps
// receives, by value, the maps the backend encodes (ok = 1 and the bytes of
// Q's, K's and V's maps as the ABI defines them) on CUDA 12 and later, and
// all zero (ok = 0) where the backend encodes none (HIP).
func TestGPUAttentionTensorMaps(t *testing.T) {
	d := openGPU(t, t.TempDir())
	defer d.Close()
	platform := hipsrc.NVIDIA
	if d.Info().Backend == "hip" {
		platform = hipsrc.AMD
	}
	spec := AttentionSpec{
		Kernel: hipsrc.KernelDesc{
			SourceFile: "probe.cu", Entry: AttentionEntry, HeadDim: 128, DType: "bf16", Sparsity: SparsityNone,
			Launch: map[string]hipsrc.LaunchConfig{platform.String(): {BlockN: 64, Threads: 128, SharedMemBytes: 1024, TensorMaps: &hipsrc.TensorMapRows{Q: 128, KV: 64}}},
		},
		Platform: platform, Source: abiProbe,
	}
	k, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	shape := ContiguousShape(BHSD, 2, 4, 2, 300, 500, 128)
	alloc := gpuAlloc(t, d)
	q, kk, v, o, lse := alloc(2*2*4*300*128), alloc(2*2*2*500*128), alloc(2*2*2*500*128), alloc(1024), alloc(64)
	if err := k.Forward(0, q, kk, v, o, lse, shape, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 1024)
	if err := d.CopyDtoH(raw, o); err != nil {
		t.Fatal(err)
	}
	ok := *(*int64)(unsafe.Pointer(&raw[51*8]))
	enc, can := d.Backend.(backend.TensorMapEncoder)
	if !can || !enc.CanEncodeTensorMaps() {
		if ok != 0 || string(raw[512:896]) != string(make([]byte, 384)) {
			t.Errorf("%s: no encoder, yet ok = %d or the maps are not zero", d.Info().DriverVersion, ok)
		}
		return
	}
	if ok != 1 {
		t.Fatalf("%s: maps.ok = %d, want 1", d.Info().DriverVersion, ok)
	}
	plan := k.planMaps(shape, k.launch.TensorMaps, false)
	for i, p := range []DevicePtr{q, kk, v} {
		m := plan.maps[i]
		m.Address = p
		var want [hipsrc.TensorMapBytes]byte
		if err := enc.EncodeTensorMap(&want, m); err != nil {
			t.Fatal(err)
		}
		if got := raw[512+128*i : 640+128*i]; string(got) != string(want[:]) {
			t.Errorf("map %d: the kernel received % x, the encoding is % x", i, got, want)
		}
	}
	if plan.maps[0].Box[1] != 128 || plan.maps[1].Box[1] != 64 || plan.maps[0].Strides != [4]uint64{256, 300 * 256, 4 * 300 * 256} {
		t.Errorf("plan %+v", plan.maps)
	}
}
