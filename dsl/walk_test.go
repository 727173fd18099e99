package dsl_test

import (
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
