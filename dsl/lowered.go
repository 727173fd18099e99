package dsl

import "math"

// Var is an index variable of a mod, or a run-time size symbol, as it
// appears in a lowered expression.
type Var int

const (
	// VarB is the batch index (first mod parameter).
	VarB Var = iota
	// VarH is the query head index.
	VarH
	// VarQ is the query index, top-left aligned, in [0, Q).
	VarQ
	// VarKV is the key/value index, in [0, KV).
	VarKV
	// VarScore is the scaled logit q.k*scale a score mod rewrites.
	VarScore
	// SizeB is the batch size B.
	SizeB
	// SizeH is the number of query heads H.
	SizeH
	// SizeHKV is the number of key/value heads HKV.
	SizeHKV
	// SizeQ is the query length Q.
	SizeQ
	// SizeKV is the key/value length KV.
	SizeKV
)

var varNames = [...]string{"b", "h", "q", "kv", "score", "B", "H", "HKV", "Q", "KV"}

// String returns the canonical name: "b", "h", "q", "kv", "score", "B",
// "H", "HKV", "Q" or "KV".
func (v Var) String() string {
	if v < 0 || int(v) >= len(varNames) {
		return "?"
	}
	return varNames[v]
}

// IsSize reports whether v is a run-time size symbol rather than an index.
func (v Var) IsSize() bool { return v >= SizeB }

// SizeVar returns the size symbol named s ("B", "H", "HKV", "Q", "KV").
func SizeVar(s string) (Var, bool) {
	for v := SizeB; v <= SizeKV; v++ {
		if varNames[v] == s {
			return v, true
		}
	}
	return 0, false
}

// VarRef is an index variable or size symbol in a lowered expression. The
// parser never produces it: the checker replaces a mod's parameter names
// (whatever the user called them) and the size symbols by VarRefs when it
// lowers a mod. Sp is the span of the identifier it replaced.
type VarRef struct {
	// Sp is the span of the identifier this reference came from.
	Sp Span
	// Var is the variable, e.g. VarQ.
	Var Var
}

// Span implements Node.
func (x *VarRef) Span() Span { return x.Sp }
func (*VarRef) exprNode()    {}

// Lowered is a mod reduced to one closed expression over the index
// variables, what the classifier, the code generator and the reference
// evaluator consume. In a lowered expression:
//
//   - index variables and size symbols are *VarRef;
//   - params, factory arguments and `inf` are literals (*IntLit, *FloatLit,
//     *BoolLit) and constant subexpressions are folded;
//   - calls to other mods, factories, and_masks/or_masks and let bindings
//     are inlined (and_masks(a, b) becomes `a and b`);
//   - chained comparisons are expanded: every *CompareExpr has exactly two
//     operands;
//   - *CallExpr only calls built-ins, Fun being an *Ident with the
//     canonical name from Builtins (no `torch.` prefix);
//   - *IndexExpr.X is an *Ident naming a declared buffer;
//   - there are no *ParenExpr or *TupleExpr.
//
// Nodes keep the spans of the source text they came from, so a later stage
// can point a diagnostic at the .flex line responsible.
type Lowered struct {
	// Kind is MaskMod (Expr is bool) or ScoreMod (Expr is float).
	Kind ModKind
	// Name describes the mod for messages, e.g. "and_masks(causal, same_doc)".
	Name string
	// Expr is the lowered body.
	Expr Expr
	// Types gives the type of every node of Expr: TypeBool, TypeInt or
	// TypeFloat.
	Types map[Expr]Type
	// Buffers are the declarations of the buffers Expr reads, in first-use
	// order.
	Buffers []*BufferDecl
}

// TypeOf returns the recorded type of e, or TypeInvalid.
func (l *Lowered) TypeOf(e Expr) Type {
	if l == nil || l.Types == nil {
		return TypeInvalid
	}
	return l.Types[e]
}

// DefaultScale is the softmax scale of a block without a `scale` setting:
// 1/sqrt(headDim). It is the one definition every package uses.
func DefaultScale(headDim int) float64 { return 1 / math.Sqrt(float64(headDim)) }
