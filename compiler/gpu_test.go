package compiler

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
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
	s := forwardOnNewStream(t, d, a, q, k, v, o, lse, sz)
	defer d.DestroyStream(s)
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

// TestGPUEveryExampleLaunches loads every attention block of every example
// through the embedding API on the real device (NVRTC, the block's launch
// configuration from codegen, the buffers it declares) and runs its forward
// and both backward modes once on zero inputs with NaN-poisoned outputs:
// O and every gradient must come back exactly 0 (of either sign) and every LSE finite or
// -inf (a fully masked row). It logs each kernel's cold compile time.
func TestGPUEveryExampleLaunches(t *testing.T) {
	if os.Getenv(gpuTestsEnv) != "1" {
		t.Skipf("set %s=1 to run GPU tests", gpuTestsEnv)
	}
	d, err := runtime.Open(runtime.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	files, err := filepath.Glob(examples + "*.flex")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		u, diags, err := CompileFile(f, Options{})
		if err != nil || diags.HasErrors() {
			t.Fatal(f, err, diags)
		}
		for _, name := range u.Names() {
			t.Run(filepath.Base(f)+"/"+name, func(t *testing.T) { launchOnZeros(t, d, u, name) })
		}
	}
}

// launchOnZeros is one block of TestGPUEveryExampleLaunches.
func launchOnZeros(t *testing.T, d *runtime.Device, u *Unit, name string) {
	a, err := u.Load(d, name)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sz := Sizes{B: 2, H: 8, Sq: 200, Skv: 200}
	hkv := a.Kernel.KVHeads
	if hkv == 0 {
		hkv = sz.H
	}
	alloc := func(n int64, fill byte) runtime.DevicePtr {
		p, err := d.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Free(p) })
		if err := d.Memset(p, fill, n); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const poison = 0xff // a NaN in bf16, fp16 and fp32
	dd := int64(a.Kernel.HeadDim) * 2
	qBytes, kvBytes := int64(sz.B*sz.H*sz.Sq)*dd, int64(sz.B*hkv*sz.Skv)*dd
	lseBytes := int64(sz.B*sz.H*sz.Sq) * 4
	q, k, v, o, lse := alloc(qBytes, 0), alloc(kvBytes, 0), alloc(kvBytes, 0), alloc(qBytes, poison), alloc(lseBytes, poison)
	spec := a.Launcher().Spec()
	rs := runtime.Sizes{B: int64(sz.B), H: int64(sz.H), HKV: int64(hkv), Q: int64(sz.Sq), KV: int64(sz.Skv)}
	names := a.Buffers()
	for i, n := range names {
		bytes := int64(sz.H) * 4 // the sink, f32[H]
		if i < len(spec.Kernel.Slots) {
			dims, err := spec.Extents(i, rs)
			if err != nil {
				t.Fatal(err)
			}
			bytes = dims[0] * dims[1] * int64(spec.Kernel.Slots[i].ElemBytes)
		}
		if err := a.Bind(n, alloc(max(bytes, 1), 0)); err != nil {
			t.Fatal(err)
		}
	}
	s := forwardOnNewStream(t, d, a, q, k, v, o, lse, sz)
	defer d.DestroyStream(s)
	expectZero(t, d, "O", o, qBytes, 2)
	lb := make([]byte, lseBytes)
	if err := d.CopyDtoH(lb, lse); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(lb); i += 4 {
		x := float64(math.Float32frombits(binary.LittleEndian.Uint32(lb[i:])))
		if math.IsNaN(x) || math.IsInf(x, 1) {
			t.Fatalf("LSE[%d] = %v", i/4, x)
		}
	}
	if a.Kernel.BwdSource == "" {
		t.Logf("%s: no backward; compile %v", name, a.CompileStats().Total)
		return
	}
	dO := alloc(qBytes, 0)
	for _, det := range []bool{false, true} {
		dq, dk, dv := alloc(qBytes, poison), alloc(kvBytes, poison), alloc(kvBytes, poison)
		var dbufs []runtime.DevicePtr
		var dbytes []int64
		for _, g := range a.GradBuffers() {
			bytes := int64(sz.H) * 4
			for i := range spec.Kernel.Slots {
				if names[i] == g {
					dims, err := spec.Extents(i, rs)
					if err != nil {
						t.Fatal(err)
					}
					bytes = dims[0] * dims[1] * 4
				}
			}
			dbufs, dbytes = append(dbufs, alloc(bytes, 0)), append(dbytes, bytes)
		}
		if err := a.Backward(s, dO, q, k, v, o, lse, 0, dq, dk, dv, dbufs, sz, det); err != nil {
			t.Fatal(err)
		}
		if err := d.SynchronizeStream(s); err != nil {
			t.Fatal(err)
		}
		expectZero(t, d, "dQ", dq, qBytes, 2)
		expectZero(t, d, "dK", dk, kvBytes, 2)
		expectZero(t, d, "dV", dv, kvBytes, 2)
		for i, p := range dbufs {
			expectZero(t, d, "d"+a.GradBuffers()[i], p, dbytes[i], 4)
		}
	}
	t.Logf("%s: forward and backward (both modes) on zeros: exact zeros; compile %v", name, a.CompileStats().Total)
}

