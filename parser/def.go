package parser

import (
	"fmt"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/maskc/maskc/dsl"
)

// stringLit makes a string literal from a string token; the lexer has
// checked its quotes.
func stringLit(t lexer.Token) *dsl.StringLit {
	raw, n := t.Value, 1
	text := raw[strings.IndexAny(raw, `"'`):] // past a prefix (lexer.go's stringPrefixes)
	if len(text) >= 6 && (strings.HasPrefix(text, `"""`) || strings.HasPrefix(text, `'''`)) {
		n = 3
	}
	return &dsl.StringLit{Sp: span(t), Raw: raw, Value: text[n : len(text)-n]}
}

// def converts a Python function, `def NAME(b, h, q_idx, kv_idx): ...
// return expr`, or a factory closure `def NAME(W): def inner(...): ...
// return inner`, to a mod declaration.
func (c *converter) def(g *defG) *dsl.ModDecl {
	d := &dsl.ModDecl{Name: ident(g.Name), Def: true}
	lam, lamAt := returnedLambda(g.Body)
	inReturn := false
	if lam == nil {
		// `return or_masks(causal, lambda b, h, q_idx, kv_idx: ...)`
		if l := lambdaInReturn(g.Body); l != nil {
			lam, inReturn = l, true
		}
	}
	if lam != nil {
		lambdaInner(g, lam, lamAt)
		d.InnerLambda = true
		if inReturn {
			c.hoisted = map[*lambdaG]string{lam: g.Body.Inner.Name.Value}
			defer func() { c.hoisted = nil }()
		}
	}
	params, annots, defaults, returns, kwOnly := c.defParams(g)
	var inAnnots []*dsl.Ident
	var inReturns *dsl.Ident
	c.checkIndent(g)
	body := g.Body
	fn := g // the function that computes the mod's value
	end := body.Return
	var retEnd dsl.Span // the factory's `return inner`
	if body.Inner != nil {
		inner := body.Inner
		fn, end = inner, body.InnerRet
		for _, a := range body.Assigns {
			for _, let := range c.assignments(a) {
				d.FactoryPre = append(d.FactoryPre, let)
			}
		}
		if inner.Body.Inner != nil {
			c.fail(span(inner.Body.Inner.Keyword), CodeDefShape, "a factory's inner function cannot itself be a factory").
				WithHint("give %s one list of constant parameters", d.Name.Name)
		}
		if body.Doc != nil {
			d.Doc = stringLit(*body.Doc)
		}
		d.FactoryParams = params
		d.Variadic = c.variadic(g.Params, true)
		c.variadic(inner.Params, false)
		d.Inner = ident(inner.Name)
		var inDefaults []dsl.Expr
		var inKwOnly int
		d.Params, inAnnots, inDefaults, inReturns, inKwOnly = c.defParams(inner)
		if inKwOnly > 0 {
			c.factoryKwOnly(d.Name.Name, inner.Params)
		}
		d.FactoryKwOnly = kwOnly
		d.Defaults = defaults
		if inDefaults != nil {
			c.noModDefaults(inner, inDefaults)
		}
		for _, a := range body.After {
			if a.Op.Value != "=" {
				c.fail(span(a.Op), CodeDefShape, "`%s` on a mod in factory %s", a.Op.Value, d.Name.Name).
					WithHint("combine mods with and_masks(...) or or_masks(...)")
			}
			v := c.expr(a.Value)
			d.FactoryLets = append(d.FactoryLets, &dsl.LetStmt{Sp: span(a.Name).Join(v.Span()), Assign: true, Name: ident(a.Name), Value: v})
		}
		switch {
		case inReturn:
			// The return's expression, the lambda standing there as its
			// inner def's name: the factory's result.
			d.Inner.Sp = span(lam.Keyword)
			d.FactoryResult = c.tupleOf(end.Value, end.Rest)
			retEnd = span(end.Keyword).Join(d.FactoryResult.Span())
		case lam != nil && lamAt < 0:
			// `return lambda ...`: the made-up name stands for the
			// lambda, whose span is the keyword's.
			d.Inner.Sp = span(lam.Keyword)
			retEnd = span(end.Keyword)
		default: // an inner def, or `fn = lambda ...` (the def named fn) and what follows it
			ret := c.tupleOf(end.Value, end.Rest)
			retEnd = span(end.Keyword).Join(ret.Span())
			if id, ok := ret.(*dsl.Ident); !ok || id.Name != inner.Name.Value || len(d.FactoryLets) > 0 {
				d.FactoryResult = ret
			}
		}
		if annots != nil || returns != nil || inAnnots != nil || inReturns != nil {
			d.Annotations = &dsl.Annotations{FactoryParams: annots, Params: inAnnots, Returns: returns, InnerReturns: inReturns}
		}
	} else {
		d.Params, d.KwOnly = params, kwOnly
		c.variadic(g.Params, false)
		if defaults != nil && kwOnly == 0 && (len(params) == 4 || len(params) == 5) {
			c.noModDefaults(g, defaults)
		}
		d.Defaults = defaults // a helper's (Helper)
		if annots != nil || returns != nil {
			d.Annotations = &dsl.Annotations{Params: annots, Returns: returns}
		}
	}
	switch {
	case d.KwOnly > 0:
		// Parameters taken only by name: a function that functools.partial
		// binds, or that is called with them named.
		d.Helper = true
	case len(d.Params) == 4:
		d.Kind = dsl.MaskMod
	case len(d.Params) == 5:
		d.Kind = dsl.ScoreMod
	case body.Inner == nil:
		// Not a factory: a helper function (or a mod with a slip, which
		// check reports where it is used as one).
		d.Helper = true
	case lam != nil:
		c.fail(span(lam.Keyword), CodeDefShape, "the lambda that def %s returns has %d parameters: a mask_mod takes 4 and a score_mod 5", g.Name.Value, len(d.Params)).
			WithHint("write lambda b, h, q_idx, kv_idx: ... for a mask, lambda score, b, h, q_idx, kv_idx: ... for a score")
	default:
		c.fail(span(fn.Name), CodeDefShape, "def %s has %d parameters: a mask_mod takes 4 and a score_mod 5", fn.Name.Value, len(d.Params)).
			WithHint("write def %s(b, h, q_idx, kv_idx) for a mask, def %s(score, b, h, q_idx, kv_idx) for a score", fn.Name.Value, fn.Name.Value)
	}
	d.Body = c.defBody(fn)
	d.Sp = span(g.Keyword).Join(d.Body.Sp)
	if body.Inner != nil {
		d.Sp = d.Sp.Join(retEnd)
	}
	return d
}

