package parser

import (
	"sort"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/maskc/maskc/dsl"
)

// flatLine is one line of a def body in the flat form, with the block it
// heads (for `def`, `if`, `elif` and `else` lines).
type flatLine struct {
	g         *lineG
	first     lexer.Token
	line, col int
	kids      []*flatLine
}

func (l *flatLine) header() bool {
	return l.g.Def != nil || l.g.If != nil || l.g.Else != nil || l.g.For != nil
}

// firstToken is the token a line starts with.
func firstToken(g *lineG) lexer.Token {
	switch {
	case g.Def != nil:
		return g.Def.Keyword
	case g.If != nil:
		return g.If.Keyword
	case g.Else != nil:
		return g.Else.Keyword
	case g.For != nil:
		return g.For.Keyword
	case g.Return != nil:
		return g.Return.Keyword
	case g.Assert != nil:
		return g.Assert.Keyword
	case g.Raise != nil:
		return g.Raise.Keyword
	case g.Pass != nil:
		return *g.Pass
	case g.Doc != nil:
		return *g.Doc
	}
	return g.Assign.Name
}

// hasControlFlow reports whether the lines hold a statement only the flat
// form reads: `if`, `elif`, `else`, `assert`, `raise`, `pass` or `for`.
func hasControlFlow(lines []*lineG) bool {
	for _, l := range lines {
		if l.If != nil || l.Else != nil || l.Assert != nil || l.Raise != nil || l.Pass != nil || l.For != nil {
			return true
		}
	}
	return false
}

// innerDefs counts the def headers among the lines.
func innerDefs(lines []*lineG) int {
	n := 0
	for _, l := range lines {
		if l.Def != nil {
			n++
		}
	}
	return n
}

