package eval

import (
	"math"

	"github.com/maskc/maskc/dsl"
)

// call compiles a call of a built-in with the semantics of
// dsl.CallBuiltin.
func (c *compiler) call(x *dsl.CallExpr) (node, error) {
	id, ok := x.Fun.(*dsl.Ident)
	if !ok {
		return node{}, c.errorf(x.Sp, "only built-ins can be called in a lowered mod")
	}
	bi := dsl.LookupBuiltin(id.Name)
	if bi == nil {
		return node{}, c.errorf(id.Sp, "%s is not a built-in (a lowered mod calls only built-ins)", id.Name)
	}
	if len(x.Args) < bi.MinArgs || len(x.Args) > bi.MaxArgs {
		return node{}, c.errorf(x.Sp, "%s takes %d argument(s), got %d", bi.Name, bi.MinArgs, len(x.Args))
	}
	args := make([]node, len(x.Args))
	for i, a := range x.Args {
		n, err := c.compile(a)
		if err != nil {
			return node{}, err
		}
		args[i] = n
	}
	sp := x.Sp
	switch bi.Name {
	case "min", "max":
		return minMax(bi.Name == "max", args[0], args[1]), nil
	case "clamp":
		return minMax(false, minMax(true, args[0], args[1]), args[2]), nil
	case "abs":
		a := args[0]
		if a.t == dsl.TypeFloat {
			g := a.f
			return floatNode(func(f *frame) float64 { return math.Abs(g(f)) }), nil
		}
		g := a.asInt()
		return intNode(func(f *frame) int64 {
			v := g(f)
			if v < 0 {
				if v == math.MinInt64 {
					f.fail(sp, dsl.ErrIntegerOverflow, "abs(%d) overflows int64", v)
					return 0
				}
				return -v
			}
			return v
		}), nil
	case "floor", "ceil":
		a := args[0]
		if a.t != dsl.TypeFloat {
			return intNode(a.asInt()), nil
		}
		g, round := a.f, math.Floor
		if bi.Name == "ceil" {
			round = math.Ceil
		}
		return floatNode(func(f *frame) float64 { return round(g(f)) }), nil
	case "int":
		a := args[0]
		if a.t != dsl.TypeFloat {
			return intNode(a.asInt()), nil
		}
		g := a.f
		return intNode(func(f *frame) int64 { return dsl.TruncInt(g(f)) }), nil
	case "float":
		return floatNode(args[0].asFloat()), nil
	case "where":
		if args[0].t != dsl.TypeBool {
			return node{}, c.errorf(x.Args[0].Span(), "the condition of where must be bool, not %s", args[0].t)
		}
		return where(args[0].b, args[1], args[2]), nil
	}
	fn := dsl.FloatFunc(bi.Name)
	if fn == nil {
		return node{}, c.errorf(id.Sp, "built-in %s has no evaluator", bi.Name)
	}
	g := args[0].asFloat()
	return floatNode(func(f *frame) float64 { return fn(g(f)) }), nil
}

// where evaluates both branches, as torch.where does, and picks one.
func where(k func(*frame) bool, x, y node) node {
	t := commonType(x.t, y.t)
	x, y = x.convert(t), y.convert(t)
	switch t {
	case dsl.TypeBool:
		a, b := x.b, y.b
		return boolNode(func(f *frame) bool {
			c, u, v := k(f), a(f), b(f)
			if c {
				return u
			}
			return v
		})
	case dsl.TypeInt:
		a, b := x.i, y.i
		return intNode(func(f *frame) int64 {
			c, u, v := k(f), a(f), b(f)
			if c {
				return u
			}
			return v
		})
	}
	a, b := x.f, y.f
	return floatNode(func(f *frame) float64 {
		c, u, v := k(f), a(f), b(f)
		if c {
			return u
		}
		return v
	})
}

// minMax compiles min or max in the common type; NaN propagates, as
// torch.minimum and torch.maximum.
func minMax(isMax bool, x, y node) node {
	t := commonType(x.t, y.t)
	x, y = x.convert(t), y.convert(t)
	switch t {
	case dsl.TypeBool:
		a, b := x.b, y.b
		if isMax {
			return boolNode(func(f *frame) bool { u, v := a(f), b(f); return u || v })
		}
		return boolNode(func(f *frame) bool { u, v := a(f), b(f); return u && v })
	case dsl.TypeInt:
		a, b := x.i, y.i
		if isMax {
			return intNode(func(f *frame) int64 { return max(a(f), b(f)) })
		}
		return intNode(func(f *frame) int64 { return min(a(f), b(f)) })
	}
	a, b := x.f, y.f
	if isMax {
		return floatNode(func(f *frame) float64 { return dsl.FloatMax(a(f), b(f)) })
	}
	return floatNode(func(f *frame) float64 { return dsl.FloatMin(a(f), b(f)) })
}
