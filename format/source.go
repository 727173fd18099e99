package format

import (
	"bytes"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// indentUnit is one level of block indentation.
const indentUnit = "    "

// Source prints f canonically, keeping every comment. It is idempotent:
// printing the parse of Source(f) gives Source(f) again. An empty file
// prints as nothing; anything else ends with exactly one newline. A UTF-8
// byte order mark that starts the source (which the parser skips) starts
// the output too, so `maskc fmt -w` and the language server's formatting
// keep it.
func Source(f *dsl.File) []byte {
	var text []byte
	if f.Source != nil {
		text = f.Source.Text
	}
	p := &printer{text: text, comments: f.Comments, lastEnd: -1}
	for _, d := range f.Decls {
		if m, ok := d.(*dsl.ModDecl); ok && m.InPlace {
			continue // printed where it is written (its Ident)
		}
		p.lines = append(p.lines, declLines(d)...)
	}
	out := p.print()
	if bytes.HasPrefix(text, []byte(dsl.ByteOrderMark)) {
		out = append([]byte(dsl.ByteOrderMark), out...)
	}
	return out
}

// line is one output line before comments are woven in.
type line struct {
	indent int
	text   string
	// sp is the source text the line came from; comments before its end go
	// above it. Invalid for nodes the compiler made up.
	sp dsl.Span
	// opens is true for a line ending in `{`: no blank line follows it.
	opens bool
	// closes is true for a `}` line: no blank line precedes it, and comments
	// just before it are indented as the block's contents.
	closes bool
	// verbatim is true for a def with `if`/`else` or `assert`: the source
	// of sp is printed as written, its comments included.
	verbatim bool
}

// declLines lays out one declaration as lines.
func declLines(d dsl.Decl) []line {
	switch d := d.(type) {
	case *dsl.ParamDecl:
		kw := "param "
		if d.Python {
			kw = ""
		}
		return []line{{text: kw + name(d.Name) + " = " + Expr(d.Value), sp: d.Sp}}
	case *dsl.BufferDecl:
		var b strings.Builder
		b.WriteString("buffer " + name(d.Name) + ": " + name(d.DType))
		writeList(&b, "[", d.Dims, "]", false)
		if d.Property != nil {
			b.WriteString(" " + d.Property.Name)
		}
		return []line{{text: b.String(), sp: d.Sp}}
	case *dsl.ModDecl:
		return modLines(d)
	case *dsl.AttentionDecl:
		header := dsl.NoSpan
		if d.Sp.IsValid() && d.Name != nil {
			header = dsl.Span{Start: d.Sp.Start, End: d.Name.Sp.End}
		}
		out := []line{{text: "attention " + name(d.Name) + " {", sp: header, opens: true}}
		for _, s := range d.Settings {
			out = append(out, line{indent: 1, text: name(s.Key) + " = " + Expr(s.Value), sp: s.Sp})
		}
		return append(out, line{text: "}", sp: closingBrace(d.Sp), closes: true})
	}
	return nil
}

func modLines(d *dsl.ModDecl) []line {
	if d.Def && (d.Body != nil && (d.Body.Stmts != nil || unpacks(d.Body.Lets)) || !onlyLets(d.FactoryPre) || d.Locals != nil ||
		d.InnerLambda) {
		return []line{{sp: d.Sp, verbatim: true}}
	}
	if d.Lambda {
		return []line{{text: name(d.Name) + " = " + lambdaText(d), sp: d.Sp}}
	}
	if d.Def {
		return defLines(d)
	}
	var b strings.Builder
	b.WriteString(d.Kind.String() + " " + name(d.Name))
	if d.FactoryParams != nil {
		writeNames(&b, d.FactoryParams)
	}
	writeNames(&b, d.Params)
	body := d.Body
	if body == nil {
		return []line{{text: b.String(), sp: d.Sp}}
	}
	if !body.Block {
		return []line{{text: b.String() + " = " + Expr(body.Result), sp: d.Sp}}
	}
	header := dsl.NoSpan
	if d.Sp.IsValid() && body.Sp.IsValid() {
		header = dsl.Span{Start: d.Sp.Start, End: body.Sp.Start + 1}
	}
	out := []line{{text: b.String() + " {", sp: header, opens: true}}
	for _, l := range body.Lets {
		out = append(out, line{indent: 1, text: "let " + name(l.Name) + " = " + Expr(l.Value), sp: l.Sp})
	}
	if body.Result != nil {
		out = append(out, line{indent: 1, text: Expr(body.Result), sp: body.Result.Span()})
	}
	return append(out, line{text: "}", sp: closingBrace(body.Sp), closes: true})
}

// defLines lays out a mod written as a Python function, in that form:
// `def NAME(params):`, the docstring, assignments and `return`, indented by
// four spaces; a factory as its outer def, the inner def and `return INNER`.
func defLines(d *dsl.ModDecl) []line {
	an := d.Annotations
	if an == nil {
		an = &dsl.Annotations{}
	}
	head := func(fn *dsl.Ident, params, annots []*dsl.Ident, defaults []dsl.Expr, returns *dsl.Ident, variadic bool, kwOnly int) string {
		var b strings.Builder
		b.WriteString("def " + name(fn) + "(")
		for i, p := range params {
			if i > 0 {
				b.WriteString(", ")
			}
			if kwOnly > 0 && i == len(params)-kwOnly {
				b.WriteString("*, ") // Python's bare star: the rest only by name
			}
			if variadic && i == len(params)-1 {
				b.WriteString("*")
			}
			b.WriteString(name(p))
			annotated := i < len(annots) && annots[i] != nil
			if annotated {
				b.WriteString(": " + annots[i].Name)
			}
			if i < len(defaults) && defaults[i] != nil {
				if annotated {
					b.WriteString(" = " + Expr(defaults[i])) // PEP 8: `w: int = 3`, `w=3`
				} else {
					b.WriteString("=" + Expr(defaults[i]))
				}
			}
		}
		b.WriteString(")")
		if returns != nil {
			b.WriteString(" -> " + returns.Name)
		}
		return b.String() + ":"
	}
	spanOf := func(id *dsl.Ident) dsl.Span {
		if id == nil {
			return dsl.NoSpan
		}
		return id.Sp
	}
	var out []line
	indent := 0
	fn, returns := d.Name, an.Returns
	if d.Inner != nil {
		out = append(out, line{text: head(d.Name, d.FactoryParams, an.FactoryParams, d.Defaults, an.Returns, d.Variadic, d.FactoryKwOnly), sp: spanOf(d.Name)})
		if d.Doc != nil {
			out = append(out, line{indent: 1, text: d.Doc.Raw, sp: d.Doc.Sp})
		}
		indent, fn, returns = 1, d.Inner, an.InnerReturns
	}
	for _, st := range d.FactoryPre {
		l := st.(*dsl.LetStmt) // onlyLets: anything else prints verbatim
		op, value := "=", l.Value
		if be, ok := l.Value.(*dsl.BinaryExpr); ok && l.AugOp != dsl.OpInvalid {
			op, value = l.AugOp.String()+"=", be.Y
		}
		out = append(out, line{indent: 1, text: name(l.Name) + " " + op + " " + Expr(value), sp: l.Sp})
	}
	out = append(out, line{indent: indent, text: head(fn, d.Params, an.Params, helperDefaults(d), returns, false, d.KwOnly), sp: spanOf(fn)})
	if body := d.Body; body != nil {
		if body.Doc != nil {
			out = append(out, line{indent: indent + 1, text: body.Doc.Raw, sp: body.Doc.Sp})
		}
		for _, l := range body.Lets {
			op, value := "=", l.Value
			if be, ok := l.Value.(*dsl.BinaryExpr); ok && l.AugOp != dsl.OpInvalid {
				op, value = l.AugOp.String()+"=", be.Y
			}
			out = append(out, line{indent: indent + 1, text: name(l.Name) + " " + op + " " + Expr(value), sp: l.Sp})
		}
		if body.Result != nil {
			out = append(out, line{indent: indent + 1, text: "return " + returned(body.Result), sp: body.Result.Span()})
		}
	}
	for _, l := range d.FactoryLets {
		out = append(out, line{indent: 1, text: name(l.Name) + " = " + Expr(l.Value), sp: l.Sp})
	}
	switch {
	case d.FactoryResult != nil:
		out = append(out, line{indent: 1, text: "return " + Expr(d.FactoryResult), sp: d.FactoryResult.Span()})
	case d.Inner != nil:
		ret := dsl.NoSpan
		if d.Sp.IsValid() {
			ret = dsl.Span{Start: d.Sp.End - len(d.Inner.Name), End: d.Sp.End}
		}
		out = append(out, line{indent: 1, text: "return " + name(d.Inner), sp: ret})
	}
	return out
}

// closingBrace is the span of the `}` that ends a block spanning sp.
func closingBrace(sp dsl.Span) dsl.Span {
	if !sp.IsValid() || sp.End == sp.Start {
		return dsl.NoSpan
	}
	return dsl.Span{Start: sp.End - 1, End: sp.End}
}

func name(id *dsl.Ident) string {
	if id == nil {
		return "_"
	}
	return id.Name
}

func writeNames(b *strings.Builder, ids []*dsl.Ident) {
	b.WriteByte('(')
	for i, id := range ids {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name(id))
	}
	b.WriteByte(')')
}

