package eval

import (
	"errors"

	"github.com/maskc/maskc/dsl"
)

// binary compiles an arithmetic or logical operator with the semantics of
// dsl.BinaryOp, specialised on the operand types.
func (c *compiler) binary(x *dsl.BinaryExpr) (node, error) {
	l, err := c.compile(x.X)
	if err != nil {
		return node{}, err
	}
	r, err := c.compile(x.Y)
	if err != nil {
		return node{}, err
	}
	sp := x.Sp
	anyFloat := l.t == dsl.TypeFloat || r.t == dsl.TypeFloat
	switch x.Op {
	case dsl.OpAnd, dsl.OpOr:
		if l.t != dsl.TypeBool || r.t != dsl.TypeBool {
			break
		}
		a, b := l.b, r.b
		if x.Op == dsl.OpAnd {
			return boolNode(func(f *frame) bool { return a(f) && b(f) }), nil
		}
		return boolNode(func(f *frame) bool { return a(f) || b(f) }), nil
	case dsl.OpBitAnd, dsl.OpBitOr, dsl.OpBitXor:
		if anyFloat {
			break
		}
		if l.t == dsl.TypeBool && r.t == dsl.TypeBool {
			a, b := l.b, r.b // both sides are evaluated, as torch's & and | do
			switch x.Op {
			case dsl.OpBitAnd:
				return boolNode(func(f *frame) bool { u, v := a(f), b(f); return u && v }), nil
			case dsl.OpBitOr:
				return boolNode(func(f *frame) bool { u, v := a(f), b(f); return u || v }), nil
			}
			return boolNode(func(f *frame) bool { return a(f) != b(f) }), nil
		}
		a, b, op := l.asInt(), r.asInt(), x.Op
		return intNode(func(f *frame) int64 { return dsl.BitOp(op, a(f), b(f)) }), nil
	case dsl.OpShl, dsl.OpShr:
		if anyFloat {
			break
		}
		a, b, op := l.asInt(), r.asInt(), x.Op
		return intNode(func(f *frame) int64 {
			u, v := a(f), b(f)
			s, err := dsl.Shift(op, u, v)
			if err != nil {
				f.fail(sp, err, "%v", err)
			}
			return s
		}), nil
	case dsl.OpDiv:
		if !anyFloat {
			a, b := l.asInt(), r.asInt()
			return floatNode(func(f *frame) float64 {
				u, v := a(f), b(f)
				q, err := dsl.IntTrueDiv(u, v)
				if err != nil {
					f.fail(sp, err, "%d / %d: division by zero", u, v)
				}
				return q
			}), nil
		}
		a, b := l.asFloat(), r.asFloat()
		if c.ieee {
			return floatNode(func(f *frame) float64 { return a(f) / b(f) }), nil
		}
		return floatNode(func(f *frame) float64 {
			u, v := a(f), b(f)
			if v == 0 {
				f.fail(sp, dsl.ErrDivisionByZero, "%v / %v: division by zero", u, v)
				return 0
			}
			return u / v
		}), nil
	case dsl.OpPow:
		return c.pow(x, l, r)
	case dsl.OpAdd, dsl.OpSub, dsl.OpMul, dsl.OpFloorDiv, dsl.OpMod:
		if anyFloat && c.ieee && (x.Op == dsl.OpFloorDiv || x.Op == dsl.OpMod) {
			return ieeeDivMod(x.Op, l.asFloat(), r.asFloat()), nil
		}
		if anyFloat {
			return floatArith(x.Op, sp, l.asFloat(), r.asFloat()), nil
		}
		return intArith(x.Op, sp, l.asInt(), r.asInt()), nil
	}
	return node{}, c.errorf(sp, "%s does not take %s and %s", x.Op, l.t, r.t)
}

// floatArith compiles + - * // % on floats.
func floatArith(op dsl.Op, sp dsl.Span, a, b func(*frame) float64) node {
	switch op {
	case dsl.OpAdd:
		return floatNode(func(f *frame) float64 { return a(f) + b(f) })
	case dsl.OpSub:
		return floatNode(func(f *frame) float64 { return a(f) - b(f) })
	case dsl.OpMul:
		return floatNode(func(f *frame) float64 { return a(f) * b(f) })
	case dsl.OpFloorDiv:
		return floatNode(func(f *frame) float64 {
			u, v := a(f), b(f)
			q, _, err := dsl.FloatDivMod(u, v)
			if err != nil {
				f.fail(sp, err, "%v // %v: division by zero", u, v)
			}
			return q
		})
	}
	return floatNode(func(f *frame) float64 {
		u, v := a(f), b(f)
		_, m, err := dsl.FloatDivMod(u, v)
		if err != nil {
			f.fail(sp, err, "%v %% %v: modulo by zero", u, v)
		}
		return m
	})
}

