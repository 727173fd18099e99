package eval

import (
	"fmt"

	"github.com/maskc/maskc/dsl"
)

// frame is the state of one evaluation: the point, the sizes, the bound
// buffers, and the first error met.
type frame struct {
	ix    [4]int64 // b, h, q, kv, indexed by dsl.Var
	score float64
	sizes [5]int64 // B, H, HKV, Q, KV
	bufs  []*Tensor
	err   *Error
	// guarded makes a buffer read outside the buffer yield 0 (false for a
	// bool buffer) instead of failing, as the kernels' guarded reads do;
	// derivatives are evaluated so (see BindGrad).
	guarded bool
	// notes are remarks from binding (Bound.Notes).
	notes []string
}

// A node is a compiled expression of static type t; exactly the closure
// for t is set (b for bool, i for int, f for float). A closure that fails
// records the error in the frame and returns a zero value; the caller
// checks the frame once at the end.
type node struct {
	t dsl.Type
	b func(*frame) bool
	i func(*frame) int64
	f func(*frame) float64

	// An int node that is a literal or an index variable says so, so that
	// the commonest operations (q >= kv, doc[q]) get one closure instead
	// of three.
	isConst bool
	konst   int64
	isIndex bool
	index   dsl.Var // VarB, VarH, VarQ or VarKV
}

func boolNode(fn func(*frame) bool) node     { return node{t: dsl.TypeBool, b: fn} }
func intNode(fn func(*frame) int64) node     { return node{t: dsl.TypeInt, i: fn} }
func floatNode(fn func(*frame) float64) node { return node{t: dsl.TypeFloat, f: fn} }

// asInt returns n's value as an int (a bool is 0 or 1); n is not a float.
func (n node) asInt() func(*frame) int64 {
	if n.t == dsl.TypeInt {
		return n.i
	}
	b := n.b
	return func(f *frame) int64 {
		if b(f) {
			return 1
		}
		return 0
	}
}

// asFloat returns n's value converted to float.
func (n node) asFloat() func(*frame) float64 {
	switch n.t {
	case dsl.TypeFloat:
		return n.f
	case dsl.TypeInt:
		i := n.i
		return func(f *frame) float64 { return float64(i(f)) }
	}
	b := n.b
	return func(f *frame) float64 {
		if b(f) {
			return 1
		}
		return 0
	}
}

// truth returns n's Python truth value.
func (n node) truth() func(*frame) bool {
	switch n.t {
	case dsl.TypeInt:
		i := n.i
		return func(f *frame) bool { return i(f) != 0 }
	case dsl.TypeFloat:
		x := n.f
		return func(f *frame) bool { return x(f) != 0 }
	}
	return n.b
}

// convert returns n as type t (bool -> int -> float only).
func (n node) convert(t dsl.Type) node {
	switch {
	case n.t == t:
		return n
	case t == dsl.TypeFloat:
		return floatNode(n.asFloat())
	case t == dsl.TypeInt:
		return intNode(n.asInt())
	}
	return n
}

// Func is a compiled mask or score mod: a tree of typed closures that
// evaluates one point without allocating. A Func is immutable and safe for
// concurrent use; a Bound made from it is not.
type Func struct {
	kind    dsl.ModKind
	name    string
	mask    func(*frame) bool
	score   func(*frame) float64
	buffers []*bufferSlot
}

// Kind says whether f is a mask mod or a score mod.
func (fn *Func) Kind() dsl.ModKind { return fn.kind }

// Name describes the mod, from dsl.Lowered.Name.
func (fn *Func) Name() string { return fn.name }

// bufferSlot is a buffer the mod reads, bound to a Tensor per evaluation.
type bufferSlot struct {
	decl *dsl.BufferDecl
	elem dsl.Type
}

// compiler holds the state of one Compile.
type compiler struct {
	l     *dsl.Lowered
	what  string // "mask NAME", for messages
	slots map[string]int
	fn    *Func
	// ieee makes float /, //, % and ** follow torch's tensor arithmetic
	// (IEEE 754: x / 0 is an infinity or NaN, a negative base to a
	// fractional power is NaN) instead of raising as Python does; the
	// derivatives of CompileGrad are evaluated so.
	ieee bool
}

// Compile turns a lowered mod into a Func, or returns an *Error (wrapping
// ErrUnsupported) positioned at a node it cannot evaluate: one the lowered
// form does not allow (a free name, a tuple, a call of a non-built-in), an
// operand of a type its operator does not take, or a node whose type in
// l.Types disagrees with the type Python's rules give it.
func Compile(l *dsl.Lowered) (*Func, error) {
	if l == nil || l.Expr == nil {
		return nil, &Error{Mod: "mod", Span: dsl.NoSpan, Err: ErrUnsupported, Detail: "no expression to compile"}
	}
	c, err := newCompiler(l)
	if err != nil {
		return nil, err
	}
	root, err := c.compile(l.Expr)
	if err != nil {
		return nil, err
	}
	if l.Kind == dsl.MaskMod {
		if root.t != dsl.TypeBool {
			return nil, c.errorf(l.Expr.Span(), "a mask must be bool, this body is %s", root.t)
		}
		c.fn.mask = root.b
	} else {
		c.fn.score = root.asFloat()
	}
	return c.fn, nil
}