// flatDef converts a def read in the flat form: it builds the blocks from
// the lines' columns, as Python does from their indentation, then the mod
// declaration with its statements (dsl.Body.Stmts).
func (c *converter) flatDef(g *flatDefG) *dsl.ModDecl {
	lines := make([]*flatLine, len(g.Lines))
	for i, lg := range g.Lines {
		t := firstToken(lg)
		pos := c.src.Position(t.Pos.Offset)
		lines[i] = &flatLine{g: lg, first: t, line: pos.Line, col: pos.Column}
	}
	head := g.Head
	defCol := c.src.Position(head.Keyword.Pos.Offset).Column
	top, next := c.block(head, lines, 0, defCol, c.src.LineOf(head.Colon.Pos.Offset))
	if c.err != nil {
		return nil
	}
	if next < len(lines) {
		c.fail(span(lines[next].first), CodeDefIndent, "expected an indented statement of def %s", head.Name.Value).
			WithHint("indent the body of def %s past its `def`, e.g. by 4 spaces", head.Name.Value)
		return nil
	}
	d := &dsl.ModDecl{Name: ident(head.Name), Def: true}
	params, annots, defaults, returns, kwOnly := c.defParams(&defG{Params: head.Params, Returns: head.Returns})
	fnHead, body := head, top
	var inDefs []int
	for i, l := range top {
		if l.g.Def != nil {
			inDefs = append(inDefs, i)
		}
	}
	branch := branchDefs(top)
	switch {
	case len(branch) > 0:
		var ok bool
		fnHead, body, ok = c.branchedFactory(d, head, top, branch)
		if !ok {
			return nil
		}
		d.FactoryParams, d.Defaults = params, defaults
		d.Variadic = c.variadic(head.Params, true)
		c.variadic(fnHead.Params, false)
		d.FactoryKwOnly = kwOnly
		inParams, inAnnots, inDefaults, inReturns, inKwOnly := c.defParams(&defG{Params: fnHead.Params, Returns: fnHead.Returns})
		d.Params = inParams
		if inKwOnly > 0 {
			c.factoryKwOnly(d.Name.Name, fnHead.Params)
		}
		if inDefaults != nil {
			c.noModDefaults(&defG{Name: fnHead.Name}, inDefaults)
		}
		if annots != nil || returns != nil || inAnnots != nil || inReturns != nil {
			d.Annotations = &dsl.Annotations{FactoryParams: annots, Params: inAnnots, Returns: returns, InnerReturns: inReturns}
		}
	case len(inDefs) == 0:
		d.Params, d.KwOnly = params, kwOnly
		c.variadic(head.Params, false)
		if defaults != nil && kwOnly == 0 && (len(params) == 4 || len(params) == 5) {
			c.noModDefaults(&defG{Name: head.Name}, defaults)
		}
		d.Defaults = defaults // a helper's (Helper)
		if annots != nil || returns != nil {
			d.Annotations = &dsl.Annotations{Params: annots, Returns: returns}
		}
	default:
		at := inDefs[0]
		inner := top[at]
		pre := top[:at]
		if len(pre) > 0 && pre[0].g.Doc != nil {
			d.Doc = stringLit(*pre[0].g.Doc)
			pre = pre[1:]
		}
		var preLets []*dsl.LetStmt
		d.FactoryPre = c.stmts(d.Name.Name, pre, &preLets)
		if r := firstReturn(d.FactoryPre); r != nil {
			c.fail(r.Sp, CodeDefShape, "factory %s returns before its inner def", d.Name.Name).
				WithHint("return the inner function (or a combination of it) after its def")
			return nil
		}
		// The inner defs follow one another; the mod is the one the factory
		// returns by name, else the first of 4 or 5 parameters; the others
		// are its locals (helpers such as NATTEN's get_x_y).
		group := []*flatLine{inner}
		end := at + 1
		for end < len(top) && (top[end].g.Def != nil || top[end].g.Doc != nil && end+1 < len(top) && top[end+1].g.Def != nil) {
			if top[end].g.Def != nil {
				group = append(group, top[end])
			}
			end++
		}
		main := -1
		if name := returnedName(top[len(top)-1].g.Return); name != "" {
			for i, g := range group {
				if g.g.Def.Name.Value == name {
					main = i
				}
			}
		}
		if main < 0 {
			main = c.firstModDef(group)
		}
		inner = group[main]
		for i, g := range group {
			if i != main {
				if ld := c.localDef(d, g); ld != nil {
					d.Locals = append(d.Locals, ld)
				}
			}
		}
		at = end - 1 // the statements after the defs follow
		fnHead, body = inner.g.Def, inner.kids
		d.FactoryParams, d.Defaults = params, defaults
		d.Variadic = c.variadic(head.Params, true)
		c.variadic(fnHead.Params, false)
		d.Inner = ident(fnHead.Name)
		inParams, inAnnots, inDefaults, inReturns, inKwOnly := c.defParams(&defG{Params: fnHead.Params, Returns: fnHead.Returns})
		d.Params = inParams
		if inKwOnly > 0 {
			c.factoryKwOnly(d.Name.Name, fnHead.Params)
		}
		d.FactoryKwOnly = kwOnly
		if inDefaults != nil {
			c.noModDefaults(&defG{Name: fnHead.Name}, inDefaults)
		}
		if annots != nil || returns != nil || inAnnots != nil || inReturns != nil {
			d.Annotations = &dsl.Annotations{FactoryParams: annots, Params: inAnnots, Returns: returns, InnerReturns: inReturns}
		}
		after := top[at+1:]
		if len(after) == 0 || after[len(after)-1].g.Return == nil {
			c.fail(span(inner.first), CodeMissingResult, "factory `%s` ends without `return %s`", d.Name.Name, fnHead.Name.Value).
				WithHint("end the factory with `return %s`, indented like the `def %s` above it", fnHead.Name.Value, fnHead.Name.Value)
			return nil
		}
		for _, l := range after[:len(after)-1] {
			if l.g.Assign == nil || l.g.Assign.Op.Value != "=" {
				c.fail(span(l.first), CodeDefShape, "factory %s may hold, after its inner def, only assignments of mods and `return`", d.Name.Name).
					WithHint("write `if` and `assert` inside %s, or decide with a constant argument there", fnHead.Name.Value)
				return nil
			}
			v := c.expr(l.g.Assign.Value)
			d.FactoryLets = append(d.FactoryLets, &dsl.LetStmt{Sp: span(l.g.Assign.Name).Join(v.Span()), Assign: true, Name: ident(l.g.Assign.Name), Value: v})
		}
		ret := after[len(after)-1].g.Return
		rv := c.tupleOf(ret.Value, ret.Rest)
		if id, ok := rv.(*dsl.Ident); !ok || id.Name != fnHead.Name.Value || len(d.FactoryLets) > 0 || d.Locals != nil {
			d.FactoryResult = rv
		}
		d.Sp = span(head.Keyword).Join(span(ret.Keyword)).Join(rv.Span())
	}
	switch {
	case d.KwOnly > 0:
		d.Helper = true // see def
	case len(d.Params) == 4:
		d.Kind = dsl.MaskMod
	case len(d.Params) == 5:
		d.Kind = dsl.ScoreMod
	default:
		if d.Inner == nil {
			d.Helper = true // see def
			break
		}
		c.fail(span(fnHead.Name), CodeDefShape, "def %s has %d parameters: a mask_mod takes 4 and a score_mod 5", fnHead.Name.Value, len(d.Params)).
			WithHint("write def %s(b, h, q_idx, kv_idx) for a mask, def %s(score, b, h, q_idx, kv_idx) for a score", fnHead.Name.Value, fnHead.Name.Value)
	}
	b := &dsl.Body{Def: true}
	if len(body) > 0 && body[0].g.Doc != nil {
		b.Doc = stringLit(*body[0].g.Doc)
		body = body[1:]
	}
	b.Stmts = c.stmts(fnHead.Name.Value, body, &b.Lets)
	if c.err != nil {
		return nil
	}
	if len(b.Stmts) == 0 {
		c.fail(span(fnHead.Name), CodeMissingResult, "the body of def `%s` ends without `return`", fnHead.Name.Value).
			WithHint("end the body with `return EXPR` (a factory with `return INNER`)")
		return nil
	}
	b.Sp = blockSpan(span(fnHead.Colon), b.Stmts)
	if !d.Sp.IsValid() || d.Sp.End < b.Sp.End {
		d.Sp = span(head.Keyword).Join(b.Sp)
	}
	d.Body = b
	return d
}

