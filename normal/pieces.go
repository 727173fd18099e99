package normal

// This file expands integer expressions into linear pieces (min, max,
// abs, conditionals, floor division and modulo by constants).

import (
	"github.com/maskc/maskc/dsl"
)

// piece is one linear piece of an integer expression: val where cond holds.
type piece struct {
	cond *formula
	val  Linear
}

// pieces expands an integer expression into linear pieces whose conditions
// partition the domain, or reports that it is not piecewise linear.
func (c *canonizer) pieces(e dsl.Expr) ([]piece, bool) {
	if p, ok := c.pieces1(e); ok {
		return p, true
	}
	// An int the expansion cannot look into but that reads neither q nor
	// kv is a symbol: its value is fixed for every (b, h).
	if c.typeOf(e) == dsl.TypeInt && freeOfQKV(e) {
		if l, ok := c.symbol(e); ok {
			return []piece{{fTrue, l}}, true
		}
	}
	return nil, false
}

func (c *canonizer) pieces1(e dsl.Expr) ([]piece, bool) {
	switch x := e.(type) {
	case *dsl.ParenExpr:
		return c.pieces(x.X)
	case *dsl.IntLit:
		return []piece{{fTrue, Const(x.Value)}}, true
	case *dsl.BoolLit:
		if x.Value {
			return []piece{{fTrue, Const(1)}}, true
		}
		return []piece{{fTrue, Const(0)}}, true
	case *dsl.VarRef:
		if x.Var == dsl.VarScore || x.Var < 0 || int(x.Var) >= NumVars {
			return nil, false
		}
		return []piece{{fTrue, Var(x.Var)}}, true
	}
	if c.typeOf(e) != dsl.TypeInt {
		return nil, false
	}
	switch x := e.(type) {
	case *dsl.UnaryExpr:
		p, ok := c.pieces(x.X)
		if !ok {
			return nil, false
		}
		switch x.Op {
		case dsl.OpPos:
			return p, true
		case dsl.OpNeg:
			return mapPieces(p, func(l Linear) (Linear, bool) { return l.scale(-1) })
		}
	case *dsl.BinaryExpr:
		switch x.Op {
		case dsl.OpAdd, dsl.OpSub, dsl.OpMul:
			pa, ok1 := c.pieces(x.X)
			pb, ok2 := c.pieces(x.Y)
			if !ok1 || !ok2 || len(pa)*len(pb) > maxPieces {
				return nil, false
			}
			var out []piece
			for _, a := range pa {
				for _, b := range pb {
					var v Linear
					var ok bool
					switch {
					case x.Op == dsl.OpAdd:
						v, ok = a.val.add(b.val)
					case x.Op == dsl.OpSub:
						v, ok = a.val.sub(b.val)
					case a.val.IsConst():
						v, ok = b.val.scale(a.val.K)
					case b.val.IsConst():
						v, ok = a.val.scale(b.val.K)
					}
					if !ok {
						return nil, false
					}
					out = append(out, piece{and(a.cond, b.cond), v})
				}
			}
			return out, true
		case dsl.OpFloorDiv, dsl.OpMod:
			return c.divMod(x)
		}
	case *dsl.CondExpr:
		return c.choose(c.truth(x.Cond), x.Then, x.Else)
	case *dsl.CallExpr:
		switch callName(x) {
		case "where":
			if len(x.Args) == 3 {
				return c.choose(c.truth(x.Args[0]), x.Args[1], x.Args[2])
			}
		case "abs":
			if len(x.Args) == 1 {
				p, ok := c.pieces(x.Args[0])
				if !ok || 2*len(p) > maxPieces {
					return nil, false
				}
				var out []piece
				for _, a := range p {
					n, ok := a.val.scale(-1)
					ge, ok2 := c.compareZero(a.val, dsl.OpGE)
					if !ok || !ok2 {
						return nil, false
					}
					out = append(out, piece{and(a.cond, ge), a.val}, piece{and(a.cond, not(ge)), n})
				}
				return out, true
			}
		case "min", "max":
			if len(x.Args) == 2 {
				return c.minMax(callName(x) == "min", x.Args[0], x.Args[1])
			}
		case "clamp":
			if len(x.Args) == 3 {
				lo, ok := c.minMaxPieces(false, x.Args[0], x.Args[1])
				if !ok {
					return nil, false
				}
				hi, ok := c.pieces(x.Args[2])
				if !ok {
					return nil, false
				}
				return c.combineMinMax(true, lo, hi)
			}
		}
	}
	return nil, false
}

