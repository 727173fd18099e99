package eval

import (
	"fmt"
	"math"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/hipsrc"
)

// index compiles a buffer read `buf[i, j]`. Every index is bounds-checked
// against the bound tensor's extent: an index outside [0, extent) is an
// ErrIndexOutOfRange error naming the buffer, the index and the dimension,
// never a wrapped-around or out-of-bounds read.
func (c *compiler) index(x *dsl.IndexExpr) (node, error) {
	id, ok := x.X.(*dsl.Ident)
	if !ok {
		return node{}, c.errorf(x.Sp, "only a declared buffer can be indexed")
	}
	k, ok := c.slots[id.Name]
	if !ok {
		return node{}, c.errorf(id.Sp, "%s is not a buffer of this mod (missing from Lowered.Buffers)", id.Name)
	}
	slot := c.fn.buffers[k]
	if len(x.Indices) != len(slot.decl.Dims) {
		return node{}, c.errorf(x.Sp, "buffer %s has %d dimension(s), indexed with %d", id.Name, len(slot.decl.Dims), len(x.Indices))
	}
	idx := make([]func(*frame) int64, len(x.Indices))
	var first node
	for i, e := range x.Indices {
		n, err := c.compile(e)
		if err != nil {
			return node{}, err
		}
		if n.t != dsl.TypeInt {
			return node{}, c.errorf(e.Span(), "a buffer index must be int, not %s", n.t)
		}
		idx[i], first = n.i, n
	}
	name, sp := id.Name, x.Sp
	switch slot.elem {
	case dsl.TypeInt:
		r := intRange{Interval: dsl.Interval{Lo: -1 << 53, Hi: 1 << 53}} // what float64 holds exactly
		if slot.decl.DType != nil {
			if lo, hi, ok := buftype.IntRange(slot.decl.DType.Name); ok && hi < r.Hi {
				r = intRange{dsl.Interval{Lo: lo, Hi: hi}, slot.decl.DType.Name}
			}
		}
		return intNode(readInt(name, k, sp, idx, first, r)), nil
	case dsl.TypeBool:
		read := readRaw(name, k, sp, idx)
		return boolNode(func(f *frame) bool {
			v := read(f)
			if v != 0 && v != 1 {
				f.fail(sp, ErrBadBuffer, "bool buffer %s holds %v, not 0 or 1", name, v)
			}
			return v == 1
		}), nil
	}
	return floatNode(readRaw(name, k, sp, idx)), nil
}

// intRange is the values an int buffer's elements may take: its dtype's
// range within what float64 holds exactly.
type intRange struct {
	dsl.Interval
	dtype string
}

// readInt returns the closure reading element idx of bound int buffer k.
func readInt(name string, k int, sp dsl.Span, idx []func(*frame) int64, first node, r intRange) func(*frame) int64 {
	if len(idx) == 1 && first.isIndex {
		v := first.index // doc[q]: one closure for the commonest read
		return func(f *frame) int64 {
			data := f.bufs[k].Data
			i := f.ix[v]
			if uint64(i) >= uint64(len(data)) {
				outOfRange(f, sp, name, i, 0, len(data))
				return 0
			}
			return elemInt(f, data[i], sp, name, r)
		}
	}
	read := readRaw(name, k, sp, idx)
	return func(f *frame) int64 { return elemInt(f, read(f), sp, name, r) }
}

// elemInt converts an element of an int buffer, failing on a value that is
// not an integer in r (an i32 buffer holding 2**31 would wrap in a kernel).
func elemInt(f *frame, v float64, sp dsl.Span, name string, r intRange) int64 {
	if v != math.Trunc(v) || v < float64(r.Lo) || v > float64(r.Hi) {
		if v == math.Trunc(v) && r.dtype != "" {
			f.fail(sp, ErrBadBuffer, "buffer %s holds %v, outside the range of %s", name, v, r.dtype)
		} else {
			f.fail(sp, ErrBadBuffer, "buffer %s holds %v, not an integer", name, v)
		}
		return 0
	}
	return int64(v)
}

func outOfRange(f *frame, sp dsl.Span, name string, i int64, d, n int) {
	if f.guarded {
		return // the read yields 0, as a kernel's guarded read does
	}
	f.fail(sp, ErrIndexOutOfRange, "buffer %s: index %d outside [0, %d) in dimension %d", name, i, n, d)
}

