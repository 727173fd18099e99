package runtime

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/fake"
)

// TestBwdCLayoutMatchesABI checks cBwdShape against hipsrc.BwdShapeStruct.
func TestBwdCLayoutMatchesABI(t *testing.T) {
	var s cBwdShape
	field := map[string]uintptr{
		"B": unsafe.Offsetof(s.B), "H": unsafe.Offsetof(s.H), "HKV": unsafe.Offsetof(s.HKV), "Sq": unsafe.Offsetof(s.Sq),
		"Skv": unsafe.Offsetof(s.Skv), "q_stride": unsafe.Offsetof(s.QStride), "k_stride": unsafe.Offsetof(s.KStride),
		"v_stride": unsafe.Offsetof(s.VStride), "o_stride": unsafe.Offsetof(s.OStride), "do_stride": unsafe.Offsetof(s.DOStride),
		"dq_stride": unsafe.Offsetof(s.DQStride), "dk_stride": unsafe.Offsetof(s.DKStride), "dv_stride": unsafe.Offsetof(s.DVStride),
		"scale": unsafe.Offsetof(s.Scale), "sink": unsafe.Offsetof(s.Sink), "tile_flags": unsafe.Offsetof(s.TileFlags),
		"lse": unsafe.Offsetof(s.LSE), "dlse": unsafe.Offsetof(s.DLSE), "delta": unsafe.Offsetof(s.Delta),
		"dq_acc": unsafe.Offsetof(s.DQAcc), "dq_sem": unsafe.Offsetof(s.DQSem), "dsink": unsafe.Offsetof(s.DSink), "dbuf": unsafe.Offsetof(s.DBuf),
	}
	st := hipsrc.BwdShapeStruct
	if int(unsafe.Sizeof(s)) != st.Size {
		t.Errorf("sizeof(MaskcBwdShape): Go %d, ABI %d", unsafe.Sizeof(s), st.Size)
	}
	if len(field) != len(st.Fields) {
		t.Errorf("Go mirrors %d fields, the ABI has %d", len(field), len(st.Fields))
	}
	for _, f := range st.Fields {
		if got, ok := field[f.Name]; !ok || int(got) != f.Offset {
			t.Errorf("%s at %d (mirrored %v), the ABI puts it at %d", f.Name, got, ok, f.Offset)
		}
	}
}

// bwdSource adds the backward entry points to the fake module.
var bwdSource = attnSource + `
extern "C" __global__ void maskc_attn_bwd_pre(const T* O, const T* dO, MaskcBwdShape sh) {}
extern "C" __global__ void maskc_attn_bwd(const T* Q, const T* K, const T* V, const T* dO, T* dK, T* dV, MaskcBwdShape sh, MaskcBuffers buf) {}
extern "C" __global__ void maskc_attn_bwd_ordered(const T* Q, const T* K, const T* V, const T* dO, T* dK, T* dV, MaskcBwdShape sh, MaskcBuffers buf) {}
extern "C" __global__ void maskc_attn_bwd_dq(const T* Q, const T* K, const T* V, const T* dO, T* dQ, MaskcBwdShape sh, MaskcBuffers buf) {}
extern "C" __global__ void maskc_attn_bwd_dq_convert(T* dQ, MaskcBwdShape sh) {}
extern "C" __global__ void maskc_attn_bwd_sink(MaskcBwdShape sh) {}
extern "C" __global__ void maskc_attn_bwd_buf_convert(const long long* acc, float* out, long long n) {}
`

// bwdLaunch is one recorded backward launch.
type bwdLaunch struct {
	entry        string
	grid, block  backend.Dim3
	shared       uint32
	sh           cBwdShape
	ptrs         []uintptr
	n            int64
	accWasZeroed bool
	status       uintptr     // MaskcBuffers.status of the launches that take buf
	maps         cTensorMaps // maskc_attn_bwd's MaskcTensorMaps
}

