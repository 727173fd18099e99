package runtime

import (
	"structs"
	"sync"
	"unsafe"

	goruntime "runtime"

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
	Delta, DQAcc, DSink                uintptr
	DBuf                               [MaxBuffers]uintptr
}

// BackwardSpec is the backward half of an AttentionSpec: its source and
// launch. The tiles and shared memory are hipsrc's for the platform and
// head dim (hipsrc.BwdLaunchOn); the block size and row-pass rows depend on
// the platform (hipsrc.Platform.BwdThreads, BwdPreRows).
type BackwardSpec struct {
	// Source is the complete backward source: the forward's source
	// followed by the backward kernels (codegen.Kernel.BwdSource).
	Source string
	// Name is its file name in compiler logs, e.g. "causal.bwd.cu".
	Name string
	// Threads is MASKC_BWD_THREADS, PreRows MASKC_BWD_PRE_ROWS.
	Threads, PreRows int
	// BlockM and BlockN are MASKC_BWD_BLOCK_M and MASKC_BWD_BLOCK_N.
	BlockM, BlockN int
	// SharedBytes is the dynamic shared memory of maskc_attn_bwd and
	// maskc_attn_bwd_dq.
	SharedBytes int
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
	// whose BufferSpec.Grad is set may be non-zero. Empty: none wanted.
	DBufs []DevicePtr
	// DSink receives the sink gradient, fp32 [H], when not 0 (the shape
	// must have a sink).
	DSink DevicePtr
}

// bwdKernels are the backward module and its entry points, loaded on the
// first Backward.
type bwdKernels struct {
	module                             *Module
	pre, main, dq, convert, sink, bufc *Kernel
	flags                              *Kernel // nil unless PREPASS
	seg                                *Kernel // nil unless the spec's SegCheck
	block                              Dim3
}

// bwdScratch is the per-(shape, stream) device scratch of the backward:
// delta, dQ's fp32 accumulator (atomic mode, made on first use) and the
// fixed-point sums of each differentiable buffer.
type bwdScratch struct {
	delta, dqAcc DevicePtr
	acc          [MaxBuffers]DevicePtr
	n            [MaxBuffers]int64
	preGrid      Dim3
	mainGrid     Dim3
	dqGrid       Dim3
	sinkGrid     Dim3
}

// bwdArgs is the pinned argument block of the backward launches.
type bwdArgs struct {
	pre     [3]unsafe.Pointer // O, dO, shape
	main    [8]unsafe.Pointer // Q, K, V, dO, dK, dV, shape, buf
	dq      [7]unsafe.Pointer // Q, K, V, dO, dQ, shape, buf
	convert [2]unsafe.Pointer // dQ, shape
	sink    [1]unsafe.Pointer // shape
	bufc    [3]unsafe.Pointer // acc, out, n
	flags   [3]unsafe.Pointer // forward shape, buf, flags
	seg     [1]unsafe.Pointer // buf

	q, k, v, o, do, dQ, dK, dV uintptr
	acc, out                   uintptr
	n                          int64
	flagsPtr                   uintptr
	sh                         cBwdShape
	fsh                        cShape
	buf                        cBuffers
}

