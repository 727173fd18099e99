package parser

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"

	"github.com/maskc/maskc/buftype"
	"github.com/maskc/maskc/dsl"
)

// syntaxError turns a participle failure on tokens (one declaration, or one
// expression) into a diagnostic that says in words what was expected.
// Participle's own "expected" names grammar structs, so the message is
// chosen from where the parse stopped instead: which declaration, which part
// of it, and the token before the failure.
func syntaxError(src *dsl.Source, tokens []lexer.Token, err error, exprOnly bool) *dsl.Diagnostic {
	e := newErrorSite(src, tokens, err)
	e.exprOnly = exprOnly
	x := e.explain()
	sp := e.span()
	if x.at != nil {
		sp = span(*x.at)
	}
	return &dsl.Diagnostic{Source: src, Span: sp, Code: x.code, Severity: dsl.SeverityError, Message: x.msg, Hint: x.hint}
}

// errorSite is where a parse failed and what surrounds it.
type errorSite struct {
	tokens []lexer.Token
	i      int      // index of the unexpected token
	first  int      // index of the first token of the declaration
	stack  []string // brackets open before the unexpected token
	// headerDone is true once a mod's parameters are complete and its
	// body started (`=` or `{` outside brackets).
	headerDone bool
	// exprOnly is true when parsing a lone expression (ParseExpr).
	exprOnly bool
}

func newErrorSite(src *dsl.Source, tokens []lexer.Token, err error) *errorSite {
	e := &errorSite{tokens: tokens}
	off := len(src.Text)
	var perr participle.Error
	if errors.As(err, &perr) {
		off = perr.Position().Offset
	}
	e.i = sort.Search(len(tokens), func(k int) bool { return tokens[k].Pos.Offset >= off })
	if e.i >= len(tokens) {
		e.i = len(tokens) - 1
	}
	for e.first < e.i && tokens[e.first].Type == tokNewline {
		e.first++
	}
	// A name that starts a line begins a Python module constant only when
	// `=` follows it (and not `= lambda`, which explainOutside hints at):
	// otherwise the line is no declaration, whatever fails later in it.
	if f := e.first; f < e.i && tokens[f].Type == tokIdent && !declKeywords[tokens[f].Value] &&
		(f+1 >= len(tokens) || tokens[f+1].Value != "=" || f+2 < len(tokens) && tokens[f+2].Value == "lambda") {
		e.i = f
	}
	for _, t := range tokens[e.first:e.i] {
		switch t.Value {
		case "(", "[", "{":
			if len(e.stack) == 0 && t.Value == "{" {
				e.headerDone = true
			}
			e.stack = append(e.stack, t.Value)
		case ")", "]", "}":
			if len(e.stack) > 0 {
				e.stack = e.stack[:len(e.stack)-1]
			}
		case "=":
			if len(e.stack) == 0 {
				e.headerDone = true
			}
		}
	}
	return e
}

func (e *errorSite) tok() lexer.Token { return e.tokens[e.i] }

// after returns the token k places after the unexpected one, or the last
// (EOF) token.
func (e *errorSite) after(k int) lexer.Token {
	if e.i+k >= len(e.tokens) {
		return e.tokens[len(e.tokens)-1]
	}
	return e.tokens[e.i+k]
}

// before returns the token k places before the unexpected one (k >= 1), or a
// newline token when there is none: the start of input is a line start.
func (e *errorSite) before(k int) lexer.Token {
	if e.i-k < 0 {
		return lexer.Token{Type: tokNewline, Value: "\n"}
	}
	return e.tokens[e.i-k]
}

// span points at the unexpected token, or just after the previous token
// when the unexpected thing is the end of a line or of the file.
func (e *errorSite) span() dsl.Span {
	t := e.tok()
	if (t.Type == tokNewline || t.EOF()) && e.i > 0 && e.before(1).Type != tokNewline {
		end := span(e.before(1)).End
		return dsl.Span{Start: end, End: end}
	}
	if t.EOF() {
		// The end of a def's body: point just after its last token.
		for k := e.i - 1; k >= 0; k-- {
			if e.tokens[k].Type != tokNewline {
				end := span(e.tokens[k]).End
				return dsl.Span{Start: end, End: end}
			}
		}
		return dsl.Span{Start: t.Pos.Offset, End: t.Pos.Offset}
	}
	sp := span(t)
	if sp.End == sp.Start {
		sp.End++
	}
	return sp
}

