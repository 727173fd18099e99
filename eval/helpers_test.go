package eval

import (
	"github.com/maskc/maskc/dsl"
)

// Builders for hand-made lowered expressions. Spans are left zero unless a
// test sets one to check that an error points at it.

func ref(v dsl.Var) *dsl.VarRef            { return &dsl.VarRef{Var: v, Sp: dsl.NoSpan} }
func ilit(v int64) *dsl.IntLit             { return &dsl.IntLit{Value: v, Sp: dsl.NoSpan} }
func flit(v float64) *dsl.FloatLit         { return &dsl.FloatLit{Value: v, Sp: dsl.NoSpan} }
func blit(v bool) *dsl.BoolLit             { return &dsl.BoolLit{Value: v, Sp: dsl.NoSpan} }
func ident(name string) *dsl.Ident         { return &dsl.Ident{Name: name, Sp: dsl.NoSpan} }
func neg(x dsl.Expr) *dsl.UnaryExpr        { return &dsl.UnaryExpr{Op: dsl.OpNeg, X: x, Sp: dsl.NoSpan} }
func unary(op dsl.Op, x dsl.Expr) dsl.Expr { return &dsl.UnaryExpr{Op: op, X: x, Sp: dsl.NoSpan} }

func bin(op dsl.Op, x, y dsl.Expr) *dsl.BinaryExpr {
	return &dsl.BinaryExpr{Op: op, X: x, Y: y, Sp: dsl.NoSpan, OpSp: dsl.NoSpan}
}

func cmp(op dsl.Op, x, y dsl.Expr) *dsl.CompareExpr {
	return &dsl.CompareExpr{Ops: []dsl.Op{op}, Operands: []dsl.Expr{x, y}, Sp: dsl.NoSpan}
}

func call(name string, args ...dsl.Expr) *dsl.CallExpr {
	return &dsl.CallExpr{Fun: ident(name), Args: args, Sp: dsl.NoSpan}
}

func index(buf string, idx ...dsl.Expr) *dsl.IndexExpr {
	return &dsl.IndexExpr{X: ident(buf), Indices: idx, Sp: dsl.NoSpan}
}

func cond(then, c, els dsl.Expr) *dsl.CondExpr {
	return &dsl.CondExpr{Then: then, Cond: c, Else: els, Sp: dsl.NoSpan}
}

// buffer declares `buffer name: dtype[dims]`.
func buffer(name, dtype string, dims ...dsl.Expr) *dsl.BufferDecl {
	return &dsl.BufferDecl{Name: ident(name), DType: ident(dtype), Dims: dims, Sp: dsl.NoSpan}
}

func mask(e dsl.Expr, bufs ...*dsl.BufferDecl) *dsl.Lowered {
	return &dsl.Lowered{Kind: dsl.MaskMod, Name: "m", Expr: e, Buffers: bufs}
}

func score(e dsl.Expr, bufs ...*dsl.BufferDecl) *dsl.Lowered {
	return &dsl.Lowered{Kind: dsl.ScoreMod, Name: "s", Expr: e, Buffers: bufs}
}

var (
	q, kv, b, h  = ref(dsl.VarQ), ref(dsl.VarKV), ref(dsl.VarB), ref(dsl.VarH)
	scoreVar     = ref(dsl.VarScore)
	sizeQ, sizeH = ref(dsl.SizeQ), ref(dsl.SizeH)
)

// mustCompile compiles l or panics; for tests whose lowered form is known
// to be good.
func mustCompile(l *dsl.Lowered) *Func {
	f, err := Compile(l)
	if err != nil {
		panic(err)
	}
	return f
}

// evalValue compiles e (any type) and evaluates it at a point, returning a
// dsl.Value of e's static type: the white-box entry the arithmetic tests
// use to see the evaluator's exact int and float results.
func evalValue(kind dsl.ModKind, e dsl.Expr, env *Env, sc float64, pt [4]int64, bufs ...*dsl.BufferDecl) (dsl.Value, error) {
	fn, err := Compile(&dsl.Lowered{Kind: kind, Name: "t", Expr: blit(true), Buffers: bufs})
	if err != nil {
		return dsl.Value{}, err
	}
	c := &compiler{l: &dsl.Lowered{Kind: kind, Expr: e, Buffers: bufs}, what: "t", slots: map[string]int{}, fn: fn}
	for k, s := range fn.buffers {
		c.slots[s.decl.Name.Name] = k
	}
	n, err := c.compile(e)
	if err != nil {
		return dsl.Value{}, err
	}
	bd, err := fn.Bind(env)
	if err != nil {
		return dsl.Value{}, err
	}
	if err := bd.enter(pt[0], pt[1], pt[2], pt[3]); err != nil {
		return dsl.Value{}, err
	}
	bd.fr.score = sc
	var v dsl.Value
	switch n.t {
	case dsl.TypeBool:
		v = dsl.Bool(n.b(&bd.fr))
	case dsl.TypeInt:
		v = dsl.Int(n.i(&bd.fr))
	default:
		v = dsl.Float(n.f(&bd.fr))
	}
	if bd.fr.err != nil {
		return dsl.Value{}, bd.leave()
	}
	return v, nil
}

// smallEnv is B=2, H=4, HKV=2, Q=KV=8 with no buffers.
func smallEnv() *Env { return &Env{B: 2, H: 4, HKV: 2, Q: 8, KV: 8} }