// expectZero fails t unless the n bytes at p on d hold zeros of elem bytes
// each (2: bf16/fp16, 4: fp32), of either sign: a gradient summed from
// zero terms may be -0 (dsink = -sum of zeros).
func expectZero(t *testing.T, d *runtime.Device, what string, p runtime.DevicePtr, n int64, elem int) {
	t.Helper()
	b := make([]byte, n)
	if err := d.CopyDtoH(b, p); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+elem <= len(b); i += elem {
		var mag uint32 // the value's bits without the sign bit
		if elem == 2 {
			mag = uint32(binary.LittleEndian.Uint16(b[i:]) & 0x7fff)
		} else {
			mag = binary.LittleEndian.Uint32(b[i:]) & 0x7fffffff
		}
		if mag != 0 {
			t.Fatalf("%s element %d = %#x, want 0 (zero inputs)", what, i/elem, b[i:i+elem])
		}
	}
}

// forwardOnNewStream creates a stream on d, runs a's forward on it and
// waits for it; the caller destroys the stream (it is destroyed here when
// the forward fails).
func forwardOnNewStream(t *testing.T, d *runtime.Device, a *Attention, q, k, v, o, lse runtime.DevicePtr, sz Sizes) runtime.Stream {
	t.Helper()
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Forward(s, q, k, v, o, lse, sz); err != nil {
		d.DestroyStream(s)
		t.Fatal(err)
	}
	if err := d.SynchronizeStream(s); err != nil {
		d.DestroyStream(s)
		t.Fatal(err)
	}
	return s
}