// returnedLambda is the lambda that makes a straight-line def body a
// factory, a factory's usual shape in trainers' code: written in the return
// (`return lambda b, h, q_idx, kv_idx: ...`; at -1) or bound by one of the
// body's assignments (`fn = lambda ...`, then `return fn` or statements
// that build the result from it, `both = and_masks(fn, causal)`; at the
// assignment's index). Nil when there is none, or more than one
// assignment binds a lambda of a mod's arity.
func returnedLambda(b *defBodyG) (lam *lambdaG, at int) {
	if b.Inner != nil || b.Return == nil || len(b.Return.Rest) > 0 {
		return nil, -1
	}
	lambdaOf := func(x *exprG) *lambdaG {
		if len(x.Tail) > 0 || x.Head.Lambda == nil || len(x.Head.Prefix) > 0 || len(x.Head.Suffixes) > 0 {
			return nil
		}
		return x.Head.Lambda
	}
	if l := lambdaOf(b.Return.Value); l != nil {
		return l, -1
	}
	at = -1
	for i, a := range b.Assigns {
		l := lambdaOf(a.Value)
		if l == nil || len(a.More) > 0 || len(a.Rest) > 0 || a.Op.Value != "=" {
			continue
		}
		if !l.isMod() {
			continue // a helper lambda stays E011 (write a def)
		}
		if lam != nil {
			return nil, -1 // two: write defs
		}
		lam, at = l, i
	}
	if lam != nil && calledName(b.Assigns[at+1:], b.Return, b.Assigns[at].Name.Value) {
		// `x = lambda ...` called where it is used: the def computes a
		// value with a local function, not a factory (E011: write a def).
		return nil, -1
	}
	return lam, at
}