// printer weaves comments and blank lines into the laid-out lines.
type printer struct {
	text     []byte
	comments []*dsl.Comment
	lines    []line
	out      bytes.Buffer
	next     int  // index of the next comment to print
	lastEnd  int  // source end of the last printed item; -1 at the start
	noBlank  bool // the last printed line opened a block
}

func (p *printer) print() []byte {
	for k, ln := range p.lines {
		if ln.sp.IsValid() {
			indent := ln.indent
			if ln.closes {
				indent++
			}
			// Comments before the line, and comments inside it (in a
			// multi-line call, say), go above it.
			before := ln.sp.End
			if ln.verbatim {
				before = ln.sp.Start // the comments inside are in its text
			}
			for p.next < len(p.comments) && p.comments[p.next].Sp.Start < before {
				p.ownLineComment(p.comments[p.next], indent, min(p.comments[p.next].Sp.Start, ln.sp.Start))
			}
			p.blankBefore(ln.sp.Start, ln.closes)
		}
		p.out.WriteString(strings.Repeat(indentUnit, ln.indent))
		if ln.verbatim {
			ln.text = string(p.text[ln.sp.Start:ln.sp.End])
			for p.next < len(p.comments) && p.comments[p.next].Sp.Start < ln.sp.End {
				p.next++ // printed with the text
			}
		}
		p.out.WriteString(ln.text)
		if ln.sp.IsValid() {
			p.lastEnd = max(p.lastEnd, ln.sp.End)
			nextStart := len(p.text)
			if k+1 < len(p.lines) && p.lines[k+1].sp.IsValid() {
				nextStart = p.lines[k+1].sp.Start
			}
			if c := p.trailingComment(ln.sp.End, nextStart); c != nil {
				p.out.WriteString("  ")
				p.out.WriteString(c.Text)
				p.lastEnd = c.Sp.End
				p.next++
			}
		}
		p.out.WriteByte('\n')
		p.noBlank = ln.opens
	}
	for p.next < len(p.comments) {
		p.ownLineComment(p.comments[p.next], 0, p.comments[p.next].Sp.Start)
	}
	return p.out.Bytes()
}