// describe names a token for a message: "`==`", "end of line", "end of file".
func describe(t lexer.Token) string {
	switch {
	case t.EOF():
		return "end of file"
	case t.Value == ";":
		return "`;`"
	case t.Type == tokNewline:
		return "end of line"
	case keywords[t.Value]:
		return fmt.Sprintf("keyword `%s`", t.Value)
	case t.Type == tokString && strings.Contains(t.Value, "\n"):
		// Shown whole, its line breaks would be escapes: name it by its
		// first line.
		first, _, _ := strings.Cut(t.Value, "\n")
		return fmt.Sprintf("a string over several lines, `%s ...`", strings.TrimRight(first, " \t\r"))
	}
	return fmt.Sprintf("`%s`", t.Value)
}

// operandEnd reports whether t can end an expression.
func operandEnd(t lexer.Token) bool {
	switch t.Type {
	case tokIdent, tokLiteral, tokString:
		return true
	}
	return t.Value == ")" || t.Value == "]"
}

// statementStart reports whether t ends the previous line or statement.
func statementStart(t lexer.Token) bool {
	return t.Type == tokNewline || t.Value == ";" || t.Value == "{"
}

const declHint = "a declaration starts with `param`, `buffer`, `mask`, `score`, `def` or `attention`"

// explanation is the code, message and hint of a syntax diagnostic; why
// makes one.
type explanation struct {
	code      dsl.Code
	msg, hint string
	// at, when set, is the token the diagnostic points at instead of the
	// unexpected one (the statement keyword before it).
	at *lexer.Token
}

func why(code dsl.Code, msg, hint string) *explanation {
	return &explanation{code: code, msg: msg, hint: hint}
}

// explain chooses the code, message and hint: the first of the specific
// explanations that applies, else a generic one for expressions.
func (e *errorSite) explain() *explanation {
	if e.exprOnly {
		if e.i == e.first {
			return why(CodeUnexpectedToken, "expected an expression, found "+e.found(),
				"write an expression such as `q - kv <= 1024`")
		}
		return e.explainExpr()
	}
	for _, f := range []func() *explanation{e.explainDef, e.explainOutside, e.explainName, e.explainHeader} {
		if x := f(); x != nil {
			return x
		}
	}
	return e.explainExpr()
}

// declKeyword is the keyword of the declaration being parsed, or "".
func (e *errorSite) declKeyword() string {
	if e.first < e.i && declKeywords[e.tokens[e.first].Value] {
		return e.tokens[e.first].Value
	}
	return ""
}

// declName is the name of the declaration being parsed, or "".
func (e *errorSite) declName() string {
	if e.declKeyword() != "" && e.first+1 < e.i {
		return e.tokens[e.first+1].Value
	}
	return ""
}

func (e *errorSite) found() string { return describe(e.tok()) }