// offset returns the closure computing the row-major offset of element idx
// of bound buffer k, bounds-checking every index.
func offset(name string, k int, sp dsl.Span, idx []func(*frame) int64) func(*frame) (int, bool) {
	if len(idx) == 1 {
		ix := idx[0]
		return func(f *frame) (int, bool) {
			i, n := ix(f), f.bufs[k].Dims[0]
			if uint64(i) >= uint64(n) {
				outOfRange(f, sp, name, i, 0, n)
				return 0, false
			}
			return int(i), true
		}
	}
	return func(f *frame) (int, bool) {
		dims := f.bufs[k].Dims
		o := 0
		for d, ix := range idx {
			i, n := ix(f), dims[d]
			if uint64(i) >= uint64(n) {
				outOfRange(f, sp, name, i, d, n)
				return 0, false
			}
			o = o*n + int(i)
		}
		return o, true
	}
}

// readRaw returns the closure reading element idx of bound buffer k.
func readRaw(name string, k int, sp dsl.Span, idx []func(*frame) int64) func(*frame) float64 {
	off := offset(name, k, sp, idx)
	return func(f *frame) float64 {
		o, ok := off(f)
		if !ok {
			return 0
		}
		return f.bufs[k].Data[o]
	}
}

// bindBuffers looks up every buffer fn reads in env and checks its shape:
// present, as many dimensions as declared, each declared extent that is a
// constant or an expression in the size symbols equal to the tensor's, and
// exactly as many elements as the extents call for. It costs nothing per
// element, so Func.Mask stays cheap; an element its dtype cannot hold (a
// fraction in an i32 buffer, 2 in a bool buffer) is an error when read.
func (fn *Func) bindBuffers(env *Env, fr *frame) error {
	fr.bufs = make([]*Tensor, len(fn.buffers))
	for k, s := range fn.buffers {
		name := s.decl.Name.Name
		t := env.Buffers[name]
		if t == nil {
			return fn.bufErr(s, "buffer %s is not given", name)
		}
		if err := t.Validate(); err != nil {
			return fn.bufErr(s, "buffer %s: %v", name, err)
		}
		if s.decl.Property != nil && s.decl.Property.Name == "segments" && s.decl.DType != nil {
			if err := dsl.CheckSegmentIDs(t.Data, s.decl.DType.Name); err != nil {
				return fn.bufErr(s, "segments buffer %s: %v", name, err)
			}
			// Ids out of order are evaluated as written (as the kernel
			// computes them); the broken promise is a note.
			row := 0
			if len(t.Dims) > 0 {
				row = t.Dims[len(t.Dims)-1]
			}
			if i := dsl.FirstDecrease(t.Data, row); i >= 0 {
				fr.notes = append(fr.notes, fmt.Sprintf("segments buffer %s is not sorted: element %d (%g) is smaller than element %d (%g); the mask is evaluated as written (document ids compared as given)", name, i, t.Data[i], i-1, t.Data[i-1]))
			}
		}
		if len(t.Dims) != len(s.decl.Dims) {
			return fn.bufErr(s, "buffer %s is declared with %d dimension(s), the tensor has %d", name, len(s.decl.Dims), len(t.Dims))
		}
		for d := range s.decl.Dims {
			if want, ok := dimValue(s.decl, d, fr.sizes); ok && want != int64(t.Dims[d]) {
				return fn.bufErr(s, "buffer %s: dimension %d is declared %d for these sizes, the tensor has %d", name, d, want, t.Dims[d])
			}
		}
		fr.bufs[k] = t
	}
	return nil
}

func (fn *Func) bufErr(s *bufferSlot, format string, args ...any) *Error {
	f := &frame{}
	f.fail(s.decl.Sp, ErrBadBuffer, format, args...)
	f.err.Mod = fn.kind.String() + " " + fn.name
	return f.err
}

// dimValue is extent d of decl at sizes, as every consumer of a buffer's
// extents evaluates them: hipsrc.EvalDims of the checker's text
// (dsl.BufferDecl.Extents, params folded; a declaration built without the
// checker, as tests build them, is printed as written). ok is false for an
// extent that does not evaluate (a param name in an unchecked declaration):
// its check is then left to the element count.
func dimValue(decl *dsl.BufferDecl, d int, sizes [5]int64) (int64, bool) {
	text := ""
	switch {
	case len(decl.Extents) == len(decl.Dims) && d < len(decl.Extents):
		text = decl.Extents[d]
	case d < len(decl.Dims):
		text = format.Expr(decl.Dims[d])
	default:
		return 0, false
	}
	named := map[string]int64{}
	for v := dsl.SizeB; v <= dsl.SizeKV; v++ {
		named[v.String()] = sizes[v-dsl.SizeB]
	}
	n, err := hipsrc.EvalDims([]string{text}, named)
	if err != nil {
		return 0, false
	}
	return n[0], true
}
