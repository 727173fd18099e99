package compiler

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
	"time"

	"github.com/maskc/maskc/runtime"
)

// GPU tests run only with MASKC_GPU_TESTS=1 on a machine with a CUDA or HIP
// device; build them without cgo and run the binary from this directory:
//
//	CGO_ENABLED=0 go test -c -o .devbin/compiler.test ./compiler
//	cd compiler && MASKC_GPU_TESTS=1 ../.devbin/compiler.test -test.run GPU -test.v
const gpuTestsEnv = "MASKC_GPU_TESTS"

// TestGPUForwardThroughTheEmbeddingAPI compiles gpt_oss.flex, loads its
// sliding-window block with a sink on the real device, and launches it on
// zero Q, K, V and sinks: O must be 0 and LSE[i] = log(visible(i) + 1),
// visible(i) = min(i+1, 128). It then measures the steady-state per-call
// cost: no allocation, host time per Forward.
func TestGPUForwardThroughTheEmbeddingAPI(t *testing.T) {
	if os.Getenv(gpuTestsEnv) != "1" {
		t.Skipf("set %s=1 to run GPU tests", gpuTestsEnv)
	}
	d, err := runtime.Open(runtime.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	u, diags, err := CompileFile(examples+"gpt_oss.flex", Options{})
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	a, err := u.Load(d, "layer_0")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sz := Sizes{B: 2, H: 8, HKV: 2, Sq: 300, Skv: 300}
	const D = 64
	zeros := func(n int64) runtime.DevicePtr {
		p, err := d.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Memset(p, 0, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Free(p) })
		return p
	}
	qo := int64(sz.B * sz.H * sz.Sq * D * 2)
	q, k, v, o := zeros(qo), zeros(qo), zeros(qo), zeros(qo)
	lse, sink := zeros(int64(sz.B*sz.H*sz.Sq*4)), zeros(int64(sz.H*4))
	if err := d.Memset(o, 0xff, qo); err != nil {
		t.Fatal(err)
	}
	if err := a.Bind("sinks", sink); err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	if err := a.Forward(s, q, k, v, o, lse, sz); err != nil {
		t.Fatal(err)
	}
	if err := d.SynchronizeStream(s); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, qo)
	if err := d.CopyDtoH(out, o); err != nil {
		t.Fatal(err)
	}
	for i, x := range out {
		if x != 0 {
			t.Fatalf("O byte %d = %#x with V = 0", i, x)
		}
	}
	lb := make([]byte, sz.B*sz.H*sz.Sq*4)
	if err := d.CopyDtoH(lb, lse); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < sz.B*sz.H*sz.Sq; i++ {
		row := i % sz.Sq
		got := float64(math.Float32frombits(binary.LittleEndian.Uint32(lb[4*i:])))
		want := math.Log(float64(min(row+1, 128) + 1))
		if math.Abs(got-want) > 1e-5*want {
			t.Fatalf("LSE[%d] (row %d) = %v, want %v", i, row, got, want)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := a.Forward(s, q, k, v, o, lse, sz); err != nil {
			t.Fatal(err)
		}
	})
	const calls = 10000
	t0 := time.Now()
	for i := 0; i < calls; i++ {
		if err := a.Forward(s, q, k, v, o, lse, sz); err != nil {
			t.Fatal(err)
		}
	}
	host := time.Since(t0) / calls
	if err := d.SynchronizeStream(s); err != nil {
		t.Fatal(err)
	}
	t.Logf("Forward on %s: %v allocs/call, %v host time per call; compile %+v", d.Info().Name, allocs, host, a.CompileStats().Cache)
	if allocs != 0 {
		t.Errorf("Forward allocates %v times per call", allocs)
	}
}
