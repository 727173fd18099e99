package dsl

import (
	"strconv"
	"strings"
)

// Node is implemented by every AST node. Span covers the node's text, from
// its first to just past its last byte, like go/ast's Pos()/End().
type Node interface {
	Span() Span
}

// File is one parsed .flex file.
type File struct {
	// Source is the text the file was parsed from.
	Source *Source
	// Decls are the top-level declarations in source order.
	Decls []Decl
	// Comments are all `# ...` comments in source order, kept so that the
	// printer can put them back.
	Comments []*Comment
}

// Span of a File covers the whole text.
func (f *File) Span() Span { return Span{0, len(f.Source.Text)} }

// Comment is a `#` comment running to the end of its line.
type Comment struct {
	// Sp covers '#' up to, not including, the newline.
	Sp Span
	// Text is the comment including the '#', e.g. "# window in tokens".
	Text string
	// Python is set for a line of Python that the parser reads past like a
	// comment because it does not change what a mod computes: a decorator
	// such as `@lru_cache`, `fn.__name__ = "..."`, a string statement in a
	// def body. Text is the line as written (without its own '#').
	Python bool
}

// Span implements Node.
func (c *Comment) Span() Span { return c.Sp }

// Ident is a name as written: a mod, param, buffer, mod parameter, let
// binding, built-in or setting name. Dotted names such as `torch.tanh` are
// one Ident whose Name contains the dot.
type Ident struct {
	// Sp covers the name.
	Sp Span
	// Name is the identifier text, e.g. "q_idx" or "torch.where".
	Name string
	// Lambda is set where the name stands for a lambda written in place
	// (`mask = lambda b, h, q_idx, kv_idx: q_idx >= kv_idx`, or an argument
	// of or_masks in a setting): the parser made it a def of its own
	// (ModDecl.InPlace), declared before the attention block, and Sp covers
	// the lambda.
	Lambda *ModDecl
}

// Span implements Node.
func (x *Ident) Span() Span { return x.Sp }

// ---------------------------------------------------------------------------
// Declarations

// Decl is a top-level declaration: *ParamDecl, *BufferDecl, *ModDecl or
// *AttentionDecl.
type Decl interface {
	Node
	// DeclName is the declared name, e.g. `WINDOW` in `param WINDOW = 1024`.
	DeclName() *Ident
	declNode()
}

// ParamDecl declares a compile-time constant that `-D NAME=VALUE` may
// override with a value of the same type:
//
//	param WINDOW = 1024
//	param CAP = 30.0
//
// A Python module constant pasted with the defs that read it,
// `SLIDING_WINDOW = 1024` at the start of a line, is a param too (Python).
type ParamDecl struct {
	// Sp covers `param` (or the name of a Python constant) through the end
	// of Value.
	Sp Span
	// Name is the param's name, e.g. WINDOW.
	Name *Ident
	// Value is a constant expression, e.g. `1024`, `30.0`, `True` or `2 * W`.
	Value Expr
	// Python is set for a param written as a Python assignment, without
	// the keyword.
	Python bool
}

// BufferDecl declares a captured tensor, an input of the kernel whose
// contents may change without recompiling:
//
//	buffer doc: i32[KV] segments
//	buffer bias: f32[H, 8191]
type BufferDecl struct {
	// Sp covers `buffer` through the property or the closing bracket.
	Sp Span
	// Name is the buffer's name, e.g. doc.
	Name *Ident
	// DType is the element type name: i32, i64, f16, bf16, f32, f64 or bool.
	DType *Ident
	// Dims are the extents, each a constant or an expression in the size
	// symbols B H HKV Q KV, e.g. `KV` or `8191`.
	Dims []Expr
	// Extents are Dims as the checker reduced them, one canonical text each
	// (params and -D overrides folded: check.Dim.Text), which the code
	// generator writes into the manifest and every consumer evaluates with
	// hipsrc.EvalDims; nil until the declaration is checked, and when it
	// has errors.
	Extents []string
	// Property is an optional declared property, e.g. `segments` (the buffer
	// holds non-decreasing document ids: documents are contiguous); nil when
	// absent.
	Property *Ident
}

// ModKind says whether a mod is a mask_mod or a score_mod.
type ModKind int