// explainDef covers the parts of a def that are not expressions: its
// header, its statements, and its end.
func (e *errorSite) explainDef() *explanation {
	if e.declKeyword() != "def" {
		return nil
	}
	t, prev, name, found := e.tok(), e.before(1), e.declName(), e.found()
	pos := e.i - e.first
	depth, colon, returns, defs, inner := 0, false, 0, 0, ""
	for k, tk := range e.tokens[e.first:e.i] {
		switch tk.Value {
		case "def":
			defs++
			if defs == 2 && e.first+k+1 < e.i {
				inner = e.tokens[e.first+k+1].Value
			}
		case "(", "[":
			depth++
		case ")", "]":
			depth--
		case ":":
			colon = colon || depth == 0
		case "return":
			returns++
		}
	}
	ended := t.EOF() || t.Type == tokNewline
	innermost := name // the def whose body the token is in
	if defs == 2 && inner != "" {
		innermost = inner
	}
	if colon && depth == 0 && (prev.Type == tokNewline || prev.Value == ":") {
		if x := explainStatement(t, e.after(1), name, innermost, defs); x != nil {
			return x
		}
	}
	if b2 := e.before(2); colon && depth == 0 && prev.Type == tokIdent && (b2.Type == tokNewline || b2.Value == ":") {
		// `for i in ...`, `assert c`: the keyword lexed as a name.
		if x := explainStatement(prev, t, name, innermost, defs); x != nil {
			x.at = &prev
			return x
		}
	}
	switch {
	case t.Value == "pass" || prev.Value == "pass":
		return why(CodeUnexpectedToken, fmt.Sprintf("`pass` is not a statement of def `%s`: a def computes one value", name),
			"end the body with `return EXPR`; a mask that keeps every pair returns `True`")
	case pos == 2:
		return why(CodeMissingBody, fmt.Sprintf("expected `(` and the parameters of def `%s`, found %s", name, found),
			fmt.Sprintf("write `def %s(b, h, q_idx, kv_idx):` for a mask, `def %s(score, b, h, q_idx, kv_idx):` for a score", name, name))
	case !colon && depth > 0:
		if keywords[t.Value] {
			return why(CodeKeywordAsName, fmt.Sprintf("`%s` is a keyword and cannot be used as a parameter name", t.Value),
				"choose another name, e.g. `"+t.Value+"_`")
		}
		return why(CodeUnexpectedToken, fmt.Sprintf("expected a parameter name, `,` or `)`, found %s", found),
			fmt.Sprintf("parameters are names, optionally annotated: `def %s(window_size: int):`", name))
	case !colon:
		return why(CodeMissingBody, fmt.Sprintf("expected `:` to start the body of def `%s`, found %s", name, found),
			fmt.Sprintf("write `def %s(...):`, then the body indented on the lines below", name))
	case ended && defs == 2 && returns == 1:
		return why(CodeMissingResult, fmt.Sprintf("factory `%s` ends without `return %s`", name, inner),
			fmt.Sprintf("end the factory with `return %s`, indented like the `def %s` above it", inner, inner))
	case ended && (returns < defs || prev.Type == tokNewline && e.before(2).Value == ":"):
		return why(CodeMissingResult, fmt.Sprintf("the body of def `%s` ends without `return`", name),
			"end the body with `return EXPR` (a factory with `return INNER`)")
	case prev.Type == tokNewline && returns >= defs && depth == 0 && t.Value != "return" && t.Value != "def":
		return why(CodeExpectedEndOfLine, fmt.Sprintf("expected the end of def `%s` after its `return`, found %s", name, found),
			"a def ends with its `return`; statements after it would never run")
	case prev.Type == tokNewline && depth == 0 && t.Value != "return" && t.Value != "def":
		return why(CodeUnexpectedToken, fmt.Sprintf("expected an assignment `name = ...` or `return ...` in def `%s`, found %s", name, found),
			"a def body is straight-line code: assignments, then `return`; write conditions with torch.where")
	}
	if prev.Type == tokIdent && e.before(2).Type == tokNewline && t.Value == ":" && depth == 0 {
		return why(CodeMissingBody, fmt.Sprintf("a local variable cannot be annotated: `%s: ...`", prev.Value),
			fmt.Sprintf("drop the annotation and write `%s = ...`: a local's type is that of its value", prev.Value))
	}
	if prev.Type == tokIdent && e.before(2).Type == tokNewline && t.Value == "[" && depth == 0 {
		// `eos_mask[:, -1] = True`: a factory preparing a tensor (torchtitan's
		// document mask), which no mod can do.
		return why(CodeTensorWork, fmt.Sprintf("assigning into `%s[...]` changes a tensor in place, which a mod cannot do: a mod computes one value per (q, kv) pair", prev.Value),
			"prepare tensors in Python before the call (here, the tensor work of def `"+name+"`) and pass the result as a buffer: declare it, e.g. `buffer ids: i32[B, KV]`, and index it in the mask_mod")
	}
	if prev.Type == tokIdent && e.before(2).Type == tokNewline && t.Value != "=" && depth == 0 {
		return why(CodeMissingBody, fmt.Sprintf("expected `=` after `%s`, found %s", prev.Value, found),
			"a def body holds assignments `name = ...` and a final `return ...`")
	}
	return nil
}