// block collects the lines of one block from lines[i]: those indented past
// parentCol, all at the first one's column, each header with its own
// block. A header's block may be one statement on its own line (`if c:
// return x`). It returns the block and the index of the first line after
// it.
func (c *converter) block(head *defHeadG, lines []*flatLine, i, parentCol, headLine int) ([]*flatLine, int) {
	var out []*flatLine
	col := -1
	for i < len(lines) && c.err == nil {
		l := lines[i]
		if l.line == headLine && len(out) == 0 {
			// `def f(...): return x` or `if c: return x`: one statement.
			return []*flatLine{l}, i + 1
		}
		if l.col <= parentCol {
			break
		}
		switch {
		case col < 0:
			col = l.col
		case l.col > col:
			c.fail(span(l.first), CodeDefIndent, "unexpected indent in def %s", head.Name.Value).
				WithHint("indent every statement of a block by the same amount (column %d)", col)
			return nil, i
		case l.col < col:
			c.fail(span(l.first), CodeDefIndent, "unindent does not match the statements above in def %s", head.Name.Value).
				WithHint("indent every statement of a block by the same amount (column %d)", col)
			return nil, i
		}
		out = append(out, l)
		i++
		if l.header() {
			hl := l.line
			if l.g.Def != nil {
				hl = c.src.LineOf(l.g.Def.Colon.Pos.Offset)
			}
			l.kids, i = c.block(head, lines, i, l.col, hl)
			if len(l.kids) == 0 && c.err == nil {
				c.fail(span(l.first), CodeDefIndent, "expected an indented block after `%s`", l.first.Value).
					WithHint("indent the statements of the block past the `%s`, e.g. by 4 spaces", l.first.Value)
			}
		}
	}
	return out, i
}

