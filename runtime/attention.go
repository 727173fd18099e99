package runtime

import (
	"fmt"
	"math"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime/backend"
)

// Sizes are the run-time size symbols B, H, HKV, Q and KV.
type Sizes struct {
	// B, H, HKV, Q and KV are batch, query heads, kv heads, query length
	// and kv length.
	B, H, HKV, Q, KV int64
}

// AttentionSpec is what the launcher is given about a generated attention
// kernel: its descriptor, the platform it runs as and its sources. Every
// launch fact (entry points, block size, key tile, shared memory,
// sparsity, tile-flag layout, buffers, reads, the backward's tiles) is
// read from the descriptor, the one record codegen fills and
// manifest.json serialises; nothing is restated here.
type AttentionSpec struct {
	// Kernel is the kernel's descriptor (codegen.Kernel's, or a
	// manifest.json entry). Its SourceFile and BwdSourceFile name the
	// sources in compiler logs.
	Kernel hipsrc.KernelDesc
	// Platform is the kernel variant the sources are compiled as on this
	// device (hipsrc.ForDevice): it picks Kernel.Launch's and
	// Kernel.BwdLaunch's entries, the compile target and options.
	Platform hipsrc.Platform
	// Source is the complete kernel source (prelude, generated part,
	// template).
	Source string
	// BwdSource is the complete backward source (codegen.Kernel.BwdSource:
	// the forward's followed by the backward kernels); empty: Backward
	// fails. Its module is compiled on the first Backward.
	BwdSource string
	// Flex is the .flex file named by the sources' #line directives.
	Flex *dsl.Source
}

// Extents are one buffer's extents as MaskcBuffers.dim holds them:
// outermost first, 1 past the buffer's rank.
type Extents [hipsrc.MaxBufferRank]int64

