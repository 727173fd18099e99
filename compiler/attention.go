package compiler

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/codegen"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/runtime"
)

// Sizes are one forward call's problem sizes.
type Sizes struct {
	// B is the batch, H the query heads, HKV the key/value heads (0: as
	// the block's kv_heads setting, else H), Sq the query and Skv the
	// key/value length.
	B, H, HKV, Sq, Skv int
}

// Attention is one attention block's generated kernel loaded on a device,
// with its captured buffers bound by name. Bind before launching: Bind is
// not safe concurrently with Forward and Backward; both are safe for
// concurrent use.
type Attention struct {
	// Name is the attention block's name.
	Name string
	// Decision is the block's plan.
	Decision *classify.Decision
	// Kernel is the generated kernel.
	Kernel *codegen.Kernel

	launcher *runtime.AttentionKernel
	layout   runtime.Layout
	names    []string // bindable buffers: kernel slots, then the sink
	buffers  []runtime.DevicePtr
	sink     runtime.DevicePtr
	sinkName string
	unbound  int
}

// Load generates (if not yet done) the kernel of attention block name,
// compiles it for d through d's kernel cache, and loads it. The error is the
// code generator's dsl.Diagnostics or a *runtime.Error.
func (u *Unit) Load(d *runtime.Device, name string) (*Attention, error) {
	k, kd := u.Kernel(name)
	if kd.HasErrors() {
		return nil, kd.Errors()
	}
	spec, err := KernelSpec(u.Program, k, d.Info().Backend, d.Info().Arch)
	if err != nil {
		return nil, err
	}
	l, err := d.NewAttention(spec)
	if err != nil {
		return nil, err
	}
	a := &Attention{Name: name, Decision: u.Decision(name), Kernel: k, launcher: l, layout: runtime.BSHD}
	if k.Layout == hipsrc.LayoutBHSD {
		a.layout = runtime.BHSD
	}
	for _, b := range k.Buffers {
		a.names = append(a.names, b.Name)
	}
	a.buffers = make([]runtime.DevicePtr, len(k.Buffers))
	if s := u.Program.Attention(name).Sink; s != nil {
		a.sinkName = s.Name
		a.names = append(a.names, s.Name)
	}
	a.unbound = len(a.names)
	return a, nil
}

// Buffers names the device buffers Forward reads besides Q, K, V, O and
// LSE, each to be given with Bind: the captured buffers in the kernel's
// slot order, then the block's sink (f32[H]) if it has one.
func (a *Attention) Buffers() []string { return append([]string(nil), a.names...) }

// Bind sets the device pointer of the buffer the .flex file names name.
// The buffer must hold the declared element type and extents for every
// Sizes it is launched with; the kernel checks indices against those
// extents.
func (a *Attention) Bind(name string, p runtime.DevicePtr) error {
	if p == 0 {
		return &runtime.Error{Code: runtime.CodeBuffers, Msg: fmt.Sprintf("attention %s: buffer %s bound to a null pointer", a.Name, name)}
	}
	slot := -1
	for i, n := range a.names {
		if n == name {
			slot = i
		}
	}
	var old *runtime.DevicePtr
	switch {
	case slot < 0:
		return &runtime.Error{Code: runtime.CodeBuffers, Msg: fmt.Sprintf("attention %s reads no buffer %s (it reads %v)", a.Name, name, a.names)}
	case slot < len(a.buffers):
		old = &a.buffers[slot]
	default:
		old = &a.sink
	}
	if *old == 0 {
		a.unbound--
	}
	*old = p
	return nil
}

// Shape returns the launch shape for dense tensors in the kernel's layout
// (Q and O [B, Sq, H, D] for bshd, [B, H, Sq, D] for bhsd; K and V the same
// with HKV heads and Skv positions), with the block's scale and the bound
// sink. It allocates nothing.
func (a *Attention) Shape(sz Sizes) runtime.Shape {
	hkv := sz.HKV
	if hkv == 0 {
		hkv = a.Kernel.KVHeads
	}
	if hkv == 0 {
		hkv = sz.H
	}
	s := runtime.ContiguousShape(a.layout, sz.B, sz.H, hkv, sz.Sq, sz.Skv, a.Kernel.HeadDim)
	s.Scale = float32(a.Kernel.Scale)
	s.Sink = a.sink
	return s
}

// Forward enqueues the attention forward on stream s for dense tensors in
// the kernel's layout (see Shape): O = softmax(mask and score of Q·Kᵀ)·V,
// and the natural-log LSE as fp32 [B, H, Sq]. Every buffer of Buffers must
// be bound.
func (a *Attention) Forward(s runtime.Stream, q, k, v, o, lse runtime.DevicePtr, sz Sizes) error {
	return a.ForwardShape(s, q, k, v, o, lse, a.Shape(sz))
}

