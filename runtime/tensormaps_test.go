package runtime

import (
	"errors"
	"testing"

	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/fake"
)

// mapsSpec is the probe kernel as the sm_90a warp-specialized forward: its
// launch on hipsrc.NVIDIAWGMMA reads tensor maps (Q's boxes of qRows rows,
// 0: the forward's block_m; K's and V's of 128 rows, not the launch's
// block_n of 64), its launch on hipsrc.NVIDIA does not.
func mapsSpec(t testing.TB, platform hipsrc.Platform, dtype string, qRows int, maps bool) AttentionSpec {
	spec := probeSpec(t, SparsityNone)
	spec.Platform = platform
	spec.Kernel.DType = dtype
	ws := hipsrc.LaunchConfig{BlockN: 64, Threads: 384, SharedMemBytes: 160 << 10}
	if qRows == 0 {
		qRows = hipsrc.BlockM
	}
	if maps {
		ws.TensorMaps = &hipsrc.TensorMapRows{Q: qRows, KV: 128}
	}
	spec.Kernel.Launch = map[string]hipsrc.LaunchConfig{
		hipsrc.NVIDIA.String():      {BlockN: 64, Threads: 256, SharedMemBytes: 64 << 10},
		hipsrc.NVIDIAWGMMA.String(): ws,
	}
	return spec
}

// noEncoder hides the fake's tensor map encoder: a backend without one.
type noEncoder struct{ backend.Backend }

// wantMap is the tiled map the ABI asks for (hipsrc.TensorMapsStruct,
// MANIFEST.md): 4-D, {D, seq, heads, B} innermost first, byte strides of
// the seq, head and batch strides, boxes of 64 columns x rows.
func wantMap(dt backend.TensorMapDataType, addr DevicePtr, d, seq, heads, b int, stride [3]int64, rows uint32) backend.TiledTensorMap {
	return backend.TiledTensorMap{
		DataType: dt, Rank: 4, Address: addr,
		Dims:           [5]uint64{uint64(d), uint64(seq), uint64(heads), uint64(b)},
		Strides:        [4]uint64{uint64(2 * stride[2]), uint64(2 * stride[1]), uint64(2 * stride[0])},
		Box:            [5]uint32{64, rows, 1, 1},
		ElementStrides: [5]uint32{1, 1, 1, 1},
		Swizzle:        backend.TensorMapSwizzle128B,
	}
}

// failNth returns an encoder verdict that refuses the n-th map with err.
func failNth(n int, err error) func(backend.TiledTensorMap) error {
	calls := 0
	return func(backend.TiledTensorMap) error {
		if calls++; calls == n {
			return err
		}
		return nil
	}
}

