package parser

import (
	"io"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The participle grammar. Each struct is one production; convert.go turns
// the parse into dsl nodes. Parsing recurses only through brackets, whose
// depth the lexer bounds.

// declChunkG is one top-level piece of a file: at most one declaration.
type declChunkG struct {
	Decl *declG `parser:"Newline* ( @@ Newline* )?"`
}

// exprChunkG is the input of ParseExpr.
type exprChunkG struct {
	Expr *exprG `parser:"Newline* @@ Newline*"`
}

// declG is one of the six declarations.
type declG struct {
	Param     *paramG     `parser:"@@"`
	Buffer    *bufferG    `parser:"| @@"`
	Mod       *modG       `parser:"| @@"`
	Def       *defG       `parser:"| @@"`
	Attention *attentionG `parser:"| @@"`
	Global    *globalG    `parser:"| @@"`
}

// defG: def NAME(params): body, a mod written as a Python function. The
// grammar does not see indentation; the converter checks it from the
// tokens' columns.
type defG struct {
	Keyword lexer.Token `parser:"@'def'"`
	Name    lexer.Token `parser:"@Ident"`
	Params  *paramListG `parser:"@@"`
	Returns *exprG      `parser:"( '-' '>' @@ )?"`
	Colon   lexer.Token `parser:"@':' Newline*"`
	Body    *defBodyG   `parser:"@@"`
}

// defBodyG is a def's body: an optional docstring, assignments, then either
// `return expr` or, in a factory, an inner def and `return NAME`.
// A factory may bind, after its inner def, names to mods built from it
// (`both = and_masks(inner, causal)`) and return one of them.
type defBodyG struct {
	Doc      *lexer.Token `parser:"( @String Newline+ )?"`
	Assigns  []*assignG   `parser:"( @@ Newline+ )*"`
	Inner    *defG        `parser:"( @@ Newline*"`
	After    []*assignG   `parser:"  ( @@ Newline+ )*"`
	InnerRet *returnG     `parser:"  @@"`
	Return   *returnG     `parser:"| @@ )"`
	Ended    bool         `parser:"@Newline*"`
}

// assignG: NAME = expr, or an augmented assignment NAME += expr.
type assignG struct {
	Name  lexer.Token `parser:"@Ident"`
	More  []*targetG  `parser:"( ',' @@ )*"`
	Op    lexer.Token `parser:"@('=' | '+=' | '-=' | '*=' | '/=' | '//=' | '%=' | '&=' | '|=' | '^=' | '<<=' | '>>=')"`
	Value *exprG      `parser:"@@"`
	Rest  []*exprG    `parser:"( ',' @@ )*"`
}

// returnG: return expr
type returnG struct {
	Keyword lexer.Token `parser:"@'return'"`
	Value   *exprG      `parser:"@@"`
	Rest    []*exprG    `parser:"( ',' @@ )*"`
}

// paramG: param NAME = expr
type paramG struct {
	Keyword lexer.Token `parser:"@'param'"`
	Name    lexer.Token `parser:"@Ident '='"`
	Value   *exprG      `parser:"@@"`
}

// globalG: NAME = expr at the start of a line, a Python module constant
// (`SLIDING_WINDOW = 1024` above the def that reads it), which is a param.
type globalG struct {
	Name   lexer.Token `parser:"@Ident '='"`
	Lambda *lambdaG    `parser:"( @@"`
	Value  *exprG      `parser:"| @@ )"`
}

// lambdaG: `lambda params: expr`, bound to a module-level name
// (`causal = lambda b, h, q_idx, kv_idx: q_idx >= kv_idx`) or written in
// place as an operand (an attention setting): a def.
type lambdaG struct {
	Keyword lexer.Token     `parser:"@'lambda'"`
	First   *lambdaParamG   `parser:"( @@"`
	Rest    []*lambdaParamG `parser:"  ( ',' @@ )* )?"`
	Colon   lexer.Token     `parser:"@':'"`
	Body    *exprG          `parser:"@@"`
}

// params are the lambda's parameters in order.
func (g *lambdaG) params() []*lambdaParamG {
	if g.First == nil {
		return nil
	}
	return append([]*lambdaParamG{g.First}, g.Rest...)
}

// isMod reports whether the lambda takes a mod's parameters: four (a
// mask_mod) or five (a score_mod).
func (g *lambdaG) isMod() bool {
	n := len(g.params())
	return n == 4 || n == 5
}

// lambdaParamG is one parameter of a lambda, with its default value.
type lambdaParamG struct {
	Tok     lexer.Token  `parser:"@Ident"`
	Eq      *lexer.Token `parser:"( @'='"`
	Default *exprG       `parser:"  @@ )?"`
}

// bufferG: buffer NAME: DTYPE[dims] property?
type bufferG struct {
	Keyword  lexer.Token  `parser:"@'buffer'"`
	Name     lexer.Token  `parser:"@Ident ':'"`
	DType    lexer.Token  `parser:"@Ident '['"`
	Dims     []*exprG     `parser:"( @@ ( ',' @@ )* )?"`
	Close    lexer.Token  `parser:"@']'"`
	Property *lexer.Token `parser:"@Ident?"`
}

// modG: mask|score NAME (params) [(params)] body
type modG struct {
	Keyword lexer.Token   `parser:"@('mask' | 'score')"`
	Name    lexer.Token   `parser:"@Ident"`
	Lists   []*paramListG `parser:"@@+"`
	Body    *bodyG        `parser:"@@"`
}

// paramListG is a parenthesised list of parameter names. As in Python a
// comma may follow the last one (black writes one after each parameter of
// a multi-line def); the converter refuses an empty element elsewhere.
type paramListG struct {
	Open  lexer.Token   `parser:"@'('"`
	Lead  *lexer.Token  `parser:"( @BareStar ',' )?"` // `def f(*, w)`: every parameter taken only by name
	First *nameG        `parser:"( @@"`
	Rest  []*paramElemG `parser:"  @@* )?"`
	Close lexer.Token   `parser:"@')'"`
}

// paramElemG is `, name` in a parameter list, `, *name` (Star, which the
// converter moves onto the name), or `, *` (Python's bare star, no name:
// the parameters after it take arguments only by name); the name is
// optional so that a trailing comma parses.
type paramElemG struct {
	Comma lexer.Token  `parser:"@','"`
	Star  *lexer.Token `parser:"@'*'?"`
	Name  *nameG       `parser:"@@?"`
}

// bare reports whether e is Python's bare `*`.
func (e *paramElemG) bare() bool { return e.Star != nil && e.Name == nil }

// nameG is one parameter name, with a def's optional annotation (any
// expression: `int`, `tuple[int, int]`, `int | None`) and default value.
type nameG struct {
	Star    *lexer.Token `parser:"@'*'?"`
	Tok     lexer.Token  `parser:"@Ident"`
	Colon   *lexer.Token `parser:"( @':'"`
	Annot   *exprG       `parser:"  @@ )?"`
	Eq      *lexer.Token `parser:"( @'='"`
	Default *exprG       `parser:"  @@ )?"`
}

// bodyG: `= expr` or a block.
type bodyG struct {
	Eq    *lexer.Token `parser:"( @'='"`
	Expr  *exprG       `parser:"  @@ )"`
	Block *blockG      `parser:"| @@"`
}

// blockG: { let ...; ... result }. Statements end with a separator
// (a newline or `;`); a missing one is reported by the converter.
type blockG struct {
	Open  lexer.Token `parser:"@'{' Newline*"`
	Stmts []*stmtG    `parser:"@@*"`
	Close lexer.Token `parser:"@'}'"`
}

// stmtG is a `let` or the result expression, with the separators after it.
type stmtG struct {
	Let   *letG  `parser:"( @@"`
	Expr  *exprG `parser:"| @@ )"`
	Ended bool   `parser:"@Newline*"`
}

// letG: let NAME = expr
type letG struct {
	Keyword lexer.Token `parser:"@'let'"`
	Name    lexer.Token `parser:"@Ident '='"`
	Value   *exprG      `parser:"@@"`
}

// attentionG: attention NAME { key = value ... }
type attentionG struct {
	Keyword  lexer.Token `parser:"@'attention'"`
	Name     lexer.Token `parser:"@Ident"`
	Open     lexer.Token `parser:"@'{' Newline*"`
	Settings []*settingG `parser:"@@*"`
	Close    lexer.Token `parser:"@'}'"`
}

// settingG: KEY = expr, with the separators after it.
type settingG struct {
	Key   lexer.Token `parser:"@Ident '='"`
	Value *exprG      `parser:"@@"`
	Ended bool        `parser:"@Newline*"`
}

// exprG is an expression as participle sees it: a flat list of operands,
// each with its prefix operators, joined by binary operators (`if` and
// `else` included). convert.go builds the tree with Python's precedence and
// associativity (a Pratt parser) and checks the operators' positions.
// Keeping the grammar flat keeps parsing fast.
type exprG struct {
	Head *operandG     `parser:"@@"`
	Tail []*binaryTail `parser:"@@*"`
}

// binaryTail is a binary operator and the operand after it.
type binaryTail struct {
	Op lexer.Token `parser:"@Op"`
	Y  *operandG   `parser:"@@"`
}

// operandG is an operand with its prefix operators and its calls and
// indexings: `not -f(x)[i]`. Tokens gives the prefix operators' positions.
type operandG struct {
	Tokens   []lexer.Token
	Prefix   []string     `parser:"@Prefix*"`
	Lambda   *lambdaG     `parser:"( @@"`
	Atom     *lexer.Token `parser:"| @(Ident | Literal | String)"`
	Group    *groupG      `parser:"| @@"`
	List     *listG       `parser:"| @@ )"`
	Suffixes []*suffixG   `parser:"@@*"`
}

// listG is a Python list display `[x, y]`. It has a meaning only inside a
// type annotation (`-> Callable[[int, int, Tensor, Tensor], Tensor]`),
// whose text maskc keeps; the converter refuses it elsewhere.
type listG struct {
	Open  lexer.Token  `parser:"@'['"`
	First *argG        `parser:"@@?"`
	Rest  []*listElemG `parser:"@@*"`
	Close lexer.Token  `parser:"@']'"`
}

// suffixG is a call `(args)`, an indexing `[indices]` or a method
// selector `.name`; the lexer has already checked that the brackets match.
type suffixG struct {
	Dot    *lexer.Token `parser:"( @'.'"`
	Method *lexer.Token `parser:"  @Ident"`
	Open   *lexer.Token `parser:"| @('(' | '[')"`
	First  *argG        `parser:"  @@?"`
	Rest   []*listElemG `parser:"  @@*"`
	Close  *lexer.Token `parser:"  @(')' | ']') )"`
}

// argG is a list element: an expression, or in a call a keyword argument
// `name=expr` (the lexer marks the name).
type argG struct {
	Kw  *lexer.Token `parser:"( @KwName '=' )?"`
	X   *exprG       `parser:"@@"`
	Gen *genG        `parser:"@@?"`
}

// genG makes an argument a generator expression: `for NAME in ITER`.
type genG struct {
	For  lexer.Token `parser:"@'for'"`
	Var  lexer.Token `parser:"@Ident 'in'"`
	Iter *exprG      `parser:"@@"`
}

// listElemG is `, expr` in a list; the expression is optional so that a
// trailing comma parses and a missing element gets a precise message.
type listElemG struct {
	Comma lexer.Token `parser:"@','"`
	X     *argG       `parser:"@@?"`
}

// groupG is `(x)` or a tuple `(x, y)` / `(x,)`.
type groupG struct {
	Open  lexer.Token  `parser:"@'('"`
	First *argG        `parser:"@@?"`
	Rest  []*listElemG `parser:"@@*"`
	Close lexer.Token  `parser:"@')'"`
}

// tokenDefinition tells participle the token types; the tokens themselves
// come from scanner (see lexer.go) through sliceLexer.
type tokenDefinition struct{}

// Symbols names the token types for participle. (It builds the map on each
// call: package variables are not yet initialised when the parsers below are
// built.)
func (tokenDefinition) Symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF":      lexer.EOF,
		"Ident":    tokIdent,
		"Literal":  tokLiteral,
		"Keyword":  tokKeyword,
		"Op":       tokOp,
		"Prefix":   tokPrefix,
		"Punct":    tokPunct,
		"Newline":  tokNewline,
		"String":   tokString,
		"KwName":   tokKwName,
		"BareStar": tokBareStar,
	}
}