const (
	// MaskMod is `mask name(b, h, q, kv) = <bool>`.
	MaskMod ModKind = iota
	// ScoreMod is `score name(score, b, h, q, kv) = <float>`.
	ScoreMod
)

// String returns "mask" or "score", the declaring keyword.
func (k ModKind) String() string {
	if k == ScoreMod {
		return "score"
	}
	return "mask"
}

// Arity is the number of index parameters a mod of this kind takes:
// 4 for a mask (b, h, q, kv), 5 for a score (score, b, h, q, kv).
func (k ModKind) Arity() int {
	if k == ScoreMod {
		return 5
	}
	return 4
}

// ModDecl declares a mask_mod or score_mod, optionally as a factory with
// constant arguments (like attention-gym's generate_sliding_window(w)):
//
//	mask causal(b, h, q_idx, kv_idx) = q_idx >= kv_idx
//	mask sliding(W)(b, h, q, kv) = q >= kv and q - kv <= W
//	score softcap(score, b, h, q, kv) = CAP * tanh(score / CAP)
//	mask dilated(b, h, q, kv) {
//	    let d = abs(q - kv)
//	    d <= 2048 and d % 2 == 0
//	}
type ModDecl struct {
	// Sp covers the keyword through the end of the body.
	Sp Span
	// Kind is MaskMod or ScoreMod.
	Kind ModKind
	// Name is the mod's name, e.g. causal.
	Name *Ident
	// FactoryParams are the constant parameters of a factory, e.g. `W` in
	// `mask sliding(W)(b, h, q, kv)`; nil for a plain mod.
	FactoryParams []*Ident
	// Variadic is set when the last of a def factory's FactoryParams is
	// written `*name` (`def and_masks(*mask_mods)`): it binds the call's
	// remaining positional arguments, as a tuple (FactoryParamNames shows
	// it).
	Variadic bool
	// Params are the index parameters in order, names free: (b, h, q, kv)
	// for a mask, (score, b, h, q, kv) for a score.
	Params []*Ident
	// Body is the mod's value.
	Body *Body
	// Def is true when the mod was written as a Python function:
	// `def causal(b, h, q_idx, kv_idx):` with an indented body ending in
	// `return`. Its kind follows from its parameter count (4: a mask, 5: a
	// score).
	Def bool
	// Inner names the inner function of a factory written as a Python
	// closure, `def window(W): def inner(b, h, q, kv): ...; return inner`;
	// nil otherwise.
	Inner *Ident
	// Annotations are a def's type annotations as written (`W: int`,
	// `-> Tensor`), kept for the printer and otherwise ignored; nil when
	// there are none.
	Annotations *Annotations
	// Doc is the docstring of a factory def's outer function, or nil (the
	// docstring of the function that computes the value is Body.Doc).
	Doc *StringLit
	// Locals are a factory def's other inner defs, after the first (Inner):
	// each a mod or helper function (Helper) that sees the factory's
	// parameters, bound by name in the factory's statements after its
	// inner defs and in the inner functions' bodies. Nil when there is one
	// inner def.
	Locals []*ModDecl
	// Helper is set for a top-level def that is neither a mod (4 or 5
	// parameters) nor a factory: a helper function, inlined where a mod
	// calls it, with any number of parameters and a value of any scalar
	// type. Kind is MaskMod and means nothing for it.
	Helper bool
	// Lambda is set for a def written `NAME = lambda params: expr` at the
	// top of the file (printed back that way), and for a lambda written in
	// place (InPlace).
	Lambda bool
	// InnerLambda is set for a factory def that returns its inner function
	// written as a lambda (`def sliding(w): return lambda b, h, q_idx,
	// kv_idx: ...`): Inner's name is made up (the factory's name and
	// `_lambda`, spanning the keyword) and the printer keeps the def as
	// written.
	InnerLambda bool
	// InPlace is set for a lambda written inside an attention setting: its
	// name is made up (the block's name, `_lambda` and a number) and the
	// Ident that stands for it prints it back where it was written.
	InPlace bool
	// KwOnly is the number of a plain def's trailing parameters after a
	// bare `*` (Python's keyword-only parameters: arguments reach them only
	// by name); such a def is a Helper.
	KwOnly int
	// FactoryKwOnly is the number of a factory's trailing FactoryParams
	// after a bare `*` (`def sliding(*, window)`): a call passes them only
	// by name.
	FactoryKwOnly int
	// FactoryPre are a factory def's statements before its inner def:
	// assignments of compile-time values (`half = window // 2`), `if`,
	// `assert` and `pass`, run when the factory is called; the inner
	// function sees the names they bind. Nil when there are none.
	FactoryPre []Stmt
	// DefStmts is set for a factory def whose inner defs stand inside its
	// `if` blocks (`if offsets is not None: def mask_mod(...): ... else:
	// mask_mod = causal`), as transformers' factories choose a mask_mod.
	// Each of its inner defs (Inner, then Locals) is then a statement of
	// FactoryPre: an assignment of its name whose value is the Ident named
	// DefKey(i) (0 for Inner, i for Locals[i-1]), which binds the name only
	// where the statement runs; FactoryPre may hold `return`, and
	// FactoryResult is the factory's last `return`.
	DefStmts bool
	// FactoryLets are a factory def's assignments after its inner def,
	// binding names to mods built from it (`both = and_masks(inner,
	// causal)`); FactoryResult is what the factory returns when that is not
	// its inner function itself (nil then): a name bound there, or a mod
	// expression such as `or_masks(inner, causal)`.
	FactoryLets   []*LetStmt
	FactoryResult Expr
	// Defaults are a factory def's default values, parallel to
	// FactoryParams (for a Helper, to Params; nil where a parameter has
	// none); nil when there are none. A call may leave out a parameter that
	// has one.
	Defaults []Expr
}

