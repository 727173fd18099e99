package parser

import (
	"fmt"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/maskc/maskc/dsl"
)

// converter turns grammar structs into dsl nodes. The grammar is looser than
// the language in a few places (list elements, statement separators, the
// number of parameter lists) so that those mistakes get precise messages;
// converter reports the first such mistake of a declaration in err.
type converter struct {
	src *dsl.Source
	err *dsl.Diagnostic
	// settingsOf is the attention block whose settings are being converted
	// ("" elsewhere): a lambda written in place is a def only there.
	settingsOf string
	// lambdas are the defs made of the lambdas written in place, each after
	// the lambdas written inside it; named counts them as they are met.
	lambdas []*dsl.ModDecl
	named   int
	// annotation is set while a type annotation is converted (only its
	// text is kept): a list display is allowed there.
	annotation bool
	// hoisted maps a lambda that a factory's return holds (lambdaInReturn)
	// to the name of the inner def made of it, which stands for it there.
	hoisted map[*lambdaG]string
	// defKeys maps the def lines inside the `if` blocks of a factory
	// (branchedFactory) to the key (dsl.DefKey) that the assignment standing
	// for each names.
	defKeys map[*lineG]string
	// inPlace are the lexer's in-place tensor statements, by the offset of
	// the `pass` token standing for each (scanner.inPlaceLine).
	inPlace map[int]*dsl.InPlaceStmt
}

// annotationSpan converts a type annotation and returns its span.
func (c *converter) annotationSpan(x *exprG) dsl.Span {
	c.annotation = true
	defer func() { c.annotation = false }()
	return c.expr(x).Span()
}

func (c *converter) fail(sp dsl.Span, code dsl.Code, format string, args ...any) *dsl.Diagnostic {
	d := &dsl.Diagnostic{Source: c.src, Span: sp, Code: code, Severity: dsl.SeverityError, Message: fmt.Sprintf(format, args...)}
	if c.err == nil {
		c.err = d
	}
	return d
}

// span is the byte range of one token.
func span(t lexer.Token) dsl.Span {
	return dsl.Span{Start: t.Pos.Offset, End: t.Pos.Offset + len(t.Value)}
}

// ident makes an identifier from a name token.
func ident(t lexer.Token) *dsl.Ident {
	return &dsl.Ident{Sp: span(t), Name: t.Value}
}

// signature is the conventional parameter list of a mod of the kind that
// keyword declares, for hints.
func signature(keyword string) string {
	if keyword == "score" {
		return "score, b, h, q, kv"
	}
	return "b, h, q, kv"
}

func (c *converter) decl(g *declG) dsl.Decl {
	switch {
	case g.Param != nil:
		v := c.expr(g.Param.Value)
		return &dsl.ParamDecl{Sp: span(g.Param.Keyword).Join(v.Span()), Name: ident(g.Param.Name), Value: v}
	case g.Global != nil:
		if c.src.Position(g.Global.Name.Pos.Offset).Column != 1 {
			c.fail(span(g.Global.Name), CodeExpectedDecl, "a Python module constant starts at the start of its line").
				WithHint("remove the indentation before %s, as Python requires", g.Global.Name.Value)
		}
		if g.Global.Lambda != nil {
			return c.lambda(g.Global.Name, g.Global.Lambda)
		}
		v := c.expr(g.Global.Value)
		return &dsl.ParamDecl{Sp: span(g.Global.Name).Join(v.Span()), Name: ident(g.Global.Name), Value: v, Python: true}
	case g.Buffer != nil:
		return c.buffer(g.Buffer)
	case g.Mod != nil:
		return c.mod(g.Mod)
	case g.Def != nil:
		return c.def(g.Def)
	default:
		return c.attention(g.Attention)
	}
}

func (c *converter) buffer(g *bufferG) *dsl.BufferDecl {
	d := &dsl.BufferDecl{Sp: span(g.Keyword).Join(span(g.Close)), Name: ident(g.Name), DType: ident(g.DType)}
	for _, e := range g.Dims {
		d.Dims = append(d.Dims, c.expr(e))
	}
	if g.Property != nil {
		d.Property = ident(*g.Property)
		d.Sp = d.Sp.Join(d.Property.Sp)
	}
	return d
}

