package lsp

import (
	"fmt"
	"runtime/debug"
	"sort"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// analysis is everything the server knows about one version of a
// document: the parse, the check and the classification, their
// diagnostics, and an index of the identifiers for position lookups.
type analysis struct {
	file  *dsl.File
	lines lineMap
	// syntaxOK is true when the parser reported no errors; only then is
	// the file formatted and classified.
	syntaxOK bool
	// prog is the checked program, filled as far as checking got; nil only
	// when the checker panicked.
	prog *check.Program
	// decisions are the classifications of the attention blocks, present
	// only when the file checked without errors.
	decisions map[*dsl.AttentionDecl]*classify.Decision
	// diags are the diagnostics shown to the user, sorted.
	diags dsl.Diagnostics
	// idents are every identifier written in the file, sorted by offset.
	idents []*dsl.Ident
	// panics records internal errors recovered during analysis, for the
	// server to log.
	panics []string
	// refused says the parser refused the text as a whole without reading
	// it (E005, too large): the analysis holds only that diagnostic.
	refused bool
	// reads are the buffer reads of the attention blocks' kernels with
	// their index bounds (compiler.Reads), for hovers on a read.
	reads []compiler.Read
	// unit is the compiled file, present when decisions are: its kernels
	// are the ones drawn (generated on first use).
	unit *compiler.Unit
}

// refusedWhole reports whether the parser refused the whole text unread.
func refusedWhole(parseDiags dsl.Diagnostics) bool {
	for _, d := range parseDiags {
		if d.Code == parser.CodeFileTooLarge {
			return true
		}
	}
	return false
}

// analyze parses, checks and classifies text and generates the kernels
// the plan needs (for their diagnostics), reusing the parse of
// unchanged declarations from cache when it is not nil. It never panics: a
// panic in a stage is recovered and recorded in panics; the later stages
// then work on what is left (an empty file, no program, no plan).
func analyze(name string, text []byte, cache *parseCache) *analysis {
	a := &analysis{}
	var parseDiags dsl.Diagnostics
	a.guard("parse", func() {
		if cache != nil {
			a.file, parseDiags = cache.parse(name, text)
		} else {
			a.file, parseDiags = parser.ParseFile(name, text)
		}
	})
	if a.file == nil {
		a.file = &dsl.File{Source: dsl.NewSource(name, text)}
	}
	a.lines = lineMap{src: a.file.Source}
	a.syntaxOK = !parseDiags.HasErrors() && len(a.panics) == 0
	a.diags = append(a.diags, parseDiags...)
	if refusedWhole(parseDiags) {
		// The parser did not look at the text; neither does anything else
		// (no declaration scan, no tokens), so a huge document costs no more
		// than its refusal.
		a.refused = true
		a.prog, _ = compiler.Check(a.file, compiler.Options{})
		return a
	}

	var checkDiags dsl.Diagnostics
	a.guard("check", func() { a.prog, checkDiags = compiler.Check(a.file, compiler.Options{}) })
	if a.syntaxOK {
		a.diags = append(a.diags, checkDiags...)
	} else {
		a.diags = append(a.diags, withoutFollowOns(text, parseDiags, checkDiags)...)
	}
	if a.syntaxOK && a.prog != nil && !checkDiags.HasErrors() {
		var plan *classify.Plan
		var classifyDiags dsl.Diagnostics
		a.guard("classify", func() { plan, classifyDiags = compiler.Classify(a.prog, compiler.Options{}) })
		a.diags = append(a.diags, classifyDiags...)
		if plan != nil {
			a.decisions = decisionsByDecl(a.prog, plan)
			a.unit = compiler.New(a.prog, plan, compiler.Options{})
		}
		if plan != nil && !classifyDiags.HasErrors() {
			// The generator's refusals (E306, E311, ...) are diagnostics of
			// the text like any other: show what `maskc check` shows.
			var genDiags dsl.Diagnostics
			a.guard("generate", func() { genDiags = compiler.KernelDiagnostics(a.prog, plan, compiler.Options{}) })
			a.diags = append(a.diags, genDiags...)
			a.guard("reads", func() { a.reads = compiler.Reads(a.prog, plan, compiler.Options{}) })
		}
	}
	a.diags.Sort()
	a.idents = collectIdents(a.file)
	return a
}

// withoutFollowOns drops the check diagnostics that a syntax error causes
// rather than reveals: the parser leaves a broken declaration out, so uses
// of its name are unknown names, and what only it used looks unused.
func withoutFollowOns(text []byte, parseDiags, checkDiags dsl.Diagnostics) dsl.Diagnostics {
	broken := brokenNames(text, parseDiags)
	var out dsl.Diagnostics
	for _, d := range checkDiags {
		switch d.Code {
		case check.CodeUnusedParam, check.CodeUnusedBuffer, check.CodeUnusedMod, check.CodeUnusedLet:
			continue
		case check.CodeUnknownName:
			if d.Source != nil && broken[d.Source.Slice(d.Span)] {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// brokenNames returns the names declared by the declarations that have
// syntax errors: the word after the keyword on the first line of each
// piece (see parser.DeclStarts) that holds a parse error.
func brokenNames(text []byte, parseDiags dsl.Diagnostics) map[string]bool {
	starts := parser.DeclStarts(text)
	names := make(map[string]bool)
	for _, d := range parseDiags {
		if !d.Span.IsValid() {
			continue
		}
		i := sort.Search(len(starts), func(i int) bool { return starts[i] > d.Span.Start }) - 1
		if i < 0 {
			continue
		}
		j := scanWord(text, skipBlanks(text, starts[i]))
		k := skipBlanks(text, j)
		if n := scanWord(text, k); n > k {
			names[string(text[k:n])] = true
		}
	}
	return names
}

// guard runs one stage, turning a panic into an entry of a.panics.
func (a *analysis) guard(stage string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			a.panics = append(a.panics, fmt.Sprintf("%s: %v\n%s", stage, r, debug.Stack()))
		}
	}()
	f()
}

// decisionsByDecl pairs each attention declaration with its decision, by
// block name.
func decisionsByDecl(p *check.Program, plan *classify.Plan) map[*dsl.AttentionDecl]*classify.Decision {
	byName := make(map[string]*classify.Decision, len(plan.Attentions))
	for _, d := range plan.Attentions {
		byName[d.Name] = d
	}
	out := make(map[*dsl.AttentionDecl]*classify.Decision, len(p.Attentions))
	for _, at := range p.Attentions {
		if d := byName[at.Name]; d != nil {
			out[at.Decl] = d
		}
	}
	return out
}

// protocolDiagnostics converts the diagnostics of the document into LSP
// diagnostics. The hint, when there is one, becomes a second line of the
// message, since LSP has no field for it. Diagnostics about other sources
// (the standard library) are placed at the start of the document.
func (a *analysis) protocolDiagnostics() []protocol.Diagnostic {
	out := make([]protocol.Diagnostic, 0, len(a.diags))
	for _, d := range a.diags {
		msg := d.Message
		if d.Hint != "" {
			msg += "\nhint: " + d.Hint
		}
		var rng protocol.Range
		if d.Source == nil || d.Source == a.file.Source {
			rng = a.lines.rangeOf(d.Span)
		}
		out = append(out, protocol.Diagnostic{
			Range:    rng,
			Severity: protocolSeverity(d.Severity),
			Code:     string(d.Code),
			Source:   ServerName,
			Message:  msg,
		})
	}
	return out
}

// protocolSeverity maps dsl severities onto LSP's: a note is information.
func protocolSeverity(s dsl.Severity) protocol.DiagnosticSeverity {
	switch s {
	case dsl.SeverityError:
		return protocol.DiagnosticSeverityError
	case dsl.SeverityWarning:
		return protocol.DiagnosticSeverityWarning
	}
	return protocol.DiagnosticSeverityInformation
}

// collectIdents lists every identifier of f sorted by position.
func collectIdents(f *dsl.File) []*dsl.Ident {
	var out []*dsl.Ident
	add := func(ids ...*dsl.Ident) {
		for _, id := range ids {
			if id != nil && id.Sp.IsValid() {
				out = append(out, id)
			}
		}
	}
	expr := func(e dsl.Expr) {
		dsl.Inspect(e, func(e dsl.Expr) bool {
			switch x := e.(type) {
			case *dsl.Ident:
				add(x)
			case *dsl.SelectorExpr:
				add(x.Sel)
			case *dsl.KeywordArg:
				add(x.Name)
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *dsl.ParamDecl:
			add(d.Name)
			expr(d.Value)
		case *dsl.BufferDecl:
			add(d.Name, d.DType)
			for _, e := range d.Dims {
				expr(e)
			}
			add(d.Property)
		case *dsl.ModDecl:
			add(d.Name, d.Inner)
			add(d.FactoryParams...)
			add(d.Params...)
			if d.Body != nil {
				for _, l := range d.Body.Lets {
					add(l.Name)
				}
				for _, e := range d.Body.Exprs() {
					expr(e)
				}
			}
		case *dsl.AttentionDecl:
			add(d.Name)
			for _, st := range d.Settings {
				add(st.Key)
				expr(st.Value)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Sp.Start < out[j].Sp.Start })
	return out
}

// bodyExprs lists the expressions of a mod body: the lets' values and the
// result.
func bodyExprs(b *dsl.Body) []dsl.Expr {
	return b.Exprs()
}

// identAt returns the identifier under byte offset off (a cursor just after
// an identifier still touches it), or nil.
func (a *analysis) identAt(off int) *dsl.Ident {
	i := sort.Search(len(a.idents), func(i int) bool { return a.idents[i].Sp.End >= off })
	if i < len(a.idents) && a.idents[i].Sp.Contains(off) {
		return a.idents[i]
	}
	return nil
}

// symbolOf says what id denotes, from the checker's side tables.
func (a *analysis) symbolOf(id *dsl.Ident) (check.Symbol, bool) {
	if a.prog == nil || a.prog.Info == nil {
		return check.Symbol{}, false
	}
	if sym, ok := a.prog.Info.Defs[id]; ok {
		return sym, true
	}
	sym, ok := a.prog.Info.Uses[id]
	return sym, ok
}

// declAt returns the top-level declaration whose span contains off, or nil.
func (a *analysis) declAt(off int) dsl.Decl {
	for _, d := range a.file.Decls {
		if d.Span().Contains(off) {
			return d
		}
	}
	return nil
}