// DefKey is the name of the Ident that stands for inner def i of a factory
// with DefStmts (0 its Inner, i > 0 its Locals[i-1]); no name written in a
// file can be one.
func DefKey(i int) string { return ".def" + strconv.Itoa(i) }

// IsDefKey reports whether name is a DefKey.
func IsDefKey(name string) bool { return strings.HasPrefix(name, ".def") }

// Annotations are the type annotations of a def. Each slice is parallel to
// the parameter list it annotates, nil where a parameter has none. An
// annotation is kept as an Ident whose Name is its source text, a name or
// an expression such as `tuple[int, int]` or `int | None`.
type Annotations struct {
	// FactoryParams annotate ModDecl.FactoryParams, Params ModDecl.Params.
	FactoryParams, Params []*Ident
	// Returns annotates the outer function (`-> Tensor`), InnerReturns a
	// factory's inner function; nil when absent.
	Returns, InnerReturns *Ident
}

// Body is a mod body: either `= expr` (Lets empty), a block
// `{ let x = ... ; result }`, or a def's indented statements
// `x = ...` ending in `return result`.
type Body struct {
	// Sp covers `= expr`, the braces, or a def's `:` through its return.
	Sp Span
	// Block is true when the body was written with braces.
	Block bool
	// Def is true for a def's body: its Lets are assignments (LetStmt.Assign)
	// that may rebind a name, each binding seen by the statements after
	// it (single static assignment).
	Def bool
	// Doc is a def's docstring, or nil.
	Doc *StringLit
	// Lets are the local bindings, in order; each may use the previous ones.
	Lets []*LetStmt
	// Result is the expression the mod returns. In a body with Stmts it
	// is nil.
	Result Expr
	// Stmts are the statements of a def body that is not straight-line:
	// `if`/`elif`/`else` and `assert` over compile-time values, `return` in
	// a branch. Nil otherwise; when set, Lets lists every assignment in it
	// (in source order) for the tools that read bindings.
	Stmts []Stmt
}

// Span implements Node.
func (b *Body) Span() Span { return b.Sp }

