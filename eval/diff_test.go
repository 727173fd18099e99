package eval

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/maskc/maskc/dsl"
)

// This file checks the compiled closures against a slow tree-walking
// interpreter that applies dsl.UnaryOp, dsl.BinaryOp, dsl.CompareOp and
// dsl.CallBuiltin to dsl.Values, on random well-typed expressions: the fast
// evaluator must give the same value (after promotion to its static type)
// and fail with the same cause.

// slowEval interprets e at a point with Python's dynamic semantics.
func slowEval(e dsl.Expr, env *Env, bufs map[string]*dsl.BufferDecl, pt [4]int64, sc float64) (dsl.Value, error) {
	ev := func(x dsl.Expr) (dsl.Value, error) { return slowEval(x, env, bufs, pt, sc) }
	switch x := e.(type) {
	case *dsl.IntLit:
		return dsl.Int(x.Value), nil
	case *dsl.FloatLit:
		return dsl.Float(x.Value), nil
	case *dsl.BoolLit:
		return dsl.Bool(x.Value), nil
	case *dsl.VarRef:
		switch x.Var {
		case dsl.VarB, dsl.VarH, dsl.VarQ, dsl.VarKV:
			return dsl.Int(pt[x.Var]), nil
		case dsl.VarScore:
			return dsl.Float(sc), nil
		}
		return dsl.Int([]int64{env.B, env.H, env.HKV, env.Q, env.KV}[x.Var-dsl.SizeB]), nil
	case *dsl.UnaryExpr:
		v, err := ev(x.X)
		if err != nil {
			return v, err
		}
		return dsl.UnaryOp(x.Op, v)
	case *dsl.BinaryExpr:
		l, err := ev(x.X)
		if err != nil {
			return l, err
		}
		if x.Op == dsl.OpAnd && !l.Truth() || x.Op == dsl.OpOr && l.Truth() {
			return l, nil
		}
		r, err := ev(x.Y)
		if err != nil {
			return r, err
		}
		return dsl.BinaryOp(x.Op, l, r)
	case *dsl.CompareExpr:
		l, err := ev(x.Operands[0])
		if err != nil {
			return l, err
		}
		r, err := ev(x.Operands[1])
		if err != nil {
			return r, err
		}
		ok, err := dsl.CompareOp(x.Ops[0], l, r)
		return dsl.Bool(ok), err
	case *dsl.CondExpr:
		c, err := ev(x.Cond)
		if err != nil {
			return c, err
		}
		if c.Truth() {
			return ev(x.Then)
		}
		return ev(x.Else)
	case *dsl.CallExpr:
		args := make([]dsl.Value, len(x.Args))
		for i, a := range x.Args {
			v, err := ev(a)
			if err != nil {
				return v, err
			}
			args[i] = v
		}
		return dsl.CallBuiltin(x.Fun.(*dsl.Ident).Name, args)
	case *dsl.IndexExpr:
		name := x.X.(*dsl.Ident).Name
		t := env.Buffers[name]
		idx := make([]int, len(x.Indices))
		for i, e := range x.Indices {
			v, err := ev(e)
			if err != nil {
				return v, err
			}
			if v.I < 0 || v.I >= int64(t.Dims[i]) {
				return dsl.Value{}, ErrIndexOutOfRange
			}
			idx[i] = int(v.I)
		}
		el := t.At(idx...)
		switch bufs[name].DType.Name {
		case "i32", "i64":
			return dsl.Int(int64(el)), nil
		case "bool":
			return dsl.Bool(el != 0), nil
		}
		return dsl.Float(el), nil
	}
	panic("slowEval: unexpected node")
}

// exprGen builds random well-typed lowered expressions from a byte source.
type exprGen struct {
	next func() byte
}

func (g *exprGen) pick(n int) int { return int(g.next()) % n }