// Elements returns the number of elements, false when an extent is below 1
// or the product exceeds 2^62 (no device holds such a buffer; the bound
// keeps byte counts of 8-byte elements inside int64).
func (e Extents) Elements() (int64, bool) {
	n := int64(1)
	for _, d := range e {
		if d < 1 || d > (1<<62)/n {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// Extents returns the extents of buffer slot i written to
// MaskcBuffers.dim for sizes: its declared dims (hipsrc.BufferSlot.Dims)
// evaluated, then 1 up to hipsrc.MaxBufferRank.
func (s AttentionSpec) Extents(i int, sz Sizes) (Extents, error) {
	b := s.Kernel.Slots[i]
	got, err := hipsrc.EvalDims(b.Dims, map[string]int64{"B": sz.B, "H": sz.H, "HKV": sz.HKV, "Q": sz.Q, "KV": sz.KV})
	if err != nil {
		return Extents{}, err
	}
	if len(got) > hipsrc.MaxBufferRank {
		return Extents{}, fmt.Errorf("%d extents; MaskcBuffers holds at most %d", len(got), hipsrc.MaxBufferRank)
	}
	var out Extents
	for j := range out {
		out[j] = 1
	}
	copy(out[:], got)
	return out, nil
}

// compileOptions are the options of the platform's compile (its target
// when not the device's own, and the options that select its kernel).
func (s AttentionSpec) compileOptions(name string) CompileOptions {
	abi := s.Platform.ABI()
	return CompileOptions{Name: name, Flex: s.Flex, Options: abi.CompileOptions, Arch: abi.Arch}
}

// Layout is the memory order of Q, K, V and O.
type Layout int

const (
	// BSHD is [batch, seq, head, dim].
	BSHD Layout = iota
	// BHSD is [batch, head, seq, dim].
	BHSD
)

// Shape is one forward call's problem size and memory layout. It is a
// comparable value: the launcher caches per-shape work keyed by it.
type Shape struct {
	// B, H, HKV, Sq and Skv are batch, query heads, kv heads (H must be a
	// multiple), query length and kv length.
	B, H, HKV, Sq, Skv int
	// QStride, KStride, VStride and OStride are element strides for
	// (batch, head, seq); the head dimension is contiguous.
	QStride, KStride, VStride, OStride [3]int64
	// Scale is the softmax scale; 0 means 1/sqrt(HeadDim).
	Scale float32
	// Sink is 0 or a device pointer to H fp32 sink logits.
	Sink DevicePtr
}

// ContiguousShape returns a Shape for dense tensors in layout with head
// dimension d: Q and O are [B, Sq, H, d] or [B, H, Sq, d], K and V the same
// with HKV heads and Skv positions.
func ContiguousShape(layout Layout, b, h, hkv, sq, skv, d int) Shape {
	strides := func(heads, seq int) [3]int64 {
		hh, ss, dd := int64(heads), int64(seq), int64(d)
		if layout == BHSD {
			return [3]int64{hh * ss * dd, ss * dd, dd}
		}
		return [3]int64{ss * hh * dd, dd, hh * dd}
	}
	return Shape{
		B: b, H: h, HKV: hkv, Sq: sq, Skv: skv,
		QStride: strides(h, sq), KStride: strides(hkv, skv), VStride: strides(hkv, skv), OStride: strides(h, sq),
	}
}

// attnArgs is one pinned argument block of the forward's launches: the
// values (fwdFields) and each entry's parameter array over them.
type attnArgs struct {
	params          []unsafe.Pointer // maskc_attn_fwd's, by the ABI's entry
	flagParams      []unsafe.Pointer // maskc_tile_flags's
	segParams       []unsafe.Pointer // maskc_seg_check's
	q, k, v, o, lse uintptr
	flags           uintptr
	shape           cShape
	buf             cBuffers
	maps            cTensorMaps // the forward's (fillMaps)
}

// argSlot is an argument block that one Forward call owns at a time.
type argSlot struct {
	busy atomic.Bool
	args *attnArgs
}

// newAttnArgs returns an argument block with k's entries' parameter
// arrays, pinned by p.
func (k *AttentionKernel) newAttnArgs(p *goruntime.Pinner) *attnArgs {
	a := new(attnArgs)
	a.params = k.fwdB.params(a, p)
	a.flagParams = k.flagsB.params(a, p)
	a.segParams = k.segB.params(a, p)
	p.Pin(a)
	return a
}

// shapeKey identifies a cached shape entry.
type shapeKey struct {
	shape  Shape
	stream Stream
}

// shapeEntry is the per-(shape, stream) work done once: validation, the
// C shape struct, buffer extents, grids and the PREPASS flags buffer.
type shapeEntry struct {
	key       shapeKey
	shape     cShape
	dims      [MaxBuffers]Extents
	grid      Dim3
	flagsGrid Dim3
	segGrid   Dim3
	flags     DevicePtr
	// status is this (shape, stream)'s StatusWords device words, zeroed
	// when made: the segments check's per-slot words must not be shared by
	// launches that may run at once with other ids (another stream).
	status DevicePtr
	// launch keeps a segments check and the launches that read its words
	// together when several goroutines enqueue on one stream at once.
	launch sync.Mutex
	// maps and bwdMaps are the forward's and the backward's tensor maps
	// but their addresses (planMaps); each has its own flag, set once the
	// encoder refused them (fillMaps).
	maps, bwdMaps               tensorMapPlan
	mapsRefused, bwdMapsRefused atomic.Bool
}

// AttentionKernel launches a compiled generated attention kernel. Forward
// is safe for concurrent use; after the first call for a (shape, stream) it
// allocates nothing and takes no lock (unless more goroutines call it at
// once than it has argument blocks, GOMAXPROCS at creation).
type AttentionKernel struct {
	d      *Device
	spec   AttentionSpec
	launch hipsrc.LaunchConfig // the descriptor's for spec.Platform
	module *Module
	fwd    *Kernel
	flags  *Kernel // nil unless the descriptor names a FlagsEntry
	seg    *Kernel // nil unless it names a SegCheckEntry
	block  Dim3
	// fwdB, flagsB and segB are the forward's entries' parameters bound
	// to attnArgs (params.go).
	fwdB, flagsB, segB binding[attnArgs]
	// enc encodes the tensor maps of the forward and the backward: nil
	// unless a launch says tensor_maps and the backend can encode them
	// (tensormaps.go).
	enc backend.TensorMapEncoder

	pins  *goruntime.Pinner // separate object so a cleanup can unpin if Close is never called
	slots []argSlot

	closed  atomic.Bool
	last    atomic.Pointer[shapeEntry]
	entries atomic.Pointer[map[shapeKey]*shapeEntry] // copy on write under mu
	mu      sync.Mutex

	bwd backwardState
}

// NewAttention checks spec against the ABI and the device, compiles its
// source (through the cache), loads both entry points and preallocates the
// pinned argument blocks.
func (d *Device) NewAttention(spec AttentionSpec) (*AttentionKernel, error) {
	if err := checkSpec(spec, d.Info().SharedMemPerBlockOptin); err != nil {
		return nil, err
	}
	launch := spec.Kernel.Launch[spec.Platform.String()]
	k := &AttentionKernel{d: d, spec: spec, launch: launch, block: Dim3{X: uint32(launch.Threads), Y: 1, Z: 1}}
	var err error
	if k.fwdB, err = bind(spec.Kernel.Entry, fwdFields); err == nil {
		if k.flagsB, err = bind(TileFlagsEntry, fwdFields); err == nil {
			k.segB, err = bind(SegCheckEntry, fwdFields)
		}
	}
	if err != nil {
		return nil, errorf(CodeSpec, err, "kernel %s", spec.Kernel.Attention)
	}
	m, err := d.Compile(spec.Source, spec.compileOptions(spec.Kernel.SourceFile))
	if err != nil {
		return nil, err
	}
	k.module = m
	k.enc = k.tensorMapEncoder()
	if err := k.loadEntries(); err != nil {
		m.Close()
		return nil, err
	}

	n := max(4, goruntime.GOMAXPROCS(0))
	k.slots = make([]argSlot, n)
	k.pins = new(goruntime.Pinner)
	for i := range k.slots {
		k.slots[i].args = k.newAttnArgs(k.pins)
	}
	goruntime.AddCleanup(k, unpin, k.pins)
	empty := map[shapeKey]*shapeEntry{}
	k.entries.Store(&empty)
	return k, nil
}

// loadEntries looks up the entry points and opts in to the dynamic shared
// memory the forward needs.
func (k *AttentionKernel) loadEntries() error {
	var err error
	kd := k.spec.Kernel
	if k.fwd, err = k.module.Kernel(kd.Entry); err != nil {
		return err
	}
	if kd.FlagsEntry != "" {
		if k.flags, err = k.module.Kernel(kd.FlagsEntry); err != nil {
			return err
		}
	}
	if kd.SegCheckEntry != "" {
		if k.seg, err = k.module.Kernel(kd.SegCheckEntry); err != nil {
			return err
		}
	}
	const defaultSharedLimit = 48 << 10 // what NVIDIA allows without opting in
	if k.fwdB.entry.SharedMem && k.launch.SharedMemBytes > defaultSharedLimit {
		return k.fwd.SetMaxDynamicSharedMemory(k.launch.SharedMemBytes)
	}
	return nil
}

// checkSpec checks the descriptor of s against the ABI and the device
// before anything is compiled.
func checkSpec(s AttentionSpec, maxShared int) error {
	bad := func(format string, args ...any) error { return errorf(CodeSpec, nil, format, args...) }
	kd := s.Kernel
	launch, ok := kd.Launch[s.Platform.String()]
	switch {
	case s.Source == "":
		return bad("attention kernel has no source")
	case kd.SourceFile == "":
		return bad("attention kernel %s: the descriptor names no source file", kd.Attention)
	case kd.Entry != AttentionEntry:
		return bad("entry point %q; this runtime launches %s", kd.Entry, AttentionEntry)
	case !ok:
		return bad("kernel %s has no launch configuration for %s", kd.Attention, s.Platform)
	case launch.BlockN <= 0:
		return bad("key tile %d: the kernel ABI has a positive key tile", launch.BlockN)
	case launch.Threads <= 0 || launch.Threads > 1024:
		return bad("%d threads per block; want 1 to 1024", launch.Threads)
	case !hipsrc.HeadDimSupported(kd.HeadDim):
		return bad("head dimension %d; generated kernels support %s", kd.HeadDim, hipsrc.HeadDimList())
	case launch.SharedMemBytes < 0 || launch.SharedMemBytes > maxShared:
		return bad("%d bytes of shared memory; the device allows %d per block", launch.SharedMemBytes, maxShared)
	case launch.TensorMaps != nil && !validMapType(kd.DType):
		return bad("kernel %s reads tensor maps of dtype %q; they are encoded for bf16 or fp16", kd.Attention, kd.DType)
	case len(kd.Slots) > MaxBuffers:
		return bad("%d captured buffers; the kernel ABI holds at most %d", len(kd.Slots), MaxBuffers)
	case kd.Sparsity != hipsrc.SparsityNone && kd.Sparsity != hipsrc.SparsityAnalytic && kd.Sparsity != hipsrc.SparsityPrepass:
		return bad("unknown sparsity scheme %q", kd.Sparsity)
	case (kd.Sparsity == hipsrc.SparsityPrepass) != (kd.FlagsEntry == TileFlagsEntry) || kd.FlagsEntry != "" && kd.FlagsEntry != TileFlagsEntry:
		return bad("sparsity %s with flags entry %q", kd.Sparsity, kd.FlagsEntry)
	case kd.SegCheckEntry != "" && kd.SegCheckEntry != SegCheckEntry:
		return bad("segments check entry %q; the ABI has %s", kd.SegCheckEntry, SegCheckEntry)
	}
	for i, b := range kd.Slots {
		if b.Slot != i || len(b.Dims) > hipsrc.MaxBufferRank {
			return bad("buffer %s: slot %d with %d extents, expected slot %d with 0 to %d", b.Name, b.Slot, len(b.Dims), i, hipsrc.MaxBufferRank)
		}
	}
	if s.BwdSource != "" {
		b, ok := kd.BwdLaunch[s.Platform.String()]
		switch {
		case kd.BwdSourceFile == "":
			return bad("the descriptor names no backward source file")
		case len(kd.BwdEntries) == 0:
			return bad("the descriptor lists no backward entry points")
		case !ok:
			return bad("kernel %s has no backward launch configuration for %s", kd.Attention, s.Platform)
		case b.Threads <= 0 || b.Threads > 1024 || b.MainThreads <= 0 || b.MainThreads > 1024 || s.Platform.BwdPreRows() <= 0:
			return bad("backward launch of %d threads (%d in the main kernel) and %d rows per row-pass block", b.Threads, b.MainThreads, s.Platform.BwdPreRows())
		case b.BlockM <= 0 || b.BlockN <= 0:
			return bad("backward tiles %dx%d", b.BlockM, b.BlockN)
		case b.SharedMemBytes < 0 || b.SharedMemBytes > maxShared || b.DQSharedMemBytes < 0 || b.DQSharedMemBytes > maxShared:
			return bad("the backward takes %d bytes of shared memory (%d in the dQ kernel); the device allows %d per block", b.SharedMemBytes, b.DQSharedMemBytes, maxShared)
		case b.TensorMaps != nil && !validMapType(kd.DType):
			return bad("kernel %s's backward reads tensor maps of dtype %q; they are encoded for bf16 or fp16", kd.Attention, kd.DType)
		}
	}
	return nil
}

// fwdSharedMem is the forward's dynamic shared memory: the descriptor's,
// where the ABI's entry takes it.
func (k *AttentionKernel) fwdSharedMem() int {
	if k.fwdB.entry.SharedMem {
		return k.launch.SharedMemBytes
	}
	return 0
}

// Spec returns the kernel's description.
func (k *AttentionKernel) Spec() AttentionSpec { return k.spec }

// CheckSegments reads every `segments` buffer among buffers (the ones
// Forward would take, for shape) back from the device and checks the
// property's promise with dsl.CheckSegments: integers the dtype holds, in
// non-decreasing order. Forward gives the mask as written whatever the ids
// (its segments check runs on the device and Status reports
// StatusSegmentsUnsorted without a copy); call CheckSegments where a
// broken promise should stop the caller with the offending element named.
// It costs one copy of each segments buffer (4 or 8 bytes per id).
func (k *AttentionKernel) CheckSegments(shape Shape, buffers []DevicePtr) error {
	if len(buffers) != len(k.spec.Kernel.Slots) {
		return errorf(CodeBuffers, nil, "%d captured buffers passed, the kernel reads %d", len(buffers), len(k.spec.Kernel.Slots))
	}
	sizes := Sizes{B: int64(shape.B), H: int64(shape.H), HKV: int64(shape.HKV), Q: int64(shape.Sq), KV: int64(shape.Skv)}
	for i, b := range k.spec.Kernel.Slots {
		if !b.Segments {
			continue
		}
		if buffers[i] == 0 {
			return errorf(CodeBuffers, nil, "captured buffer %d (%s) is a null pointer", i, b.Name)
		}
		dims, err := k.spec.Extents(i, sizes)
		if err != nil {
			return errorf(CodeBuffers, err, "segments buffer %s", b.Name)
		}
		n, ok := dims.Elements()
		if !ok || n > 1<<31 {
			return errorf(CodeBuffers, nil, "segments buffer %s has extents %v", b.Name, dims[:len(b.Dims)])
		}
		switch b.DType {
		case "i32":
			ids := make([]int32, n)
			if err = k.d.CopyDtoH(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ids))), 4*n), buffers[i]); err == nil {
				err = dsl.CheckSegments(ids, b.DType)
			}
		case "i64":
			ids := make([]int64, n)
			if err = k.d.CopyDtoH(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ids))), 8*n), buffers[i]); err == nil {
				err = dsl.CheckSegments(ids, b.DType)
			}
		default:
			err = fmt.Errorf("dtype %q is not an integer dtype", b.DType)
		}
		if err != nil {
			return errorf(CodeBuffers, err, "segments buffer %s", b.Name)
		}
	}
	return nil
}