// LetStmt is a local binding in a block body, `let d = abs(q - kv)`, or an
// assignment in a def body, `d = (q_idx - kv_idx).abs()`.
type LetStmt struct {
	// Sp covers `let` (or the name of an assignment) through the end of Value.
	Sp Span
	// Assign is true for a def body's assignment, written without `let`.
	Assign bool
	// AugOp is the operator of an augmented assignment, OpAdd for
	// `x += e`, whose Value the parser builds as the BinaryExpr `x + e`
	// (its X an Ident spanning the target name); OpInvalid otherwise.
	AugOp Op
	// Name is the bound name, e.g. d.
	Name *Ident
	// Value is the bound expression.
	Value Expr
	// Unpack is set on the hidden first assignment of an unpacking,
	// `a, b = pair`: Name is a name no source can write, Value the tuple,
	// Unpack the number of targets; the targets' assignments that follow
	// index it (`a = NAME[0]`).
	Unpack int
}

// Span implements Node.
func (s *LetStmt) Span() Span { return s.Sp }

// UnpackPrefix begins the name of an unpacking's hidden first assignment
// (LetStmt.Unpack), which no source can write.
const UnpackPrefix = ".unpack"

// UnpackTarget reports whether s assigns one target of an unpacking: its
// value indexes the hidden first assignment (`a = .unpackN[0]`).
func (s *LetStmt) UnpackTarget() bool {
	ix, ok := s.Value.(*IndexExpr)
	if !ok {
		return false
	}
	id, ok := ix.X.(*Ident)
	return ok && strings.HasPrefix(id.Name, UnpackPrefix)
}

// AttentionDecl declares one attention layer configuration, the unit that
// is classified and compiled:
//
//	attention doc_layer {
//	    mask = and_masks(causal, same_doc)
//	    score = softcap
//	    layout = bshd
//	}
type AttentionDecl struct {
	// Sp covers `attention` through the closing brace.
	Sp Span
	// Name is the block's name, e.g. doc_layer.
	Name *Ident
	// Settings are the `key = value` lines in source order.
	Settings []*Setting
}

// Setting is one `key = value` line of an attention block, e.g.
// `window = (1023, 0)` or `mask = and_masks(causal, same_doc)`.
type Setting struct {
	// Sp covers key through value.
	Sp Span
	// Key is the setting name, e.g. window.
	Key *Ident
	// Value is an expression: a mod reference or call, a literal, a tuple,
	// or a bare word such as `bshd` or `bf16` (an *Ident).
	Value Expr
}

// Span implements Node.
func (s *Setting) Span() Span { return s.Sp }

// Span implements Node.
func (d *ParamDecl) Span() Span { return d.Sp }

// Span implements Node.
func (d *BufferDecl) Span() Span { return d.Sp }

// FactoryParamNames are the factory's parameters as the def writes them,
// the variadic one with its `*`; nil parameters (a broken declaration) are
// left out.
func (d *ModDecl) FactoryParamNames() []string {
	var out []string
	for i, p := range d.FactoryParams {
		if p == nil {
			continue
		}
		if d.Variadic && i == len(d.FactoryParams)-1 {
			out = append(out, "*"+p.Name)
		} else {
			out = append(out, p.Name)
		}
	}
	return out
}

// Span implements Node.
func (d *ModDecl) Span() Span { return d.Sp }

// Span implements Node.
func (d *AttentionDecl) Span() Span { return d.Sp }

// DeclName implements Decl.
func (d *ParamDecl) DeclName() *Ident { return d.Name }

// DeclName implements Decl.
func (d *BufferDecl) DeclName() *Ident { return d.Name }

// DeclName implements Decl.
func (d *ModDecl) DeclName() *Ident { return d.Name }

// DeclName implements Decl.
func (d *AttentionDecl) DeclName() *Ident { return d.Name }

func (*ParamDecl) declNode()     {}
func (*BufferDecl) declNode()    {}
func (*ModDecl) declNode()       {}
func (*AttentionDecl) declNode() {}

// ---------------------------------------------------------------------------
// Expressions

// Expr is an expression node: *Ident, *IntLit, *FloatLit, *BoolLit,
// *StringLit, *UnaryExpr, *BinaryExpr, *CompareExpr, *CondExpr, *CallExpr,
// *SelectorExpr, *KeywordArg, *IndexExpr, *ParenExpr or *TupleExpr.
type Expr interface {
	Node
	exprNode()
}

// IntLit is an integer literal: `1024`, `0x7f`, `1_000`.
type IntLit struct {
	// Sp covers the literal.
	Sp Span
	// Raw is the literal as written, e.g. "1_000"; the printer keeps it.
	Raw string
	// Value is the parsed value, e.g. 1000.
	Value int64
}