// intArith compiles + - * // % on int64 with Python's floor semantics and
// an error on overflow.
func intArith(op dsl.Op, sp dsl.Span, a, b func(*frame) int64) node {
	var apply func(int64, int64) (int64, error)
	switch op {
	case dsl.OpAdd:
		return intNode(func(f *frame) int64 {
			u, v := a(f), b(f)
			s := u + v
			if (u^s)&(v^s) < 0 {
				f.fail(sp, dsl.ErrIntegerOverflow, "%d + %d overflows int64", u, v)
				return 0
			}
			return s
		})
	case dsl.OpSub:
		return intNode(func(f *frame) int64 {
			u, v := a(f), b(f)
			s := u - v
			if (u^v)&(u^s) < 0 {
				f.fail(sp, dsl.ErrIntegerOverflow, "%d - %d overflows int64", u, v)
				return 0
			}
			return s
		})
	case dsl.OpMul:
		apply = dsl.IntMul
	case dsl.OpFloorDiv:
		apply = dsl.IntFloorDiv
	default:
		apply = dsl.IntMod
	}
	return intNode(func(f *frame) int64 {
		u, v := a(f), b(f)
		r, err := apply(u, v)
		switch {
		case errors.Is(err, dsl.ErrIntegerOverflow):
			f.fail(sp, err, "%d %s %d overflows int64", u, op, v)
		case err != nil:
			f.fail(sp, err, "%d %s %d: %v", u, op, v, err)
		}
		return r
	})
}

// pow compiles **. int ** int is an int when the exponent is non-negative
// and a float when it is negative (Python decides by value); the static type
// comes from the checker's record when there is one, else from a literal
// exponent, else int. An int-typed power meeting a negative exponent at run
// time is an error rather than a silent change of type.
func (c *compiler) pow(x *dsl.BinaryExpr, l, r node) (node, error) {
	sp := x.Sp
	if l.t == dsl.TypeFloat || r.t == dsl.TypeFloat || c.powIsFloat(x) {
		a, b := l.asFloat(), r.asFloat()
		if c.ieee {
			return floatNode(func(f *frame) float64 { return IEEEPow(a(f), b(f)) }), nil
		}
		return floatNode(func(f *frame) float64 {
			u, v := a(f), b(f)
			p, err := dsl.FloatPow(u, v)
			if err != nil {
				f.fail(sp, err, "%v ** %v: %v", u, v, err)
			}
			return p
		}), nil
	}
	a, b := l.asInt(), r.asInt()
	return intNode(func(f *frame) int64 {
		u, v := a(f), b(f)
		if v < 0 {
			f.fail(sp, dsl.ErrOperandType, "%d ** %d: a negative exponent makes this int power a float; write a float base", u, v)
			return 0
		}
		p, err := dsl.IntPow(u, v)
		if err != nil {
			f.fail(sp, err, "%d ** %d overflows int64", u, v)
		}
		return p
	}), nil
}

// powIsFloat reports whether an int ** int is typed float: by the
// checker's record, or by a negative literal exponent.
func (c *compiler) powIsFloat(x *dsl.BinaryExpr) bool {
	if t, ok := c.l.Types[x]; ok && t != dsl.TypeInvalid {
		return t == dsl.TypeFloat
	}
	if lit, ok := dsl.Unparen(x.Y).(*dsl.IntLit); ok {
		return lit.Value < 0
	}
	if u, ok := dsl.Unparen(x.Y).(*dsl.UnaryExpr); ok && u.Op == dsl.OpNeg {
		if lit, ok := dsl.Unparen(u.X).(*dsl.IntLit); ok {
			return lit.Value > 0
		}
	}
	return false
}

// compare compiles a comparison; a chain `a < b <= c` (which the lowered
// form should already have expanded) means `a < b and b <= c`.
func (c *compiler) compare(x *dsl.CompareExpr) (node, error) {
	if len(x.Operands) != len(x.Ops)+1 || len(x.Ops) == 0 {
		return node{}, c.errorf(x.Sp, "malformed comparison")
	}
	ops := make([]node, len(x.Operands))
	for i, o := range x.Operands {
		n, err := c.compile(o)
		if err != nil {
			return node{}, err
		}
		ops[i] = n
	}
	var result func(*frame) bool
	for i, op := range x.Ops {
		if !op.IsComparison() {
			return node{}, c.errorf(x.Sp, "%s is not a comparison", op)
		}
		pair := compare2(op, ops[i], ops[i+1])
		if result == nil {
			result = pair
			continue
		}
		prev := result
		result = func(f *frame) bool { return prev(f) && pair(f) }
	}
	return boolNode(result), nil
}

