package dsl_test

import (
	"slices"
	"testing"

	"github.com/maskc/maskc/dsl"
)

// TestAny: Any finds a node anywhere in the tree (here the kv index inside
// a call inside a comparison), stops at the first, and is false on a tree
// without one and on nil.
func TestAny(t *testing.T) {
	kv := &dsl.VarRef{Var: dsl.VarKV}
	e := &dsl.CompareExpr{Ops: []dsl.Op{dsl.OpLT}, Operands: []dsl.Expr{
		&dsl.VarRef{Var: dsl.VarQ},
		&dsl.CallExpr{Fun: &dsl.Ident{Name: "abs"}, Args: []dsl.Expr{kv}},
	}}
	isKV := func(x dsl.Expr) bool { r, ok := x.(*dsl.VarRef); return ok && r.Var == dsl.VarKV }
	visits := 0
	counting := func(x dsl.Expr) bool { visits++; return isKV(x) }
	if !dsl.Any(e, counting) {
		t.Error("Any misses the kv index inside the call")
	}
	if visits != 5 { // the comparison, q, the call, abs, kv
		t.Errorf("%d nodes visited, want 5 (stopping at kv)", visits)
	}
	if dsl.Any(&dsl.VarRef{Var: dsl.VarQ}, isKV) || dsl.Any(nil, isKV) {
		t.Error("Any finds kv where there is none")
	}
}

// TestFirstStmtOrder: statements are visited in source order, a block's
// statements right after its if or for (then before else); FirstStmt stops
// at the first match.
func TestFirstStmtOrder(t *testing.T) {
	named := func(n int) *dsl.PassStmt { return &dsl.PassStmt{Sp: dsl.Span{Start: n, End: n}} }
	ret := &dsl.ReturnStmt{}
	stmts := []dsl.Stmt{
		named(1),
		&dsl.IfStmt{Then: []dsl.Stmt{named(2)}, Else: []dsl.Stmt{&dsl.ForStmt{Body: []dsl.Stmt{named(3), ret}}, named(4)}},
		named(5),
	}
	var order []int
	dsl.EachStmt(stmts, func(st dsl.Stmt) {
		switch st := st.(type) {
		case *dsl.PassStmt:
			order = append(order, st.Sp.Start)
		case *dsl.IfStmt:
			order = append(order, -1)
		case *dsl.ForStmt:
			order = append(order, -2)
		case *dsl.ReturnStmt:
			order = append(order, -3)
		}
	})
	if want := []int{1, -1, 2, -2, 3, -3, 4, 5}; !slices.Equal(order, want) {
		t.Errorf("EachStmt order %v, want %v", order, want)
	}

	isReturn := func(st dsl.Stmt) bool { _, ok := st.(*dsl.ReturnStmt); return ok }
	if got := dsl.FirstStmt(stmts, isReturn); got != dsl.Stmt(ret) {
		t.Errorf("FirstStmt = %v, want the return", got)
	}
	if got := dsl.FirstStmt(stmts[:1], isReturn); got != nil {
		t.Errorf("FirstStmt without a return = %v, want nil", got)
	}
	seen := 0
	dsl.FirstStmt(stmts, func(st dsl.Stmt) bool { seen++; return isReturn(st) })
	if seen != 6 {
		t.Errorf("FirstStmt looked at %d statements, want 6 (it stops at the return)", seen)
	}
}