// ownLineComment prints c on a line of its own, after a blank line if the
// source has one before offset from (the comment, or the start of the code
// line a comment inside it moves above).
func (p *printer) ownLineComment(c *dsl.Comment, indent, from int) {
	p.blankBefore(from, false)
	p.out.WriteString(strings.Repeat(indentUnit, indent))
	p.out.WriteString(c.Text)
	p.out.WriteByte('\n')
	p.lastEnd = c.Sp.End
	p.noBlank = false
	p.next++
}

// blankBefore writes one blank line when the source has at least one blank
// line between the last printed item and an item starting at start.
func (p *printer) blankBefore(start int, closes bool) {
	if p.lastEnd < 0 || p.noBlank || closes || start <= p.lastEnd || start > len(p.text) {
		return
	}
	// A blank line is one of blanks only: a def header written over
	// several lines (black's style) has line breaks but no blank line.
	between := p.text[p.lastEnd:start]
	for i := bytes.IndexByte(between, '\n'); i >= 0; {
		j := bytes.IndexByte(between[i+1:], '\n')
		if j < 0 {
			break
		}
		if len(bytes.TrimSpace(between[i+1:i+1+j])) == 0 {
			p.out.WriteByte('\n')
			return
		}
		i += 1 + j
	}
}

// trailingComment returns the next comment when it follows end on the same
// source line, before the next line's code starts.
func (p *printer) trailingComment(end, nextStart int) *dsl.Comment {
	if p.next >= len(p.comments) {
		return nil
	}
	c := p.comments[p.next]
	if c.Sp.Start < end || c.Sp.Start > nextStart || c.Sp.Start > len(p.text) {
		return nil
	}
	if bytes.IndexByte(p.text[end:c.Sp.Start], '\n') >= 0 {
		return nil
	}
	return c
}

// onlyLets reports whether stmts are assignments only (straight-line code)
// without an unpacking.
func onlyLets(stmts []dsl.Stmt) bool {
	for _, st := range stmts {
		if l, ok := st.(*dsl.LetStmt); !ok || l.Unpack > 0 {
			return false
		}
	}
	return true
}

// unpacks reports whether lets hold an unpacking (`a, b = pair`), which
// the def printer would show as its hidden assignments.
func unpacks(lets []*dsl.LetStmt) bool {
	for _, l := range lets {
		if l.Unpack > 0 {
			return true
		}
	}
	return false
}

// helperDefaults are a helper def's default values (for a factory they
// belong to the outer def).
func helperDefaults(d *dsl.ModDecl) []dsl.Expr {
	if d.Helper {
		return d.Defaults
	}
	return nil
}

// returned prints a returned value: a tuple bare, `return a, b`, as black
// does.
func returned(e dsl.Expr) string {
	t, ok := e.(*dsl.TupleExpr)
	if !ok || len(t.Elems) < 2 {
		return Expr(e)
	}
	parts := make([]string, len(t.Elems))
	for i, el := range t.Elems {
		parts[i] = Expr(el)
	}
	return strings.Join(parts, ", ")
}

// lambdaText prints a def written as a lambda: `lambda b, h, q_idx, kv_idx:
// q_idx >= kv_idx`.
func lambdaText(d *dsl.ModDecl) string {
	var b strings.Builder
	b.WriteString("lambda")
	for i, p := range d.Params {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(" " + name(p))
		if i < len(d.Defaults) && d.Defaults[i] != nil {
			b.WriteString("=" + Expr(d.Defaults[i]))
		}
	}
	b.WriteString(": " + Expr(d.Body.Result))
	return b.String()
}