// explainStatement explains a Python statement that a def body cannot
// hold, t being its first token: what the construct is, in which def, and
// how to write it. next is the token after t; outer names the top-level def,
// innermost the def whose body t is in, defs counts the defs so far.
func explainStatement(t, next lexer.Token, outer, innermost string, defs int) *explanation {
	straight := fmt.Sprintf("maskc reads def `%s` as straight-line code: assignments, then `return`", innermost)
	switch t.Value {
	case "def":
		if defs < 2 {
			return nil
		}
		return why(CodeDefShape, fmt.Sprintf("a second inner def `%s` in factory `%s`: a factory holds one inner def", next.Value, outer),
			fmt.Sprintf("declare `%s` as a top-level def (a mod or a factory of its own) and combine the mods with and_masks(...) or or_masks(...)", next.Value))
	case "if", "elif", "else":
		return why(CodeUnexpectedToken, fmt.Sprintf("an `%s` statement in def `%s`: %s", t.Value, innermost, straight),
			"choose between values with torch.where(c, x, y), or with `x if c else y` when c is a constant such as a factory argument")
	case "while":
		return why(CodeUnexpectedToken, fmt.Sprintf("a `while` loop in def `%s`: maskc unrolls only `for` loops over range() of constants", innermost),
			"write it as `for i in range(N):` with N a constant, a param or a factory argument")
	case "assert":
		return why(CodeUnexpectedToken, fmt.Sprintf("an `assert` statement in def `%s`: %s", innermost, straight),
			"remove it, and check the value where the factory is called")
	case "del":
		if next.Type == tokOp || next.Value == "=" {
			return nil // a name
		}
		return why(CodeUnexpectedToken, fmt.Sprintf("a `del` of something but names in def `%s`: a mod reads tensors, it does not change them", innermost),
			"remove it; `del` of names only (`del b, h`) is read past")
	case "pass", "raise", "try", "with", "global", "nonlocal", "yield", "import", "from", "print":
		if next.Type == tokOp || next.Value == "=" {
			return nil // a name: `pass_ = ...` is not this
		}
		return why(CodeUnexpectedToken, fmt.Sprintf("a `%s` statement in def `%s`: %s", t.Value, innermost, straight),
			"remove it")
	}
	return nil
}

// explainOutside covers tokens outside any declaration, or on a new line
// after a complete one.
func (e *errorSite) explainOutside() *explanation {
	t, prev, kw := e.tok(), e.before(1), e.declKeyword()
	if kw != "" && (prev.Type != tokNewline || len(e.stack) > 0) {
		return nil
	}
	hint := declHint
	switch {
	case prev.Value == ";" && declKeywords[t.Value]:
		hint = "declarations are separated by new lines, not `;`"
	case t.Value == "let":
		hint = "`let` is only allowed in a block body: `mask m(b, h, q, kv) { let d = ... }`"
	case t.Value == "import" || t.Value == "from":
		hint = "an import names a module: `import torch`, `from functools import partial`; torch, math and partial are built in"
	case t.Type == tokIdent && e.i+2 < len(e.tokens) && e.tokens[e.i+1].Value == "=" && e.tokens[e.i+2].Value == "lambda":
		hint = fmt.Sprintf("a lambda bound to a name takes names and one expression: `%s = lambda b, h, q_idx, kv_idx: ...`", t.Value)
	case (t.Type == tokOp || t.Type == tokPrefix) && kw != "":
		hint = "to continue an expression on the next line, put it in parentheses"
	case t.Type == tokIdent && closeKeyword(t.Value) != "":
		hint = fmt.Sprintf("did you mean `%s`? %s", closeKeyword(t.Value), declHint)
	}
	return why(CodeExpectedDecl, "expected a declaration, found "+e.found(), hint)
}

// explainName covers the name after a declaration keyword or `let`, and
// the `=` after a `let` name.
func (e *errorSite) explainName() *explanation {
	t, prev, kw := e.tok(), e.before(1), e.declKeyword()
	if e.i-e.first == 1 || prev.Value == "let" {
		what := kw
		if prev.Value == "let" {
			what = "let"
		}
		if keywords[t.Value] {
			return why(CodeKeywordAsName, fmt.Sprintf("`%s` is a keyword and cannot be used as a name", t.Value),
				"choose another name, e.g. `"+t.Value+"_`")
		}
		return why(CodeUnexpectedToken, fmt.Sprintf("expected a name after `%s`, found %s", what, e.found()),
			"names are letters, digits and `_`, not starting with a digit")
	}
	if prev.Type == tokIdent && e.before(2).Value == "let" && t.Value != "=" {
		return why(CodeMissingBody, fmt.Sprintf("expected `=` after `let %s`, found %s", prev.Value, e.found()),
			fmt.Sprintf("write `let %s = VALUE`", prev.Value))
	}
	return nil
}

