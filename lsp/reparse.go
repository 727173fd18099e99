package lsp

import (
	"bytes"
	"unicode/utf8"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// parseCache makes re-parsing a document after an edit cost only the
// declarations the edit touched. The parser works declaration by
// declaration: it cuts the file into pieces, one top-level declaration
// each, at lines that start with a declaration keyword and a name, and
// parses every piece on its own. A piece's parse therefore depends only on
// its text and where it starts, so the cache keeps the parse of each piece
// of the previous version by text and, when the same text appears again,
// moves its nodes to the new offset instead of parsing it again.
// The result is identical to parser.ParseFile's (FuzzParseCache checks it).
type parseCache struct {
	pieces map[string]*parsedPiece
}

// parsedPiece is the parse of one piece of text.
type parsedPiece struct {
	// offset is where the spans of decls and comments currently place the
	// piece.
	offset   int
	decls    []dsl.Decl
	comments []*dsl.Comment
	// diags have spans relative to the start of the piece and no Source.
	diags []dsl.Diagnostic
}

// parse parses text as parser.ParseFile(name, text) does, reusing the
// pieces that have not changed since the previous call.
func (c *parseCache) parse(name string, text []byte) (*dsl.File, dsl.Diagnostics) {
	if len(text) > parser.MaxFileSize || bytes.IndexByte(text, 0) >= 0 || !utf8.Valid(text) {
		c.pieces = nil
		return parser.ParseFile(name, text) // refused as a whole, with its diagnostic
	}
	src := dsl.NewSource(name, text)
	f := &dsl.File{Source: src}
	var diags dsl.Diagnostics
	next := make(map[string]*parsedPiece)
	var seen spanSet
	starts := parser.DeclStarts(text)
	for i, start := range starts {
		end := len(text)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		key := string(text[start:end])
		p, ok := c.pieces[key]
		if ok {
			delete(c.pieces, key) // a piece's nodes appear in one place only
			p.moveTo(start, &seen)
		} else {
			p = parsePiece(name, text, start, end, &seen)
		}
		if len(p.diags) == 0 {
			// Diagnostics may print line numbers, so broken pieces are
			// parsed again each time rather than moved.
			next[key] = p
		}
		f.Decls = append(f.Decls, p.decls...)
		f.Comments = append(f.Comments, p.comments...)
		for _, d := range p.diags {
			d.Source = src
			if d.Span.IsValid() {
				d.Span.Start += start
				d.Span.End += start
			}
			diags = append(diags, &d)
		}
	}
	c.pieces = next
	diags.Sort()
	return f, diags
}

// parsePiece parses the piece text[start:end]. A piece with syntax errors
// is parsed again behind as many newlines as precede it, so that messages
// that mention a position (`opened at 3:9`) name the right line. seen is
// scratch space for moving the piece into place.
func parsePiece(name string, text []byte, start, end int, seen *spanSet) *parsedPiece {
	f, diags := parser.ParseFile(name, text[start:end])
	offset := 0
	if len(diags) > 0 {
		lines := bytes.Count(text[:start], []byte{'\n'})
		padded := append(bytes.Repeat([]byte{'\n'}, lines), text[start:end]...)
		f, diags = parser.ParseFile(name, padded)
		offset = lines
	}
	p := &parsedPiece{offset: offset, decls: f.Decls, comments: f.Comments}
	for _, d := range diags {
		dd := *d
		if dd.Span.IsValid() {
			dd.Span.Start -= offset
			dd.Span.End -= offset
		}
		p.diags = append(p.diags, dd)
	}
	p.moveTo(start, seen)
	return p
}

// moveTo shifts every span of the piece so that it starts at offset; seen
// is scratch space, shared by the pieces of one parse.
func (p *parsedPiece) moveTo(offset int, seen *spanSet) {
	delta := offset - p.offset
	if delta == 0 {
		return
	}
	s := spanShifter{delta: delta, seen: seen.empty()}
	for _, d := range p.decls {
		s.decl(d)
	}
	for _, c := range p.comments {
		s.span(&c.Sp)
	}
	p.offset = offset
}

// skipBlanks returns the offset of the first byte at or after i that is
// not a space or a tab.
func skipBlanks(text []byte, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	return i
}

// scanWord returns the end of the run of name characters at i (a word may
// start with a digit here, as in the parser's splitter).
func scanWord(text []byte, i int) int {
	for i < len(text) && (isIdentStart(text[i]) || isDigit(text[i])) {
		i++
	}
	return i
}

// spanSet is reusable scratch space for a set of spans. Emptying a map
// costs as much as its largest size, so a set that a large piece has grown
// is dropped rather than emptied.
type spanSet struct {
	m map[*dsl.Span]bool
}

// empty returns the set, empty.
func (s *spanSet) empty() map[*dsl.Span]bool {
	if s.m == nil || len(s.m) > 256 {
		s.m = make(map[*dsl.Span]bool)
	} else {
		clear(s.m)
	}
	return s.m
}

// spanShifter moves the spans of an AST by delta bytes, each node once.
type spanShifter struct {
	delta int
	// seen holds the main span (Sp) of every node moved.
	seen map[*dsl.Span]bool
}

// span moves sp, the span of one node, unless it has been moved.
func (s *spanShifter) span(sp *dsl.Span) {
	if s.seen[sp] || !sp.IsValid() {
		return
	}
	s.seen[sp] = true
	sp.Start += s.delta
	sp.End += s.delta
}

func (s *spanShifter) ident(id *dsl.Ident) {
	if id != nil {
		s.span(&id.Sp)
	}
}

func (s *spanShifter) decl(d dsl.Decl) {
	switch d := d.(type) {
	case *dsl.ParamDecl:
		s.span(&d.Sp)
		s.ident(d.Name)
		s.expr(d.Value)
	case *dsl.BufferDecl:
		s.span(&d.Sp)
		s.ident(d.Name)
		s.ident(d.DType)
		for _, e := range d.Dims {
			s.expr(e)
		}
		s.ident(d.Property)
	case *dsl.ModDecl:
		s.span(&d.Sp)
		s.ident(d.Name)
		for _, id := range d.FactoryParams {
			s.ident(id)
		}
		for _, id := range d.Params {
			s.ident(id)
		}
		s.ident(d.Inner)
		if an := d.Annotations; an != nil {
			for _, id := range an.FactoryParams {
				s.ident(id)
			}
			for _, id := range an.Params {
				s.ident(id)
			}
			s.ident(an.Returns)
			s.ident(an.InnerReturns)
		}
		if d.Doc != nil {
			s.expr(d.Doc)
		}
		if b := d.Body; b != nil {
			s.span(&b.Sp)
			if b.Doc != nil {
				s.expr(b.Doc)
			}
			for _, l := range b.Lets {
				s.span(&l.Sp)
				s.ident(l.Name)
				s.expr(l.Value)
			}
			s.expr(b.Result)
			s.stmts(b.Stmts)
		}
		for _, e := range d.Defaults {
			s.expr(e)
		}
		for _, st := range d.FactoryPre {
			if l, ok := st.(*dsl.LetStmt); ok {
				s.span(&l.Sp)
				s.ident(l.Name)
				s.expr(l.Value)
			}
		}
		s.stmts(d.FactoryPre)
		for _, l := range d.FactoryLets {
			s.span(&l.Sp)
			s.ident(l.Name)
			s.expr(l.Value)
		}
		s.expr(d.FactoryResult)
		for _, l := range d.Locals {
			s.decl(l)
		}
	case *dsl.AttentionDecl:
		s.span(&d.Sp)
		s.ident(d.Name)
		for _, st := range d.Settings {
			s.span(&st.Sp)
			s.ident(st.Key)
			s.expr(st.Value)
		}
	}
}

func (s *spanShifter) expr(e dsl.Expr) {
	switch x := e.(type) {
	case *dsl.Ident:
		s.ident(x)
	case *dsl.IntLit:
		s.span(&x.Sp)
	case *dsl.FloatLit:
		s.span(&x.Sp)
	case *dsl.BoolLit:
		s.span(&x.Sp)
	case *dsl.StringLit:
		s.span(&x.Sp)
	case *dsl.SelectorExpr:
		s.span(&x.Sp)
		s.expr(x.X)
		s.ident(x.Sel)
	case *dsl.KeywordArg:
		s.span(&x.Sp)
		s.ident(x.Name)
		s.expr(x.Value)
	case *dsl.VarRef:
		s.span(&x.Sp)
	case *dsl.UnaryExpr:
		s.span(&x.Sp)
		s.expr(x.X)
	case *dsl.BinaryExpr:
		if !s.seen[&x.Sp] && x.OpSp.IsValid() {
			x.OpSp.Start += s.delta
			x.OpSp.End += s.delta
		}
		s.span(&x.Sp)
		s.expr(x.X)
		s.expr(x.Y)
	case *dsl.CompareExpr:
		s.span(&x.Sp)
		for _, o := range x.Operands {
			s.expr(o)
		}
	case *dsl.CondExpr:
		s.span(&x.Sp)
		s.expr(x.Then)
		s.expr(x.Cond)
		s.expr(x.Else)
	case *dsl.CallExpr:
		s.span(&x.Sp)
		s.expr(x.Fun)
		for _, a := range x.Args {
			s.expr(a)
		}
	case *dsl.IndexExpr:
		s.span(&x.Sp)
		s.expr(x.X)
		for _, i := range x.Indices {
			s.expr(i)
		}
	case *dsl.ParenExpr:
		s.span(&x.Sp)
		s.expr(x.X)
	case *dsl.TupleExpr:
		s.span(&x.Sp)
		for _, el := range x.Elems {
			s.expr(el)
		}
	}
}

// stmts shifts the statements of a def body with control flow; their
// assignments are the body's Lets, shifted with them.
func (s *spanShifter) stmts(stmts []dsl.Stmt) {
	for _, st := range stmts {
		switch st := st.(type) {
		case *dsl.ReturnStmt:
			s.span(&st.Sp)
			s.expr(st.Value)
		case *dsl.AssertStmt:
			s.span(&st.Sp)
			s.expr(st.Cond)
			s.expr(st.Msg)
		case *dsl.RaiseStmt:
			s.span(&st.Sp)
			s.expr(st.Exc)
		case *dsl.PassStmt:
			s.span(&st.Sp)
		case *dsl.ForStmt:
			s.span(&st.Sp)
			s.ident(st.Var)
			for _, t := range st.Targets[min(1, len(st.Targets)):] {
				s.ident(t)
			}
			s.expr(st.Iter)
			s.stmts(st.Body)
		case *dsl.IfStmt:
			s.span(&st.Sp)
			s.span(&st.KeywordSp)
			s.expr(st.Cond)
			s.stmts(st.Then)
			s.stmts(st.Else)
		}
	}
}