func newBwdArgs(p *goruntime.Pinner) *bwdArgs {
	a := new(bwdArgs)
	a.pre = [3]unsafe.Pointer{unsafe.Pointer(&a.o), unsafe.Pointer(&a.do), unsafe.Pointer(&a.sh)}
	a.main = [8]unsafe.Pointer{unsafe.Pointer(&a.q), unsafe.Pointer(&a.k), unsafe.Pointer(&a.v), unsafe.Pointer(&a.do), unsafe.Pointer(&a.dK), unsafe.Pointer(&a.dV), unsafe.Pointer(&a.sh), unsafe.Pointer(&a.buf)}
	a.dq = [7]unsafe.Pointer{unsafe.Pointer(&a.q), unsafe.Pointer(&a.k), unsafe.Pointer(&a.v), unsafe.Pointer(&a.do), unsafe.Pointer(&a.dQ), unsafe.Pointer(&a.sh), unsafe.Pointer(&a.buf)}
	a.convert = [2]unsafe.Pointer{unsafe.Pointer(&a.dQ), unsafe.Pointer(&a.sh)}
	a.sink = [1]unsafe.Pointer{unsafe.Pointer(&a.sh)}
	a.bufc = [3]unsafe.Pointer{unsafe.Pointer(&a.acc), unsafe.Pointer(&a.out), unsafe.Pointer(&a.n)}
	a.flags = [3]unsafe.Pointer{unsafe.Pointer(&a.fsh), unsafe.Pointer(&a.buf), unsafe.Pointer(&a.flagsPtr)}
	a.seg = [1]unsafe.Pointer{unsafe.Pointer(&a.buf)}
	p.Pin(a)
	return a
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
func (k *AttentionKernel) HasBackward() bool { return k.spec.Backward != nil }

// loadBackward compiles (through the cache) and loads the backward module
// on first use; the caller holds k.bwd.mu.
func (k *AttentionKernel) loadBackward() (*bwdKernels, error) {
	if k.bwd.kernels != nil {
		return k.bwd.kernels, nil
	}
	bs := k.spec.Backward
	m, err := k.d.Compile(bs.Source, CompileOptions{Name: bs.Name, Flex: k.spec.Flex, Options: k.spec.CompileOptions, Arch: k.spec.Arch})
	if err != nil {
		return nil, err
	}
	bk := &bwdKernels{module: m, block: Dim3{X: uint32(bs.Threads), Y: 1, Z: 1}}
	for _, e := range []struct {
		name string
		dst  **Kernel
	}{
		{hipsrc.BwdPreEntry, &bk.pre}, {hipsrc.BwdMainEntry, &bk.main}, {hipsrc.BwdDQEntry, &bk.dq},
		{hipsrc.BwdDQConvertEntry, &bk.convert}, {hipsrc.BwdSinkEntry, &bk.sink}, {hipsrc.BwdBufConvertEntry, &bk.bufc},
	} {
		if *e.dst, err = m.Kernel(e.name); err != nil {
			m.Close()
			return nil, err
		}
	}
	if k.spec.Sparsity == SparsityPrepass {
		if bk.flags, err = m.Kernel(TileFlagsEntry); err != nil {
			m.Close()
			return nil, err
		}
	}
	if k.spec.SegCheck {
		if bk.seg, err = m.Kernel(SegCheckEntry); err != nil {
			m.Close()
			return nil, err
		}
	}
	const defaultSharedLimit = 48 << 10
	if bs.SharedBytes > defaultSharedLimit {
		for _, kk := range []*Kernel{bk.main, bk.dq} {
			if err := kk.SetMaxDynamicSharedMemory(bs.SharedBytes); err != nil {
				m.Close()
				return nil, err
			}
		}
	}
	k.bwd.kernels = bk
	if k.bwd.args == nil {
		k.bwd.args = newBwdArgs(k.pins)
	}
	return bk, nil
}

// scratchFor returns the backward scratch of a shape entry, allocating it
// on first use (dQ's accumulator only when atomic mode first needs it);
// the caller holds k.bwd.mu.
func (k *AttentionKernel) scratchFor(e *shapeEntry, atomic bool) (*bwdScratch, error) {
	sh := e.key.shape
	bs := k.spec.Backward
	sc := k.bwd.scratch[e.key]
	if sc == nil {
		sc = &bwdScratch{}
		rows := int64(sh.B) * int64(sh.H) * int64(sh.Sq)
		var err error
		if sc.delta, err = k.d.Alloc(4 * rows); err != nil {
			return nil, errorf(CodeLaunch, err, "allocating %d bytes of backward delta", 4*rows)
		}
		for i, b := range k.spec.Buffers {
			if !b.Grad {
				continue
			}
			n := e.dims[i][0] * e.dims[i][1]
			p, err := k.d.Alloc(8 * n)
			if err != nil {
				k.freeScratch(sc)
				return nil, errorf(CodeLaunch, err, "allocating %d bytes of gradient sums for buffer %s", 8*n, b.Name)
			}
			sc.acc[i], sc.n[i] = p, n
		}
		tiles := map[string]int{"bwd_block_m": bs.BlockM, "bwd_block_n": bs.BlockN, "bwd_pre_rows": bs.PreRows, "bwd_threads": bs.Threads}
		sz := hipsrc.LaunchSizes{B: sh.B, H: sh.H, HKV: sh.HKV, Sq: sh.Sq, Skv: sh.Skv}
		grid := func(name string) Dim3 {
			en, _ := hipsrc.BwdEntry(name)
			g := en.EvalWith(sz, tiles)
			return Dim3{X: uint32(g[0]), Y: uint32(g[1]), Z: uint32(g[2])}
		}
		sc.preGrid, sc.mainGrid, sc.dqGrid, sc.sinkGrid = grid(hipsrc.BwdPreEntry), grid(hipsrc.BwdMainEntry), grid(hipsrc.BwdDQEntry), grid(hipsrc.BwdSinkEntry)
		if k.bwd.scratch == nil {
			k.bwd.scratch = map[shapeKey]*bwdScratch{}
		}
		k.bwd.scratch[e.key] = sc
	}
	if atomic && sc.dqAcc == 0 {
		n := 4 * int64(sh.B) * int64(sh.H) * int64(sh.Sq) * int64(k.spec.HeadDim)
		p, err := k.d.Alloc(n)
		if err != nil {
			return nil, errorf(CodeLaunch, err, "allocating %d bytes of dQ accumulator", n)
		}
		sc.dqAcc = p
	}
	return sc, nil
}

func (k *AttentionKernel) freeScratch(sc *bwdScratch) error {
	var first error
	for _, p := range append([]DevicePtr{sc.delta, sc.dqAcc}, sc.acc[:]...) {
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
// sum(O * dO) + sum(LSE * dLSE). Deterministic mode computes dQ with a
// second kernel walking each q tile's kv tiles in order instead of fp32
// atomics: every output is then bitwise reproducible run to run (the
// buffer gradients are in either mode). The first call compiles the
// backward source (through the cache); each new (shape, stream) allocates
// its scratch once. Calls are serialised while they enqueue.
func (k *AttentionKernel) Backward(s Stream, q, kk, v, o, lse DevicePtr, shape Shape, buffers []DevicePtr, g Gradients, deterministic bool) error {
	if k.closed.Load() {
		return errorf(CodeLaunch, nil, "attention kernel used after Close")
	}
	if k.spec.Backward == nil {
		return errorf(CodeSpec, nil, "attention kernel %s was loaded without a backward source", k.spec.Name)
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
	if len(buffers) != len(k.spec.Buffers) {
		return errorf(CodeBuffers, nil, "%d captured buffers passed, the kernel reads %d", len(buffers), len(k.spec.Buffers))
	}
	for i, b := range buffers {
		if b == 0 {
			return errorf(CodeBuffers, nil, "captured buffer %d (%s) is a null pointer", i, k.spec.Buffers[i].Name)
		}
	}
	if len(g.DBufs) != 0 && len(g.DBufs) != len(k.spec.Buffers) {
		return errorf(CodeBuffers, nil, "%d buffer gradients passed: give none, or one per buffer slot (%d, 0 where not wanted)", len(g.DBufs), len(k.spec.Buffers))
	}
	for i, p := range g.DBufs {
		if p != 0 && !k.spec.Buffers[i].Grad {
			return errorf(CodeBuffers, nil, "buffer %s has no gradient: the score does not read it differentiably (an index, an integer or the mask's); pass 0 for its slot", k.spec.Buffers[i].Name)
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
	sc, err := k.scratchFor(e, !deterministic)
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
	if !deterministic {
		a.sh.DQAcc = uintptr(sc.dqAcc)
	}
	for i, p := range g.DBufs {
		if p != 0 {
			a.sh.DBuf[i] = uintptr(sc.acc[i])
		}
	}
	launch := func(kern *Kernel, grid Dim3, shared int, params unsafe.Pointer) error {
		if err := k.d.Launch(kern.fn, grid, bk.block, uint32(shared), s, params); err != nil {
			return errorf(CodeLaunch, err, "launching %s with grid %v block %v", kern.Name, grid, bk.block)
		}
		return nil
	}
	for i, p := range g.DBufs {
		if p != 0 {
			if err := k.d.MemsetAsync(sc.acc[i], 0, 8*sc.n[i], s); err != nil {
				return errorf(CodeLaunch, err, "zeroing the gradient sums of buffer %s", k.spec.Buffers[i].Name)
			}
		}
	}
	if bk.seg != nil {
		// The segments check first (the forward's block size), held with
		// the launches that read its words.
		e.launch.Lock()
		defer e.launch.Unlock()
		if err := k.d.Launch(bk.seg.fn, Dim3{X: 1, Y: 1, Z: 1}, k.block, 0, s, unsafe.Pointer(&a.seg[0])); err != nil {
			return errorf(CodeLaunch, err, "launching %s", SegCheckEntry)
		}
	}
	if err := launch(bk.pre, sc.preGrid, 0, unsafe.Pointer(&a.pre[0])); err != nil {
		return err
	}
	if bk.flags != nil {
		// The forward's flag buffer of this (shape, stream), rewritten so
		// that a backward on another stream than its forward sees flags.
		a.flagsPtr = uintptr(e.flags)
		if err := k.d.Launch(bk.flags.fn, e.flagsGrid, k.block, 0, s, unsafe.Pointer(&a.flags[0])); err != nil {
			return errorf(CodeLaunch, err, "launching %s with grid %v", TileFlagsEntry, e.flagsGrid)
		}
	}
	bs := k.spec.Backward
	if err := launch(bk.main, sc.mainGrid, bs.SharedBytes, unsafe.Pointer(&a.main[0])); err != nil {
		return err
	}
	if deterministic {
		err = launch(bk.dq, sc.dqGrid, bs.SharedBytes, unsafe.Pointer(&a.dq[0]))
	} else {
		err = launch(bk.convert, sc.preGrid, 0, unsafe.Pointer(&a.convert[0]))
	}
	if err != nil {
		return err
	}
	if g.DSink != 0 {
		if err := launch(bk.sink, sc.sinkGrid, 0, unsafe.Pointer(&a.sink[0])); err != nil {
			return err
		}
	}
	for i, p := range g.DBufs {
		if p == 0 {
			continue
		}
		a.acc, a.out, a.n = uintptr(sc.acc[i]), uintptr(p), sc.n[i]
		grid := Dim3{X: uint32((sc.n[i] + int64(bs.Threads) - 1) / int64(bs.Threads)), Y: 1, Z: 1}
		if err := launch(bk.bufc, grid, 0, unsafe.Pointer(&a.bufc[0])); err != nil {
			return err
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