// FloatLit is a floating-point literal: `30.0`, `1e-4`, `.5`.
type FloatLit struct {
	// Sp covers the literal.
	Sp Span
	// Raw is the literal as written, e.g. "1e-4".
	Raw string
	// Value is the parsed value.
	Value float64
}

// BoolLit is `True`, `true`, `False` or `false`.
type BoolLit struct {
	// Sp covers the literal.
	Sp Span
	// Raw is the spelling used, e.g. "True".
	Raw string
	// Value is the truth value.
	Value bool
}

// StringLit is a string literal, `"inf"` or `'floor'`. Strings are only
// meaningful as the argument of `float("inf")` and as a keyword value such
// as `rounding_mode="floor"`; the checker refuses them elsewhere.
type StringLit struct {
	// Sp covers the literal with its quotes.
	Sp Span
	// Raw is the literal as written, quotes included.
	Raw string
	// Value is the text between the quotes.
	Value string
}

// SelectorExpr is a method selected on a value, `(q_idx - kv_idx).abs`
// in `(q_idx - kv_idx).abs()`. Dotted module names such as `torch.where`
// are an *Ident instead.
type SelectorExpr struct {
	// Sp covers X through Sel.
	Sp Span
	// X is the receiver.
	X Expr
	// Sel is the method name, e.g. abs.
	Sel *Ident
}

// KeywordArg is a keyword argument of a call, `min=0` in `x.clamp(min=0)`
// or `rounding_mode="floor"` in `torch.div(a, b, rounding_mode="floor")`.
type KeywordArg struct {
	// Sp covers the name through the value.
	Sp Span
	// Name is the keyword, e.g. min.
	Name *Ident
	// Value is the argument's value.
	Value Expr
}

// UnaryExpr is a prefix operation: `-x`, `+x`, `~m`, `not m`.
type UnaryExpr struct {
	// Sp covers the operator and operand.
	Sp Span
	// Op is OpNeg, OpPos, OpInvert or OpNot.
	Op Op
	// X is the operand.
	X Expr
}

// BinaryExpr is an infix arithmetic or logical operation: `q - kv`,
// `a and b`, `m1 & m2`, `2 ** x`.
type BinaryExpr struct {
	// Sp covers both operands.
	Sp Span
	// Op is the operator, e.g. OpSub.
	Op Op
	// OpSp covers the operator token, e.g. the `//` in `q // 0`.
	OpSp Span
	// X is the left operand.
	X Expr
	// Y is the right operand.
	Y Expr
}

// CompareExpr is a comparison, possibly chained as in Python:
// `q >= kv` has Operands [q, kv] and Ops [OpGE]; `0 <= q - kv <= W` has
// three operands and two ops and means `0 <= q - kv and q - kv <= W`.
type CompareExpr struct {
	// Sp covers the whole chain.
	Sp Span
	// Operands has len(Ops)+1 elements.
	Operands []Expr
	// Ops are comparison operators: OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE.
	Ops []Op
}

// CondExpr is Python's conditional `Then if Cond else Else`. The built-in
// `where(c, x, y)` is a CallExpr, not a CondExpr.
type CondExpr struct {
	// Sp covers the whole expression.
	Sp Span
	// Then is the value when Cond holds.
	Then Expr
	// Cond is the condition.
	Cond Expr
	// Else is the value otherwise.
	Else Expr
}

// CallExpr is a call: a built-in (`abs(q - kv)`, `torch.tanh(x)`), a mod
// (`causal(b, h, q, kv)`), a mask combinator (`and_masks(a, b)`) or a
// factory instantiation (`sliding(1024)`, whose result may itself be called:
// `sliding(1024)(b, h, q, kv)`).
type CallExpr struct {
	// Sp covers the callee through the closing parenthesis.
	Sp Span
	// Fun is the callee, usually an *Ident, or a *CallExpr for a factory
	// applied and then called.
	Fun Expr
	// Args are the arguments in order.
	Args []Expr
}

