package runtime

import (
	"slices"
	"structs"
	"sync"
	"unsafe"

	"github.com/maskc/maskc/hipsrc"
)

// cBwdShape is struct MaskcBwdShape (hipsrc.BwdShapeStruct).
type cBwdShape struct {
	_                                  structs.HostLayout
	B, H, HKV, Sq, Skv                 int32
	_                                  int32
	QStride, KStride, VStride, OStride [3]int64
	DOStride, DQStride                 [3]int64
	DKStride, DVStride                 [3]int64
	Scale                              float32
	_                                  int32
	Sink, TileFlags, LSE, DLSE         uintptr
	Delta, DQAcc, DQSem, DSink         uintptr
	DBuf                               [MaxBuffers]uintptr
}

// Gradients are the tensors of one Backward call besides the forward's
// inputs. DO is laid out like O (Shape.OStride), DQ like Q, DK like K and
// DV like V; DLSE, when not 0, is fp32 [B, H, Sq] (the gradient of the
// LSE, for callers that differentiate through it).
type Gradients struct {
	// DO and DLSE are the incoming gradients of O and the LSE.
	DO, DLSE DevicePtr
	// DQ, DK and DV receive the gradients of Q, K and V in the element type.
	DQ, DK, DV DevicePtr
	// DBufs are, per buffer slot, fp32 tensors with the buffer's extents
	// that receive its gradient, or 0 where it is not wanted; only slots
	// whose descriptor slot has Grad set may be non-zero. Empty: none wanted.
	DBufs []DevicePtr
	// DSink receives the sink gradient, fp32 [H], when not 0 (the shape
	// must have a sink).
	DSink DevicePtr
}

// bwdCall is one entry point of the backward module: its function and
// its parameters bound to bwdArgs (params.go).
type bwdCall struct {
	kern   *Kernel
	bind   binding[bwdArgs]
	params []unsafe.Pointer // over the state's one bwdArgs
}

// bwdKernels are the backward module and its entry points, loaded on the
// first Backward: the descriptor's BwdEntries in launch order, and the
// forward's entries the backward reruns.
type bwdKernels struct {
	module *Module
	order  []*bwdCall             // Kernel.BwdEntries's, in launch order
	flags  *bwdCall               // nil unless the descriptor names a FlagsEntry
	seg    *bwdCall               // nil unless it names a SegCheckEntry
	launch hipsrc.BwdLaunchConfig // each entry's block and shared memory: launch.Entry
}

// bwdScratch is the per-(shape, stream) device scratch of the backward:
// delta, dQ's fp32 accumulator (made on first use by a mode that adds dQ
// in maskc_attn_bwd), the ordered dQ's turn counters (made on first use in
// deterministic mode where the kernel orders dQ) and the fixed-point sums
// of each differentiable buffer, and the grids of its entries.
type bwdScratch struct {
	delta, dqAcc, dqSem DevicePtr
	acc                 [MaxBuffers]DevicePtr
	n                   [MaxBuffers]int64
	grids               map[string]Dim3 // by entry name; "grad" entries' depend on the buffer (gridOf at launch)
}

// bwdArgs is the pinned argument block of the backward launches: the
// values every entry's parameters are bound to by name (bwdFields,
// bwdFlagsFields).
type bwdArgs struct {
	q, k, v, o, do, dQ, dK, dV uintptr
	acc, out                   uintptr
	n                          int64
	flagsPtr                   uintptr
	sh                         cBwdShape
	fsh                        cShape
	buf                        cBuffers
	maps                       cTensorMaps // maskc_attn_bwd's (fillMaps)
}

// backwardState is the AttentionKernel's backward half: loaded lazily, one
// argument block, calls serialised while they enqueue.
type backwardState struct {
	mu      sync.Mutex
	kernels *bwdKernels
	args    *bwdArgs
	scratch map[shapeKey]*bwdScratch
}