// TestForwardTensorMaps: a forward whose launch on its platform says
// tensor_maps passes MaskcTensorMaps encoded by the backend (ok = 1, the
// three maps exactly as the ABI says); every other forward passes them all
// zero (ok = 0) without asking the encoder, and so does one whose maps the
// encoder refuses.
func TestForwardTensorMaps(t *testing.T) {
	bshd := ContiguousShape(BSHD, 2, 8, 2, 300, 200, 128)
	bhsd := ContiguousShape(BHSD, 3, 4, 4, 70, 1000, 128)
	oddStride := bshd
	oddStride.KStride[2] += 4 // 8 bytes past a multiple of 16
	errRefused := errors.New("refused")
	tests := []struct {
		name     string
		spec     AttentionSpec
		shape    Shape
		hide     bool                               // a backend without an encoder
		encOff   bool                               // an encoder that cannot encode (a pre-12 CUDA driver)
		fail     func(backend.TiledTensorMap) error // the encoder's verdict
		qOffset  DevicePtr                          // added to Q's pointer
		calls    int                                // encoder calls expected
		wantMaps bool                               // ok = 1 with these maps
		dt       backend.TensorMapDataType
		qRows    uint32
		qStrides [4]uint64 // Q's byte strides spelt out, where not zero
	}{
		{name: "bf16 bshd", spec: mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 0, true), shape: bshd,
			calls: 3, wantMaps: true, dt: backend.TensorMapBFloat16, qRows: 128, qStrides: [4]uint64{8 * 128 * 2, 128 * 2, 300 * 8 * 128 * 2}},
		{name: "fp16 bhsd, boxes of 64 q rows", spec: mapsSpec(t, hipsrc.NVIDIAWGMMA, "fp16", 64, true), shape: bhsd,
			calls: 3, wantMaps: true, dt: backend.TensorMapFloat16, qRows: 64},
		{name: "launch without tensor_maps", spec: mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 0, false), shape: bshd},
		{name: "launched on a platform without tensor_maps", spec: mapsSpec(t, hipsrc.NVIDIA, "bf16", 0, true), shape: bshd},
		{name: "backend without an encoder", spec: mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 0, true), shape: bshd, hide: true},
		{name: "encoder off", spec: mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 0, true), shape: bshd, encOff: true},
		{name: "encoder refuses V", spec: mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 0, true), shape: bshd, calls: 3,
			fail: failNth(3, errRefused)},
		{name: "q not 16-byte aligned", spec: mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 0, true), shape: bshd, qOffset: 8},
		{name: "k's seq stride not 16-byte aligned", spec: mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 0, true), shape: oddStride},
		{name: "q box of 384 rows", spec: mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 384, true), shape: bshd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fb := fake.New()
			rec := &recorder{}
			rec.register(fb)
			fb.SetTensorMaps(!tc.encOff, tc.fail)
			var b backend.Backend = fb
			if tc.hide {
				b = noEncoder{fb}
			}
			d := NewDevice(b, Options{DisableCache: true})
			k, err := d.NewAttention(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			q, kk, v, o, lse, bufs := tensors(t, d)
			q += tc.qOffset
			if err := k.Forward(0, q, kk, v, o, lse, tc.shape, bufs); err != nil {
				t.Fatal(err)
			}
			if len(rec.records) != 1 || rec.records[0].entry != AttentionEntry {
				t.Fatalf("launches %+v", rec.records)
			}
			got := rec.records[0].maps
			calls := fb.TensorMapCalls()
			if len(calls) != tc.calls {
				t.Fatalf("%d encoder calls, want %d: %+v", len(calls), tc.calls, calls)
			}
			if !tc.wantMaps {
				if got != (cTensorMaps{}) {
					t.Errorf("maps not all zero: ok %d, q % x", got.OK, got.Q[:16])
				}
				return
			}
			sh := tc.shape
			want := []backend.TiledTensorMap{
				wantMap(tc.dt, q, k.spec.Kernel.HeadDim, sh.Sq, sh.H, sh.B, sh.QStride, tc.qRows),
				wantMap(tc.dt, kk, k.spec.Kernel.HeadDim, sh.Skv, sh.HKV, sh.B, sh.KStride, 128),
				wantMap(tc.dt, v, k.spec.Kernel.HeadDim, sh.Skv, sh.HKV, sh.B, sh.VStride, 128),
			}
			if tc.qStrides != ([4]uint64{}) && calls[0].Map.Strides != tc.qStrides {
				t.Errorf("Q's strides %v, want %v", calls[0].Map.Strides, tc.qStrides)
			}
			for i, c := range calls {
				if c.Map != want[i] {
					t.Errorf("map %d:\n got %+v\nwant %+v", i, c.Map, want[i])
				}
			}
			if got.OK != 1 || got.Q != calls[0].Encoded || got.K != calls[1].Encoded || got.V != calls[2].Encoded {
				t.Errorf("maps passed: ok %d, q % x, k % x, v % x", got.OK, got.Q[:24], got.K[:24], got.V[:24])
			}
			if got.Q != fake.EncodedTensorMap(q, 1) || got.V != fake.EncodedTensorMap(v, 3) {
				t.Errorf("q's map % x is not the fake's encoding of %#x", got.Q[:24], q)
			}
		})
	}
}