func (c *converter) attention(g *attentionG) *dsl.AttentionDecl {
	d := &dsl.AttentionDecl{Sp: span(g.Keyword).Join(span(g.Close)), Name: ident(g.Name)}
	c.settingsOf = g.Name.Value
	defer func() { c.settingsOf = "" }()
	for i, sg := range g.Settings {
		s := &dsl.Setting{Key: ident(sg.Key), Value: c.expr(sg.Value)}
		s.Sp = s.Key.Sp.Join(s.Value.Span())
		if i > 0 && !g.Settings[i-1].Ended {
			c.fail(s.Key.Sp, CodeExpectedEndOfLine, "expected a new line or `;` before setting `%s`", s.Key.Name).
				WithHint("put each setting on its own line")
		}
		d.Settings = append(d.Settings, s)
	}
	return d
}

func (c *converter) mod(g *modG) *dsl.ModDecl {
	d := &dsl.ModDecl{Kind: dsl.MaskMod, Name: ident(g.Name)}
	if g.Keyword.Value == "score" {
		d.Kind = dsl.ScoreMod
	}
	names := func(l *paramListG) []*dsl.Ident {
		list := c.paramNames(l)
		out := make([]*dsl.Ident, 0, len(list))
		for _, n := range list {
			switch {
			case n.Star != nil:
				c.fail(span(*n.Star), CodeDefShape, "a `*%s` parameter is only written in a def factory", n.Tok.Value).
					WithHint("declare the factory as a def, `def NAME(*%s):` with an inner def", n.Tok.Value)
			case n.Annot != nil:
				c.fail(c.annotationSpan(n.Annot), CodeDefShape, "type annotations are only written in a def").
					WithHint("write the parameter name alone: %s", n.Tok.Value)
			case n.Default != nil:
				c.fail(span(*n.Eq).Join(c.expr(n.Default).Span()), CodeDefShape, "default values are only written in a def").
					WithHint("write the parameter name alone: %s, or declare the factory as a def", n.Tok.Value)
			}
			out = append(out, ident(n.Tok))
		}
		return out
	}
	switch len(g.Lists) {
	case 1:
		d.Params = names(g.Lists[0])
	default:
		d.FactoryParams = names(g.Lists[0])
		d.Params = names(g.Lists[1])
		if len(g.Lists) > 2 {
			extra := dsl.Span{Start: g.Lists[2].Open.Pos.Offset, End: span(g.Lists[len(g.Lists)-1].Close).End}
			c.fail(extra, CodeParamLists, "%s `%s` has %d parameter lists; at most two are allowed", d.Kind, d.Name.Name, len(g.Lists)).
				WithHint("a factory is `%s %s(CONSTS)(%s)`", d.Kind, d.Name.Name, signature(g.Keyword.Value))
		}
	}
	d.Body = c.body(g.Body, d)
	d.Sp = span(g.Keyword).Join(d.Body.Sp)
	return d
}

func (c *converter) body(g *bodyG, mod *dsl.ModDecl) *dsl.Body {
	if g.Block == nil {
		r := c.expr(g.Expr)
		return &dsl.Body{Sp: span(*g.Eq).Join(r.Span()), Result: r}
	}
	b := &dsl.Body{Sp: span(g.Block.Open).Join(span(g.Block.Close)), Block: true}
	stmts := g.Block.Stmts
	for i, st := range stmts {
		var n dsl.Node
		if st.Let != nil {
			v := c.expr(st.Let.Value)
			l := &dsl.LetStmt{Sp: span(st.Let.Keyword).Join(v.Span()), Name: ident(st.Let.Name), Value: v}
			b.Lets = append(b.Lets, l)
			n = l
		} else {
			b.Result = c.expr(st.Expr)
			n = b.Result
			if i < len(stmts)-1 {
				c.fail(n.Span(), CodeMissingResult, "only the last statement of a block may be an expression").
					WithHint("bind it with `let NAME = ...`, or remove it")
			}
		}
		if i > 0 && !stmts[i-1].Ended {
			c.fail(n.Span(), CodeExpectedEndOfLine, "expected a new line or `;` between statements").
				WithHint("put each `let` and the result on its own line")
		}
	}
	if len(stmts) == 0 || stmts[len(stmts)-1].Let != nil {
		b.Result = nil
		c.fail(span(g.Block.Close), CodeMissingResult, "the body of %s `%s` has no result expression", mod.Kind, mod.Name.Name).
			WithHint("end the block with the %s's value, e.g. `q >= kv`", mod.Kind)
	}
	return b
}

