package eval

import (
	"github.com/maskc/maskc/dsl"
)

// Expr is one compiled sub-expression of a lowered mod (a bool or int
// node of its body), evaluated with the mod's buffers. Codegen's host
// evaluator of block sparsity uses it for the terms of its bounds.
type Expr struct {
	fn *Func
	n  node
}

// CompileExpr compiles e, a bool or int node of l's body (typed in
// l.Types), with the errors of Compile; a float node is refused.
func CompileExpr(l *dsl.Lowered, e dsl.Expr) (*Expr, error) {
	if l == nil || e == nil {
		return nil, &Error{Mod: "mod", Span: dsl.NoSpan, Err: ErrUnsupported, Detail: "no expression to compile"}
	}
	c, err := newCompiler(l)
	if err != nil {
		return nil, err
	}
	n, err := c.compile(e)
	if err != nil {
		return nil, err
	}
	if n.t == dsl.TypeFloat {
		return nil, c.errorf(e.Span(), "a float expression has no int or bool value")
	}
	return &Expr{fn: c.fn, n: n}, nil
}

// BoundExpr is an Expr bound to one Env; like Bound, it must not be used by
// two goroutines at once.
type BoundExpr struct {
	x  *Expr
	bd Bound
}

// Bind looks up and checks the buffers of the mod in env, as Func.Bind.
func (x *Expr) Bind(env *Env) (*BoundExpr, error) {
	bd, err := x.fn.Bind(env)
	if err != nil {
		return nil, err
	}
	return &BoundExpr{x: x, bd: *bd}, nil
}

// Int evaluates the expression at (b, h, q, kv) as an int (a bool is 0 or
// 1), with the errors of Func.Mask.
func (be *BoundExpr) Int(b, h, q, kv int64) (int64, error) {
	if err := be.bd.enter(b, h, q, kv); err != nil {
		return 0, err
	}
	v := be.x.n.asInt()(&be.bd.fr)
	if be.bd.fr.err != nil {
		return 0, be.bd.leave()
	}
	return v, nil
}

// Bool evaluates the expression's Python truth value at (b, h, q, kv).
func (be *BoundExpr) Bool(b, h, q, kv int64) (bool, error) {
	if err := be.bd.enter(b, h, q, kv); err != nil {
		return false, err
	}
	v := be.x.n.truth()(&be.bd.fr)
	if be.bd.fr.err != nil {
		return false, be.bd.leave()
	}
	return v, nil
}
