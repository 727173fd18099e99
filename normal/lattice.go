package normal

import "github.com/maskc/maskc/dsl"

// This file compares operands that are minima and maxima (abs, min, max,
// clamp at the top of a comparison's operand) through the lattice
// identities instead of guarded pieces: max(x, y) <= r is x <= r and
// y <= r, min(x, y) <= r is x <= r or y <= r, and so on. The result is
// the same condition with no case split on which argument is smaller, so
// `min(q, 40) >= kv` is the one term `kv <= q and kv <= 40` rather than
// two guarded ones, which keeps a term's bounds jointly provable over a
// tile (codegen's full-tile test reads one term at a time).

// lattice is an integer operand as a tree of min and max over
// piecewise-linear leaves.
type lattice struct {
	op   latticeOp
	leaf []piece // latLeaf
	a, b *lattice
}

type latticeOp int

const (
	latLeaf latticeOp = iota
	latMin
	latMax
)

// isLattice reports whether e is a call the lattice rewrite applies to.
func (c *canonizer) isLattice(e dsl.Expr) bool {
	x, ok := dsl.Unparen(e).(*dsl.CallExpr)
	if !ok || c.typeOf(x) != dsl.TypeInt {
		return false
	}
	switch callName(x) {
	case "abs":
		return len(x.Args) == 1
	case "min", "max":
		return len(x.Args) == 2
	case "clamp":
		return len(x.Args) == 3
	}
	return false
}

// lattice expands e; false when a leaf is not piecewise linear or the tree
// has more than maxPieces leaves.
func (c *canonizer) lattice(e dsl.Expr) (*lattice, bool) {
	l, ok := c.lattice1(e)
	if !ok || l.leaves() > maxPieces {
		return nil, false
	}
	return l, true
}

func (c *canonizer) lattice1(e dsl.Expr) (*lattice, bool) {
	if !c.isLattice(e) {
		p, ok := c.pieces(e)
		return &lattice{op: latLeaf, leaf: p}, ok
	}
	x := dsl.Unparen(e).(*dsl.CallExpr)
	args := make([]*lattice, len(x.Args))
	for i, a := range x.Args {
		l, ok := c.lattice1(a)
		if !ok {
			return nil, false
		}
		args[i] = l
	}
	switch callName(x) {
	case "abs":
		n, ok := args[0].neg()
		return &lattice{op: latMax, a: args[0], b: n}, ok
	case "min":
		return &lattice{op: latMin, a: args[0], b: args[1]}, true
	case "max":
		return &lattice{op: latMax, a: args[0], b: args[1]}, true
	}
	// clamp(v, lo, hi) is min(max(v, lo), hi).
	return &lattice{op: latMin, a: &lattice{op: latMax, a: args[0], b: args[1]}, b: args[2]}, true
}

func (l *lattice) leaves() int {
	if l.op == latLeaf {
		return 1
	}
	return l.a.leaves() + l.b.leaves()
}

// neg is -l: min and max exchange.
func (l *lattice) neg() (*lattice, bool) {
	if l.op == latLeaf {
		p, ok := mapPieces(l.leaf, func(v Linear) (Linear, bool) { return v.scale(-1) })
		return &lattice{op: latLeaf, leaf: p}, ok
	}
	a, ok1 := l.a.neg()
	b, ok2 := l.b.neg()
	op := latMin
	if l.op == latMin {
		op = latMax
	}
	return &lattice{op: op, a: a, b: b}, ok1 && ok2
}

// compareLattice converts `a op b` for an operand that is a min, max, abs
// or clamp; false when it cannot.
func (c *canonizer) compareLattice(a dsl.Expr, op dsl.Op, b dsl.Expr) (*formula, bool) {
	la, ok1 := c.lattice(a)
	lb, ok2 := c.lattice(b)
	if !ok1 || !ok2 {
		return nil, false
	}
	return byOrder(la, op, lb, c.latticeLE)
}

// latticeLE is l <= r (l < r when strict).
func (c *canonizer) latticeLE(l, r *lattice, strict bool) (*formula, bool) {
	both := func(join func(...*formula) *formula, x1, y1, x2, y2 *lattice) (*formula, bool) {
		f1, ok1 := c.latticeLE(x1, y1, strict)
		f2, ok2 := c.latticeLE(x2, y2, strict)
		return join(f1, f2), ok1 && ok2
	}
	switch {
	case l.op == latMax:
		return both(and, l.a, r, l.b, r)
	case l.op == latMin:
		return both(or, l.a, r, l.b, r)
	case r.op == latMin:
		return both(and, l, r.a, l, r.b)
	case r.op == latMax:
		return both(or, l, r.a, l, r.b)
	}
	op := dsl.OpLE
	if strict {
		op = dsl.OpLT
	}
	return c.comparePieces(l.leaf, op, r.leaf)
}