// lambdaInReturn is the one lambda of a mod's arity (4 or 5 parameters)
// written inside the return expression of a straight-line def body without
// an inner def and passed there as a value (`return or_masks(causal,
// lambda b, h, q_idx, kv_idx: kv_idx < prefix)`), which makes the def a
// factory whose inner def is the lambda; nil when there is none, more than
// one, or the return calls one (`(lambda ...)(b, h, q, kv)` is a value).
func lambdaInReturn(b *defBodyG) *lambdaG {
	if b.Inner != nil || b.Return == nil {
		return nil
	}
	var found []*lambdaG
	called := false
	visit := func(o *operandG, call bool) {
		if o.Lambda == nil {
			return
		}
		if o.Lambda.isMod() {
			found = append(found, o.Lambda)
			called = called || call
		}
	}
	for _, x := range append([]*exprG{b.Return.Value}, b.Return.Rest...) {
		walkOperands(x, false, visit)
	}
	if len(found) != 1 || called {
		return nil
	}
	return found[0]
}

// calledName reports whether name is called (`name(...)`) anywhere in
// the assignments as or the return r.
func calledName(as []*assignG, r *returnG, name string) bool {
	called := false
	visit := func(o *operandG, call bool) {
		if o.Atom != nil && o.Atom.Type == tokIdent && o.Atom.Value == name && call {
			called = true
		}
	}
	var xs []*exprG
	for _, a := range as {
		xs = append(append(xs, a.Value), a.Rest...)
	}
	xs = append(append(xs, r.Value), r.Rest...)
	for _, x := range xs {
		walkOperands(x, false, visit)
	}
	return called
}

// walkOperands calls visit on every operand of x, and of the lists,
// groups and lambdas inside it, with whether the operand is called: its
// own first suffix is a call, or it stands alone in a group that is
// (`(lambda ...)(b, h, q, kv)`).
func walkOperands(x *exprG, inCalled bool, visit func(o *operandG, call bool)) {
	if x == nil {
		return
	}
	alone := len(x.Tail) == 0
	operand := func(o *operandG) {
		call := len(o.Suffixes) > 0 && o.Suffixes[0].Open != nil && o.Suffixes[0].Open.Value == "("
		visit(o, call || inCalled && alone && len(o.Prefix) == 0)
		elems := func(first *argG, rest []*listElemG, called bool) {
			args := []*argG{first}
			for _, e := range rest {
				args = append(args, e.X)
			}
			for _, a := range args {
				if a == nil {
					continue
				}
				walkOperands(a.X, called && len(args) == 1, visit)
				if a.Gen != nil {
					walkOperands(a.Gen.Iter, false, visit)
				}
			}
		}
		switch {
		case o.Lambda != nil:
			walkOperands(o.Lambda.Body, false, visit)
		case o.Group != nil:
			elems(o.Group.First, o.Group.Rest, call)
		case o.List != nil:
			elems(o.List.First, o.List.Rest, false)
		}
		for _, sfx := range o.Suffixes {
			if sfx.Open != nil {
				elems(sfx.First, sfx.Rest, false)
			}
		}
	}
	operand(x.Head)
	for _, t := range x.Tail {
		operand(t.Y)
	}
}