// ForwardShape is Forward for tensors with arbitrary strides; shape.Sink
// is replaced by the bound sink.
func (a *Attention) ForwardShape(s runtime.Stream, q, k, v, o, lse runtime.DevicePtr, shape runtime.Shape) error {
	if a.unbound != 0 {
		return a.unboundError()
	}
	shape.Sink = a.sink
	return a.launcher.Forward(s, q, k, v, o, lse, shape, a.buffers)
}

func (a *Attention) unboundError() error {
	var missing []string
	for i, n := range a.names {
		if i < len(a.buffers) && a.buffers[i] == 0 || i == len(a.buffers) && a.sink == 0 {
			missing = append(missing, n)
		}
	}
	return &runtime.Error{Code: runtime.CodeBuffers, Msg: fmt.Sprintf("attention %s: buffers %v are not bound (use Bind)", a.Name, missing)}
}

// GradBuffers names the gradients Backward can write besides dQ, dK and
// dV, in the order of its dbufs: the buffers the score reads
// differentiably (float buffers whose reads carry a derivative), in slot
// order, then the block's sink if it has one. Each gradient is fp32 with
// its buffer's extents.
func (a *Attention) GradBuffers() []string {
	var out []string
	for _, b := range a.Kernel.GradBuffers {
		out = append(out, b.Name)
	}
	if a.sinkName != "" {
		out = append(out, a.sinkName)
	}
	return out
}

// Backward enqueues the attention backward on stream s for dense tensors
// in the kernel's layout (see Shape): q, k, v, o and lse are the inputs and
// outputs of the Forward being differentiated (same sizes, same bound
// buffers), dO the gradient of O (laid out like O) and dLSE, optional (0
// for none), the gradient of the LSE (fp32 [B, H, Sq]); dq, dk and dv
// receive the gradients of Q, K and V (laid out like them, in the element
// type). dbufs, in the order of GradBuffers, receive the buffer and sink
// gradients (fp32, 0 where one is not wanted); nil when none is wanted or
// the block has none. With deterministic every output is bitwise
// reproducible run to run (dQ without float atomics); otherwise dQ is
// summed with fp32 atomics (faster). The first call compiles the backward
// kernels.
func (a *Attention) Backward(s runtime.Stream, dO, q, k, v, o, lse, dLSE, dq, dk, dv runtime.DevicePtr, dbufs []runtime.DevicePtr, sz Sizes, deterministic bool) error {
	return a.BackwardShape(s, dO, q, k, v, o, lse, dLSE, dq, dk, dv, dbufs, a.Shape(sz), deterministic)
}

// BackwardShape is Backward for tensors with arbitrary strides (dO, dQ, dK
// and dV take O's, Q's, K's and V's); shape.Sink is replaced by the bound
// sink.
func (a *Attention) BackwardShape(s runtime.Stream, dO, q, k, v, o, lse, dLSE, dq, dk, dv runtime.DevicePtr, dbufs []runtime.DevicePtr, shape runtime.Shape, deterministic bool) error {
	if a.unbound != 0 {
		return a.unboundError()
	}
	names := a.GradBuffers()
	if len(dbufs) != 0 && len(dbufs) != len(names) {
		want := "none: the score reads no buffer differentiably and there is no sink"
		if len(names) > 0 {
			want = fmt.Sprintf("%d (%s) or none", len(names), strings.Join(names, ", "))
		}
		return &runtime.Error{Code: runtime.CodeBuffers, Msg: fmt.Sprintf("attention %s: %d gradient buffers passed, want %s", a.Name, len(dbufs), want)}
	}
	g := runtime.Gradients{DO: dO, DLSE: dLSE, DQ: dq, DK: dk, DV: dv}
	if len(dbufs) != 0 {
		g.DBufs = make([]runtime.DevicePtr, len(a.buffers))
		for i, b := range a.Kernel.GradBuffers {
			g.DBufs[b.Slot] = dbufs[i]
		}
		if a.sinkName != "" {
			g.DSink = dbufs[len(dbufs)-1]
		}
	}
	shape.Sink = a.sink
	return a.launcher.Backward(s, q, k, v, o, lse, shape, a.buffers, g, deterministic)
}

// CompileStats says whether the kernel was compiled or loaded from the
// cache, and how long each took.
func (a *Attention) CompileStats() runtime.CompileStats { return a.launcher.CompileStats() }

// Launcher is the underlying runtime launcher.
func (a *Attention) Launcher() *runtime.AttentionKernel { return a.launcher }

// Close unloads the kernel; no Forward may be running or follow.
func (a *Attention) Close() error { return a.launcher.Close() }