// divMod expands `a // d` and `a % d` for a constant d != 0: the quotient
// is an extra variable x with d*x <= a <= d*x + d - 1 (for d > 0), the
// remainder a - d*x.
func (c *canonizer) divMod(x *dsl.BinaryExpr) ([]piece, bool) {
	pb, ok := c.pieces(x.Y)
	if !ok || len(pb) != 1 || !pb[0].val.IsConst() || !alwaysTrue(pb[0].cond) {
		return nil, false
	}
	d := pb[0].val.K
	if d == 0 || d == -1<<63 {
		return nil, false
	}
	pa, ok := c.pieces(x.X)
	if !ok {
		return nil, false
	}
	out := make([]piece, 0, len(pa))
	for _, a := range pa {
		num, den := a.val, d
		if d < 0 {
			// floor(a / d) = floor(-a / -d).
			if num, ok = num.scale(-1); !ok {
				return nil, false
			}
			den = -d
		}
		t, ok := c.floorLinear(num, den)
		if !ok {
			return nil, false
		}
		v := t
		if x.Op == dsl.OpMod {
			dt, ok := t.scale(d)
			if !ok {
				return nil, false
			}
			if v, ok = a.val.sub(dt); !ok {
				return nil, false
			}
		}
		out = append(out, piece{a.cond, v})
	}
	return out, true
}

func mapPieces(p []piece, f func(Linear) (Linear, bool)) ([]piece, bool) {
	out := make([]piece, len(p))
	for i, a := range p {
		v, ok := f(a.val)
		if !ok {
			return nil, false
		}
		out[i] = piece{a.cond, v}
	}
	return out, true
}

func (c *canonizer) choose(cond *formula, then, els dsl.Expr) ([]piece, bool) {
	pt, ok1 := c.pieces(then)
	pe, ok2 := c.pieces(els)
	if !ok1 || !ok2 || len(pt)+len(pe) > maxPieces {
		return nil, false
	}
	var out []piece
	for _, a := range pt {
		out = append(out, piece{and(cond, a.cond), a.val})
	}
	nc := not(cond)
	for _, a := range pe {
		out = append(out, piece{and(nc, a.cond), a.val})
	}
	return out, true
}

func (c *canonizer) minMax(isMin bool, a, b dsl.Expr) ([]piece, bool) {
	return c.minMaxPieces(isMin, a, b)
}

func (c *canonizer) minMaxPieces(isMin bool, a, b dsl.Expr) ([]piece, bool) {
	pa, ok1 := c.pieces(a)
	pb, ok2 := c.pieces(b)
	if !ok1 || !ok2 {
		return nil, false
	}
	return c.combineMinMax(isMin, pa, pb)
}

// combineMinMax builds min(a, b) (or max) piecewise: a where a <= b, else b.
func (c *canonizer) combineMinMax(isMin bool, pa, pb []piece) ([]piece, bool) {
	if 2*len(pa)*len(pb) > maxPieces {
		return nil, false
	}
	var out []piece
	for _, x := range pa {
		for _, y := range pb {
			diff, ok := x.val.sub(y.val)
			if !ok {
				return nil, false
			}
			op := dsl.OpLE
			if !isMin {
				op = dsl.OpGE
			}
			first, ok := c.compareZero(diff, op)
			if !ok {
				return nil, false
			}
			out = append(out, piece{and(x.cond, y.cond, first), x.val}, piece{and(x.cond, y.cond, not(first)), y.val})
		}
	}
	return out, true
}
