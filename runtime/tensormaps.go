package runtime

import (
	"sync/atomic"

	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/backend"
)

// The tensor maps (hipsrc.TensorMapsStruct, MaskcTensorMaps): a kernel
// whose forward launch on its platform says tensor_maps
// (hipsrc.LaunchConfig.TensorMaps) reads Q, K and V through maps the
// launcher encodes per launch (the pointers change per call), and one whose
// backward launch says them (hipsrc.BwdLaunchConfig.TensorMaps) reads Q,
// dO, K and V so in maskc_attn_bwd, where the backend is a
// backend.TensorMapEncoder; every other launch passes them zero (ok = 0),
// and so does one whose maps the encoder refuses: the kernel then copies
// without them, which is slower, never wrong.
//
// What does not depend on the pointers (dimensions, strides, boxes, modes)
// is worked out once per (shape, stream) entry (planMaps); a launch fills
// in the addresses and encodes (fillMaps), allocating nothing.

// mapElemBytes is the size of an element of Q, K and V (bf16, fp16).
const mapElemBytes = 2

// tensorMapDataType is the maps' element type for a kernel's dtype
// (hipsrc.KernelDesc.DType), false for one they are not encoded for.
func tensorMapDataType(dtype string) (backend.TensorMapDataType, bool) {
	switch dtype {
	case "bf16":
		return backend.TensorMapBFloat16, true
	case "fp16", "f16":
		return backend.TensorMapFloat16, true
	}
	return 0, false
}

// tensorMapSwizzle is the swizzle mode of a swizzle span in bytes
// (hipsrc.TensorMapSwizzleBytes).
func tensorMapSwizzle(bytes int) (backend.TensorMapSwizzle, bool) {
	switch bytes {
	case 32:
		return backend.TensorMapSwizzle32B, true
	case 64:
		return backend.TensorMapSwizzle64B, true
	case 128:
		return backend.TensorMapSwizzle128B, true
	}
	return 0, false
}

// tensorMapEncoder returns the backend's encoder where the kernel's forward
// or backward launch reads tensor maps and the backend can encode them,
// else nil.
func (k *AttentionKernel) tensorMapEncoder() backend.TensorMapEncoder {
	if k.launch.TensorMaps == nil && k.bwdMapRows() == nil {
		return nil
	}
	enc, ok := k.d.Backend.(backend.TensorMapEncoder)
	if !ok || !enc.CanEncodeTensorMaps() {
		return nil
	}
	return enc
}

// bwdMapRows returns the boxes' rows of the backward's tensor maps
// (hipsrc.BwdLaunchConfig.TensorMaps), nil where the kernel was loaded
// without a backward source or its backward launch reads no maps.
func (k *AttentionKernel) bwdMapRows() *hipsrc.TensorMapRows {
	if k.spec.BwdSource == "" {
		return nil
	}
	return k.spec.Kernel.BwdLaunch[k.spec.Platform.String()].TensorMaps
}

// Limits of the encoder that planMaps checks before asking it, so that a
// shape it would refuse costs no failing call (and no error) per launch;
// the encoder remains the judge.
const (
	mapAlign    = 16      // address and byte strides
	mapMaxBox   = 256     // elements per box dimension
	mapMaxDim   = 1 << 32 // elements per dimension
	mapMaxBytes = 1 << 40 // byte stride
)

// tensorMapPlan is an entry's maps of Q, K, V (and the backward's dO)
// without their addresses.
type tensorMapPlan struct {
	on   bool // encode per launch; false: zero maps
	n    int  // maps: 3 (the forward's), 4 (the backward's)
	maps [4]backend.TiledTensorMap
}