// Binding levels of the expression forms, Python's, lowest first.
const (
	levelCond   = iota + 1 // x if c else y
	levelOr                // or
	levelAnd               // and
	levelNot               // not x
	levelCmp               // == != < <= > >=
	levelBitOr             // |
	levelBitXor            // ^
	levelBitAnd            // &
	levelShift             // << >>
	levelAdd               // + -
	levelMul               // * / // %
	levelUnary             // -x +x ~x
	levelPow               // **
)

var binaryLevel = map[string]int{
	"if": levelCond, "else": levelCond, "or": levelOr, "and": levelAnd,
	"==": levelCmp, "!=": levelCmp, "<": levelCmp, "<=": levelCmp, ">": levelCmp, ">=": levelCmp, "is": levelCmp, "is not": levelCmp,
	"|": levelBitOr, "^": levelBitXor, "&": levelBitAnd, "<<": levelShift, ">>": levelShift, "+": levelAdd, "-": levelAdd,
	"*": levelMul, "/": levelMul, "//": levelMul, "%": levelMul, "**": levelPow,
}

var binaryOps = map[string]dsl.Op{
	"or": dsl.OpOr, "and": dsl.OpAnd, "|": dsl.OpBitOr, "^": dsl.OpBitXor, "&": dsl.OpBitAnd, "<<": dsl.OpShl, ">>": dsl.OpShr,
	"+": dsl.OpAdd, "-": dsl.OpSub, "*": dsl.OpMul, "/": dsl.OpDiv, "//": dsl.OpFloorDiv, "%": dsl.OpMod, "**": dsl.OpPow,
	"==": dsl.OpEQ, "!=": dsl.OpNE, "<": dsl.OpLT, "<=": dsl.OpLE, ">": dsl.OpGT, ">=": dsl.OpGE,
	"is": dsl.OpIs, "is not": dsl.OpIsNot,
}

var unaryOps = map[string]dsl.Op{"-": dsl.OpNeg, "+": dsl.OpPos, "~": dsl.OpInvert, "not": dsl.OpNot}

// exprItem is one element of the flat form of an expression: a prefix
// operator, an operand, or a binary operator.
type exprItem struct {
	tok lexer.Token // the operator; zero for an operand
	x   dsl.Expr    // the operand; nil for an operator
}

// pratt builds an expression tree from its flat form, by precedence
// climbing with Python's levels: left-associative binary operators, chained
// comparisons, right-associative `**` and `x if c else y`, and prefix
// operators that bind looser than `**` on their right (`-2 ** 2` is
// -(2 ** 2)) and, for `not`, looser than comparisons.
type pratt struct {
	c     *converter
	items []exprItem
	pos   int
}

func (c *converter) expr(g *exprG) dsl.Expr {
	p := &pratt{c: c, items: make([]exprItem, 0, 2+2*len(g.Tail))}
	p.operand(g.Head)
	for _, t := range g.Tail {
		p.items = append(p.items, exprItem{tok: t.Op})
		p.operand(t.Y)
	}
	e := p.parse(levelCond)
	if p.pos < len(p.items) && c.err == nil {
		// Only `else` stops the top level early.
		c.fail(span(p.items[p.pos].tok), CodeUnexpectedToken, "`else` without a matching `if`").
			WithHint("Python's conditional is `x if c else y`")
	}
	return e
}

func (p *pratt) operand(g *operandG) {
	for i := range g.Prefix {
		p.items = append(p.items, exprItem{tok: g.Tokens[i]})
	}
	p.items = append(p.items, exprItem{x: p.c.operand(g)})
}