// IndexExpr reads a captured buffer: `doc[q]`, `bias[h, q - kv + 4095]`.
type IndexExpr struct {
	// Sp covers the buffer name through the closing bracket.
	Sp Span
	// X is the indexed buffer, an *Ident.
	X Expr
	// Indices are the index expressions, one per buffer dimension.
	Indices []Expr
}

// ParenExpr is a parenthesised expression, kept so that the printer writes
// the parentheses the user wrote.
type ParenExpr struct {
	// Sp covers the parentheses.
	Sp Span
	// X is the inner expression.
	X Expr
}

// TupleExpr is a parenthesised comma list, used by settings such as
// `window = (1023, 0)`.
type TupleExpr struct {
	// Sp covers the parentheses.
	Sp Span
	// Elems are the elements (at least two, one with a trailing comma, or
	// none: `()`).
	Elems []Expr
}

// GeneratorExpr is a generator expression, `ELT for VAR in ITER`, as the
// argument of all() or any() (`all(callable(m) for m in mask_mods)`),
// unrolled over ITER at compile time.
type GeneratorExpr struct {
	// Sp covers ELT through ITER.
	Sp   Span
	Elt  Expr
	Var  *Ident
	Iter Expr
}

// Span implements Node.
func (x *IntLit) Span() Span { return x.Sp }

// Span implements Node.
func (x *FloatLit) Span() Span { return x.Sp }

// Span implements Node.
func (x *BoolLit) Span() Span { return x.Sp }

// Span implements Node.
func (x *StringLit) Span() Span { return x.Sp }

// Span implements Node.
func (x *SelectorExpr) Span() Span { return x.Sp }

// Span implements Node.
func (x *KeywordArg) Span() Span { return x.Sp }

// Span implements Node.
func (x *UnaryExpr) Span() Span { return x.Sp }

// Span implements Node.
func (x *BinaryExpr) Span() Span { return x.Sp }

// Span implements Node.
func (x *CompareExpr) Span() Span { return x.Sp }

// Span implements Node.
func (x *CondExpr) Span() Span { return x.Sp }

// Span implements Node.
func (x *CallExpr) Span() Span { return x.Sp }

// Span implements Node.
func (x *IndexExpr) Span() Span { return x.Sp }

// Span implements Node.
func (x *ParenExpr) Span() Span { return x.Sp }

// Span implements Node.
func (x *TupleExpr) Span() Span { return x.Sp }

// Span implements Node.
func (x *GeneratorExpr) Span() Span { return x.Sp }

func (*Ident) exprNode()         {}
func (*IntLit) exprNode()        {}
func (*FloatLit) exprNode()      {}
func (*BoolLit) exprNode()       {}
func (*StringLit) exprNode()     {}
func (*SelectorExpr) exprNode()  {}
func (*KeywordArg) exprNode()    {}
func (*UnaryExpr) exprNode()     {}
func (*BinaryExpr) exprNode()    {}
func (*CompareExpr) exprNode()   {}
func (*CondExpr) exprNode()      {}
func (*CallExpr) exprNode()      {}
func (*IndexExpr) exprNode()     {}
func (*ParenExpr) exprNode()     {}
func (*TupleExpr) exprNode()     {}
func (*GeneratorExpr) exprNode() {}

// Unparen strips any number of enclosing parentheses.
func Unparen(e Expr) Expr {
	for {
		p, ok := e.(*ParenExpr)
		if !ok {
			return e
		}
		e = p.X
	}
}

// Stmt is a statement of a def body that is not straight-line code
// (Body.Stmts): an assignment (*LetStmt), `return`, `if`/`elif`/`else`,
// `assert` or `pass`. maskc decides every `if` and `assert` at compile time.
type Stmt interface {
	Node
	stmtNode()
}

func (*LetStmt) stmtNode()     {}
func (*ReturnStmt) stmtNode()  {}
func (*IfStmt) stmtNode()      {}
func (*AssertStmt) stmtNode()  {}
func (*PassStmt) stmtNode()    {}
func (*ForStmt) stmtNode()     {}
func (*RaiseStmt) stmtNode()   {}
func (*InPlaceStmt) stmtNode() {}

