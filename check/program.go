package check

import (
	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// Options configure a check.
type Options struct {
	// Defines override params: NAME -> raw value text from `-D NAME=VALUE`,
	// typed by the param's declared value type (int param: int literal;
	// float param: int or float literal; bool param: true/false/True/False/1/0).
	Defines map[string]string
}

// Program is a checked file: its declarations resolved, typed and folded,
// and its attention blocks with lowered masks and scores.
type Program struct {
	// File is the parsed file that was checked.
	File *dsl.File
	// Params are the params in declaration order.
	Params []*Param
	// Buffers are the buffers in declaration order.
	Buffers []*Buffer
	// Mods are the user mods in declaration order (not the standard library).
	Mods []*Mod
	// Attentions are the attention blocks in declaration order.
	Attentions []*Attention
	// Info holds the side tables: types, constants, definitions and uses.
	Info *Info

	params     map[string]*Param
	buffers    map[string]*Buffer
	mods       map[string]*Mod
	attentions map[string]*Attention
	stdlib     *library
	modSize    map[*Mod]int
	// imports maps a name the file's `from math import ...` or `from torch
	// import ...` binds to the qualified name it stands for (pythonImports).
	imports map[string]string
}

// Param is a checked `param NAME = value`.
type Param struct {
	// Decl is the declaration.
	Decl *dsl.ParamDecl
	// Name is the param's name.
	Name string
	// Value is the folded value, after any -D override; invalid when the
	// declaration has errors.
	Value dsl.Value
	// Overridden is true when Value came from a -D override.
	Overridden bool

	used  bool
	ready bool // folded (and overridden); later params may use it
	// alias is set for a Python module constant bound to a mod (`mask_mod
	// = partial(prefix_lm, prefix_length=P)`, `both = and_masks(a, b)`):
	// it has no Value, and a use of its name is its expression.
	alias bool
	hover string // paramDoc, once ready: Symbol.Doc of the param
}

// Buffer is a checked `buffer NAME: dtype[dims] property`.
type Buffer struct {
	// Decl is the declaration.
	Decl *dsl.BufferDecl
	// Name is the buffer's name.
	Name string
	// DType is the element type, one of buftype.All's names (e.g. "i32").
	DType string
	// Dims are the extents in order.
	Dims []Dim
	// Segments is true when declared `segments`: non-decreasing document
	// ids (contiguous documents).
	Segments bool

	used bool
	src  *dsl.Source
}

// ElemType is the scalar type a read of the buffer gives (dsl.BufferElemType);
// TypeInvalid for an unknown dtype.
func (b *Buffer) ElemType() dsl.Type {
	if d := buftype.Lookup(b.DType); d != nil {
		return dsl.BufferElemType(d)
	}
	return dsl.TypeInvalid
}

// Dim is one buffer extent: Const + sum of Coef[v]*v over size symbols v,
// floor-divided by Div when Div > 1 (a per-block table's `Q // 64`, the
// ceiling `(Q + 63) // 64`).
type Dim struct {
	// Expr is the extent as written, e.g. `2 * KV - 1`.
	Expr dsl.Expr
	// Const is the constant term.
	Const int64
	// Coef maps size symbols (dsl.SizeB ... dsl.SizeKV) to their
	// coefficients; nil or empty for a constant extent.
	Coef map[dsl.Var]int64
	// Div is the positive constant divisor of a floor-divided extent,
	// (Const + sum Coef[v]*v) // Div; 0 for none. A constant extent is
	// folded and never has one.
	Div int64
	// Text is the extent as the checker reduced it (params and -D folded,
	// terms in the order B, H, HKV, Q, KV), e.g. "2 * KV - 1" or
	// "(Q + 63) // 64": what the manifest, the runtime and the Python
	// package read (dsl.BufferDecl.Extents), evaluated by hipsrc.EvalDims,
	// the one evaluator of extents. Empty when the extent has errors.
	Text string
}

// sizeValues names sizes as hipsrc.EvalDims reads them.
func sizeValues(sizes map[dsl.Var]int64) map[string]int64 {
	out := make(map[string]int64, 5)
	for v := dsl.SizeB; v <= dsl.SizeKV; v++ {
		out[v.String()] = sizes[v]
	}
	return out
}

// Eval computes the extent for concrete sizes (0 when it does not
// evaluate: an extent with errors, or int64 overflow).
func (d Dim) Eval(sizes map[dsl.Var]int64) int64 {
	n, _ := d.EvalExact(sizes)
	return n
}

// EvalExact is Eval, with ok false when the extent does not evaluate
// (int64 overflow). It is hipsrc.EvalDims of Text, as every consumer of a
// buffer's extents evaluates them.
func (d Dim) EvalExact(sizes map[dsl.Var]int64) (n int64, ok bool) {
	v, err := hipsrc.EvalDims([]string{d.Text}, sizeValues(sizes))
	if err != nil {
		return 0, false
	}
	return v[0], true
}

// IsSize reports whether the extent is exactly the size symbol v.
func (d Dim) IsSize(v dsl.Var) bool {
	return d.Div <= 1 && d.Const == 0 && len(d.Coef) == 1 && d.Coef[v] == 1
}

// Mod is a checked user mod declaration.
type Mod struct {
	// Decl is the declaration.
	Decl *dsl.ModDecl
	// Name is the mod's name.
	Name string
	// Kind is dsl.MaskMod or dsl.ScoreMod.
	Kind dsl.ModKind
	// Factory is true for a mod with constant parameters, `mask f(W)(...)`.
	Factory bool
	// Used is true when some other declaration or attention block uses it.
	Used bool
	// Helper is true for a helper function (dsl.ModDecl.Helper): inlined
	// where called, never a mask or score itself.
	Helper bool
	// partialTarget is set for a def that a functools.partial of the file
	// binds (partialTargets): a helper, and a mod where its parameters are
	// exactly a mod's.
	partialTarget bool
	// asFn is set for a plain top-level def of a mod's arity that nothing
	// in a file with attention blocks names as a value (functionDefs): it
	// is a mask or score only where something uses it as one, so it is
	// checked, and called, as a helper function (asFn is its Helper
	// twin), and is not a mask that must give a bool. Nil otherwise.
	asFn *Mod
	// locals are a factory's other inner defs (dsl.ModDecl.Locals), each
	// a factory of the same parameters.
	locals []*Mod

	doc        string
	hover      string // the signature and doc comment: Symbol.Doc of the mod
	std        bool
	src        *dsl.Source
	bufParams  map[string]bool // factory params the body indexes (bound to buffers)
	paramCount bool            // the index parameter count is right
}

// Attention is a checked attention block.
type Attention struct {
	// Decl is the declaration.
	Decl *dsl.AttentionDecl
	// Name is the block's name.
	Name string
	// Mask is the block's mask: the lowered `mask` setting, else what its
	// `causal` and `window` settings mean on Turbo's kernels (bottom-right
	// aligned); nil when the block has neither. MaskOrigin says which.
	Mask *dsl.Lowered
	// Score is the block's score: the lowered `score` setting, else the
	// ALiBi bias its `alibi` setting means; nil when it has neither.
	// ScoreOrigin says which.
	Score *dsl.Lowered
	// MaskOrigin and ScoreOrigin say where Mask and Score came from, for
	// messages and for the classifier's Turbo arguments.
	MaskOrigin, ScoreOrigin Origin
	// Causal is the `causal` setting; nil when not given.
	Causal *bool
	// Window is the `window = (left, right)` setting, -1 meaning unbounded;
	// nil when not given.
	Window *[2]int64
	// Sink is the `sink` buffer (f32[H]); nil when not given.
	Sink *Buffer
	// Alibi is the `alibi` slopes buffer (f32[H] or [B, H]); nil when not given.
	Alibi *Buffer
	// Bias is the trainer-style additive `bias` buffer; nil when not given.
	Bias *Buffer
	// Layout is "bshd" (default), "bhsd" or "thd".
	Layout string
	// DType is "bf16" (default), "fp16" or "fp8".
	DType string
	// HeadDim is the head dimension; 0 when not given.
	HeadDim int
	// Scale is the softmax scale; nil means dsl.DefaultScale(head_dim)
	// (ScaleFor).
	Scale *float64
	// Dropout is the dropout probability in [0, 1).
	Dropout float64
	// Deterministic requests deterministic kernels.
	Deterministic bool
	// FP8 requests fp8 attention.
	FP8 bool
	// ContextParallel requests context parallelism.
	ContextParallel bool
	// ReturnLSE requests the log-sum-exp output.
	ReturnLSE bool
	// ReturnAttnProbs requests the attention probabilities.
	ReturnAttnProbs bool
	// KVHeads is the number of key/value heads for GQA; 0 means same as H.
	KVHeads int

	settings map[string]*dsl.Setting
}

// Setting returns the setting written for key, or nil when not given.
func (a *Attention) Setting(key string) *dsl.Setting { return a.settings[key] }

// Info holds the side tables of a check, keyed by source nodes.
type Info struct {
	// Types gives the type of every checked expression.
	Types map[dsl.Expr]dsl.Type
	// Consts gives the value of every constant-folded expression.
	Consts map[dsl.Expr]dsl.Value
	// Uses says what each identifier use resolves to.
	Uses map[*dsl.Ident]Symbol
	// Defs says what each declaring identifier declares.
	Defs map[*dsl.Ident]Symbol
}

// SymbolKind classifies what a name denotes.
type SymbolKind int

// The kinds of symbol.
const (
	SymInvalid      SymbolKind = iota
	SymParam                   // a `param`
	SymBuffer                  // a `buffer`
	SymMod                     // a user mod
	SymStdMod                  // a standard-library mod
	SymModParam                // an index parameter of a mod (b, h, q, kv, score)
	SymFactoryParam            // a constant parameter of a factory
	SymLet                     // a `let` binding
	SymBuiltin                 // a built-in function such as abs
	SymSize                    // a size symbol B H HKV Q KV
	SymCombinator              // and_masks or or_masks
	SymConstant                // inf
	SymSetting                 // an attention setting key
	SymWord                    // a bare word value such as bshd
	SymAttention               // an attention block
)

var symbolKindNames = [...]string{"invalid", "param", "buffer", "mod", "standard mod", "mod parameter",
	"factory parameter", "let", "built-in", "size", "combinator", "constant", "setting", "word", "attention"}

// String names the kind as messages print it, e.g. "mod parameter".
func (k SymbolKind) String() string {
	if k < 0 || int(k) >= len(symbolKindNames) {
		return "invalid"
	}
	return symbolKindNames[k]
}

// Symbol is what a name resolves to.
type Symbol struct {
	// Kind says what sort of thing the name is.
	Kind SymbolKind
	// Name is the name as declared.
	Name string
	// Decl is the declaring node (a Decl, an *dsl.Ident parameter, a
	// *dsl.LetStmt); nil for built-ins, sizes, settings and words.
	Decl dsl.Node
	// Type is the symbol's type (TypeMask for a mask mod, ...).
	Type dsl.Type
	// Doc is a human description for hover.
	Doc string
}

// Attention returns the attention block named name, or nil.
func (p *Program) Attention(name string) *Attention { return p.attentions[name] }

// Buffer returns the buffer named name, or nil.
func (p *Program) Buffer(name string) *Buffer { return p.buffers[name] }

// Param returns the param named name, or nil.
func (p *Program) Param(name string) *Param { return p.params[name] }

// Mod returns the user mod named name, or nil.
func (p *Program) Mod(name string) *Mod { return p.mods[name] }