// parse reads an expression whose binary operators all bind at least as
// tightly as min.
func (p *pratt) parse(min int) dsl.Expr {
	it := p.items[p.pos]
	p.pos++
	lhs := it.x
	if lhs == nil { // a prefix operator
		level := levelUnary
		if it.tok.Value == "not" {
			level = levelNot
		}
		if level < min {
			prev := p.items[p.pos-2].tok.Value
			p.c.fail(span(it.tok), CodeUnexpectedToken, "expected an expression after `%s`, found keyword `not`", prev).
				WithHint("`not` binds more loosely than `%s`: write `(not x)`", prev)
		}
		x := p.parse(level)
		lhs = &dsl.UnaryExpr{Sp: span(it.tok).Join(x.Span()), Op: unaryOps[it.tok.Value], X: x}
	}
	for p.pos < len(p.items) {
		op := p.items[p.pos].tok
		level := binaryLevel[op.Value]
		if level < min || op.Value == "else" {
			break
		}
		p.pos++
		switch {
		case op.Value == "if":
			cond := p.parse(levelOr)
			if p.pos >= len(p.items) || p.items[p.pos].tok.Value != "else" {
				end := cond.Span().End
				p.c.fail(dsl.Span{Start: end, End: end}, CodeUnexpectedToken, "expected `else` to complete `x if c else y`").
					WithHint("Python's conditional is `x if c else y`; or write `where(c, x, y)`")
				p.pos = len(p.items)
				return lhs
			}
			p.pos++
			alt := p.parse(levelCond)
			lhs = &dsl.CondExpr{Sp: lhs.Span().Join(alt.Span()), Then: lhs, Cond: cond, Else: alt}
		case level == levelCmp:
			ce := &dsl.CompareExpr{Operands: []dsl.Expr{lhs}, Ops: []dsl.Op{binaryOps[op.Value]}}
			ce.Operands = append(ce.Operands, p.parse(levelCmp+1))
			for p.pos < len(p.items) && binaryLevel[p.items[p.pos].tok.Value] == levelCmp {
				ce.Ops = append(ce.Ops, binaryOps[p.items[p.pos].tok.Value])
				p.pos++
				ce.Operands = append(ce.Operands, p.parse(levelCmp+1))
			}
			ce.Sp = lhs.Span().Join(ce.Operands[len(ce.Operands)-1].Span())
			lhs = ce
		case level == levelPow:
			// Right associative, and the exponent may be negated: `2 ** -1`.
			y := p.parse(levelUnary)
			lhs = &dsl.BinaryExpr{Sp: lhs.Span().Join(y.Span()), Op: dsl.OpPow, OpSp: span(op), X: lhs, Y: y}
		default:
			y := p.parse(level + 1)
			lhs = &dsl.BinaryExpr{Sp: lhs.Span().Join(y.Span()), Op: binaryOps[op.Value], OpSp: span(op), X: lhs, Y: y}
		}
	}
	return lhs
}

// operand converts an operand without its prefix operators: an atom or a
// parenthesised group, then its calls and indexings.
func (c *converter) operand(g *operandG) dsl.Expr {
	var x dsl.Expr
	switch {
	case g.Atom != nil:
		x = c.atom(*g.Atom)
	case g.Lambda != nil:
		x = c.lambdaInPlace(g.Lambda)
	case g.List != nil:
		x = c.listDisplay(g.List)
	default:
		x = c.group(g.Group)
	}
	for _, s := range g.Suffixes {
		if s.Dot != nil {
			sel := ident(*s.Method)
			x = &dsl.SelectorExpr{Sp: x.Span().Join(sel.Sp), X: x, Sel: sel}
			continue
		}
		call := s.Open.Value == "("
		args := c.list(s.First, s.Rest, *s.Open, call, call)
		if call {
			x = &dsl.CallExpr{Sp: x.Span().Join(span(*s.Close)), Fun: x, Args: args}
		} else {
			if s.First == nil {
				c.fail(span(*s.Close), CodeUnexpectedToken, "expected an expression after `[`, found `]`").
					WithHint("index a buffer with one expression per dimension, e.g. `doc[q]`")
			}
			x = &dsl.IndexExpr{Sp: x.Span().Join(span(*s.Close)), X: x, Indices: args}
		}
	}
	return x
}

