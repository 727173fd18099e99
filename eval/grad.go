package eval

import (
	"math"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/grad"
)

// GradFunc is a compiled score derivative (a grad.Gradient): it evaluates
// d score_out / d score and d score_out / d buf[i] for every differentiable
// read at one point, in float64. The derivative expressions are computed
// as torch and the kernels compute them: IEEE arithmetic (log'(0) = 1/0 =
// inf, not a Python ZeroDivisionError), and buffer reads guarded (a read
// outside its buffer yields 0, as in the kernels: a derivative evaluates
// both branches of `x if c else y`, like torch.where, and the branch not
// taken may index outside a buffer). It does not check that the score
// itself is defined at the point: Func.Score does.
type GradFunc struct {
	fn     *Func // the buffers and the name
	dscore func(*frame) float64
	reads  []gradRead
}

type gradRead struct {
	buffer string
	slot   int // index into the frame's bound buffers
	idx    []func(*frame) int64
	d      func(*frame) float64
}

// ReadGrad is one read's partial derivative at a point.
type ReadGrad struct {
	// Buffer is the buffer's name.
	Buffer string
	// Index is the element read, one index per dimension.
	Index []int64
	// D is d score_out / d Buffer[Index].
	D float64
	// Outside is set when Index lies outside the buffer's extents: a read
	// in the branch of an `x if c else y` that was not taken, which the
	// forward never made. D is then 0 (a kernel drops the read).
	Outside bool
}

// CompileGrad compiles the derivatives of g, or returns an *Error as
// Compile does.
func CompileGrad(g *grad.Gradient) (*GradFunc, error) {
	c, err := newCompiler(g.Lowered(g.DScore, "d/d score of "+g.Score.Name))
	if err != nil {
		return nil, err
	}
	c.ieee = true
	gf := &GradFunc{fn: c.fn}
	d, err := c.compile(g.DScore)
	if err != nil {
		return nil, err
	}
	gf.dscore = d.asFloat()
	for _, r := range g.Reads {
		gr := gradRead{buffer: r.Buffer.Name.Name, slot: c.slots[r.Buffer.Name.Name]}
		for _, e := range r.Index.Indices {
			n, err := c.compile(e)
			if err != nil {
				return nil, err
			}
			if n.t != dsl.TypeInt {
				return nil, c.errorf(e.Span(), "a buffer index must be int, not %s", n.t)
			}
			gr.idx = append(gr.idx, n.i)
		}
		d, err := c.compile(r.D)
		if err != nil {
			return nil, err
		}
		gr.d = d.asFloat()
		gf.reads = append(gf.reads, gr)
	}
	return gf, nil
}

// BoundGrad is a GradFunc bound to one Env, like Bound; it must not be
// used by two goroutines at once.
type BoundGrad struct {
	bd    Bound
	g     *GradFunc
	reads []ReadGrad
}

// Bind checks env's buffers (see Func.Bind) and returns a BoundGrad.
func (g *GradFunc) Bind(env *Env) (*BoundGrad, error) {
	bd, err := g.fn.Bind(env)
	if err != nil {
		return nil, err
	}
	bg := &BoundGrad{bd: *bd, g: g, reads: make([]ReadGrad, len(g.reads))}
	bg.bd.fr.guarded = true
	for i, r := range g.reads {
		bg.reads[i] = ReadGrad{Buffer: r.buffer, Index: make([]int64, len(r.idx))}
	}
	return bg, nil
}

// BindGrad compiles the derivatives of g and binds them to env.
func BindGrad(g *grad.Gradient, env *Env) (*BoundGrad, error) {
	gf, err := CompileGrad(g)
	if err != nil {
		return nil, err
	}
	return gf.Bind(env)
}

// Grad evaluates d score_out / d score at (b, h, q, kv) for the scaled
// logit score, and each read's partial derivative, in the order of the
// Gradient's Reads. The returned slice is reused by the next call. The
// errors are Func.Score's.
func (bg *BoundGrad) Grad(score float64, b, h, q, kv int64) (float64, []ReadGrad, error) {
	if err := bg.bd.enter(b, h, q, kv); err != nil {
		return 0, nil, err
	}
	fr := &bg.bd.fr
	fr.score = score
	ds := bg.g.dscore(fr)
	for i, r := range bg.g.reads {
		rg := &bg.reads[i]
		rg.Outside = false
		dims := fr.bufs[r.slot].Dims
		for j, ix := range r.idx {
			rg.Index[j] = ix(fr)
			if rg.Index[j] < 0 || rg.Index[j] >= int64(dims[j]) {
				rg.Outside = true
			}
		}
		rg.D = 0
		if !rg.Outside {
			rg.D = r.d(fr)
		}
	}
	if fr.err != nil {
		return 0, nil, bg.bd.leave()
	}
	return ds, bg.reads, nil
}

// IEEEPow is x ** y as torch computes it on float tensors: Python's value
// (dsl.FloatPow) where Python has one, and C's pow where Python raises:
// 0 to a negative power is an infinity, a negative base to a fractional
// power NaN, an overflow an infinity.
func IEEEPow(x, y float64) float64 {
	p, err := dsl.FloatPow(x, y)
	if err != nil {
		return math.Pow(x, y)
	}
	return p
}

// ieeeDivMod compiles float // and % as torch's div(rounding_mode="floor")
// and remainder: Python's values, except that a zero divisor gives a / b
// for // and NaN for %, as c10::div_floor_floating and fmod do.
func ieeeDivMod(op dsl.Op, a, b func(*frame) float64) node {
	if op == dsl.OpFloorDiv {
		return floatNode(func(f *frame) float64 {
			u, v := a(f), b(f)
			if v == 0 {
				return u / v
			}
			d, _, _ := dsl.FloatDivMod(u, v)
			return d
		})
	}
	return floatNode(func(f *frame) float64 {
		u, v := a(f), b(f)
		if v == 0 {
			return math.NaN()
		}
		_, m, _ := dsl.FloatDivMod(u, v)
		return m
	})
}