// registerBwd records the backward launches; the buffer-convert kernel
// checks that its sums were zeroed before the main kernel (which adds 5 to
// the first sum of every gradient slot, as the device kernel adds into
// them) and writes n as the first float of out.
func registerBwd(fb *fake.Backend) *[]bwdLaunch {
	var mu sync.Mutex
	var recs []bwdLaunch
	add := func(l bwdLaunch) { mu.Lock(); recs = append(recs, l); mu.Unlock() }
	var mainLaunch func(name string, mem *fake.Backend, l fake.Launch) error
	ptrs := func(l fake.Launch, n int) []uintptr {
		var out []uintptr
		for i := 0; i < n; i++ {
			out = append(out, fake.Param[uintptr](l.Params, i))
		}
		return out
	}
	fb.Register(hipsrc.BwdPreEntry, func(mem *fake.Backend, l fake.Launch) error {
		add(bwdLaunch{entry: hipsrc.BwdPreEntry, grid: l.Grid, block: l.Block, shared: l.SharedBytes, ptrs: ptrs(l, 2), sh: fake.Param[cBwdShape](l.Params, 2)})
		return nil
	})
	// maskc_attn_bwd and maskc_attn_bwd_ordered: the same launch
	main := func(name string) func(mem *fake.Backend, l fake.Launch) error {
		return func(mem *fake.Backend, l fake.Launch) error { return mainLaunch(name, mem, l) }
	}
	mainLaunch = func(name string, mem *fake.Backend, l fake.Launch) error {
		sh := fake.Param[cBwdShape](l.Params, 6)
		zeroed := true
		for _, p := range sh.DBuf {
			if p == 0 {
				continue
			}
			b, err := mem.Bytes(backend.DevicePtr(p), 8)
			if err != nil {
				return err
			}
			if *(*int64)(unsafe.Pointer(&b[0])) != 0 {
				zeroed = false
			}
			*(*int64)(unsafe.Pointer(&b[0])) += 5
		}
		add(bwdLaunch{entry: name, grid: l.Grid, block: l.Block, shared: l.SharedBytes, ptrs: ptrs(l, 6), sh: sh, accWasZeroed: zeroed,
			status: fake.Param[cBuffers](l.Params, 7).Status, maps: fake.Param[cTensorMaps](l.Params, 8)})
		return nil
	}
	fb.Register(hipsrc.BwdMainEntry, main(hipsrc.BwdMainEntry))
	fb.Register(hipsrc.BwdMainOrderedEntry, main(hipsrc.BwdMainOrderedEntry))
	fb.Register(hipsrc.BwdDQEntry, func(mem *fake.Backend, l fake.Launch) error {
		add(bwdLaunch{entry: hipsrc.BwdDQEntry, grid: l.Grid, block: l.Block, shared: l.SharedBytes, ptrs: ptrs(l, 5), sh: fake.Param[cBwdShape](l.Params, 5),
			status: fake.Param[cBuffers](l.Params, 6).Status})
		return nil
	})
	fb.Register(hipsrc.BwdDQConvertEntry, func(mem *fake.Backend, l fake.Launch) error {
		add(bwdLaunch{entry: hipsrc.BwdDQConvertEntry, grid: l.Grid, block: l.Block, ptrs: ptrs(l, 1), sh: fake.Param[cBwdShape](l.Params, 1)})
		return nil
	})
	fb.Register(hipsrc.BwdSinkEntry, func(mem *fake.Backend, l fake.Launch) error {
		add(bwdLaunch{entry: hipsrc.BwdSinkEntry, grid: l.Grid, block: l.Block, sh: fake.Param[cBwdShape](l.Params, 0)})
		return nil
	})
	fb.Register(hipsrc.BwdBufConvertEntry, func(mem *fake.Backend, l fake.Launch) error {
		n := fake.Param[int64](l.Params, 2)
		out, err := mem.Bytes(backend.DevicePtr(fake.Param[uintptr](l.Params, 1)), 4*n)
		if err != nil {
			return err
		}
		acc, err := mem.Bytes(backend.DevicePtr(fake.Param[uintptr](l.Params, 0)), 8*n)
		if err != nil {
			return err
		}
		*(*float32)(unsafe.Pointer(&out[0])) = float32(*(*int64)(unsafe.Pointer(&acc[0])))
		add(bwdLaunch{entry: hipsrc.BwdBufConvertEntry, grid: l.Grid, block: l.Block, ptrs: ptrs(l, 2), n: n})
		return nil
	})
	return &recs
}