// list converts a comma list, reporting a missing element. A trailing comma
// is allowed where Python allows it (calls and tuples), keyword arguments
// only in calls.
func (c *converter) list(first *argG, rest []*listElemG, open lexer.Token, trailingOK, kwOK bool) []dsl.Expr {
	out := make([]dsl.Expr, 0, 1+len(rest))
	if first != nil {
		out = append(out, c.arg(first, kwOK))
	} else if len(rest) > 0 {
		c.fail(span(rest[0].Comma), CodeUnexpectedToken, "expected an expression after `%s`, found `,`", open.Value).
			WithHint("remove the `,`")
	}
	for i, el := range rest {
		if el.X != nil {
			out = append(out, c.arg(el.X, kwOK))
			continue
		}
		if i < len(rest)-1 {
			c.fail(span(rest[i+1].Comma), CodeUnexpectedToken, "expected an expression after `,`, found `,`").
				WithHint("remove the extra `,`")
		} else if !trailingOK {
			c.fail(span(el.Comma), CodeUnexpectedToken, "trailing `,` in an index").
				WithHint("remove the `,`: write one index per buffer dimension")
		}
	}
	return out
}

// arg converts a list element: an expression or, where kwOK, a keyword
// argument.
func (c *converter) arg(g *argG, kwOK bool) dsl.Expr {
	x := c.expr(g.X)
	if g.Gen != nil {
		iter := c.expr(g.Gen.Iter)
		x = &dsl.GeneratorExpr{Sp: x.Span().Join(iter.Span()), Elt: x, Var: ident(g.Gen.Var), Iter: iter}
	}
	if g.Kw == nil {
		return x
	}
	name := ident(*g.Kw)
	if !kwOK {
		c.fail(name.Sp, CodeDefShape, "keyword argument `%s=` outside a call", name.Name).
			WithHint("keyword arguments are written in calls, e.g. x.clamp(min=0)")
	}
	return &dsl.KeywordArg{Sp: name.Sp.Join(x.Span()), Name: name, Value: x}
}

// atom converts a name or a literal.
func (c *converter) atom(t lexer.Token) dsl.Expr {
	if t.Type == tokIdent {
		return ident(t)
	}
	if t.Type == tokString {
		return stringLit(t)
	}
	switch t.Value {
	case "True", "true":
		return &dsl.BoolLit{Sp: span(t), Raw: t.Value, Value: true}
	case "False", "false":
		return &dsl.BoolLit{Sp: span(t), Raw: t.Value, Value: false}
	}
	// The lexer has validated the number.
	isFloat, i, f, _ := parseNumber(t.Value)
	if isFloat {
		return &dsl.FloatLit{Sp: span(t), Raw: t.Value, Value: f}
	}
	return &dsl.IntLit{Sp: span(t), Raw: t.Value, Value: i}
}

// group converts `(x)` to a ParenExpr and `(x, y)`, `(x,)` or `()` to a
// TupleExpr.
func (c *converter) group(g *groupG) dsl.Expr {
	sp := span(g.Open).Join(span(g.Close))
	if g.First == nil && len(g.Rest) == 0 {
		return &dsl.TupleExpr{Sp: sp} // the empty tuple, e.g. the shape of new_ones((), ...)
	}
	if len(g.Rest) == 0 {
		return &dsl.ParenExpr{Sp: sp, X: c.arg(g.First, false)}
	}
	return &dsl.TupleExpr{Sp: sp, Elems: c.list(g.First, g.Rest, g.Open, true, false)}
}

// kwOnly returns how many parameters of l follow a bare `*` (Python's
// keyword-only parameters; 0 when there is none) and the star; a second
// star, or one that no parameter follows, is an error.
func (c *converter) kwOnly(l *paramListG) (int, *lexer.Token) {
	var star *lexer.Token
	n := 0
	if l.Lead != nil { // `(*, w, ...)`: every parameter after it
		star = l.Lead
		if l.First != nil {
			if l.First.Star != nil {
				c.fail(span(l.First.Tok), CodeDefShape, "`*%s` after a bare `*`", l.First.Tok.Value).
					WithHint("Python takes one of them: `*` alone, or `*%s`", l.First.Tok.Value)
			}
			n++
		}
	}
	for _, e := range l.Rest {
		switch {
		case e.bare() && star != nil:
			c.fail(span(*e.Star), CodeDefShape, "a second `*` in one parameter list").
				WithHint("one `*` marks where the parameters taken only by name begin")
		case e.bare():
			star = e.Star
		case star != nil && e.Name != nil:
			if e.Star != nil || e.Name.Star != nil {
				c.fail(span(e.Name.Tok), CodeDefShape, "`*%s` after a bare `*`", e.Name.Tok.Value).
					WithHint("Python takes one of them: `*` alone, or `*%s`", e.Name.Tok.Value)
			}
			n++
		}
	}
	if star != nil && n == 0 {
		c.fail(span(*star), CodeDefShape, "a bare `*` must be followed by a parameter").
			WithHint("name the parameters taken only by name after it, or remove it")
	}
	return n, star
}

