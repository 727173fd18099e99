package parser

import (
	"fmt"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/maskc/maskc/dsl"
)

// MaxErrors is the number of syntax errors after which ParseFile stops.
const MaxErrors = 100

// ParseFile parses a whole .flex file. It always returns a non-nil *dsl.File
// (with whatever declarations parsed), plus syntax diagnostics sorted by
// position. Each broken declaration yields one diagnostic; the others still
// parse.
func ParseFile(name string, src []byte) (*dsl.File, dsl.Diagnostics) {
	source := dsl.NewSource(name, src)
	f := &dsl.File{Source: source}
	var diags dsl.Diagnostics
	if d := checkInput(source); d != nil {
		return f, append(diags, d)
	}
	text := string(src) // one copy; every token and comment shares it
	starts := DeclStarts(src)
	for i, start := range starts {
		if len(diags) == MaxErrors {
			diags = append(diags, &dsl.Diagnostic{Source: source, Span: dsl.Span{Start: start, End: start},
				Code: CodeTooManyErrors, Severity: dsl.SeverityError,
				Message: fmt.Sprintf("more than %d syntax errors; the rest of the file was not parsed", MaxErrors),
				Hint:    "fix the errors above and check again"})
			break
		}
		end := len(src)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		decls, comments, notes, d := parsePiece(source, text, start, end)
		f.Comments = append(f.Comments, comments...)
		diags = append(diags, notes...)
		if d != nil {
			diags = append(diags, d)
		} else {
			f.Decls = append(f.Decls, decls...)
		}
	}
	diags.Sort()
	return f, diags
}

// parsePiece parses the bytes [start, end) of source (whose text is also
// given as a string), which hold at most
// one declaration (see DeclStarts). It returns the declaration, after the
// defs made of the lambdas it writes in place (none for a piece of
// comments and blank lines), the piece's comments, its notes (Python read
// past), and its first syntax error.
func parsePiece(source *dsl.Source, text string, start, end int) ([]dsl.Decl, []*dsl.Comment, dsl.Diagnostics, *dsl.Diagnostic) {
	lx := lex(source, text, start, end)
	if lx.err != nil {
		return nil, lx.comments, nil, lx.err
	}
	g, err := declParser.ParseFromLexer(peeking(lx.tokens))
	if err != nil {
		// A def with `if`/`elif`/`else`, `assert` or `pass` is read in the
		// flat form; any other error is the straight-line grammar's.
		if fg, ferr := flatParser.ParseFromLexer(peeking(lx.tokens)); ferr == nil && (hasControlFlow(fg.Def.Lines) || innerDefs(fg.Def.Lines) > 1) {
			c := &converter{src: source, inPlace: lx.inPlace}
			d := c.flatDef(fg.Def)
			if c.err != nil {
				return nil, lx.comments, nil, c.err
			}
			return []dsl.Decl{d}, lx.comments, lx.notes, nil
		}
		return nil, lx.comments, nil, syntaxError(source, lx.tokens, err, false)
	}
	if g.Decl == nil {
		return nil, lx.comments, lx.notes, nil
	}
	c := &converter{src: source}
	d := c.decl(g.Decl)
	if c.err != nil {
		return nil, lx.comments, nil, c.err
	}
	decls := make([]dsl.Decl, 0, len(c.lambdas)+1)
	for _, l := range c.lambdas {
		decls = append(decls, l)
	}
	return append(decls, d), lx.comments, lx.notes, nil
}

// ParseExpr parses a single expression (used by tests, -D values, the
// language server). The expression may be surrounded by blank lines and
// comments. On error the expression is nil.
func ParseExpr(name, src string) (dsl.Expr, dsl.Diagnostics) {
	source := dsl.NewSource(name, []byte(src))
	if d := checkInput(source); d != nil {
		return nil, dsl.Diagnostics{d}
	}
	lx := lex(source, src, 0, len(src))
	if lx.err != nil {
		return nil, dsl.Diagnostics{lx.err}
	}
	g, err := exprParser.ParseFromLexer(peeking(lx.tokens))
	if err != nil {
		return nil, dsl.Diagnostics{syntaxError(source, lx.tokens, err, true)}
	}
	c := &converter{src: source}
	e := c.expr(g.Expr)
	if c.err != nil {
		return nil, dsl.Diagnostics{c.err}
	}
	return e, nil
}

// peeking wraps pre-lexed tokens for participle.
func peeking(tokens []lexer.Token) *lexer.PeekingLexer {
	pl, _ := lexer.Upgrade(&sliceLexer{tokens: tokens}) // sliceLexer never fails
	return pl
}