// HasBackward says whether the kernel was described with a backward
// source.
func (k *AttentionKernel) HasBackward() bool { return k.spec.BwdSource != "" }

// loadBackward compiles (through the cache) and loads the backward module
// on first use, binding each entry point's parameters as the ABI lists
// them; the caller holds k.bwd.mu.
func (k *AttentionKernel) loadBackward() (*bwdKernels, error) {
	if k.bwd.kernels != nil {
		return k.bwd.kernels, nil
	}
	kd := k.spec.Kernel
	bl := kd.BwdLaunch[k.spec.Platform.String()] // checkSpec found it
	if k.bwd.args == nil {
		a := new(bwdArgs)
		k.pins.Pin(a)
		k.bwd.args = a
	}
	a := k.bwd.args
	bk := &bwdKernels{launch: bl}
	entry := func(name string, fields map[string]field[bwdArgs]) (*bwdCall, error) {
		b, err := bind(name, fields)
		if err != nil {
			return nil, errorf(CodeSpec, err, "kernel %s's backward", kd.Attention)
		}
		return &bwdCall{bind: b, params: b.params(a, k.pins)}, nil
	}
	if bl.DQOrdered && !slices.Contains(kd.BwdEntries, hipsrc.BwdMainOrderedEntry) {
		// Deterministic mode would launch neither main kernel.
		return nil, errorf(CodeSpec, nil, "kernel %s's bwd_launch orders dQ (dq_ordered) but its backward has no %s", kd.Attention, hipsrc.BwdMainOrderedEntry)
	}
	var all []*bwdCall
	for _, name := range kd.BwdEntries {
		if _, ok := hipsrc.BwdEntry(name); !ok {
			return nil, errorf(CodeSpec, nil, "kernel %s names backward entry %s, which the ABI does not list", kd.Attention, name)
		}
		l, err := entry(name, bwdFields)
		if err != nil {
			return nil, err
		}
		bk.order = append(bk.order, l)
		all = append(all, l)
	}
	var err error
	if kd.FlagsEntry != "" {
		if bk.flags, err = entry(kd.FlagsEntry, bwdFlagsFields); err != nil {
			return nil, err
		}
		all = append(all, bk.flags)
	}
	if kd.SegCheckEntry != "" {
		if bk.seg, err = entry(kd.SegCheckEntry, bwdFlagsFields); err != nil {
			return nil, err
		}
		all = append(all, bk.seg)
	}
	m, err := k.d.Compile(k.spec.BwdSource, k.spec.compileOptions(kd.BwdSourceFile))
	if err != nil {
		return nil, err
	}
	bk.module = m
	const defaultSharedLimit = 48 << 10
	for _, l := range all {
		if l.kern, err = m.Kernel(l.bind.entry.Name); err != nil {
			m.Close()
			return nil, err
		}
		if _, smem := bl.Entry(l.bind.entry.Name); l != bk.flags && l != bk.seg && l.bind.entry.SharedMem && smem > defaultSharedLimit {
			if err := l.kern.SetMaxDynamicSharedMemory(smem); err != nil {
				m.Close()
				return nil, err
			}
		}
	}
	k.bwd.kernels = bk
	return bk, nil
}