// bwdSmem128 is the backward's shared memory on NVIDIA at head dim 128.
var bwdSmem128 = func() int {
	c, err := hipsrc.BwdLaunchOn(hipsrc.NVIDIA, 128, hipsrc.BwdChoice{})
	if err != nil {
		panic(err)
	}
	return c.SharedMemBytes
}()

func bwdProbeSpec(t testing.TB, sparsity Sparsity) AttentionSpec {
	s := probeSpec(t, sparsity)
	s.Source = bwdSource
	s.Kernel.Slots[1].Grad = true // bias[H, 64]
	s.BwdSource = bwdSource
	s.Kernel.BwdSourceFile, s.Kernel.BwdEntries = "probe.bwd.cu", hipsrc.BwdEntryNames()
	s.Kernel.BwdLaunch = map[string]hipsrc.BwdLaunchConfig{"nvidia": {BlockM: 64, BlockN: 64, Threads: 128, MainThreads: 128, SharedMemBytes: bwdSmem128, DQSharedMemBytes: bwdSmem128}}
	return s
}

// bwdTestCall is one backward call's arguments on a fake device: the probe
// tensors (tensors), gradients with slot 1's buffer gradient and the sink's,
// a 2 x 8 (2 kv heads) x 300 x 200 shape at head dim 128 with the sink, and
// a stream.
type bwdTestCall struct {
	q, k, v, o, lse DevicePtr
	bufs            []DevicePtr
	g               Gradients
	shape           Shape
	stream          Stream
}

func newBwdTestCall(t testing.TB, d *Device) bwdTestCall {
	var c bwdTestCall
	c.q, c.k, c.v, c.o, c.lse, c.bufs = tensors(t, d)
	grads := func() backend.DevicePtr { p, _ := d.Alloc(1 << 16); return p }
	c.g = Gradients{DO: grads(), DLSE: grads(), DQ: grads(), DK: grads(), DV: grads(), DBufs: []DevicePtr{0, grads()}, DSink: grads()}
	c.shape = ContiguousShape(BSHD, 2, 8, 2, 300, 200, 128)
	c.shape.Sink = c.bufs[0]
	var err error
	if c.stream, err = d.NewStream(); err != nil {
		t.Fatal(err)
	}
	return c
}

// run calls k.Backward with c's arguments.
func (c bwdTestCall) run(k *AttentionKernel, deterministic bool) error {
	return k.Backward(c.stream, c.q, c.k, c.v, c.o, c.lse, c.shape, c.bufs, c.g, deterministic)
}