var (
	intLits   = []int64{0, 1, 2, 3, -1, -2, 7, -7, 1 << 62, math.MaxInt64, math.MinInt64}
	floatLits = []float64{0, math.Copysign(0, -1), 0.1, 1.5, -2.5, 3, 1e308, math.Inf(1), math.Inf(-1), math.NaN()}
	intOps    = []dsl.Op{dsl.OpAdd, dsl.OpSub, dsl.OpMul, dsl.OpFloorDiv, dsl.OpMod, dsl.OpBitAnd, dsl.OpBitOr}
	floatOps  = []dsl.Op{dsl.OpAdd, dsl.OpSub, dsl.OpMul, dsl.OpDiv, dsl.OpFloorDiv, dsl.OpMod, dsl.OpPow}
	cmpOps    = []dsl.Op{dsl.OpEQ, dsl.OpNE, dsl.OpLT, dsl.OpLE, dsl.OpGT, dsl.OpGE}
	floatFns  = []string{"exp", "exp2", "log", "log2", "sqrt", "tanh", "sigmoid", "sin", "cos", "tan", "erf", "floor", "ceil", "abs"}
	sizeVars  = []dsl.Var{dsl.VarB, dsl.VarH, dsl.VarQ, dsl.VarKV, dsl.SizeQ, dsl.SizeKV, dsl.SizeH}
)

// gen returns an expression whose static type is t.
func (g *exprGen) gen(t dsl.Type, depth int) dsl.Expr {
	if depth <= 0 || g.pick(4) == 0 {
		return g.leaf(t)
	}
	d := depth - 1
	switch t {
	case dsl.TypeInt:
		switch g.pick(10) {
		case 8:
			return call("int", g.gen([]dsl.Type{dsl.TypeFloat, dsl.TypeBool, dsl.TypeInt}[g.pick(3)], d))
		case 0:
			return bin(intOps[g.pick(len(intOps))], g.gen(dsl.TypeInt, d), g.gen([]dsl.Type{dsl.TypeInt, dsl.TypeBool}[g.pick(2)], d))
		case 1:
			return unary([]dsl.Op{dsl.OpNeg, dsl.OpPos, dsl.OpInvert}[g.pick(3)], g.gen(dsl.TypeInt, d))
		case 2:
			return call([]string{"abs", "floor", "ceil"}[g.pick(3)], g.gen(dsl.TypeInt, d))
		case 3:
			return call([]string{"min", "max"}[g.pick(2)], g.gen(dsl.TypeInt, d), g.gen(dsl.TypeInt, d))
		case 4:
			return call("clamp", g.gen(dsl.TypeInt, d), g.gen(dsl.TypeInt, d), g.gen(dsl.TypeInt, d))
		case 5:
			return call("where", g.gen(dsl.TypeBool, d), g.gen(dsl.TypeInt, d), g.gen(dsl.TypeBool, d))
		case 6:
			return cond(g.gen(dsl.TypeInt, d), g.gen(dsl.TypeBool, d), g.gen(dsl.TypeInt, d))
		case 7:
			return bin(dsl.OpPow, g.gen(dsl.TypeInt, d), ilit(int64(g.pick(4))))
		default:
			return bin(dsl.OpAdd, index("doc", g.gen(dsl.TypeInt, d)), ilit(0))
		}
	case dsl.TypeFloat:
		mixed := func() (dsl.Expr, dsl.Expr) {
			switch g.pick(3) {
			case 0:
				return g.gen(dsl.TypeFloat, d), g.gen(dsl.TypeInt, d)
			case 1:
				return g.gen(dsl.TypeInt, d), g.gen(dsl.TypeFloat, d)
			}
			return g.gen(dsl.TypeFloat, d), g.gen(dsl.TypeFloat, d)
		}
		switch g.pick(8) {
		case 7:
			return call("float", g.gen([]dsl.Type{dsl.TypeInt, dsl.TypeBool}[g.pick(2)], d))
		case 0, 1:
			x, y := mixed()
			return bin(floatOps[g.pick(len(floatOps))], x, y)
		case 2:
			return bin(dsl.OpDiv, g.gen(dsl.TypeInt, d), g.gen(dsl.TypeInt, d))
		case 3:
			return call(floatFns[g.pick(len(floatFns))], g.gen(dsl.TypeFloat, d))
		case 4:
			x, y := mixed()
			return call([]string{"min", "max"}[g.pick(2)], x, y)
		case 5:
			x, y := mixed()
			return call("where", g.gen(dsl.TypeBool, d), x, y)
		default:
			return unary([]dsl.Op{dsl.OpNeg, dsl.OpPos}[g.pick(2)], g.gen(dsl.TypeFloat, d))
		}
	}
	switch g.pick(7) {
	case 0, 1:
		ts := []dsl.Type{dsl.TypeInt, dsl.TypeFloat, dsl.TypeBool}
		return cmp(cmpOps[g.pick(len(cmpOps))], g.gen(ts[g.pick(3)], d), g.gen(ts[g.pick(3)], d))
	case 2:
		return bin([]dsl.Op{dsl.OpAnd, dsl.OpOr, dsl.OpBitAnd, dsl.OpBitOr}[g.pick(4)], g.gen(dsl.TypeBool, d), g.gen(dsl.TypeBool, d))
	case 3:
		return unary(dsl.OpNot, g.gen([]dsl.Type{dsl.TypeInt, dsl.TypeFloat, dsl.TypeBool}[g.pick(3)], d))
	case 4:
		return unary(dsl.OpInvert, g.gen(dsl.TypeBool, d))
	case 5:
		return call([]string{"min", "max"}[g.pick(2)], g.gen(dsl.TypeBool, d), g.gen(dsl.TypeBool, d))
	default:
		return cond(g.gen(dsl.TypeBool, d), g.gen(dsl.TypeBool, d), g.gen(dsl.TypeBool, d))
	}
}