// scratchFor returns the backward scratch of a shape entry, allocating it
// on first use (dQ's accumulator only when a mode that adds dQ in the main
// kernel first needs it, byMain; the turn counters when the ordered dQ
// first does); the caller holds k.bwd.mu.
func (k *AttentionKernel) scratchFor(e *shapeEntry, byMain, ordered bool) (*bwdScratch, error) {
	sh := e.key.shape
	bk := k.bwd.kernels
	sc := k.bwd.scratch[e.key]
	if sc == nil {
		sc = &bwdScratch{}
		rows := int64(sh.B) * int64(sh.H) * int64(sh.Sq)
		var err error
		if sc.delta, err = k.d.Alloc(4 * rows); err != nil {
			return nil, errorf(CodeLaunch, err, "allocating %d bytes of backward delta", 4*rows)
		}
		for i, b := range k.spec.Kernel.Slots {
			if !b.Grad {
				continue
			}
			n, _ := e.dims[i].Elements() // the forward's shape check refused any other
			p, err := k.d.Alloc(8 * n)
			if err != nil {
				k.freeScratch(sc)
				return nil, errorf(CodeLaunch, err, "allocating %d bytes of gradient sums for buffer %s", 8*n, b.Name)
			}
			sc.acc[i], sc.n[i] = p, n
		}
		sc.grids = map[string]Dim3{}
		for _, l := range bk.order {
			sc.grids[l.bind.entry.Name] = gridOf(l.bind.entry, k.bwdSizes(sh, 0), k.bwdTiles())
		}
		if k.bwd.scratch == nil {
			k.bwd.scratch = map[shapeKey]*bwdScratch{}
		}
		k.bwd.scratch[e.key] = sc
	}
	if byMain && sc.dqAcc == 0 {
		n := 4 * int64(sh.B) * int64(sh.H) * int64(sh.Sq) * int64(k.spec.Kernel.HeadDim)
		p, err := k.d.Alloc(n)
		if err != nil {
			return nil, errorf(CodeLaunch, err, "allocating %d bytes of dQ accumulator", n)
		}
		sc.dqAcc = p
	}
	if ordered && sc.dqSem == 0 {
		n := 4 * int64(sh.B) * int64(sh.H) * ((int64(sh.Sq) + hipsrc.BwdSemRows - 1) / hipsrc.BwdSemRows)
		p, err := k.d.Alloc(n)
		if err != nil {
			return nil, errorf(CodeLaunch, err, "allocating %d bytes of dQ turn counters", n)
		}
		sc.dqSem = p
	}
	return sc, nil
}

// bwdSizes are the sizes the backward's grid rules read for a shape and a
// buffer of n elements.
func (k *AttentionKernel) bwdSizes(sh Shape, n int64) hipsrc.LaunchSizes {
	return hipsrc.LaunchSizes{B: sh.B, H: sh.H, HKV: sh.HKV, Sq: sh.Sq, Skv: sh.Skv, N: int(n)}
}

// bwdTiles are the tile values of the backward's grid rules: the
// descriptor's tiles and block size on the platform, the platform's
// row-pass rows.
func (k *AttentionKernel) bwdTiles() map[string]int {
	bl := k.bwd.kernels.launch
	return map[string]int{"bwd_block_m": bl.BlockM, "bwd_block_n": bl.BlockN, "bwd_pre_rows": k.spec.Platform.BwdPreRows(), "bwd_threads": bl.Threads}
}