// stmts converts a block of the function named fn to statements,
// appending its assignments to lets.
func (c *converter) stmts(fn string, ls []*flatLine, lets *[]*dsl.LetStmt) []dsl.Stmt {
	var out []dsl.Stmt
	for k := 0; k < len(ls) && c.err == nil; k++ {
		g := ls[k].g
		switch {
		case g.Assign != nil:
			for _, let := range c.assignments(g.Assign) {
				*lets = append(*lets, let)
				out = append(out, let)
			}
		case g.Return != nil:
			v := c.tupleOf(g.Return.Value, g.Return.Rest)
			out = append(out, &dsl.ReturnStmt{Sp: span(g.Return.Keyword).Join(v.Span()), Value: v})
		case g.Assert != nil:
			cond := c.expr(g.Assert.Cond)
			st := &dsl.AssertStmt{Sp: span(g.Assert.Keyword).Join(cond.Span()), Cond: cond}
			if g.Assert.Msg != nil {
				st.Msg = c.expr(g.Assert.Msg)
				st.Sp = st.Sp.Join(st.Msg.Span())
			}
			out = append(out, st)
		case g.Pass != nil && c.inPlace[g.Pass.Pos.Offset] != nil:
			out = append(out, c.inPlace[g.Pass.Pos.Offset])
		case g.Pass != nil:
			out = append(out, &dsl.PassStmt{Sp: span(*g.Pass)})
		case g.Raise != nil:
			st := &dsl.RaiseStmt{Sp: span(g.Raise.Keyword)}
			if g.Raise.Exc != nil {
				st.Exc = c.expr(g.Raise.Exc)
				st.Sp = st.Sp.Join(st.Exc.Span())
			}
			out = append(out, st)
		case g.For != nil:
			c.needBlock(ls[k], g.For.Keyword, g.For.Colon)
			iter := c.expr(g.For.Iter)
			st := &dsl.ForStmt{Var: ident(g.For.Var), Iter: iter, Body: c.stmts(fn, ls[k].kids, lets)}
			if len(g.For.More) > 0 {
				st.Targets = []*dsl.Ident{st.Var}
				for _, t := range g.For.More {
					st.Targets = append(st.Targets, ident(t.Tok))
				}
			}
			st.Sp = blockSpan(span(g.For.Keyword).Join(span(g.For.Colon)), st.Body)
			out = append(out, st)
		case g.Doc != nil:
			// a string statement: no meaning
		case g.If != nil && g.If.Keyword.Value == "if":
			var st *dsl.IfStmt
			st, k = c.ifStmt(fn, ls, k, lets)
			if st != nil {
				out = append(out, st)
			}
		case g.If != nil || g.Else != nil:
			c.fail(span(ls[k].first), CodeUnexpectedToken, "`%s` without an `if` before it in def `%s`", ls[k].first.Value, fn).
				WithHint("indent `%s` like the `if` it continues", ls[k].first.Value)
		case g.Def != nil && c.defKeys[g] != "":
			// An inner def of a factory that chooses it (branchedFactory):
			// where it runs, it binds its name.
			name := ident(g.Def.Name)
			let := &dsl.LetStmt{Sp: span(g.Def.Keyword).Join(name.Sp), Assign: true, Name: name,
				Value: &dsl.Ident{Sp: name.Sp, Name: c.defKeys[g]}}
			*lets = append(*lets, let)
			out = append(out, let)
		case g.Def != nil:
			c.fail(span(ls[k].first), CodeDefShape, "a def inside a block or after a statement of def `%s`", fn).
				WithHint("declare %s at the top level, or in a factory directly or in its `if` blocks", g.Def.Name.Value)
		}
	}
	return out
}