func (g *exprGen) leaf(t dsl.Type) dsl.Expr {
	switch t {
	case dsl.TypeInt:
		if g.pick(2) == 0 {
			return ilit(intLits[g.pick(len(intLits))])
		}
		return ref(sizeVars[g.pick(len(sizeVars))])
	case dsl.TypeFloat:
		switch g.pick(3) {
		case 0:
			return ref(dsl.VarScore)
		case 1:
			return index("bias", ref(dsl.VarH), ref([]dsl.Var{dsl.VarQ, dsl.VarKV}[g.pick(2)]))
		}
		return flit(floatLits[g.pick(len(floatLits))])
	}
	return blit(g.pick(2) == 0)
}

var diffBuffers = []*dsl.BufferDecl{buffer("doc", "i32", ident("KV")), buffer("bias", "f32", ident("H"), ident("Q"))}

// diffEnv is the Env the differential checks run in.
func diffEnv() *Env {
	bias := NewTensor(2, 5)
	for i := range bias.Data {
		bias.Data[i] = float64(i)*0.75 - 3
	}
	return &Env{B: 2, H: 2, HKV: 1, Q: 5, KV: 5, Buffers: map[string]*Tensor{"doc": FromInts(0, 0, 1, -4, 9), "bias": bias}}
}

var typeRank = map[dsl.Type]int{dsl.TypeBool: 0, dsl.TypeInt: 1, dsl.TypeFloat: 2}

