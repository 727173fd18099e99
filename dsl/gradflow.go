package dsl

// GradOperands returns the operands of node e of a lowered expression
// through which a derivative can flow, following torch.autograd: the
// arithmetic operators (+ - * / % ** and unary - +), the branches of
// `where` and `x if c else y`, and the arguments of the built-ins marked
// Grad (min, max, clamp, abs, float, the identity on a float, and every
// float function: exp, sin, ...). Nothing flows through a
// comparison, a logical or bitwise operator, a condition, a buffer index,
// `//` (piecewise constant; torch's backward raises for floor_divide, maskc
// takes its derivative as 0 and the checker warns), or floor and ceil
// (torch defines their derivative as zero), or int (an integer tensor
// carries no gradient in torch). An operand used twice (x * x)
// is listed twice. Whether a listed operand carries a gradient also
// depends on its type: only floats do.
//
// The grad package differentiates along these edges and the checker warns
// where a dependence on the score or a float buffer is cut off by another
// edge; both read this one definition.
func GradOperands(e Expr) []Expr {
	switch x := e.(type) {
	case *UnaryExpr:
		if x.Op == OpNeg || x.Op == OpPos {
			return []Expr{x.X}
		}
	case *BinaryExpr:
		switch x.Op {
		case OpAdd, OpSub, OpMul, OpDiv, OpMod, OpPow:
			return []Expr{x.X, x.Y}
		}
	case *CondExpr:
		return []Expr{x.Then, x.Else}
	case *CallExpr:
		id, ok := x.Fun.(*Ident)
		if !ok {
			return nil
		}
		if id.Name == "where" {
			if len(x.Args) == 3 {
				return []Expr{x.Args[1], x.Args[2]}
			}
		} else if b := Builtins[id.Name]; b != nil && b.Grad {
			return append([]Expr(nil), x.Args...)
		}
	}
	return nil
}

// Operands returns the direct operands of e in the order Inspect visits
// them (a call's callee and an index's buffer name excluded).
func Operands(e Expr) []Expr {
	switch x := e.(type) {
	case *UnaryExpr:
		return []Expr{x.X}
	case *BinaryExpr:
		return []Expr{x.X, x.Y}
	case *CompareExpr:
		return append([]Expr(nil), x.Operands...)
	case *CondExpr:
		return []Expr{x.Then, x.Cond, x.Else}
	case *CallExpr:
		return append([]Expr(nil), x.Args...)
	case *IndexExpr:
		return append([]Expr(nil), x.Indices...)
	case *ParenExpr:
		return []Expr{x.X}
	}
	return nil
}
