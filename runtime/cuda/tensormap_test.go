package cuda

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"testing"
	"unsafe"

	"github.com/maskc/maskc/runtime/backend"
)

// tmaProbe loads one box of a 4-D bf16 tensor through a tensor map with
// the copy engine (sm_90) into 1024-byte aligned shared memory (128-byte
// swizzled, as the map says) and writes the raw box out.
const tmaProbe = `
struct alignas(64) TMap { unsigned char b[128]; };
#define ROWS 64
extern "C" __global__ void tma_box(const __grid_constant__ TMap map, unsigned short* out, int c0, int r0, int h, int b) {
  __shared__ __align__(1024) unsigned short tile[ROWS * 64];
  __shared__ __align__(8) unsigned long long bar;
  unsigned bar_a = (unsigned)__cvta_generic_to_shared(&bar);
  unsigned dst = (unsigned)__cvta_generic_to_shared(tile);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(ROWS * 64 * 2) : "memory");
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                 :: "r"(dst), "l"(&map), "r"(c0), "r"(r0), "r"(h), "r"(b), "r"(bar_a) : "memory");
    asm volatile("{\n .reg .pred p;\n WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0;\n @!p bra WAIT_%=;\n}" :: "r"(bar_a) : "memory");
  }
  __syncthreads();
  for (int i = threadIdx.x; i < ROWS * 64; i += blockDim.x) out[i] = tile[i];
}
`

// openSM90 opens device 0 where it is an sm_90 or later GPU with NVRTC,
// else skips.
func openSM90(t *testing.T) *Backend {
	b, err := Open(0)
	if err != nil {
		t.Skipf("no CUDA device: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	var major, minor int
	if _, err := fmt.Sscanf(b.Device().Arch, "sm_%1d%d", &major, &minor); err != nil || major < 9 {
		t.Skipf("device %s has no tensor copy engine", b.Device().Arch)
	}
	return b
}

// TestEncodeTensorMapLoadsTheBox: a 4-D map encoded by EncodeTensorMap (the
// runtime's Q/K/V layout: {D, seq, heads, batch}, bshd strides, 64-column
// boxes, 128-byte swizzle) makes the copy engine load exactly the box it
// names, zero past the sequence's end; a misaligned address is refused with
// the driver's error, and encoding allocates nothing.
func TestEncodeTensorMapLoadsTheBox(t *testing.T) {
	b := openSM90(t)
	if !b.CanEncodeTensorMaps() {
		t.Fatalf("%s: no cuTensorMapEncodeTiled", b.Device().DriverVersion)
	}
	const B, S, H, D, rows = 2, 200, 3, 128, 64
	host := make([]uint16, B*S*H*D)
	val := func(bi, s, h, d int) uint16 { return uint16(1 + bi*7919 + s*211 + h*53 + d) }
	for bi := range B {
		for s := range S {
			for h := range H {
				for d := range D {
					host[((bi*S+s)*H+h)*D+d] = val(bi, s, h, d)
				}
			}
		}
	}
	src, err := b.Alloc(int64(2 * len(host)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(src)
	if err := b.CopyHtoD(src, unsafe.Slice((*byte)(unsafe.Pointer(&host[0])), 2*len(host))); err != nil {
		t.Fatal(err)
	}
	m := backend.TiledTensorMap{
		DataType: backend.TensorMapBFloat16, Rank: 4, Address: src,
		Dims:           [5]uint64{D, S, H, B},
		Strides:        [4]uint64{2 * H * D, 2 * D, 2 * S * H * D},
		Box:            [5]uint32{64, rows, 1, 1},
		ElementStrides: [5]uint32{1, 1, 1, 1},
		Swizzle:        backend.TensorMapSwizzle128B,
	}
	var enc [backend.TensorMapBytes]byte
	if err := b.EncodeTensorMap(&enc, m); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { b.EncodeTensorMap(&enc, m) }); allocs != 0 {
		t.Errorf("EncodeTensorMap allocates %v times per call", allocs)
	}
	bad := m
	bad.Address += 2
	var ce *Error
	if err := b.EncodeTensorMap(&enc, bad); !errors.As(err, &ce) || ce.Func != "cuTensorMapEncodeTiled" {
		t.Errorf("misaligned address: %v, want the driver's error", err)
	}

	comp, err := b.Compiler()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	img, err := comp.Compile(backend.CompileRequest{Source: tmaProbe, Name: "tma.cu"})
	if err != nil {
		t.Fatal(err)
	}
	mod, err := b.LoadModule(img)
	if err != nil {
		t.Fatal(err)
	}
	defer b.UnloadModule(mod)
	fn, err := b.Function(mod, "tma_box")
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.Alloc(2 * rows * 64)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free(out)
	const c0, r0, h0, b0 = 64, 150, 2, 1 // rows 150..213: 200 on are past the end
	if err := b.EncodeTensorMap(&enc, m); err != nil {
		t.Fatal(err)
	}
	outPtr := uintptr(out)
	args := []int32{c0, r0, h0, b0}
	params := []unsafe.Pointer{unsafe.Pointer(&enc), unsafe.Pointer(&outPtr),
		unsafe.Pointer(&args[0]), unsafe.Pointer(&args[1]), unsafe.Pointer(&args[2]), unsafe.Pointer(&args[3])}
	var pin goruntime.Pinner
	defer pin.Unpin()
	pin.Pin(&enc)
	pin.Pin(&outPtr)
	pin.Pin(&args[0])
	pin.Pin(&params[0])
	if err := b.Launch(fn, backend.Dim3{X: 1, Y: 1, Z: 1}, backend.Dim3{X: 128, Y: 1, Z: 1}, 0, 0, unsafe.Pointer(&params[0])); err != nil {
		t.Fatal(err)
	}
	if err := b.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]uint16, rows*64)
	if err := b.CopyDtoH(unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), 2*len(got)), out); err != nil {
		t.Fatal(err)
	}
	nbad := 0
	for r := range rows {
		for c := range 64 {
			// 128-byte swizzle: the 16-byte chunk of row r moves to chunk ^ (r % 8).
			at := r*64 + ((c/8)^(r%8))*8 + c%8
			want := uint16(0)
			if r0+r < S {
				want = val(b0, r0+r, h0, c0+c)
			}
			if got[at] != want && nbad < 10 {
				nbad++
				t.Errorf("box row %d col %d: %d, want %d", r, c, got[at], want)
			}
		}
	}
}