// paramNames returns the names of a parameter list, refusing an empty
// element other than a trailing comma: `(a, , b)` or `(,)`.
func (c *converter) paramNames(l *paramListG) []*nameG {
	if l.First == nil {
		return nil
	}
	out := []*nameG{l.First}
	for i, e := range l.Rest {
		if e.bare() {
			continue // kwOnly's
		}
		if e.Star != nil && e.Name.Star == nil {
			e.Name.Star = e.Star // `*name`
		}
		if e.Name == nil {
			if i < len(l.Rest)-1 {
				c.fail(span(l.Rest[i+1].Comma), CodeUnexpectedToken, "expected a parameter name between the two commas").
					WithHint("remove one of the commas")
			}
			continue
		}
		out = append(out, e.Name)
	}
	for _, n := range out {
		if n.Tok.Value == "None" { // a name to the grammar, a keyword to Python
			c.fail(span(n.Tok), CodeKeywordAsName, "`None` is a keyword and cannot be used as a parameter name").
				WithHint("choose another name, e.g. `None_`; a parameter that may be None takes a default: `extra=None`")
			break
		}
	}
	return out
}

// listDisplay converts a list display `[x, y]`, which only a type
// annotation may hold (its text is what maskc keeps of it): elsewhere it
// is an error.
func (c *converter) listDisplay(g *listG) dsl.Expr {
	sp := span(g.Open).Join(span(g.Close))
	switch {
	case c.annotation:
	case g.First != nil && g.First.Gen != nil:
		c.fail(span(g.Open), CodeUnexpectedToken, "a list comprehension is not a value in maskc: a mod computes one value per (q, kv) pair").
			WithHint("write the loop out: `any`/`all` over a few values as a chain of `or`/`and`, a sum as `+` terms; a table of values is a `buffer`")
		return &dsl.Ident{Sp: sp, Name: "list"}
	default:
		c.fail(span(g.Open), CodeUnexpectedToken, "a list is not a value in maskc: a mod computes one value per (q, kv) pair").
			WithHint("a table of values is a `buffer` read with an index, e.g. `buffer t: f32[H]` and `t[h]`")
		return &dsl.Ident{Sp: sp, Name: "list"}
	}
	c.list(g.First, g.Rest, g.Open, true, false) // its elements, checked as in any list
	return &dsl.Ident{Sp: sp, Name: "list"}
}

// lambdaInPlace makes a lambda written as an operand a def of its own,
// named after its attention block (`a_lambda1`), and returns the name
// standing for it. Only an attention setting may hold one: a def's body
// has inner defs for that.
func (c *converter) lambdaInPlace(g *lambdaG) dsl.Expr {
	sp := span(g.Keyword)
	if name, ok := c.hoisted[g]; ok {
		return &dsl.Ident{Sp: sp, Name: name}
	}
	if c.settingsOf == "" {
		c.fail(sp, CodeUnexpectedToken, "a lambda is a mod only as an attention setting or bound to a name at the top of the file").
			WithHint("write it as a def, or as `NAME = lambda b, h, q_idx, kv_idx: ...` on a line of its own")
		return &dsl.Ident{Sp: sp, Name: "lambda"}
	}
	c.named++
	name := g.Keyword
	name.Value = fmt.Sprintf("%s_lambda%d", c.settingsOf, c.named)
	d := c.lambda(name, g)
	d.InPlace = true
	d.Name.Sp = sp
	d.Sp = sp.Join(d.Body.Result.Span())
	c.lambdas = append(c.lambdas, d)
	return &dsl.Ident{Sp: d.Sp, Name: name.Value, Lambda: d}
}