// lambdaInner rewrites g, whose body returns lam or builds its result from
// it, as the factory it is: the lambda becomes its inner def, named as the
// assignment at index at binds it (the assignments after it become the
// factory's statements after its inner def) or, for a lambda in the return
// itself (at < 0), after g (`NAME_lambda`, which no name g's lambda reads
// can be: Python gives the lambda none). Python binds the lambda's free
// names the same way, at the factory's call.
func lambdaInner(g *defG, lam *lambdaG, at int) {
	name := lam.Keyword
	name.Type = tokIdent
	name.Value = g.Name.Value + "_lambda"
	if at >= 0 { // `NAME = lambda ...`: the def NAME; the assignments after it build the result
		b := g.Body
		name = b.Assigns[at].Name
		b.After = b.Assigns[at+1:]
		b.Assigns = b.Assigns[:at]
	}
	params := &paramListG{Open: lam.Keyword, Close: lam.Colon}
	for i, p := range lam.params() {
		n := &nameG{Tok: p.Tok, Eq: p.Eq, Default: p.Default}
		if i == 0 {
			params.First = n
		} else {
			params.Rest = append(params.Rest, &paramElemG{Comma: p.Tok, Name: n})
		}
	}
	ret := g.Body.Return
	g.Body.Inner = &defG{Keyword: lam.Keyword, Name: name, Params: params, Colon: lam.Colon,
		Body: &defBodyG{Return: &returnG{Keyword: lam.Colon, Value: lam.Body}}}
	g.Body.InnerRet = &returnG{Keyword: ret.Keyword, Value: ret.Value}
	g.Body.Return = nil
}

// variadic reports whether a def's parameter list ends in `*name`, which a
// factory binds to its call's remaining positional arguments; factory is
// false for the function that computes a mod (FlexAttention passes it
// exactly four or five), which refuses one. A `*name` anywhere but last, or
// with a default, is an error.
func (c *converter) variadic(l *paramListG, factory bool) bool {
	names := c.paramNames(l)
	for i, n := range names {
		if n.Star == nil {
			continue
		}
		switch {
		case !factory:
			c.fail(span(*n.Star), CodeDefShape, "`*%s` is taken only by a factory (a def that returns its inner def); a mod's parameters are exactly (b, h, q_idx, kv_idx)", n.Tok.Value).
				WithHint("name each parameter: (b, h, q_idx, kv_idx), or (score, b, h, q_idx, kv_idx) for a score_mod; a helper takes a tuple argument instead")
		case i != len(names)-1:
			c.fail(span(*n.Star), CodeDefShape, "`*%s` must be the last parameter of the factory", n.Tok.Value).
				WithHint("move *%s after the other parameters (maskc takes no keyword-only parameters)", n.Tok.Value)
		case n.Default != nil:
			c.fail(span(*n.Eq), CodeDefShape, "`*%s` cannot have a default", n.Tok.Value).
				WithHint("remove the default: *%s is the empty tuple when no argument is left", n.Tok.Value)
		default:
			return true
		}
	}
	return false
}

// defParams converts a def's parameter list and returns its annotations
// (nil when there are none; each kept as its source text), its default
// values (nil when there are none) and its return annotation.
func (c *converter) defParams(g *defG) (params, annots []*dsl.Ident, defaults []dsl.Expr, returns *dsl.Ident, kwOnly int) {
	names := c.paramNames(g.Params)
	kwOnly, _ = c.kwOnly(g.Params)
	params = make([]*dsl.Ident, 0, len(names))
	for i, n := range names {
		params = append(params, ident(n.Tok))
		if n.Annot != nil {
			if annots == nil {
				annots = make([]*dsl.Ident, len(names))
			}
			sp := c.annotationSpan(n.Annot)
			annots[i] = &dsl.Ident{Sp: sp, Name: string(c.src.Text[sp.Start:sp.End])}
		}
		if n.Default != nil {
			if defaults == nil {
				defaults = make([]dsl.Expr, len(names))
			}
			defaults[i] = c.expr(n.Default)
		} else if defaults != nil && i < len(names)-kwOnly { // Python orders only the positional ones
			c.defaultOrder(n.Tok)
		}
	}
	if g.Returns != nil {
		sp := c.annotationSpan(g.Returns) // kept as its text, like the parameters' annotations
		returns = &dsl.Ident{Sp: sp, Name: string(c.src.Text[sp.Start:sp.End])}
	}
	return params, annots, defaults, returns, kwOnly
}

// defBody converts the body of the function that computes a mod's value:
// assignments, then `return expr`.
func (c *converter) defBody(g *defG) *dsl.Body {
	b := &dsl.Body{Def: true}
	if g.Body.Doc != nil {
		b.Doc = stringLit(*g.Body.Doc)
	}
	for _, a := range g.Body.Assigns {
		b.Lets = append(b.Lets, c.assignments(a)...)
	}
	if g.Body.Return == nil { // an inner factory, reported by def
		b.Sp = span(g.Colon)
		return b
	}
	b.Result = c.tupleOf(g.Body.Return.Value, g.Body.Return.Rest)
	b.Sp = span(g.Colon).Join(b.Result.Span())
	return b
}

