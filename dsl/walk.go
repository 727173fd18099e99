package dsl

// Any reports whether pred holds for some node of the tree rooted at e,
// visited in Inspect's order, stopping at the first.
func Any(e Expr, pred func(Expr) bool) bool {
	found := false
	Inspect(e, func(x Expr) bool {
		found = found || pred(x)
		return !found
	})
	return found
}

// Inspect walks the expression tree rooted at e in depth-first order, calling
// f for each node before its children; if f returns false the children are
// skipped. Nil expressions are ignored.
func Inspect(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	switch x := e.(type) {
	case *UnaryExpr:
		Inspect(x.X, f)
	case *BinaryExpr:
		Inspect(x.X, f)
		Inspect(x.Y, f)
	case *CompareExpr:
		for _, o := range x.Operands {
			Inspect(o, f)
		}
	case *CondExpr:
		Inspect(x.Then, f)
		Inspect(x.Cond, f)
		Inspect(x.Else, f)
	case *CallExpr:
		Inspect(x.Fun, f)
		for _, a := range x.Args {
			Inspect(a, f)
		}
	case *IndexExpr:
		Inspect(x.X, f)
		for _, i := range x.Indices {
			Inspect(i, f)
		}
	case *SelectorExpr:
		Inspect(x.X, f)
	case *KeywordArg:
		Inspect(x.Value, f)
	case *ParenExpr:
		Inspect(x.X, f)
	case *TupleExpr:
		for _, el := range x.Elems {
			Inspect(el, f)
		}
	case *GeneratorExpr:
		Inspect(x.Elt, f)
		Inspect(x.Iter, f)
	}
}

// FirstStmt returns the first statement of stmts for which match holds, or
// nil: in source order, the statements of an if's or a for's blocks right
// after the if or for itself.
func FirstStmt(stmts []Stmt, match func(Stmt) bool) Stmt {
	for _, st := range stmts {
		if match(st) {
			return st
		}
		var inner Stmt
		switch st := st.(type) {
		case *IfStmt:
			if inner = FirstStmt(st.Then, match); inner == nil {
				inner = FirstStmt(st.Else, match)
			}
		case *ForStmt:
			inner = FirstStmt(st.Body, match)
		}
		if inner != nil {
			return inner
		}
	}
	return nil
}

// EachStmt calls fn on every statement of stmts in FirstStmt's order.
func EachStmt(stmts []Stmt, fn func(Stmt)) {
	FirstStmt(stmts, func(st Stmt) bool { fn(st); return false })
}
