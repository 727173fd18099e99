package eval

import (
	"fmt"
	"math"
)

// Tensor is a dense row-major host tensor used for captured buffers and
// reference inputs. Ints are stored exactly in float64 (|x| <= 2**53) and
// bools as 0/1.
type Tensor struct {
	// Dims are the extents, outermost first.
	Dims []int
	// Data holds the elements in row-major order; len(Data) is the product
	// of Dims.
	Data []float64
}

// NewTensor returns a zero tensor with the given extents; like make, it
// panics on a negative extent.
func NewTensor(dims ...int) *Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return &Tensor{Dims: append([]int(nil), dims...), Data: make([]float64, n)}
}

// FromInts returns a one-dimensional tensor holding xs, e.g. document ids.
func FromInts(xs ...int64) *Tensor {
	t := NewTensor(len(xs))
	for i, x := range xs {
		t.Data[i] = float64(x)
	}
	return t
}

// Len is the number of elements the extents call for.
func (t *Tensor) Len() int {
	n := 1
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Validate checks that no extent is negative, that the element count the
// extents call for fits an int, and that Data has exactly that many
// elements.
func (t *Tensor) Validate() error {
	n := 1
	for i, d := range t.Dims {
		if d < 0 {
			return fmt.Errorf("dimension %d has negative extent %d", i, d)
		}
		if d != 0 && n > math.MaxInt/d {
			return fmt.Errorf("dims %v: the element count overflows", t.Dims)
		}
		n *= d
	}
	if len(t.Data) != t.Len() {
		return fmt.Errorf("dims %v need %d elements, data has %d", t.Dims, t.Len(), len(t.Data))
	}
	return nil
}

// Offset returns the position in Data of the element at idx, one index per
// dimension, and false when idx has the wrong length or an index is out of
// range.
func (t *Tensor) Offset(idx ...int) (int, bool) {
	if len(idx) != len(t.Dims) {
		return 0, false
	}
	off := 0
	for i, x := range idx {
		if x < 0 || x >= t.Dims[i] {
			return 0, false
		}
		off = off*t.Dims[i] + x
	}
	return off, true
}

// At returns the element at idx; it panics on a bad index, like a slice
// (for tests and the reference attention, whose indices are computed).
func (t *Tensor) At(idx ...int) float64 {
	off, ok := t.Offset(idx...)
	if !ok {
		panic(fmt.Sprintf("eval: index %v out of range for dims %v", idx, t.Dims))
	}
	return t.Data[off]
}

// Set stores x at idx; it panics on a bad index, like At.
func (t *Tensor) Set(x float64, idx ...int) {
	off, ok := t.Offset(idx...)
	if !ok {
		panic(fmt.Sprintf("eval: index %v out of range for dims %v", idx, t.Dims))
	}
	t.Data[off] = x
}

// Env gives the run-time sizes and buffer contents a mod is evaluated
// with: the batch B, query heads H, key/value heads HKV, query length Q and
// key/value length KV, and the captured buffers by declared name.
type Env struct {
	B, H, HKV, Q, KV int64
	// Buffers maps a declared buffer name to its contents.
	Buffers map[string]*Tensor
}