// TestBackwardMarshalsTheABI runs Backward on the fake device in both
// modes, on a kernel whose deterministic dQ is the dQ kernel's and on one
// that adds it in order (bwd_launch dq_ordered), and checks every launch:
// order, grids, shared memory, the MaskcBwdShape fields and the scratch.
func TestBackwardMarshalsTheABI(t *testing.T) {
	for _, sparsity := range []Sparsity{SparsityAnalytic, SparsityPrepass} {
		for _, c := range []struct{ det, ordered bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			det := c.det
			dqKernel := det && !c.ordered // dQ by maskc_attn_bwd_dq; else added into dq_acc
			d, fb, rec := newFakeDevice(t, "")
			recs := registerBwd(fb)
			spec := bwdProbeSpec(t, sparsity)
			bl := spec.Kernel.BwdLaunch["nvidia"]
			bl.DQOrdered = c.ordered
			spec.Kernel.BwdLaunch["nvidia"] = bl
			spec.Kernel.BwdEntries = hipsrc.BwdEntryNamesFor(c.ordered)
			mainEntry := hipsrc.BwdMainEntry
			if det && c.ordered {
				mainEntry = hipsrc.BwdMainOrderedEntry
			}
			k, err := d.NewAttention(spec)
			if err != nil {
				t.Fatal(err)
			}
			bc := newBwdTestCall(t, d)
			q, kk, v, o, lse, bufs, g, shape, stream := bc.q, bc.k, bc.v, bc.o, bc.lse, bc.bufs, bc.g, bc.shape, bc.stream
			for call := 0; call < 2; call++ { // the second reuses the scratch: sums zeroed again
				*recs = nil
				rec.records = nil
				if err := k.Backward(stream, q, kk, v, o, lse, shape, bufs, g, det); err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, r := range *recs {
					names = append(names, r.entry)
				}
				dq := hipsrc.BwdDQConvertEntry
				if dqKernel {
					dq = hipsrc.BwdDQEntry
				}
				want := strings.Join([]string{hipsrc.BwdPreEntry, mainEntry, dq, hipsrc.BwdSinkEntry, hipsrc.BwdBufConvertEntry}, " ")
				if got := strings.Join(names, " "); got != want {
					t.Fatalf("sparsity %s det %v ordered %v: launches %s, want %s", sparsity, det, c.ordered, got, want)
				}
				if sparsity == SparsityPrepass && (len(rec.records) != 1 || rec.records[0].entry != TileFlagsEntry) {
					t.Errorf("prepass backward: forward-module launches %v, want the tile flags once", rec.records)
				}
				byName := map[string]bwdLaunch{}
				for _, r := range *recs {
					byName[r.entry] = r
					if r.block != dim3(128, 1, 1) {
						t.Errorf("%s: block %v", r.entry, r.block)
					}
				}
				pre, main := byName[hipsrc.BwdPreEntry], byName[mainEntry]
				if pre.grid != dim3(38, 8, 2) || pre.shared != 0 || pre.ptrs[0] != uintptr(o) || pre.ptrs[1] != uintptr(g.DO) {
					t.Errorf("pre launch %+v", pre)
				}
				if main.grid != dim3(4, 2, 2) || main.shared != uint32(bwdSmem128) || !main.accWasZeroed {
					t.Errorf("main launch grid %v shared %d zeroed sums %v", main.grid, main.shared, main.accWasZeroed)
				}
				if st := statusOf(t, k, shape, stream); main.status == 0 || main.status != uintptr(st) || len(rec.records) > 0 && rec.records[0].buf.Status != main.status {
					t.Errorf("status words: main %#x, the (shape, stream)'s %#x, forward-module launches %v", main.status, st, rec.records)
				}
				if dqKernel && byName[hipsrc.BwdDQEntry].status != main.status {
					t.Errorf("dq status %#x, main %#x", byName[hipsrc.BwdDQEntry].status, main.status)
				}
				if main.ptrs[4] != uintptr(g.DK) || main.ptrs[5] != uintptr(g.DV) || main.ptrs[0] != uintptr(q) {
					t.Errorf("main pointers %v", main.ptrs)
				}
				sh := main.sh
				if sh.B != 2 || sh.H != 8 || sh.HKV != 2 || sh.Sq != 300 || sh.Skv != 200 || sh.DQStride != sh.QStride || sh.DOStride != sh.OStride || sh.DKStride != sh.KStride {
					t.Errorf("shape %+v", sh)
				}
				if sh.LSE != uintptr(lse) || sh.DLSE != uintptr(g.DLSE) || sh.Sink != uintptr(bufs[0]) || sh.DSink != uintptr(g.DSink) || sh.Delta == 0 {
					t.Errorf("aux pointers %+v", sh)
				}
				if dqKernel != (sh.DQAcc == 0) || (det && c.ordered) != (sh.DQSem != 0) {
					t.Errorf("deterministic %v ordered %v with dq_acc %#x dq_sem %#x", det, c.ordered, sh.DQAcc, sh.DQSem)
				}
				if sh.DBuf[0] != 0 || sh.DBuf[1] == 0 || sh.DBuf[1] == uintptr(g.DBufs[1]) {
					t.Errorf("dbuf %v: slot 0 not wanted, slot 1 fixed-point sums", sh.DBuf[:2])
				}
				if (sparsity == SparsityPrepass) != (sh.TileFlags != 0) {
					t.Errorf("tile_flags %#x", sh.TileFlags)
				}
				if dqKernel {
					r := byName[hipsrc.BwdDQEntry]
					if r.grid != dim3(5, 8, 2) || r.shared != main.shared || r.ptrs[4] != uintptr(g.DQ) {
						t.Errorf("dq launch %+v", r)
					}
				} else if r := byName[hipsrc.BwdDQConvertEntry]; r.grid != pre.grid || r.ptrs[0] != uintptr(g.DQ) {
					t.Errorf("dq convert launch %+v", r)
				}
				if r := byName[hipsrc.BwdSinkEntry]; r.grid != dim3(8, 1, 1) {
					t.Errorf("sink launch %+v", r)
				}
				if r := byName[hipsrc.BwdBufConvertEntry]; r.n != 8*64 || r.grid != dim3(4, 1, 1) || r.ptrs[0] != sh.DBuf[1] || r.ptrs[1] != uintptr(g.DBufs[1]) {
					t.Errorf("buffer convert launch %+v", r)
				}
				out, _ := fb.Bytes(g.DBufs[1], 4)
				if got := *(*float32)(unsafe.Pointer(&out[0])); got != 5 {
					t.Errorf("call %d: buffer gradient %v, want 5 (sums zeroed before every call)", call, got)
				}
			}
			if err := k.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBackwardLaunchesEachEntryItsShape: a backward whose maskc_attn_bwd
// takes a block and shared memory of its own (sm_90a's head-dim split at
// 256: two warpgroups, 156,160 bytes; the dQ kernel one warpgroup and
// 107,008 bytes) launches each entry as bwd_launch says (BwdLaunchConfig.Entry),
// in both modes.
func TestBackwardLaunchesEachEntryItsShape(t *testing.T) {
	bl, err := hipsrc.BwdLaunchOn(hipsrc.NVIDIAWGMMA, 256, hipsrc.BwdChoice{})
	if err != nil || bl.MainThreads != 256 || bl.Threads != 128 || bl.SharedMemBytes == bl.DQSharedMemBytes {
		t.Fatalf("sm_90a's head-dim-256 backward launch %+v, %v", bl, err)
	}
	for _, det := range []bool{false, true} {
		d, fb, _ := newFakeDevice(t, "")
		recs := registerBwd(fb)
		spec := bwdProbeSpec(t, SparsityAnalytic)
		spec.Kernel.BwdLaunch["nvidia"] = bl
		k, err := d.NewAttention(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := newBwdTestCall(t, d).run(k, det); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range *recs {
			seen[r.entry] = true
			threads, smem := bl.Entry(r.entry)
			if r.block != dim3(uint32(threads), 1, 1) || r.shared != uint32(smem) {
				t.Errorf("det %v: %s launched with block %v and %d bytes, want %d threads and %d bytes", det, r.entry, r.block, r.shared, threads, smem)
			}
		}
		if !seen[hipsrc.BwdMainEntry] || seen[hipsrc.BwdDQEntry] != det {
			t.Errorf("det %v: launches %v", det, seen)
		}
	}
}

func TestBackwardRejectsBadCalls(t *testing.T) {
	d, fb, _ := newFakeDevice(t, "")
	registerBwd(fb)
	k, err := d.NewAttention(bwdProbeSpec(t, SparsityNone))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	q, kk, v, o, lse, bufs := tensors(t, d)
	p := func() backend.DevicePtr { x, _ := d.Alloc(1 << 16); return x }
	good := Gradients{DO: p(), DQ: p(), DK: p(), DV: p()}
	shape := ContiguousShape(BHSD, 1, 4, 4, 64, 64, 128)
	mod := func(f func(*Gradients)) Gradients { g := good; f(&g); return g }
	tests := []struct {
		name  string
		g     Gradients
		shape Shape
		bufs  []DevicePtr
		code  dsl.Code
		msg   string
	}{
		{"null dO", mod(func(g *Gradients) { g.DO = 0 }), shape, bufs, CodeShape, "only dLSE"},
		{"null dK", mod(func(g *Gradients) { g.DK = 0 }), shape, bufs, CodeShape, "dK=0x0"},
		{"bad shape", good, Shape{B: 1, H: 3, HKV: 2, Sq: 8, Skv: 8}, bufs, CodeShape, "multiple"},
		{"missing buffer", good, shape, bufs[:1], CodeBuffers, "kernel reads 2"},
		{"one gradient for two slots", mod(func(g *Gradients) { g.DBufs = []DevicePtr{p()} }), shape, bufs, CodeBuffers, "one per buffer slot"},
		{"gradient of an index buffer", mod(func(g *Gradients) { g.DBufs = []DevicePtr{p(), 0} }), shape, bufs, CodeBuffers, "buffer doc has no gradient"},
		{"sink gradient without a sink", mod(func(g *Gradients) { g.DSink = p() }), shape, bufs, CodeBuffers, "no sink"},
	}
	for _, tc := range tests {
		err := k.Backward(0, q, kk, v, o, lse, tc.shape, tc.bufs, tc.g, false)
		var re *Error
		if !errors.As(err, &re) || re.Code != tc.code || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: got %v, want %s mentioning %q", tc.name, err, tc.code, tc.msg)
		}
	}
	if fb.Launches() != 0 {
		t.Errorf("%d launches after only bad calls", fb.Launches())
	}
	if err := k.Backward(0, q, kk, v, o, lse, shape, bufs, good, true); err != nil {
		t.Fatalf("good call after bad ones: %v", err)
	}
	// A kernel described without a backward refuses clearly.
	fwdOnly, err := d.NewAttention(probeSpec(t, SparsityNone))
	if err != nil {
		t.Fatal(err)
	}
	defer fwdOnly.Close()
	err = fwdOnly.Backward(0, q, kk, v, o, lse, shape, bufs, good, false)
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeSpec || !strings.Contains(err.Error(), "without a backward source") {
		t.Errorf("forward-only kernel: %v", err)
	}
	// A descriptor that orders dQ but lists no ordered main kernel would
	// launch neither main kernel in deterministic mode: refused.
	spec := bwdProbeSpec(t, SparsityNone)
	bl := spec.Kernel.BwdLaunch["nvidia"]
	bl.DQOrdered = true
	spec.Kernel.BwdLaunch["nvidia"] = bl
	noOrdered, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer noOrdered.Close()
	err = noOrdered.Backward(0, q, kk, v, o, lse, shape, bufs, good, true)
	if !errors.As(err, &re) || re.Code != CodeSpec || !strings.Contains(err.Error(), "has no maskc_attn_bwd_ordered") {
		t.Errorf("dq_ordered without the ordered entry: %v", err)
	}
}

// TestBackwardChecksSegmentsFirst: a kernel with a segments check launches
// it before the backward's first kernel, with the forward's block size and
// the (shape, stream)'s status words, which every backward launch that
// reads buffers also gets.
func TestBackwardChecksSegmentsFirst(t *testing.T) {
	d, fb, _ := newFakeDevice(t, "")
	recs := registerBwd(fb)
	var mu sync.Mutex
	fb.Register(SegCheckEntry, func(mem *fake.Backend, l fake.Launch) error {
		mu.Lock()
		*recs = append(*recs, bwdLaunch{entry: SegCheckEntry, grid: l.Grid, block: l.Block, status: fake.Param[cBuffers](l.Params, 0).Status})
		mu.Unlock()
		return nil
	})
	spec := bwdProbeSpec(t, SparsityAnalytic)
	spec.Kernel.SegCheckEntry = SegCheckEntry
	k, err := d.NewAttention(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	q, kk, v, o, lse, bufs := tensors(t, d)
	grads := func() backend.DevicePtr { p, _ := d.Alloc(1 << 16); return p }
	g := Gradients{DO: grads(), DQ: grads(), DK: grads(), DV: grads()}
	shape := ContiguousShape(BSHD, 2, 8, 2, 300, 200, 128)
	if err := k.Backward(0, q, kk, v, o, lse, shape, bufs, g, true); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range *recs {
		names = append(names, r.entry)
	}
	want := strings.Join([]string{SegCheckEntry, hipsrc.BwdPreEntry, hipsrc.BwdMainEntry, hipsrc.BwdDQEntry}, " ")
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("launches %s, want %s", got, want)
	}
	st := uintptr(statusOf(t, k, shape, 0))
	if r := (*recs)[0]; r.grid != dim3(1, 1, 1) || r.block != dim3(256, 1, 1) || r.status != st || (*recs)[2].status != st || (*recs)[3].status != st {
		t.Errorf("segments check %+v; main and dq status %#x %#x, want %#x", r, (*recs)[2].status, (*recs)[3].status, st)
	}
}