// checkIndent checks a def's indentation as Python does: the statements of
// a body on lines of their own are indented past the def and all alike; an
// inner def's body is indented past the inner def.
func (c *converter) checkIndent(g *defG) {
	defCol := c.src.Position(g.Keyword.Pos.Offset).Column
	colonLine := c.src.LineOf(g.Colon.Pos.Offset)
	var starts []lexer.Token
	b := g.Body
	if b.Doc != nil {
		starts = append(starts, *b.Doc)
	}
	for _, a := range b.Assigns {
		starts = append(starts, a.Name)
	}
	switch {
	case b.Inner != nil && b.Inner.Keyword.Value == "lambda": // `return lambda ...` (lambdaInner)
		starts = append(starts, b.InnerRet.Keyword)
	case b.Inner != nil:
		starts = append(starts, b.Inner.Keyword, b.InnerRet.Keyword)
	default:
		starts = append(starts, b.Return.Keyword)
	}
	col, prevLine := -1, -1
	for _, t := range starts {
		pos := c.src.Position(t.Pos.Offset)
		if pos.Line == colonLine {
			continue // `def f(b, h, q, kv): return q >= kv`
		}
		if pos.Line == prevLine {
			continue // `d = q - kv; return d >= 0`: Python's `;` (issue 31: "unexpected indent")
		}
		prevLine = pos.Line
		switch {
		case pos.Column <= defCol:
			c.fail(span(t), CodeDefIndent, "expected an indented statement of def %s", g.Name.Value).
				WithHint("indent the body of def %s past its `def`, e.g. by 4 spaces", g.Name.Value)
			return
		case col < 0:
			col = pos.Column
		case pos.Column != col:
			what := "unexpected indent"
			if pos.Column < col {
				what = "unindent does not match the statements above"
			}
			c.fail(span(t), CodeDefIndent, "%s in def %s", what, g.Name.Value).
				WithHint("indent every statement of def %s by the same amount (column %d)", g.Name.Value, col)
			return
		}
	}
	if b.Inner != nil {
		c.checkIndent(b.Inner)
	}
}

// noModDefaults refuses default values on the parameters of the function
// that computes a mod: FlexAttention always passes all of them.
func (c *converter) noModDefaults(g *defG, defaults []dsl.Expr) {
	for _, d := range defaults {
		if d != nil {
			c.fail(d.Span(), CodeDefShape, "a default value on a parameter of %s, which FlexAttention always passes", g.Name.Value).
				WithHint("remove the default; give defaults to the factory's parameters instead")
			return
		}
	}
}

// assignments converts `x = e` or an augmented `x += e`, which is
// `x = x + e`: the target, read, then the value. An unpacking `a, b = e`
// is a hidden assignment of e (LetStmt.Unpack) and one per target of
// its element; `x = a, b` assigns a tuple.
func (c *converter) assignments(a *assignG) []*dsl.LetStmt {
	v := c.tupleOf(a.Value, a.Rest)
	if len(a.More) > 0 {
		if a.Op.Value != "=" {
			c.fail(span(a.Op), CodeDefShape, "`%s` to several names", a.Op.Value).
				WithHint("Python allows it to one name only")
			return nil
		}
		tmp := &dsl.Ident{Sp: span(a.Name), Name: fmt.Sprintf("%s%d", dsl.UnpackPrefix, a.Name.Pos.Offset)}
		sp := span(a.Name).Join(v.Span())
		out := []*dsl.LetStmt{{Sp: sp, Assign: true, Name: tmp, Value: v, Unpack: 1 + len(a.More)}}
		targets := []lexer.Token{a.Name}
		for _, m := range a.More {
			targets = append(targets, m.Tok)
		}
		for i, t := range targets {
			ix := &dsl.IndexExpr{Sp: span(t), X: &dsl.Ident{Sp: span(t), Name: tmp.Name}, Indices: []dsl.Expr{&dsl.IntLit{Sp: span(t), Value: int64(i)}}}
			out = append(out, &dsl.LetStmt{Sp: span(t), Assign: true, Name: ident(t), Value: ix})
		}
		return out
	}
	let := &dsl.LetStmt{Sp: span(a.Name).Join(v.Span()), Assign: true, Name: ident(a.Name), Value: v}
	if a.Op.Value != "=" {
		let.AugOp = binaryOps[strings.TrimSuffix(a.Op.Value, "=")]
		let.Value = &dsl.BinaryExpr{Sp: let.Sp, Op: let.AugOp, OpSp: span(a.Op), X: ident(a.Name), Y: v}
	}
	return []*dsl.LetStmt{let}
}