// compare2 compiles one comparison with the semantics of dsl.CompareOp.
func compare2(op dsl.Op, l, r node) func(*frame) bool {
	switch {
	case l.t != dsl.TypeFloat && r.t != dsl.TypeFloat:
		if fast := compareIndexOrConst(op, l, r); fast != nil {
			return fast
		}
		return compareSame(op, l.asInt(), r.asInt())
	case l.t == dsl.TypeFloat && r.t == dsl.TypeFloat:
		return compareSame(op, l.f, r.f)
	}
	// Mixed int and float: exact, as Python compares them. The left operand
	// is still evaluated first, so the first error is Python's.
	var cmpOf func(*frame) int // -1, 0, 1, or 2 when the float is NaN
	if l.t == dsl.TypeFloat {
		a, b := l.f, r.asInt()
		cmpOf = func(f *frame) int {
			u, v := a(f), b(f)
			if u != u {
				return 2
			}
			return -dsl.CompareIntFloat(v, u)
		}
	} else {
		a, b := l.asInt(), r.f
		cmpOf = func(f *frame) int {
			u, v := a(f), b(f)
			if v != v {
				return 2
			}
			return dsl.CompareIntFloat(u, v)
		}
	}
	switch op {
	case dsl.OpEQ:
		return func(f *frame) bool { return cmpOf(f) == 0 }
	case dsl.OpNE:
		return func(f *frame) bool { return cmpOf(f) != 0 }
	case dsl.OpLT:
		return func(f *frame) bool { return cmpOf(f) < 0 }
	case dsl.OpLE:
		return func(f *frame) bool { return cmpOf(f) <= 0 }
	case dsl.OpGT:
		return func(f *frame) bool { c := cmpOf(f); return c > 0 && c != 2 }
	}
	return func(f *frame) bool { c := cmpOf(f); return c >= 0 && c != 2 }
}

// compareSame compiles a comparison of two operands of one Go type (both
// ints, or both floats: NaN compares false except with !=, as in Go and
// Python).
func compareSame[T int64 | float64](op dsl.Op, a, b func(*frame) T) func(*frame) bool {
	switch op {
	case dsl.OpEQ:
		return func(f *frame) bool { return a(f) == b(f) }
	case dsl.OpNE:
		return func(f *frame) bool { return a(f) != b(f) }
	case dsl.OpLT:
		return func(f *frame) bool { return a(f) < b(f) }
	case dsl.OpLE:
		return func(f *frame) bool { return a(f) <= b(f) }
	case dsl.OpGT:
		return func(f *frame) bool { return a(f) > b(f) }
	default:
		return func(f *frame) bool { return a(f) >= b(f) }
	}
}

// compareIndexOrConst specialises the commonest comparisons, an index
// variable against an index variable (q >= kv) or anything int against a
// literal (h == 0), into one closure; nil for other operands.
func compareIndexOrConst(op dsl.Op, l, r node) func(*frame) bool {
	switch {
	case l.isIndex && r.isIndex:
		x, y := l.index, r.index
		switch op {
		case dsl.OpEQ:
			return func(f *frame) bool { return f.ix[x] == f.ix[y] }
		case dsl.OpNE:
			return func(f *frame) bool { return f.ix[x] != f.ix[y] }
		case dsl.OpLT:
			return func(f *frame) bool { return f.ix[x] < f.ix[y] }
		case dsl.OpLE:
			return func(f *frame) bool { return f.ix[x] <= f.ix[y] }
		case dsl.OpGT:
			return func(f *frame) bool { return f.ix[x] > f.ix[y] }
		default:
			return func(f *frame) bool { return f.ix[x] >= f.ix[y] }
		}
	case l.t == dsl.TypeInt && r.isConst:
		a, c := l.i, r.konst
		switch op {
		case dsl.OpEQ:
			return func(f *frame) bool { return a(f) == c }
		case dsl.OpNE:
			return func(f *frame) bool { return a(f) != c }
		case dsl.OpLT:
			return func(f *frame) bool { return a(f) < c }
		case dsl.OpLE:
			return func(f *frame) bool { return a(f) <= c }
		case dsl.OpGT:
			return func(f *frame) bool { return a(f) > c }
		default:
			return func(f *frame) bool { return a(f) >= c }
		}
	}
	return nil
}

// cond compiles `Then if Cond else Else`, which evaluates only the branch
// taken; the branches are promoted to their common type.
func (c *compiler) cond(x *dsl.CondExpr) (node, error) {
	cn, err := c.compile(x.Cond)
	if err != nil {
		return node{}, err
	}
	tn, err := c.compile(x.Then)
	if err != nil {
		return node{}, err
	}
	en, err := c.compile(x.Else)
	if err != nil {
		return node{}, err
	}
	t := commonType(tn.t, en.t)
	tn, en = tn.convert(t), en.convert(t)
	k := cn.truth()
	switch t {
	case dsl.TypeBool:
		a, b := tn.b, en.b
		return boolNode(func(f *frame) bool {
			if k(f) {
				return a(f)
			}
			return b(f)
		}), nil
	case dsl.TypeInt:
		a, b := tn.i, en.i
		return intNode(func(f *frame) int64 {
			if k(f) {
				return a(f)
			}
			return b(f)
		}), nil
	}
	a, b := tn.f, en.f
	return floatNode(func(f *frame) float64 {
		if k(f) {
			return a(f)
		}
		return b(f)
	}), nil
}

// commonType is the type two branches promote to: bool only when both are.
func commonType(a, b dsl.Type) dsl.Type {
	if a == dsl.TypeBool && b == dsl.TypeBool {
		return dsl.TypeBool
	}
	return dsl.Promote(a, b)
}