// TestForwardTensorMapsPerLaunch: the maps follow each launch's pointers
// on a reused argument block (a misaligned Q after an encoded launch gets
// zero maps, the next aligned one encoded ones again), and once the
// encoder refused a shape's maps its later launches pass zero maps
// without asking again.
func TestForwardTensorMapsPerLaunch(t *testing.T) {
	d, fb, rec := newFakeDevice(t, "")
	k, err := d.NewAttention(mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 0, true))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	q, kk, v, o, lse, bufs := tensors(t, d)
	good, refused := ContiguousShape(BSHD, 1, 4, 4, 256, 256, 128), ContiguousShape(BSHD, 1, 4, 4, 512, 512, 128)
	fb.SetTensorMaps(true, func(m backend.TiledTensorMap) error {
		if m.Dims[1] == 512 {
			return errors.New("refused")
		}
		return nil
	})
	for i, tc := range []struct {
		q      DevicePtr
		shape  Shape
		ok     int32
		calls  int // encoder calls so far
		qBytes int // Q's map encoded by call qBytes, 0: none
	}{
		{q, good, 1, 3, 1},
		{q + 2, good, 0, 3, 0},
		{q + 32, good, 1, 6, 4},
		{q, refused, 0, 7, 0},
		{q, refused, 0, 7, 0},
		{q, good, 1, 10, 8},
	} {
		if err := k.Forward(0, tc.q, kk, v, o, lse, tc.shape, bufs); err != nil {
			t.Fatal(err)
		}
		got := rec.records[len(rec.records)-1].maps
		n := len(fb.TensorMapCalls())
		switch {
		case got.OK != tc.ok || n != tc.calls:
			t.Errorf("launch %d: ok %d after %d encoder calls, want %d after %d", i, got.OK, n, tc.ok, tc.calls)
		case tc.qBytes == 0 && got != (cTensorMaps{}):
			t.Errorf("launch %d: maps not all zero", i)
		case tc.qBytes != 0 && got.Q != fake.EncodedTensorMap(tc.q, tc.qBytes):
			t.Errorf("launch %d: Q's map % x, want the encoding of %#x", i, got.Q[:24], tc.q)
		}
	}
}

// TestForwardWithTensorMapsDoesNotAllocate: encoding the maps per launch
// keeps Forward's steady state allocation-free.
func TestForwardWithTensorMapsDoesNotAllocate(t *testing.T) {
	_, fb := nopDevice()
	d := NewDevice(quietEncoder{fb}, Options{DisableCache: true})
	k, err := d.NewAttention(mapsSpec(t, hipsrc.NVIDIAWGMMA, "bf16", 0, true))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	q, kk, v, o, lse, bufs := tensors(t, d)
	shape := ContiguousShape(BSHD, 2, 16, 4, 4096, 4096, 128)
	if err := k.Forward(0, q, kk, v, o, lse, shape, bufs); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := k.Forward(0, q, kk, v, o, lse, shape, bufs); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Forward with tensor maps allocates %v times per call", allocs)
	}
	if fb.Launches() == 0 {
		t.Fatal("no launches")
	}
}

// quietEncoder is the fake with an encoder that records nothing (the
// fake's own appends to its call log).
type quietEncoder struct{ *fake.Backend }

// EncodeTensorMap marks the map and succeeds.
func (quietEncoder) EncodeTensorMap(out *[backend.TensorMapBytes]byte, m backend.TiledTensorMap) error {
	out[0] = byte(m.Rank)
	return nil
}

// TestNewAttentionRefusesTensorMapsOfUnknownDType: a launch that reads
// tensor maps needs their element type.
func TestNewAttentionRefusesTensorMapsOfUnknownDType(t *testing.T) {
	d, _, _ := newFakeDevice(t, "")
	_, err := d.NewAttention(mapsSpec(t, hipsrc.NVIDIAWGMMA, "f32", 0, true))
	var re *Error
	if !errors.As(err, &re) || re.Code != CodeSpec {
		t.Fatalf("got %v, want %s", err, CodeSpec)
	}
	if _, err := d.NewAttention(mapsSpec(t, hipsrc.NVIDIAWGMMA, "f32", 0, false)); err != nil {
		t.Fatalf("without tensor maps: %v", err)
	}
}