// segmentIDs returns the document ids of n tokens in one of the orders
// packing code writes them: "sorted" (the segments promise), "restarting"
// (the ids count from 0 again halfway, as two packed rows concatenated),
// "padded" (-1 runs between and after documents), "shuffled" (documents in
// a permuted order) and "reused" (two ids alternate over separate
// documents). Documents are 1 to 300 tokens long, from a fixed seed.
func segmentIDs(kind string, n int) []int32 {
	seed := uint32(7)
	next := func(m int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % m }
	var lens []int
	for left := n; left > 0; {
		l := min(left, 1+next(300))
		lens = append(lens, l)
		left -= l
	}
	perm := make([]int, len(lens)) // a shuffle with the id of the first document not 0
	for i := range perm {
		perm[i] = i
	}
	for i := len(perm) - 1; i > 0; i-- {
		j := next(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	if perm[0] == 0 && len(perm) > 1 {
		perm[0], perm[1] = perm[1], perm[0]
	}
	ids := make([]int32, 0, n)
	for i, l := range lens {
		id := int32(i)
		switch kind {
		case "restarting":
			id = int32(i % max(1, (len(lens)+1)/2))
		case "padded":
			if i%2 == 1 || i == len(lens)-1 {
				id = -1
			}
		case "shuffled":
			id = int32(perm[i])
		case "reused":
			id = int32(i % 2)
		}
		for range l {
			ids = append(ids, id)
		}
	}
	return ids
}

// TestGPUSegmentsAnyOrder runs document_causal's generated forward through
// the embedding API with document ids in every order of segmentIDs, Q = K =
// 0 and V[kv] = kv mod 7: the row q's LSE must be log(visible(q)) and its O
// the mean of kv mod 7 over visible(q), the keys kv <= q with doc[kv] ==
// doc[q] of the mask as written, however the ids are ordered; Status must
// report StatusSegmentsUnsorted exactly for the unsorted orders.
func TestGPUSegmentsAnyOrder(t *testing.T) {
	if os.Getenv(gpuTestsEnv) != "1" {
		t.Skipf("set %s=1 to run GPU tests", gpuTestsEnv)
	}
	d, err := runtime.Open(runtime.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	u, diags, err := CompileFile(examples+"document_causal.flex", Options{})
	if err != nil || diags.HasErrors() {
		t.Fatal(err, diags)
	}
	a, err := u.Load(d, "packed_layer")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const S, H, D = 1000, 2, 128
	sz := Sizes{B: 1, H: H, HKV: H, Sq: S, Skv: S}
	alloc := func(n int64) runtime.DevicePtr {
		p, err := d.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Free(p) })
		return p
	}
	n := int64(S * H * D * 2)
	q, k, v, o, lse, doc := alloc(n), alloc(n), alloc(n), alloc(n), alloc(S*H*4), alloc(S*4)
	for _, p := range []runtime.DevicePtr{q, k} {
		if err := d.Memset(p, 0, n); err != nil {
			t.Fatal(err)
		}
	}
	vb := make([]byte, n)
	for kv := 0; kv < S; kv++ { // bshd: [1, S, H, D]
		bits := uint16(math.Float32bits(float32(kv%7)) >> 16)
		for i := 0; i < H*D; i++ {
			binary.LittleEndian.PutUint16(vb[2*(kv*H*D+i):], bits)
		}
	}
	if err := d.CopyHtoD(v, vb); err != nil {
		t.Fatal(err)
	}
	if err := a.Bind("doc", doc); err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	for _, kind := range []string{"sorted", "restarting", "padded", "shuffled", "reused"} {
		ids := segmentIDs(kind, S)
		db := make([]byte, 4*S)
		for i, id := range ids {
			binary.LittleEndian.PutUint32(db[4*i:], uint32(id))
		}
		if err := d.CopyHtoD(doc, db); err != nil {
			t.Fatal(err)
		}
		if err := d.Memset(o, 0xff, n); err != nil { // NaN-poisoned
			t.Fatal(err)
		}
		if err := a.Launcher().ResetStatus(); err != nil {
			t.Fatal(err)
		}
		if err := a.Forward(s, q, k, v, o, lse, sz); err != nil {
			t.Fatal(err)
		}
		if err := d.SynchronizeStream(s); err != nil {
			t.Fatal(err)
		}
		st, err := a.Launcher().Status()
		if err != nil {
			t.Fatal(err)
		}
		if want := uint32(runtime.StatusSegmentsUnsorted); (kind == "sorted") == (st&want != 0) {
			t.Errorf("%s ids: status %#x", kind, st)
		}
		ob, lb := make([]byte, n), make([]byte, S*H*4)
		if err := d.CopyDtoH(ob, o); err != nil {
			t.Fatal(err)
		}
		if err := d.CopyDtoH(lb, lse); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for row := 0; row < S; row++ {
			cnt, sum := 0, 0
			for kv := 0; kv <= row; kv++ {
				if ids[kv] == ids[row] {
					cnt++
					sum += kv % 7
				}
			}
			wantL, wantO := math.Log(float64(cnt)), float64(sum)/float64(cnt)
			for h := 0; h < H; h++ {
				gotL := float64(math.Float32frombits(binary.LittleEndian.Uint32(lb[4*(h*S+row):])))
				gotO := float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(ob[2*((row*H+h)*D+5):])) << 16))
				if math.Abs(gotL-wantL) > 1e-4*max(1, wantL) || math.Abs(gotO-wantO) > 0.02*max(1, wantO) {
					if bad++; bad <= 5 {
						t.Errorf("%s ids: row %d head %d: LSE %v O %v, want %v and %v (%d visible keys)", kind, row, h, gotL, gotO, wantL, wantO, cnt)
					}
				}
			}
		}
		t.Logf("%s ids: %d rows x %d heads checked, status %#x, %d wrong", kind, S, H, st, bad)
	}
}