// planMaps returns the maps of a shape for a launch whose boxes' rows are
// rows (nil: it reads none): 4-D, innermost first, Q as {D, Sq, H, B} in
// boxes of TensorMapBoxCols x rows.Q, K and V as {D, Skv, HKV, B} in boxes
// of TensorMapBoxCols x rows.KV, and for the backward (bwd) dO as Q (its
// strides O's: Gradients.DO is laid out like O); byte strides of the
// shape's seq, head and batch strides. It is off where the launch reads no
// maps or the backend encodes none, and where a map breaks an encoder rule
// the shape alone decides.
func (k *AttentionKernel) planMaps(sh Shape, rows *hipsrc.TensorMapRows, bwd bool) tensorMapPlan {
	dt, okType := tensorMapDataType(k.spec.Kernel.DType)
	sw, okSwizzle := tensorMapSwizzle(hipsrc.TensorMapSwizzleBytes)
	if rows == nil || k.enc == nil || !okType || !okSwizzle || sh.Sq <= 0 || sh.Skv <= 0 {
		return tensorMapPlan{}
	}
	d := k.spec.Kernel.HeadDim
	type tensor struct {
		seq, heads, rows int
		stride           [3]int64 // elements: batch, head, seq
	}
	ts := []tensor{
		{sh.Sq, sh.H, rows.Q, sh.QStride},
		{sh.Skv, sh.HKV, rows.KV, sh.KStride},
		{sh.Skv, sh.HKV, rows.KV, sh.VStride},
	}
	if bwd {
		ts = append(ts, tensor{sh.Sq, sh.H, rows.Q, sh.OStride})
	}
	p := tensorMapPlan{on: true, n: len(ts)}
	for i, t := range ts {
		m := backend.TiledTensorMap{
			DataType: dt, Rank: 4,
			Dims:           [backend.TensorMapMaxRank]uint64{uint64(d), uint64(t.seq), uint64(t.heads), uint64(sh.B)},
			Box:            [backend.TensorMapMaxRank]uint32{hipsrc.TensorMapBoxCols, uint32(t.rows), 1, 1},
			ElementStrides: [backend.TensorMapMaxRank]uint32{1, 1, 1, 1},
			Interleave:     backend.TensorMapInterleaveNone, Swizzle: sw,
			L2Promotion: backend.TensorMapL2PromotionNone, OOBFill: backend.TensorMapOOBFillNone,
		}
		for j, s := range []int64{t.stride[2], t.stride[1], t.stride[0]} {
			b := s * mapElemBytes
			if b < 0 || b%mapAlign != 0 || b >= mapMaxBytes {
				return tensorMapPlan{}
			}
			m.Strides[j] = uint64(b)
		}
		for j := range m.Rank {
			if m.Dims[j] < 1 || m.Dims[j] > mapMaxDim || m.Box[j] < 1 || m.Box[j] > mapMaxBox {
				return tensorMapPlan{}
			}
		}
		if int(m.Box[0])*mapElemBytes > hipsrc.TensorMapSwizzleBytes {
			return tensorMapPlan{}
		}
		p.maps[i] = m
	}
	return p
}

// fillMaps sets out for a launch planned by plan on the tensors q, k, v
// (and dout, the backward's dO; 0 in the forward's): encoded with ok = 1
// where the plan is on, the addresses are aligned and the encoder takes
// every map; all zero otherwise. An encoder's refusal sets refused, which
// turns the plan off for later launches (the addresses being aligned, what
// it refused is the shape's).
func (k *AttentionKernel) fillMaps(out *cTensorMaps, plan *tensorMapPlan, refused *atomic.Bool, q, kk, v, dout DevicePtr) {
	ptrs := [4]DevicePtr{q, kk, v, dout}
	if !plan.on || refused.Load() || (q|kk|v|ptrs[plan.n-1])%mapAlign != 0 {
		*out = cTensorMaps{}
		return
	}
	dst := [4]*[hipsrc.TensorMapBytes]byte{&out.Q, &out.K, &out.V, &out.Dout}
	for i := range plan.n {
		m := plan.maps[i]
		m.Address = ptrs[i]
		if err := k.enc.EncodeTensorMap(dst[i], m); err != nil {
			refused.Store(true)
			*out = cTensorMaps{}
			return
		}
	}
	out.OK = 1
}

// validMapType reports whether a kernel's dtype is one the maps are
// encoded for.
func validMapType(dtype string) bool { _, ok := tensorMapDataType(dtype); return ok }