// explainHeader covers the parts of each declaration before its
// expressions: `=`, `:`, brackets, parameter lists, setting keys.
func (e *errorSite) explainHeader() *explanation {
	t, prev := e.tok(), e.before(1)
	kw, declName, found := e.declKeyword(), e.declName(), e.found()
	pos := e.i - e.first // tokens since the declaration keyword
	switch kw {
	case "param":
		if pos == 2 {
			return why(CodeMissingBody, fmt.Sprintf("expected `=` after `param %s`, found %s", declName, found),
				fmt.Sprintf("write `param %s = VALUE` with an int, float or bool constant", declName))
		}
	case "buffer":
		switch {
		case pos == 2:
			return why(CodeMissingBody, fmt.Sprintf("expected `:` after `buffer %s`, found %s", declName, found),
				fmt.Sprintf("write `buffer %s: f32[H]`: element type, then dimensions", declName))
		case pos == 3:
			return why(CodeUnexpectedToken, fmt.Sprintf("expected an element type after `buffer %s:`, found %s", declName, found),
				"the element type is one of "+buftype.Names())
		case pos == 4:
			return why(CodeMissingBody, fmt.Sprintf("expected `[` and the dimensions after `%s`, found %s", prev.Value, found),
				fmt.Sprintf("write `buffer %s: %s[KV]`, one extent per dimension", declName, prev.Value))
		case len(e.stack) == 0 && (prev.Value == "]" || prev.Type == tokIdent):
			return why(CodeExpectedEndOfLine, fmt.Sprintf("expected end of line after the declaration of buffer `%s`, found %s", declName, found),
				"after the dimensions only an optional property such as `segments` may follow")
		}
	case "mask", "score":
		sig := signature(kw)
		switch {
		case pos == 2:
			return why(CodeMissingBody, fmt.Sprintf("expected `(` and the parameters of %s `%s`, found %s", kw, declName, found),
				fmt.Sprintf("write `%s %s(%s) = ...`", kw, declName, sig))
		case !e.headerDone && len(e.stack) > 0:
			if keywords[t.Value] {
				return why(CodeKeywordAsName, fmt.Sprintf("`%s` is a keyword and cannot be used as a parameter name", t.Value),
					"choose another name, e.g. `"+t.Value+"_`")
			}
			return why(CodeUnexpectedToken, fmt.Sprintf("expected a parameter name, `,` or `)`, found %s", found),
				fmt.Sprintf("parameters are names: `%s %s(%s)`", kw, declName, sig))
		case !e.headerDone && prev.Value == ")":
			return why(CodeMissingBody, fmt.Sprintf("expected `=` or `{` to start the body of %s `%s`, found %s", kw, declName, found),
				fmt.Sprintf("write `%s %s(%s) = EXPR`, or a block `{ let ... ; EXPR }`", kw, declName, sig))
		}
	case "attention":
		if pos == 2 {
			return why(CodeMissingBody, fmt.Sprintf("expected `{` after `attention %s`, found %s", declName, found),
				fmt.Sprintf("write `attention %s {`, then one `key = value` setting per line, then `}`", declName))
		}
		if len(e.stack) == 1 && statementStart(prev) {
			return why(CodeUnexpectedToken, "expected a setting `key = value`, found "+found,
				"settings are lines such as `mask = causal` or `dtype = bf16`")
		}
		if len(e.stack) == 1 && statementStart(e.before(2)) && t.Value != "=" {
			return why(CodeMissingBody, fmt.Sprintf("expected `=` after setting `%s`, found %s", prev.Value, found),
				fmt.Sprintf("write `%s = VALUE`", prev.Value))
		}
	}

	if t.Value == "{" && prev.Value == "=" && (kw == "mask" || kw == "score") {
		return why(CodeUnexpectedToken, fmt.Sprintf("expected an expression after `=`, found %s", found),
			fmt.Sprintf("a block body has no `=`: write `%s %s(...) {`", kw, declName))
	}
	return nil
}

// inIndex reports whether the unexpected token is inside square brackets
// that follow an operand (an index, not a list).
func (e *errorSite) inIndex() bool {
	depth := 0
	for k := e.i - 1; k >= e.first; k-- {
		switch e.tokens[k].Value {
		case ")", "]":
			depth++
		case "(":
			if depth == 0 {
				return false
			}
			depth--
		case "[":
			if depth == 0 {
				return k > e.first && operandEnd(e.tokens[k-1])
			}
			depth--
		}
	}
	return false
}