// CompileStats says how the kernel was compiled or loaded from the cache.
func (k *AttentionKernel) CompileStats() CompileStats { return k.module.Stats }

// Forward enqueues the attention forward on stream s: O = softmax(mask and
// score of Q·Kᵀ·scale)·V and LSE per row, for device tensors laid out as
// shape says, with buffers the captured tensors in declaration order. With
// PREPASS sparsity the tile-flags kernel runs first on the same stream.
func (k *AttentionKernel) Forward(s Stream, q, kk, v, o, lse DevicePtr, shape Shape, buffers []DevicePtr) error {
	if k.closed.Load() {
		return errorf(CodeLaunch, nil, "attention kernel used after Close")
	}
	e, err := k.entry(shapeKey{shape: shape, stream: s})
	if err != nil {
		return err
	}
	if q == 0 || kk == 0 || v == 0 || o == 0 || lse == 0 {
		return errorf(CodeShape, nil, "null tensor pointer (q=%#x k=%#x v=%#x o=%#x lse=%#x)", q, kk, v, o, lse)
	}
	if len(buffers) != len(k.spec.Kernel.Slots) {
		return errorf(CodeBuffers, nil, "%d captured buffers passed, the kernel reads %d", len(buffers), len(k.spec.Kernel.Slots))
	}
	for i, b := range buffers {
		if b == 0 {
			return errorf(CodeBuffers, nil, "captured buffer %d (%s) is a null pointer", i, k.spec.Kernel.Slots[i].Name)
		}
	}
	slot := k.acquire()
	a := slot.args
	a.q, a.k, a.v, a.o, a.lse = uintptr(q), uintptr(kk), uintptr(v), uintptr(o), uintptr(lse)
	a.shape = e.shape
	a.buf.Dim = e.dims
	a.buf.Status = uintptr(e.status)
	a.buf.Ptr = [MaxBuffers]uintptr{}
	for i, b := range buffers {
		a.buf.Ptr[i] = uintptr(b)
	}
	k.fillMaps(&a.maps, &e.maps, &e.mapsRefused, q, kk, v, 0)
	if k.seg != nil {
		e.launch.Lock()
		defer e.launch.Unlock()
		if err := k.d.Launch(k.seg.fn, e.segGrid, k.block, 0, s, unsafe.Pointer(&a.segParams[0])); err != nil {
			k.release(slot)
			return errorf(CodeLaunch, err, "launching %s", SegCheckEntry)
		}
	}
	if k.flags != nil {
		a.flags = uintptr(e.flags)
		err = k.d.Launch(k.flags.fn, e.flagsGrid, k.block, 0, s, unsafe.Pointer(&a.flagParams[0]))
		if err != nil {
			k.release(slot)
			return errorf(CodeLaunch, err, "launching %s with grid %v", TileFlagsEntry, e.flagsGrid)
		}
	}
	err = k.d.Launch(k.fwd.fn, e.grid, k.block, uint32(k.fwdSharedMem()), s, unsafe.Pointer(&a.params[0]))
	k.release(slot)
	if err != nil {
		return errorf(CodeLaunch, err, "launching %s with grid %v block %v", AttentionEntry, e.grid, k.block)
	}
	return nil
}