// Lex is required by lexer.Definition; the parser never calls it because it
// hands participle pre-lexed tokens.
func (tokenDefinition) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	return nil, participle.Errorf(lexer.Position{Filename: filename}, "use the maskc scanner")
}

// sliceLexer replays a token slice to participle.
type sliceLexer struct {
	tokens []lexer.Token
	i      int
}

func (l *sliceLexer) Next() (lexer.Token, error) {
	t := l.tokens[l.i]
	if l.i < len(l.tokens)-1 {
		l.i++
	}
	return t, nil
}

var (
	declParser = participle.MustBuild[declChunkG](participle.Lexer(tokenDefinition{}), participle.UseLookahead(0))
	exprParser = participle.MustBuild[exprChunkG](participle.Lexer(tokenDefinition{}), participle.UseLookahead(0))
	flatParser = participle.MustBuild[flatChunkG](participle.Lexer(tokenDefinition{}), participle.UseLookahead(0))
)

// The flat form of a def, tried when the straight-line grammar above fails
// on a def: its header, then every line of its body (nested def headers
// and `if`/`elif`/`else` headers included) as a flat list. The grammar does
// not see indentation; flat.go builds the blocks from the lines' columns.
type flatChunkG struct {
	Def *flatDefG `parser:"Newline* @@ Newline*"`
}