// checkAgainstSlow compares the fast and slow evaluation of e at pt.
func checkAgainstSlow(t *testing.T, e dsl.Expr, env *Env, pt [4]int64, sc float64) {
	t.Helper()
	bufs := map[string]*dsl.BufferDecl{}
	for _, d := range diffBuffers {
		bufs[d.Name.Name] = d
	}
	want, wantErr := slowEval(e, env, bufs, pt, sc)
	got, err := evalValue(dsl.ScoreMod, e, env, sc, pt, diffBuffers...)
	if wantErr != nil {
		if err == nil {
			t.Fatalf("%s at %v score %v: fast = %v, slow fails with %v", show(e), pt, sc, got, wantErr)
		}
		for _, cause := range []error{dsl.ErrDivisionByZero, dsl.ErrIntegerOverflow, dsl.ErrFloatOverflow, dsl.ErrComplexResult, ErrIndexOutOfRange} {
			if errors.Is(wantErr, cause) != errors.Is(err, cause) {
				t.Fatalf("%s at %v: fast fails with %v, slow with %v", show(e), pt, err, wantErr)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("%s at %v score %v: fast fails with %v, slow = %v", show(e), pt, sc, err, want)
	}
	if typeRank[want.Type] > typeRank[got.Type] {
		t.Fatalf("%s: slow gives %v %v, fast has static type %v", show(e), want.Type, want, got.Type)
	}
	var conv dsl.Value
	switch got.Type {
	case dsl.TypeFloat:
		conv = dsl.Float(want.AsFloat())
	case dsl.TypeInt:
		conv = dsl.Int(want.I)
	default:
		conv = want
	}
	if !sameValue(got, conv) {
		t.Fatalf("%s at %v score %v: fast = %v (%v), slow = %v (%v)", show(e), pt, sc, got, got.Type, want, want.Type)
	}
}

// show prints an expression in Python-like form for failure messages.
func show(e dsl.Expr) string {
	switch x := e.(type) {
	case *dsl.IntLit:
		return dsl.Int(x.Value).String()
	case *dsl.FloatLit:
		return dsl.Float(x.Value).String()
	case *dsl.BoolLit:
		return dsl.Bool(x.Value).String()
	case *dsl.VarRef:
		return x.Var.String()
	case *dsl.UnaryExpr:
		return "(" + x.Op.String() + " " + show(x.X) + ")"
	case *dsl.BinaryExpr:
		return "(" + show(x.X) + " " + x.Op.String() + " " + show(x.Y) + ")"
	case *dsl.CompareExpr:
		return "(" + show(x.Operands[0]) + " " + x.Ops[0].String() + " " + show(x.Operands[1]) + ")"
	case *dsl.CondExpr:
		return "(" + show(x.Then) + " if " + show(x.Cond) + " else " + show(x.Else) + ")"
	case *dsl.CallExpr:
		s := show(x.Fun) + "("
		for i, a := range x.Args {
			if i > 0 {
				s += ", "
			}
			s += show(a)
		}
		return s + ")"
	case *dsl.IndexExpr:
		s := show(x.X) + "["
		for i, a := range x.Indices {
			if i > 0 {
				s += ", "
			}
			s += show(a)
		}
		return s + "]"
	case *dsl.Ident:
		return x.Name
	}
	return "?"
}

// TestAgainstSlowInterpreter runs 20000 random expressions, each at a few
// points.
func TestAgainstSlowInterpreter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := &exprGen{next: func() byte { return byte(r.UintN(256)) }}
	env := diffEnv()
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for i := 0; i < n; i++ {
		e := g.gen([]dsl.Type{dsl.TypeBool, dsl.TypeInt, dsl.TypeFloat}[i%3], 5)
		for k := 0; k < 4; k++ {
			pt := [4]int64{r.Int64N(env.B), r.Int64N(env.H), r.Int64N(env.Q), r.Int64N(env.KV)}
			checkAgainstSlow(t, e, env, pt, floatLits[r.IntN(len(floatLits))]*float64(k))
		}
	}
}

// FuzzAgainstSlowInterpreter builds an expression from the fuzzer's bytes
// and checks the fast evaluator against the slow one: no panic, same value,
// same failure.
func FuzzAgainstSlowInterpreter(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7}, uint8(0), int64(1), int64(2), 1.5)
	f.Add([]byte{3, 3, 3, 0, 9, 1, 4, 4, 1}, uint8(1), int64(4), int64(0), -0.5)
	f.Add([]byte{1, 0, 2, 200, 7, 7, 7, 7, 7}, uint8(2), int64(0), int64(4), 100.0)
	env := diffEnv()
	f.Fuzz(func(t *testing.T, data []byte, typ uint8, qi, kvi int64, sc float64) {
		pos := 0
		g := &exprGen{next: func() byte {
			if pos >= len(data) {
				return 0
			}
			pos++
			return data[pos-1]
		}}
		e := g.gen([]dsl.Type{dsl.TypeBool, dsl.TypeInt, dsl.TypeFloat}[typ%3], 6)
		pt := [4]int64{0, 1, (qi%env.Q + env.Q) % env.Q, (kvi%env.KV + env.KV) % env.KV}
		checkAgainstSlow(t, e, env, pt, sc)
	})
}