// ifStmt converts the `if` at ls[k] with the `elif`s and `else` after it;
// it returns the statement and the index of its last line.
func (c *converter) ifStmt(fn string, ls []*flatLine, k int, lets *[]*dsl.LetStmt) (*dsl.IfStmt, int) {
	h := ls[k].g.If
	c.needBlock(ls[k], h.Keyword, h.Colon)
	cond := c.expr(h.Cond)
	st := &dsl.IfStmt{KeywordSp: span(h.Keyword), Cond: cond, Then: c.stmts(fn, ls[k].kids, lets)}
	st.Sp = blockSpan(span(h.Keyword), st.Then)
	if k+1 < len(ls) {
		switch n := ls[k+1].g; {
		case n.If != nil && n.If.Keyword.Value == "elif":
			var elif *dsl.IfStmt
			elif, k = c.ifStmt(fn, ls, k+1, lets)
			if elif != nil {
				st.Else = []dsl.Stmt{elif}
				st.Sp = st.Sp.Join(elif.Sp)
			}
			return st, k
		case n.Else != nil:
			c.needBlock(ls[k+1], n.Else.Keyword, n.Else.Colon)
			st.Else = c.stmts(fn, ls[k+1].kids, lets)
			st.Sp = blockSpan(st.Sp.Join(span(n.Else.Colon)), st.Else)
			return st, k + 1
		}
	}
	return st, k
}

// needBlock reports an `if`, `elif`, `else` or `for` line l (keyword kw,
// colon) with no indented statement under it, as Python's
// IndentationError does.
func (c *converter) needBlock(l *flatLine, kw, colon lexer.Token) {
	if len(l.kids) == 0 {
		c.fail(span(colon), CodeDefIndent, "expected an indented block after `%s`", kw.Value).
			WithHint("put the statements of the `%s` on the lines under it, indented past it (`pass` for none)", kw.Value)
	}
}

// blockSpan joins sp with the spans of a block's statements (all of them:
// an unpacking `a, b = v` ends with the lets of its names, whose spans
// stop before v).
func blockSpan(sp dsl.Span, block []dsl.Stmt) dsl.Span {
	for _, st := range block {
		sp = sp.Join(st.Span())
	}
	return sp
}

// firstReturn returns the first `return` in stmts, blocks included, or nil.
func firstReturn(stmts []dsl.Stmt) *dsl.ReturnStmt {
	r, _ := dsl.FirstStmt(stmts, func(st dsl.Stmt) bool {
		_, ok := st.(*dsl.ReturnStmt)
		return ok
	}).(*dsl.ReturnStmt)
	return r
}

// localDef converts a factory's inner def after its first one (see
// dsl.ModDecl.Locals): a mod or a helper function with the factory's
// parameters.
func (c *converter) localDef(outer *dsl.ModDecl, l *flatLine) *dsl.ModDecl {
	h := l.g.Def
	params, annots, defaults, returns, kwOnly := c.defParams(&defG{Params: h.Params, Returns: h.Returns})
	d := &dsl.ModDecl{Name: ident(h.Name), Def: true, Params: params}
	if kwOnly > 0 {
		c.factoryKwOnly(outer.Name.Name, h.Params)
		return nil
	}
	c.variadic(h.Params, false)
	kindByArity(d)
	if defaults != nil {
		c.fail(span(h.Name), CodeDefShape, "default values on the parameters of inner def %s", h.Name.Value).
			WithHint("give defaults to the factory's parameters instead")
		return nil
	}
	if annots != nil || returns != nil {
		d.Annotations = &dsl.Annotations{Params: annots, InnerReturns: returns}
	}
	b := &dsl.Body{Def: true}
	body := l.kids
	if len(body) > 0 && body[0].g.Doc != nil {
		b.Doc = stringLit(*body[0].g.Doc)
		body = body[1:]
	}
	b.Stmts = c.stmts(h.Name.Value, body, &b.Lets)
	if c.err != nil {
		return nil
	}
	if len(b.Stmts) == 0 {
		c.fail(span(h.Name), CodeMissingResult, "the body of def `%s` ends without `return`", h.Name.Value).
			WithHint("end the body with `return EXPR`")
		return nil
	}
	b.Sp = blockSpan(span(h.Colon), b.Stmts)
	d.Body = b
	d.Sp = span(h.Keyword).Join(b.Sp)
	return d
}

// branchDefs returns the def lines inside the `if`/`elif`/`else` blocks
// among a factory body's lines top (in blocks nested in them too, not in
// defs or loops), in order; nil when there is none.
func branchDefs(top []*flatLine) []*flatLine {
	var out []*flatLine
	var walk func(ls []*flatLine, inIf bool)
	walk = func(ls []*flatLine, inIf bool) {
		for _, l := range ls {
			switch {
			case l.g.Def != nil && inIf:
				out = append(out, l)
			case l.g.If != nil || l.g.Else != nil:
				walk(l.kids, true)
			}
		}
	}
	walk(top, false)
	return out
}