func (k *AttentionKernel) freeScratch(sc *bwdScratch) error {
	var first error
	for _, p := range append([]DevicePtr{sc.delta, sc.dqAcc, sc.dqSem}, sc.acc[:]...) {
		if p != 0 {
			if err := k.d.Free(p); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// Backward enqueues the attention backward on stream s: given the
// forward's inputs (q, kk, v, buffers, shape: the same values as the
// Forward that produced o and lse) and g's incoming gradients, it writes
// dQ, dK, dV and the wanted buffer and sink gradients, for the loss
// sum(O * dO) + sum(LSE * dLSE). Deterministic mode adds dQ in a fixed
// order where the kernel can (its bwd_launch's DQOrdered), else computes it
// with a
// second kernel walking each q tile's kv tiles in order instead of fp32
// atomics: every output is then bitwise reproducible run to run (the
// buffer gradients are in either mode). The first call compiles the
// backward source (through the cache); each new (shape, stream) allocates
// its scratch once. Calls are serialised while they enqueue.
func (k *AttentionKernel) Backward(s Stream, q, kk, v, o, lse DevicePtr, shape Shape, buffers []DevicePtr, g Gradients, deterministic bool) error {
	if k.closed.Load() {
		return errorf(CodeLaunch, nil, "attention kernel used after Close")
	}
	if k.spec.BwdSource == "" {
		return errorf(CodeSpec, nil, "attention kernel %s was loaded without a backward source", k.spec.Kernel.SourceFile)
	}
	e, err := k.entry(shapeKey{shape: shape, stream: s})
	if err != nil {
		return err
	}
	if q == 0 || kk == 0 || v == 0 || o == 0 || lse == 0 {
		return errorf(CodeShape, nil, "null forward tensor pointer (q=%#x k=%#x v=%#x o=%#x lse=%#x)", q, kk, v, o, lse)
	}
	if g.DO == 0 || g.DQ == 0 || g.DK == 0 || g.DV == 0 {
		return errorf(CodeShape, nil, "null gradient pointer (dO=%#x dQ=%#x dK=%#x dV=%#x); only dLSE, buffer and sink gradients are optional", g.DO, g.DQ, g.DK, g.DV)
	}
	slots := k.spec.Kernel.Slots
	if len(buffers) != len(slots) {
		return errorf(CodeBuffers, nil, "%d captured buffers passed, the kernel reads %d", len(buffers), len(slots))
	}
	for i, b := range buffers {
		if b == 0 {
			return errorf(CodeBuffers, nil, "captured buffer %d (%s) is a null pointer", i, slots[i].Name)
		}
	}
	if len(g.DBufs) != 0 && len(g.DBufs) != len(slots) {
		return errorf(CodeBuffers, nil, "%d buffer gradients passed: give none, or one per buffer slot (%d, 0 where not wanted)", len(g.DBufs), len(slots))
	}
	for i, p := range g.DBufs {
		if p != 0 && !slots[i].Grad {
			return errorf(CodeBuffers, nil, "buffer %s has no gradient: the score does not read it differentiably (an index, an integer or the mask's); pass 0 for its slot", slots[i].Name)
		}
	}
	if g.DSink != 0 && shape.Sink == 0 {
		return errorf(CodeBuffers, nil, "a sink gradient was asked for, but the shape has no sink")
	}

	k.bwd.mu.Lock()
	defer k.bwd.mu.Unlock()
	bk, err := k.loadBackward()
	if err != nil {
		return err
	}
	byMain := bk.launch.DQByMain(deterministic) // dQ added into dq_acc by maskc_attn_bwd(_ordered)
	ordered := bk.launch.Ordered(deterministic)
	sc, err := k.scratchFor(e, byMain, ordered)
	if err != nil {
		return err
	}
	a := k.bwd.args
	a.q, a.k, a.v, a.o, a.do, a.dQ, a.dK, a.dV = uintptr(q), uintptr(kk), uintptr(v), uintptr(o), uintptr(g.DO), uintptr(g.DQ), uintptr(g.DK), uintptr(g.DV)
	a.fsh = e.shape
	a.buf.Dim = e.dims
	a.buf.Status = uintptr(e.status)
	a.buf.Ptr = [MaxBuffers]uintptr{}
	for i, b := range buffers {
		a.buf.Ptr[i] = uintptr(b)
	}
	fs := e.shape
	a.sh = cBwdShape{
		B: fs.B, H: fs.H, HKV: fs.HKV, Sq: fs.Sq, Skv: fs.Skv,
		QStride: fs.QStride, KStride: fs.KStride, VStride: fs.VStride, OStride: fs.OStride,
		DOStride: fs.OStride, DQStride: fs.QStride, DKStride: fs.KStride, DVStride: fs.VStride,
		Scale: fs.Scale, Sink: fs.Sink, TileFlags: fs.TileFlags, LSE: uintptr(lse), DLSE: uintptr(g.DLSE),
		Delta: uintptr(sc.delta), DSink: uintptr(g.DSink),
	}
	if byMain {
		a.sh.DQAcc = uintptr(sc.dqAcc)
	}
	if ordered {
		a.sh.DQSem = uintptr(sc.dqSem)
	}
	for i, p := range g.DBufs {
		if p != 0 {
			a.sh.DBuf[i] = uintptr(sc.acc[i])
		}
	}
	k.fillMaps(&a.maps, &e.bwdMaps, &e.bwdMapsRefused, q, kk, v, g.DO)
	launch := func(l *bwdCall, grid, block Dim3, shared int) error {
		if !l.bind.entry.SharedMem {
			shared = 0
		}
		if err := k.d.Launch(l.kern.fn, grid, block, uint32(shared), s, unsafe.Pointer(&l.params[0])); err != nil {
			return errorf(CodeLaunch, err, "launching %s with grid %v block %v", l.kern.Name, grid, block)
		}
		return nil
	}
	// A backward entry's launch: its block size and shared memory from the
	// descriptor's launch configuration (hipsrc.BwdLaunchConfig.Entry).
	launchEntry := func(l *bwdCall, grid Dim3) error {
		threads, shared := bk.launch.Entry(l.bind.entry.Name)
		return launch(l, grid, Dim3{X: uint32(threads), Y: 1, Z: 1}, shared)
	}
	for i, p := range g.DBufs {
		if p != 0 {
			if err := k.d.MemsetAsync(sc.acc[i], 0, 8*sc.n[i], s); err != nil {
				return errorf(CodeLaunch, err, "zeroing the gradient sums of buffer %s", slots[i].Name)
			}
		}
	}
	if bk.seg != nil {
		// The segments check first (the forward's block size and grid),
		// held with the launches that read its words.
		e.launch.Lock()
		defer e.launch.Unlock()
		if err := launch(bk.seg, e.segGrid, k.block, 0); err != nil {
			return err
		}
	}
	// The descriptor's backward entries in launch order, each when its
	// When (hipsrc.BwdEntries) says; the forward's tile-flag pre-pass
	// right after the row pre-pass (MANIFEST.md, "Launching the backward").
	for _, l := range bk.order {
		en := l.bind.entry
		switch en.When {
		case "always":
		case "unordered", "ordered":
			if ordered != (en.When == "ordered") {
				continue
			}
		case "deterministic", "atomic":
			if byMain != (en.When == "atomic") {
				continue
			}
		case "sink":
			if g.DSink == 0 {
				continue
			}
		case "grad":
			for i, p := range g.DBufs {
				if p == 0 {
					continue
				}
				a.acc, a.out, a.n = uintptr(sc.acc[i]), uintptr(p), sc.n[i]
				if err := launchEntry(l, gridOf(en, k.bwdSizes(e.key.shape, sc.n[i]), k.bwdTiles())); err != nil {
					return err
				}
			}
			continue
		default:
			return errorf(CodeSpec, nil, "backward entry %s runs %q, which this runtime does not know", en.Name, en.When)
		}
		if err := launchEntry(l, sc.grids[en.Name]); err != nil {
			return err
		}
		if en.Name == hipsrc.BwdPreEntry && bk.flags != nil {
			// The forward's flag buffer of this (shape, stream), rewritten so
			// that a backward on another stream than its forward sees flags.
			a.flagsPtr = uintptr(e.flags)
			if err := launch(bk.flags, e.flagsGrid, k.block, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeBackward frees the backward scratch and unloads its module; the
// caller holds k.mu.
func (k *AttentionKernel) closeBackward() error {
	k.bwd.mu.Lock()
	defer k.bwd.mu.Unlock()
	var first error
	for _, sc := range k.bwd.scratch {
		if err := k.freeScratch(sc); err != nil && first == nil {
			first = err
		}
	}
	k.bwd.scratch = nil
	if k.bwd.kernels != nil {
		if err := k.bwd.kernels.module.Close(); err != nil && first == nil {
			first = err
		}
		k.bwd.kernels = nil
	}
	return first
}