// newCompiler starts a Compile of l: the Func and its buffer slots.
func newCompiler(l *dsl.Lowered) (*compiler, error) {
	c := &compiler{
		l:     l,
		what:  l.Kind.String() + " " + l.Name,
		slots: map[string]int{},
		fn:    &Func{kind: l.Kind, name: l.Name},
	}
	for _, d := range l.Buffers {
		if d == nil || d.Name == nil {
			continue
		}
		elem, ok := elemType(d.DType)
		if !ok {
			return nil, c.errorf(d.Sp, "buffer %s has unknown element type", d.Name.Name)
		}
		c.slots[d.Name.Name] = len(c.fn.buffers)
		c.fn.buffers = append(c.fn.buffers, &bufferSlot{decl: d, elem: elem})
	}
	return c, nil
}

// elemType maps a buffer dtype to the type a read of it gives.
func elemType(id *dsl.Ident) (dsl.Type, bool) {
	if id == nil {
		return dsl.TypeInvalid, false
	}
	switch id.Name {
	case "i32", "i64":
		return dsl.TypeInt, true
	case "f16", "bf16", "f32", "f64":
		return dsl.TypeFloat, true
	case "bool":
		return dsl.TypeBool, true
	}
	return dsl.TypeInvalid, false
}

func (c *compiler) errorf(sp dsl.Span, format string, args ...any) *Error {
	return &Error{Mod: c.what, Span: sp, Err: ErrUnsupported, Detail: fmt.Sprintf(format, args...)}
}

// compile compiles e and checks its type against the one the checker
// recorded, if any.
func (c *compiler) compile(e dsl.Expr) (node, error) {
	n, err := c.compileNode(e)
	if err != nil {
		return node{}, err
	}
	if rec, ok := c.l.Types[e]; ok && rec != dsl.TypeInvalid && rec != n.t {
		return node{}, c.errorf(e.Span(), "the checker typed this %s, Python's rules make it %s", rec, n.t)
	}
	return n, nil
}

func (c *compiler) compileNode(e dsl.Expr) (node, error) {
	switch x := e.(type) {
	case *dsl.IntLit:
		v := x.Value
		n := intNode(func(*frame) int64 { return v })
		n.isConst, n.konst = true, v
		return n, nil
	case *dsl.FloatLit:
		v := x.Value
		return floatNode(func(*frame) float64 { return v }), nil
	case *dsl.BoolLit:
		v := x.Value
		return boolNode(func(*frame) bool { return v }), nil
	case *dsl.VarRef:
		return c.varRef(x)
	case *dsl.ParenExpr:
		return c.compile(x.X)
	case *dsl.UnaryExpr:
		return c.unary(x)
	case *dsl.BinaryExpr:
		return c.binary(x)
	case *dsl.CompareExpr:
		return c.compare(x)
	case *dsl.CondExpr:
		return c.cond(x)
	case *dsl.CallExpr:
		return c.call(x)
	case *dsl.IndexExpr:
		return c.index(x)
	case *dsl.Ident:
		return node{}, c.errorf(x.Sp, "unresolved name %s (a lowered mod has no free names)", x.Name)
	case nil:
		return node{}, c.errorf(dsl.NoSpan, "missing expression")
	}
	return node{}, c.errorf(e.Span(), "a %T cannot appear in a lowered mod", e)
}

func (c *compiler) varRef(x *dsl.VarRef) (node, error) {
	switch x.Var {
	case dsl.VarB, dsl.VarH, dsl.VarQ, dsl.VarKV:
		v := x.Var
		n := intNode(func(f *frame) int64 { return f.ix[v] })
		n.isIndex, n.index = true, v
		return n, nil
	case dsl.VarScore:
		if c.l.Kind != dsl.ScoreMod {
			return node{}, c.errorf(x.Sp, "a mask mod has no score")
		}
		return floatNode(func(f *frame) float64 { return f.score }), nil
	case dsl.SizeB, dsl.SizeH, dsl.SizeHKV, dsl.SizeQ, dsl.SizeKV:
		k := int(x.Var - dsl.SizeB)
		return intNode(func(f *frame) int64 { return f.sizes[k] }), nil
	}
	return node{}, c.errorf(x.Sp, "unknown variable %d", int(x.Var))
}

func (c *compiler) unary(x *dsl.UnaryExpr) (node, error) {
	n, err := c.compile(x.X)
	if err != nil {
		return node{}, err
	}
	sp := x.Sp
	switch x.Op {
	case dsl.OpNeg:
		if n.t == dsl.TypeFloat {
			a := n.f
			return floatNode(func(f *frame) float64 { return -a(f) }), nil
		}
		a := n.asInt()
		return intNode(func(f *frame) int64 {
			v := a(f)
			if v == -1<<63 {
				f.fail(sp, dsl.ErrIntegerOverflow, "-(%d) overflows int64", v)
				return 0
			}
			return -v
		}), nil
	case dsl.OpPos:
		if n.t == dsl.TypeFloat {
			return n, nil
		}
		return intNode(n.asInt()), nil
	case dsl.OpNot:
		a := n.truth()
		return boolNode(func(f *frame) bool { return !a(f) }), nil
	case dsl.OpInvert:
		switch n.t {
		case dsl.TypeBool:
			a := n.b
			return boolNode(func(f *frame) bool { return !a(f) }), nil
		case dsl.TypeInt:
			a := n.i
			return intNode(func(f *frame) int64 { return ^a(f) }), nil
		}
	}
	return node{}, c.errorf(sp, "unary %s does not take %s", x.Op, n.t)
}

// fail records the first error of an evaluation.
func (f *frame) fail(sp dsl.Span, cause error, format string, args ...any) {
	if f.err != nil {
		return
	}
	f.err = &Error{Span: sp, Err: cause, Detail: fmt.Sprintf(format, args...)}
}