// branchedFactory converts factory d whose body's lines top hold inner
// defs inside its `if` blocks (branch), as transformers' factories choose
// a mask_mod by a compile-time condition:
//
//	if offsets is not None:
//	    def mask_mod(b, h, q_idx, kv_idx): ...
//	else:
//	    mask_mod = causal
//	return mask_mod
//
// Every inner def of the body (in a block or not) becomes a statement of
// d.FactoryPre that binds its name (dsl.ModDecl.DefStmts); the one the last
// `return` names, else the first of a mod's 4 or 5 parameters, is d.Inner,
// whose header and body lines it returns; the others are d.Locals. The
// checker runs the statements at each call, so a def in a branch not taken
// is never bound nor lowered.
func (c *converter) branchedFactory(d *dsl.ModDecl, head *defHeadG, top, branch []*flatLine) (*defHeadG, []*flatLine, bool) {
	d.DefStmts = true
	if len(top) > 0 && top[0].g.Doc != nil {
		d.Doc = stringLit(*top[0].g.Doc)
		top = top[1:]
	}
	last := top[len(top)-1].g.Return
	if last == nil {
		c.fail(span(branch[0].first), CodeMissingResult, "factory `%s` ends without `return`", d.Name.Name).
			WithHint("end the factory with `return %s`, indented like the `if` above it", branch[0].g.Def.Name.Value)
		return nil, nil, false
	}
	var defs []*flatLine
	for _, l := range top {
		if l.g.Def != nil {
			defs = append(defs, l)
		}
	}
	// In the order they are written: a def at the top of the body or in a
	// block.
	defs = append(defs, branch...)
	sort.SliceStable(defs, func(i, j int) bool { return defs[i].first.Pos.Offset < defs[j].first.Pos.Offset })
	main := -1
	if name := returnedName(last); name != "" {
		for i, l := range defs {
			if n := len(c.paramNames(l.g.Def.Params)); l.g.Def.Name.Value == name && (n == 4 || n == 5) && main < 0 {
				main = i
			}
		}
	}
	if main < 0 {
		main = c.firstModDef(defs)
	}
	c.defKeys = map[*lineG]string{defs[main].g: dsl.DefKey(0)}
	defer func() { c.defKeys = nil }()
	for i, l := range defs {
		if i == main {
			continue
		}
		ld := c.localDef(d, l)
		if ld == nil {
			return nil, nil, false
		}
		d.Locals = append(d.Locals, ld)
		c.defKeys[l.g] = dsl.DefKey(len(d.Locals))
	}
	fn := defs[main]
	d.Inner = ident(fn.g.Def.Name)
	var lets []*dsl.LetStmt
	stmts := c.stmts(d.Name.Name, top, &lets)
	if c.err != nil {
		return nil, nil, false
	}
	ret, ok := stmts[len(stmts)-1].(*dsl.ReturnStmt)
	if !ok { // an unpacking's lets end the statements: not a return
		return nil, nil, false
	}
	d.FactoryPre, d.FactoryResult = stmts[:len(stmts)-1], ret.Value
	d.Sp = span(head.Keyword).Join(ret.Sp)
	return fn.g.Def, fn.kids, true
}

// returnedName is the name a factory's `return NAME` gives, or "" where
// its return is no bare name (or there is none).
func returnedName(r *returnG) string {
	if r == nil || len(r.Rest) != 0 || r.Value.Tail != nil || r.Value.Head.Atom == nil || len(r.Value.Head.Suffixes) != 0 {
		return ""
	}
	return r.Value.Head.Atom.Value
}

// firstModDef is the index of the first of defs with a mod's 4 or 5
// parameters, else 0: the inner def of a factory whose return names none.
func (c *converter) firstModDef(defs []*flatLine) int {
	for i, l := range defs {
		if n := len(c.paramNames(l.g.Def.Params)); n == 4 || n == 5 {
			return i
		}
	}
	return 0
}