// acquire takes a free argument block without locking; if all are busy it
// makes a temporary one (allocating).
func (k *AttentionKernel) acquire() *argSlot {
	for i := range k.slots {
		if k.slots[i].busy.CompareAndSwap(false, true) {
			return &k.slots[i]
		}
	}
	s := &argSlot{}
	s.busy.Store(true)
	p := new(goruntime.Pinner)
	s.args = k.newAttnArgs(p)
	goruntime.AddCleanup(s, unpin, p)
	return s
}

func (k *AttentionKernel) release(s *argSlot) { s.busy.Store(false) }

// unpin is the cleanup that releases pinned argument memory.
func unpin(p *goruntime.Pinner) { p.Unpin() }

// entry returns the cached work for a shape and stream, computing it on
// first use. Hits take no lock and allocate nothing.
func (k *AttentionKernel) entry(key shapeKey) (*shapeEntry, error) {
	if e := k.last.Load(); e != nil && e.key == key {
		return e, nil
	}
	if e, ok := (*k.entries.Load())[key]; ok {
		k.last.Store(e)
		return e, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	old := *k.entries.Load()
	if e, ok := old[key]; ok {
		return e, nil
	}
	e, err := k.newEntry(key)
	if err != nil {
		return nil, err
	}
	m := make(map[shapeKey]*shapeEntry, len(old)+1)
	for kk, vv := range old {
		m[kk] = vv
	}
	m[key] = e
	k.entries.Store(&m)
	k.last.Store(e)
	return e, nil
}

func (k *AttentionKernel) newEntry(key shapeKey) (*shapeEntry, error) {
	sh := key.shape
	bad := func(format string, args ...any) error { return errorf(CodeShape, nil, format, args...) }
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{{"B", sh.B, math.MaxInt32}, {"H", sh.H, math.MaxInt32}, {"HKV", sh.HKV, math.MaxInt32}, {"Sq", sh.Sq, MaxSeqLen}, {"Skv", sh.Skv, MaxSeqLen}} {
		if f.v < 1 || f.v > f.max {
			return nil, bad("%s = %d; want 1 to %d", f.name, f.v, f.max)
		}
	}
	if sh.H%sh.HKV != 0 {
		return nil, bad("H = %d is not a multiple of HKV = %d", sh.H, sh.HKV)
	}
	if sh.H > 65535 || sh.B > 65535 {
		return nil, bad("grid (q tiles, H = %d, B = %d): H and B must be at most 65535", sh.H, sh.B)
	}
	for _, st := range []struct {
		name string
		s    [3]int64
	}{{"Q", sh.QStride}, {"K", sh.KStride}, {"V", sh.VStride}, {"O", sh.OStride}} {
		if st.s[0] < 0 || st.s[1] < 0 || st.s[2] < int64(k.spec.Kernel.HeadDim) {
			return nil, errorf(CodeShape, nil, "%s strides %v: batch and head strides must be >= 0 and the seq stride >= the head dimension %d (use ContiguousShape)", st.name, st.s, k.spec.Kernel.HeadDim)
		}
	}
	if math.IsNaN(float64(sh.Scale)) || math.IsInf(float64(sh.Scale), 0) {
		return nil, bad("scale %v is not finite", sh.Scale)
	}
	e := &shapeEntry{key: key, maps: k.planMaps(sh, k.launch.TensorMaps, false), bwdMaps: k.planMaps(sh, k.bwdMapRows(), true)}
	scale := sh.Scale
	if scale == 0 {
		scale = float32(dsl.DefaultScale(k.spec.Kernel.HeadDim))
	}
	e.shape = cShape{
		B: int32(sh.B), H: int32(sh.H), HKV: int32(sh.HKV), Sq: int32(sh.Sq), Skv: int32(sh.Skv),
		QStride: sh.QStride, KStride: sh.KStride, VStride: sh.VStride, OStride: sh.OStride,
		Scale: scale, Sink: uintptr(sh.Sink),
	}
	sizes := Sizes{B: int64(sh.B), H: int64(sh.H), HKV: int64(sh.HKV), Q: int64(sh.Sq), KV: int64(sh.Skv)}
	for i, b := range k.spec.Kernel.Slots {
		dims, err := k.spec.Extents(i, sizes)
		if err != nil {
			return nil, errorf(CodeBuffers, err, "buffer %s", b.Name)
		}
		if _, ok := dims.Elements(); !ok {
			return nil, errorf(CodeBuffers, nil, "buffer %s has extents %v for shape B=%d H=%d Q=%d KV=%d; extents must be positive, their product at most 2^62", b.Name, dims[:len(b.Dims)], sh.B, sh.H, sh.Sq, sh.Skv)
		}
		e.dims[i] = dims
	}
	env := hipsrc.BoundEnv(sizes.B, sizes.H, sizes.HKV, sizes.Q, sizes.KV, 0, 0, 0, sizes.Q, sizes.KV, sizes.H)
	for _, r := range k.spec.Kernel.Reads {
		if r.Slot < 0 || r.Slot >= len(k.spec.Kernel.Slots) || len(r.Index) > hipsrc.MaxBufferRank {
			return nil, errorf(CodeSpec, nil, "read %s names buffer slot %d of %d", r.Text, r.Slot, len(k.spec.Kernel.Slots))
		}
		if err := hipsrc.CheckRead(r, env, e.dims[r.Slot][:len(r.Index)]); err != nil {
			return nil, errorf(CodeReadRange, err, "refused before launch")
		}
	}
	// The grids and the flag buffer follow the ABI's rules (the entries'
	// grids, hipsrc.TileFlags) at the descriptor's key tile.
	sz := hipsrc.LaunchSizes{B: sh.B, H: sh.H, HKV: sh.HKV, Sq: sh.Sq, Skv: sh.Skv}
	tiles := map[string]int{"block_m": hipsrc.BlockM, "block_n": k.launch.BlockN}
	fwdTiles := map[string]int{"block_m": hipsrc.BlockM, "block_n": k.launch.BlockN}
	e.grid, e.segGrid = gridOf(k.fwdB.entry, sz, fwdTiles), gridOf(k.segB.entry, sz, tiles)
	status, err := k.d.Alloc(4 * StatusWords)
	if err != nil {
		return nil, errorf(CodeLaunch, err, "allocating the %d status words", StatusWords)
	}
	if err := k.d.Memset(status, 0, 4*StatusWords); err != nil {
		k.d.Free(status)
		return nil, errorf(CodeLaunch, err, "zeroing the status words")
	}
	e.status = status
	if k.flags != nil {
		fb, fh := 1, 1
		if k.spec.Kernel.MaskUsesB {
			fb = sh.B
		}
		if k.spec.Kernel.MaskUsesH {
			fh = sh.H
		}
		n := int64(hipsrc.FlagsBytes(k.launch.BlockN, fb, fh, sh.Sq, sh.Skv))
		flags, err := k.d.Alloc(n)
		if err != nil {
			k.d.Free(e.status)
			return nil, errorf(CodeLaunch, err, "allocating %d bytes of tile flags", n)
		}
		e.flags = flags
		e.shape.TileFlags = uintptr(flags)
		e.flagsGrid = gridOf(k.flagsB.entry, sz, tiles)
	}
	return e, nil
}

// Status returns the sticky bits of status word 0 (StatusSegmentsUnsorted,
// StatusReadOutOfRange) that the kernel's launches recorded since the
// first or the last ResetStatus, or-ed over the status words of every
// (shape, stream) it launched on. It copies the words to the host, which
// waits for the device's work in flight: call it off the hot path (once per
// step, in a check, after a failure), never per launch.
func (k *AttentionKernel) Status() (uint32, error) {
	if k.closed.Load() {
		return 0, errorf(CodeLaunch, nil, "attention kernel used after Close")
	}
	var bits uint32
	for _, e := range *k.entries.Load() {
		var w [4]byte
		if err := k.d.CopyDtoH(w[:], e.status); err != nil {
			return 0, errorf(CodeLaunch, err, "reading the status word")
		}
		bits |= *(*uint32)(unsafe.Pointer(&w[0]))
	}
	return bits, nil
}

// ResetStatus zeroes the status words of every (shape, stream) (word 0's
// sticky bits; the per-slot words are rewritten before every launch
// anyway); launches enqueued afterwards record into cleared words (the
// clear is synchronous, like a copy).
func (k *AttentionKernel) ResetStatus() error {
	if k.closed.Load() {
		return errorf(CodeLaunch, nil, "attention kernel used after Close")
	}
	for _, e := range *k.entries.Load() {
		if err := k.d.Memset(e.status, 0, 4*StatusWords); err != nil {
			return errorf(CodeLaunch, err, "clearing the status words")
		}
	}
	return nil
}

// Close frees the tile-flag buffers, unloads the module and unpins the
// argument blocks. No Forward may be running or follow.
func (k *AttentionKernel) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed.Swap(true) {
		return nil
	}
	first := k.closeBackward()
	for _, e := range *k.entries.Load() {
		for _, p := range []DevicePtr{e.flags, e.status} {
			if p == 0 {
				continue
			}
			if err := k.d.Free(p); err != nil && first == nil {
				first = err
			}
		}
	}
	empty := map[shapeKey]*shapeEntry{}
	k.entries.Store(&empty)
	k.last.Store(nil)
	k.pins.Unpin()
	if err := k.module.Close(); err != nil && first == nil {
		first = err
	}
	if first != nil {
		return fmt.Errorf("closing attention kernel: %w", first)
	}
	return nil
}

// MaxSeqLen is the longest Sq and Skv a generated kernel may be launched
// with: hipsrc.MaxSeqLen, 2^31 - 257, the bound the code generator's 32-bit
// index arithmetic assumes.
const MaxSeqLen = hipsrc.MaxSeqLen