// TestBackwardTensorMaps: a backward whose launch on its platform says
// tensor_maps passes maskc_attn_bwd (both modes' main kernels) the maps
// the backend encodes: Q's and dO's boxes of the launch's q_rows (dO's
// strides O's), K's and V's of its kv_rows; a backward launch without
// tensor_maps passes them zero, whatever the forward's launch says.
func TestBackwardTensorMaps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fwd, bwd  bool // the launches that say tensor_maps
		wantCalls int  // encoder calls of one backward
	}{
		{"backward's maps", false, true, 4},
		{"forward's maps only", true, false, 0},
		{"none", false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, fb, _ := newFakeDevice(t, "")
			recs := registerBwd(fb)
			spec := bwdProbeSpec(t, SparsityAnalytic)
			spec.Platform = hipsrc.NVIDIAWGMMA
			spec.Kernel.DType = "bf16"
			fl := hipsrc.LaunchConfig{BlockN: 64, Threads: 256, SharedMemBytes: 64 << 10}
			if tc.fwd {
				fl.TensorMaps = &hipsrc.TensorMapRows{Q: 128, KV: 128}
			}
			spec.Kernel.Launch = map[string]hipsrc.LaunchConfig{hipsrc.NVIDIAWGMMA.String(): fl}
			bl := spec.Kernel.BwdLaunch["nvidia"]
			bl.MainThreads, bl.BlockN = 384, 128
			if tc.bwd {
				bl.TensorMaps = &hipsrc.TensorMapRows{Q: 64, KV: 128}
			}
			spec.Kernel.BwdLaunch = map[string]hipsrc.BwdLaunchConfig{hipsrc.NVIDIAWGMMA.String(): bl}
			k, err := d.NewAttention(spec)
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			c := newBwdTestCall(t, d)
			c.shape = ContiguousShape(BHSD, 2, 8, 2, 300, 200, 128)
			c.shape.Sink = c.bufs[0]
			for _, det := range []bool{false, true} {
				before := len(fb.TensorMapCalls())
				if err := c.run(k, det); err != nil {
					t.Fatal(err)
				}
				calls := fb.TensorMapCalls()[before:]
				if len(calls) != tc.wantCalls {
					t.Fatalf("deterministic %v: %d encoder calls, want %d", det, len(calls), tc.wantCalls)
				}
				var main *bwdLaunch
				for i := range *recs {
					if r := &(*recs)[i]; r.entry == hipsrc.BwdMainEntry || r.entry == hipsrc.BwdMainOrderedEntry {
						main = r
					}
				}
				if main == nil {
					t.Fatal("no main backward launch")
				}
				got := main.maps
				if !tc.bwd {
					if got != (cTensorMaps{}) {
						t.Errorf("deterministic %v: maps not all zero (ok %d)", det, got.OK)
					}
					continue
				}
				sh := c.shape
				dt := backend.TensorMapBFloat16
				want := []backend.TiledTensorMap{
					wantMap(dt, c.q, 128, sh.Sq, sh.H, sh.B, sh.QStride, 64),
					wantMap(dt, c.k, 128, sh.Skv, sh.HKV, sh.B, sh.KStride, 128),
					wantMap(dt, c.v, 128, sh.Skv, sh.HKV, sh.B, sh.VStride, 128),
					wantMap(dt, c.g.DO, 128, sh.Sq, sh.H, sh.B, sh.OStride, 64),
				}
				for i, call := range calls {
					if call.Map != want[i] {
						t.Errorf("map %d:\n got %+v\nwant %+v", i, call.Map, want[i])
					}
				}
				if got.OK != 1 || got.Q != calls[0].Encoded || got.K != calls[1].Encoded || got.V != calls[2].Encoded ||
					got.Dout != calls[3].Encoded {
					t.Errorf("maps passed: ok %d, q % x, dout % x", got.OK, got.Q[:24], got.Dout[:24])
				}
			}
		})
	}
}