// ForStmt is `for VAR in range(...):` with its block, unrolled at compile
// time: range's arguments must be constants.
type ForStmt struct {
	Sp  Span
	Var *Ident
	// Targets are the names of `for a, b, c in ...` (Var is the first);
	// nil for one name.
	Targets []*Ident
	Iter    Expr // the `range(...)` call, tuple or buffer row as written
	Body    []Stmt
}

// Span implements Node.
func (s *ForStmt) Span() Span { return s.Sp }

// ReturnStmt is `return VALUE` in a def body with control flow.
type ReturnStmt struct {
	Sp    Span
	Value Expr
}

// Span implements Node.
func (s *ReturnStmt) Span() Span { return s.Sp }

// IfStmt is `if COND:` with its block, and the `elif`/`else` after it:
// an `elif` is an IfStmt alone in Else.
type IfStmt struct {
	// Sp covers the `if` (or `elif`) through the end of its last block.
	Sp Span
	// KeywordSp covers the `if` or `elif`.
	KeywordSp Span
	Cond      Expr
	Then      []Stmt
	// Else is the `else` block, an `elif` as a single IfStmt, or nil.
	Else []Stmt
}

// Span implements Node.
func (s *IfStmt) Span() Span { return s.Sp }

// AssertStmt is `assert COND` or `assert COND, MESSAGE`.
type AssertStmt struct {
	Sp   Span
	Cond Expr
	// Msg is the message expression, or nil.
	Msg Expr
}

// Span implements Node.
func (s *AssertStmt) Span() Span { return s.Sp }

// RaiseStmt is `raise EXC` (or a bare `raise`): when Python would reach
// it, maskc reports it, with the expression as written.
type RaiseStmt struct {
	Sp Span
	// Exc is the raised expression, or nil.
	Exc Expr
}

// Span implements Node.
func (s *RaiseStmt) Span() Span { return s.Sp }

// InPlaceStmt is a statement of a factory's set-up (its statements before
// its inner def) that changes a tensor in place: an assignment into it
// (`ids[a:b] = 3`, `sel[i, j] |= x`) or an in-place method (`ids.fill_(0)`,
// `x.scatter_(...)`); or one that builds a tensor with a list or a slice
// (Built). maskc runs no set-up code on tensors; the checker
// refuses it where the factory is called. The printer keeps the factory as
// written.
type InPlaceStmt struct {
	// Sp covers the statement.
	Sp Span
	// Target is the tensor changed, e.g. ids.
	Target *Ident
	// Method is the in-place method (`fill_`), or "" for an assignment
	// into the tensor.
	Method string
	// Built, when not "", makes the statement an assignment to Target
	// (`offsets = torch.cat([zero, counts.cumsum(0)[:-1]])`) of Python that
	// builds a tensor with a construct no mod has, which it names: "a list
	// `[...]`" or "a slice `[...:...]`".
	Built string
	// Also are the further names an unpacking Built assigns (`a, b = ...`).
	Also []*Ident
}

// Span implements Node.
func (s *InPlaceStmt) Span() Span { return s.Sp }

// PassStmt is `pass`.
type PassStmt struct{ Sp Span }

// Span implements Node.
func (s *PassStmt) Span() Span { return s.Sp }

// Exprs lists every expression of a body: the lets' values, then the
// result, or, in a body with statements, the conditions, assert messages
// and returned values too (in source order within each kind).
func (b *Body) Exprs() []Expr {
	out := make([]Expr, 0, len(b.Lets)+1)
	for _, l := range b.Lets {
		out = append(out, l.Value)
	}
	if b.Result != nil {
		out = append(out, b.Result)
	}
	var walk func([]Stmt)
	walk = func(stmts []Stmt) {
		for _, st := range stmts {
			switch st := st.(type) {
			case *ReturnStmt:
				out = append(out, st.Value)
			case *AssertStmt:
				out = append(out, st.Cond)
				if st.Msg != nil {
					out = append(out, st.Msg)
				}
			case *RaiseStmt:
				if st.Exc != nil {
					out = append(out, st.Exc)
				}
			case *IfStmt:
				out = append(out, st.Cond)
				walk(st.Then)
				walk(st.Else)
			case *ForStmt:
				out = append(out, st.Iter)
				walk(st.Body)
			}
		}
	}
	walk(b.Stmts)
	return out
}