// flatDefG is a def header and its body's lines.
type flatDefG struct {
	Head  *defHeadG `parser:"@@"`
	Lines []*lineG  `parser:"Newline* ( @@ Newline* )*"`
}

// defHeadG is `def NAME(params) -> ANNOT:`.
type defHeadG struct {
	Keyword lexer.Token `parser:"@'def'"`
	Name    lexer.Token `parser:"@Ident"`
	Params  *paramListG `parser:"@@"`
	Returns *exprG      `parser:"( '-' '>' @@ )?"`
	Colon   lexer.Token `parser:"@':'"`
}

// lineG is one statement line of a def body in the flat form.
type lineG struct {
	Def    *defHeadG    `parser:"  @@"`
	If     *ifHeadG     `parser:"| @@"`
	Else   *elseHeadG   `parser:"| @@"`
	For    *forHeadG    `parser:"| @@"`
	Return *returnG     `parser:"| @@"`
	Assert *assertG     `parser:"| @@"`
	Raise  *raiseG      `parser:"| @@"`
	Pass   *lexer.Token `parser:"| @'pass'"`
	Doc    *lexer.Token `parser:"| @String"`
	Assign *assignG     `parser:"| @@"`
}

// ifHeadG is `if COND:` or `elif COND:`.
type ifHeadG struct {
	Keyword lexer.Token `parser:"@('if' | 'elif')"`
	Cond    *exprG      `parser:"@@"`
	Colon   lexer.Token `parser:"@':'"`
}

// elseHeadG is `else:`.
type elseHeadG struct {
	Keyword lexer.Token `parser:"@'else'"`
	Colon   lexer.Token `parser:"@':'"`
}

// assertG is `assert COND` or `assert COND, MESSAGE`.
type assertG struct {
	Keyword lexer.Token `parser:"@'assert'"`
	Cond    *exprG      `parser:"@@"`
	Msg     *exprG      `parser:"( ',' @@ )?"`
}

// raiseG is `raise EXC` or a bare `raise`.
type raiseG struct {
	Keyword lexer.Token `parser:"@'raise'"`
	Exc     *exprG      `parser:"@@?"`
}

// forHeadG is `for NAME in ITER:`.
type forHeadG struct {
	Keyword lexer.Token `parser:"@'for'"`
	Var     lexer.Token `parser:"@Ident"`
	More    []*targetG  `parser:"( ',' @@ )* 'in'"`
	Iter    *exprG      `parser:"@@"`
	Colon   lexer.Token `parser:"@':'"`
}

// targetG is a further target of an unpacking, `, NAME`.
type targetG struct {
	Tok lexer.Token `parser:"@Ident"`
}