// tupleOf converts `e` or a bare tuple `e1, e2, ...` (an assigned or
// returned value).
func (c *converter) tupleOf(first *exprG, rest []*exprG) dsl.Expr {
	v := c.expr(first)
	if len(rest) == 0 {
		return v
	}
	t := &dsl.TupleExpr{Elems: []dsl.Expr{v}}
	for _, r := range rest {
		t.Elems = append(t.Elems, c.expr(r))
	}
	t.Sp = v.Span().Join(t.Elems[len(t.Elems)-1].Span())
	return t
}

// factoryKwOnly refuses a bare `*` in l, the parameter list of factory
// name's inner def (or another def inside it): FlexAttention passes a mod its
// parameters by position. (The factory's own parameters may have one:
// ModDecl.FactoryKwOnly.)
func (c *converter) factoryKwOnly(name string, l *paramListG) {
	star := l.Lead
	for _, e := range l.Rest {
		if star == nil && e.bare() {
			star = e.Star
		}
	}
	if star != nil {
		c.fail(span(*star), CodeDefShape, "parameters taken only by name (after a bare `*`) in the mod of factory %s", name).
			WithHint("FlexAttention passes a mod its parameters by position: remove the `*`")
	}
}

// lambda converts `NAME = lambda params: expr` at the top of a file to the
// def it is: a mask_mod of 4 parameters, a score_mod of 5, else a helper
// function (ModDecl.Lambda keeps the form for printing). As for a def,
// FlexAttention never passes a mod's defaulted parameters.
func (c *converter) lambda(name lexer.Token, g *lambdaG) *dsl.ModDecl {
	d := &dsl.ModDecl{Name: ident(name), Def: true, Lambda: true}
	var defaults []dsl.Expr
	ps := g.params()
	for i, p := range ps {
		d.Params = append(d.Params, ident(p.Tok))
		switch {
		case p.Default != nil:
			if defaults == nil {
				defaults = make([]dsl.Expr, len(ps))
			}
			defaults[i] = c.expr(p.Default)
		case defaults != nil:
			c.defaultOrder(p.Tok)
		}
	}
	kindByArity(d)
	if defaults != nil && !d.Helper {
		c.noModDefaults(&defG{Name: name}, defaults)
	}
	d.Defaults = defaults
	result := c.expr(g.Body)
	d.Body = &dsl.Body{Def: true, Result: result, Sp: span(g.Colon).Join(result.Span())}
	d.Sp = span(name).Join(result.Span())
	return d
}

// kindByArity makes d, a def that is not a factory, what FlexAttention
// calls it as: a mask_mod of 4 parameters, a score_mod of 5, else a helper
// function.
func kindByArity(d *dsl.ModDecl) {
	switch len(d.Params) {
	case 4:
		d.Kind = dsl.MaskMod
	case 5:
		d.Kind = dsl.ScoreMod
	default:
		d.Helper = true
	}
}

// defaultOrder reports parameter tok of a def or lambda, without a default
// after one with a default, which Python refuses.
func (c *converter) defaultOrder(tok lexer.Token) {
	c.fail(span(tok), CodeDefShape, "parameter %s without a default follows a parameter with one", tok.Value).
		WithHint("give %s a default too, or move it before the parameters that have one (as Python requires)", tok.Value)
}