// explainExpr explains a failure inside an expression.
func (e *errorSite) explainExpr() *explanation {
	t, prev, found := e.tok(), e.before(1), e.found()
	if !operandEnd(prev) && t.Value == "[" {
		if e.comprehension() {
			return why(CodeUnexpectedToken, "a list comprehension is not a value in maskc: a mod computes one value per (q, kv) pair",
				"write the loop out: `any`/`all` over a few values as a chain of `or`/`and`, a sum as `+` terms; a table of values is a `buffer`")
		}
		return why(CodeUnexpectedToken, "a list is not a value in maskc: a mod computes one value per (q, kv) pair",
			"a table of values is a `buffer` read with an index, e.g. `buffer t: f32[H]` and `t[h]`")
	}
	if t.Value == ":" && e.inIndex() {
		// `x[:, 1:]`: a slice takes part of a tensor.
		return why(CodeTensorWork, "a slice (`:`) takes part of a tensor, but a mod reads one element per index: it computes one value per (q, kv) pair",
			"index with one expression per dimension, e.g. `ids[b, kv_idx]`; prepare sliced or shifted tensors in Python and pass the result as a buffer")
	}
	if !operandEnd(prev) {
		hint := fmt.Sprintf("complete the expression after `%s`", prev.Value)
		switch {
		case t.Value == "not":
			hint = fmt.Sprintf("`not` binds more loosely than `%s`: write `(not x)`", prev.Value)
		case t.Value == ")" && prev.Value == "(":
			hint = "`()` is not a value: write an expression inside the parentheses"
		case t.Value == "]" && prev.Value == "[":
			hint = "index a buffer with one expression per dimension, e.g. `doc[q]`"
		case t.Type == tokNewline || t.EOF():
			hint = "complete the expression; to continue it on the next line, put it in parentheses"
		case keywords[t.Value]:
			hint = fmt.Sprintf("`%s` is a keyword and cannot start an expression", t.Value)
		case t.Type == tokOp:
			hint = fmt.Sprintf("`%s` joins two operands: one is missing before it", t.Value)
		}
		return why(CodeUnexpectedToken, fmt.Sprintf("expected an expression after `%s`, found %s", prev.Value, found), hint)
	}
	if t.Value == "=" {
		return why(CodeUnexpectedToken, "unexpected `=` in an expression", "compare with `==`; `=` only introduces a value")
	}
	if t.Type == tokPrefix {
		hint := "to combine with a negation write `a and not b`"
		if t.Value == "~" {
			hint = "to combine with a negation write `a & ~b`"
		}
		return why(CodeUnexpectedToken, fmt.Sprintf("`%s` negates one operand; it cannot join two", t.Value), hint)
	}
	if len(e.stack) > 0 {
		if closer := map[string]string{"(": ")", "[": "]"}[e.stack[len(e.stack)-1]]; closer != "" {
			return why(CodeUnexpectedToken, fmt.Sprintf("expected `,` or `%s`, found %s", closer, found),
				"separate the elements of a list with `,`; is an operator missing?")
		}
	}
	if e.exprOnly {
		return why(CodeExpectedEndOfLine, "expected the end of the expression, found "+found,
			"is an operator missing between the two?")
	}
	return why(CodeExpectedEndOfLine, "expected end of line after the expression, found "+found,
		"is an operator missing? Each declaration, setting and `let` ends at the end of its line")
}

// comprehension reports whether the `[` at the error holds a `for` at its
// own depth: `[x for i in range(3)]`.
func (e *errorSite) comprehension() bool {
	depth := 0
	for _, t := range e.tokens[e.i:] {
		switch t.Value {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return false
			}
		case "for":
			if depth == 1 {
				return true
			}
		}
		if t.Type == tokNewline && depth <= 1 {
			return false
		}
	}
	return false
}

// closeKeyword is the declaration keyword word is a typo of (one edit
// away, or two for longer words), else "".
func closeKeyword(word string) string {
	for _, kw := range []string{"attention", "buffer", "param", "score", "mask", "def"} {
		limit := 1
		if len(kw) >= 6 {
			limit = 2
		}
		if d := editDistance(word, kw); d > 0 && d <= limit {
			return kw
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
