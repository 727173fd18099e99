package lsp

import (
	"context"
	"fmt"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
)

// hover answers textDocument/hover. On a name it describes what the name
// denotes: a param's value, a buffer's type, a built-in's or
// standard-library mod's documentation, a mod's signature with the
// classification of the attention blocks that use it. Anywhere else in an
// attention block it shows the block's classification: the Turbo call it
// becomes, with its preconditions, or `generated` and why.
func (s *server) hover(_ context.Context, p *protocol.HoverParams) (*protocol.Hover, error) {
	a, err := s.analysisOf(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	off := a.lines.offset(p.Position)
	if id := a.identAt(off); id != nil {
		if text := a.identHover(id); text != "" {
			text += a.readHover(id)
			if d, ok := a.declNamed(id); ok {
				if at, ok := d.(*dsl.AttentionDecl); ok {
					text += s.pictureHover(a, at)
				}
			}
			rng := a.lines.rangeOf(id.Sp)
			return &protocol.Hover{Contents: markdown(text), Range: &rng}, nil
		}
	}
	switch d := a.declAt(off).(type) {
	case *dsl.AttentionDecl:
		rng := a.lines.rangeOf(d.Sp)
		return &protocol.Hover{Contents: markdown(a.attentionHover(d) + s.pictureHover(a, d)), Range: &rng}, nil
	case *dsl.ModDecl:
		rng := a.lines.rangeOf(d.Sp)
		return &protocol.Hover{Contents: markdown(a.modHover(d, "")), Range: &rng}, nil
	}
	return nil, nil
}

// readHover describes the buffer read that id's name starts, per
// attention block whose kernel makes it: its index ranges by the sizes and,
// for constant extents, the sizes at which it stays inside (issue 33); ""
// when id starts no read.
func (a *analysis) readHover(id *dsl.Ident) string {
	p := a.file.Source.Position(id.Sp.Start)
	at := fmt.Sprintf("%s:%d:%d", a.file.Source.Name, p.Line, p.Column)
	var b strings.Builder
	for _, r := range a.reads {
		if r.At == at {
			fmt.Fprintf(&b, "\n\n`%s` in `%s` (%s): %s", r.Text, r.Block, r.In, r.Note())
		}
	}
	return b.String()
}

func markdown(s string) protocol.MarkupContent {
	return protocol.MarkupContent{Kind: protocol.Markdown, Value: s}
}

// identHover describes the name id, or returns "" when nothing is known.
func (a *analysis) identHover(id *dsl.Ident) string {
	if d, ok := a.declNamed(id); ok {
		switch d := d.(type) {
		case *dsl.AttentionDecl:
			return a.attentionHover(d)
		case *dsl.ModDecl:
			return a.modHover(d, "")
		}
	}
	if d := a.innerOf(id); d != nil {
		return a.modHover(d, "")
	}
	sym, ok := a.symbolOf(id)
	if !ok {
		name := id.Name
		switch a.syntaxRole(id) {
		case "method":
			name = "." + name
		case "keyword":
			return fmt.Sprintf("(keyword argument) `%s`", id.Name)
		}
		if usage, meaning, ok := check.PortingDoc(name); ok {
			return codeBlock(usage) + "\ntorch operation, lowered to " + meaning
		}
		if b := dsl.LookupBuiltin(id.Name); b != nil {
			return builtinHover(b)
		}
		return a.dtypeHover(id)
	}
	switch sym.Kind {
	case check.SymParam:
		if d, ok := sym.Decl.(*dsl.ParamDecl); ok {
			return a.paramHover(d)
		}
	case check.SymBuffer:
		if d, ok := sym.Decl.(*dsl.BufferDecl); ok {
			return a.bufferHover(d)
		}
	case check.SymMod:
		if d, ok := sym.Decl.(*dsl.ModDecl); ok {
			return a.modHover(d, sym.Doc)
		}
	case check.SymStdMod:
		head := sym.Name
		if d, ok := sym.Decl.(*dsl.ModDecl); ok {
			head = d.Kind.String() + " " + sym.Name + strings.TrimPrefix(modSignature(d), d.Kind.String())
		}
		return codeBlock(head) + "\nstandard library" + docPara(strings.TrimPrefix(sym.Doc, head+"\n"))
	case check.SymBuiltin:
		if b := dsl.LookupBuiltin(sym.Name); b != nil {
			return builtinHover(b)
		}
	}
	text := fmt.Sprintf("(%s) `%s`", sym.Kind, sym.Name)
	if sym.Type != dsl.TypeInvalid {
		text += ": " + sym.Type.String()
	}
	return text + docPara(sym.Doc)
}

// innerOf returns the factory def whose inner function id names, or nil.
func (a *analysis) innerOf(id *dsl.Ident) *dsl.ModDecl {
	for _, d := range a.file.Decls {
		if m, ok := d.(*dsl.ModDecl); ok && m.Inner == id {
			return m
		}
	}
	return nil
}

// syntaxRole says what a name the checker does not resolve is by its
// place: "method" for the name of a `.name` selector, "keyword" for a
// keyword argument's name, else "".
func (a *analysis) syntaxRole(id *dsl.Ident) string {
	m, ok := a.declAt(id.Sp.Start).(*dsl.ModDecl)
	if !ok || m.Body == nil {
		return ""
	}
	role := ""
	for _, e := range bodyExprs(m.Body) {
		dsl.Inspect(e, func(e dsl.Expr) bool {
			switch x := e.(type) {
			case *dsl.SelectorExpr:
				if x.Sel == id {
					role = "method"
				}
			case *dsl.KeywordArg:
				if x.Name == id {
					role = "keyword"
				}
			}
			return role == ""
		})
	}
	return role
}

// dtypeHover describes id if it is the element type of a buffer
// declaration, else returns "".
func (a *analysis) dtypeHover(id *dsl.Ident) string {
	for _, d := range a.file.Decls {
		b, ok := d.(*dsl.BufferDecl)
		if !ok || b.DType != id || a.prog == nil {
			continue
		}
		if buf := a.prog.Buffer(b.Name.Name); buf != nil && buf.Decl == b && buf.ElemType() != dsl.TypeInvalid {
			return fmt.Sprintf("(element type) `%s`: reading buffer `%s` gives %s", id.Name, b.Name.Name, buf.ElemType())
		}
	}
	return ""
}

// declNamed returns the top-level declaration whose name is id.
func (a *analysis) declNamed(id *dsl.Ident) (dsl.Decl, bool) {
	for _, d := range a.file.Decls {
		if d.DeclName() == id {
			return d, true
		}
	}
	return nil, false
}

func builtinHover(b *dsl.Builtin) string {
	head, doc, ok := strings.Cut(b.Doc, ": ")
	if !ok {
		return codeBlock(b.Name) + "\nbuilt-in" + docPara(b.Doc)
	}
	return codeBlock(head) + "\nbuilt-in" + docPara(doc)
}

func (a *analysis) paramHover(d *dsl.ParamDecl) string {
	text := codeBlock("param " + d.Name.Name + " = " + exprText(d.Value))
	if a.prog != nil {
		if p := a.prog.Param(d.Name.Name); p != nil && p.Value.IsValid() {
			text += fmt.Sprintf("\nvalue `%s` (%s)", p.Value, p.Value.Type)
			if p.Overridden {
				text += ", overridden with -D"
			}
		}
	}
	return text + "\n\ncompile-time constant; `-D " + d.Name.Name + "=VALUE` overrides it"
}

func (a *analysis) bufferHover(d *dsl.BufferDecl) string {
	text := codeBlock("buffer " + d.Name.Name + ": " + bufferDetail(d))
	var dims []string
	for _, e := range d.Dims {
		dims = append(dims, "`"+exprText(e)+"`")
	}
	elem := "?"
	if d.DType != nil {
		elem = d.DType.Name
	}
	text += fmt.Sprintf("\ncaptured tensor of %s, %d dimension(s): %s", elem, len(d.Dims), strings.Join(dims, ", "))
	if d.Property != nil && d.Property.Name == "segments" {
		text += "\n\n`segments`: non-decreasing document ids, so documents are contiguous"
	}
	return text
}

// modHover shows a mod's signature and what the attention blocks using it
// became.
func (a *analysis) modHover(d *dsl.ModDecl, doc string) string {
	if d.Name == nil {
		return ""
	}
	head := d.Kind.String() + " " + d.Name.Name + strings.TrimPrefix(modSignature(d), d.Kind.String())
	text := codeBlock(head)
	if doc != head {
		text += docPara(doc)
	}
	if d.Def {
		what := "a " + d.Kind.String() + "_mod written as a Python function"
		if d.Inner != nil {
			what += fmt.Sprintf(" (factory %s returning %s)", d.Name.Name, d.Inner.Name)
		}
		text += "\n\n" + what
		if d.Doc != nil {
			text += docPara(strings.TrimSpace(d.Doc.Value))
		}
		if d.Body != nil && d.Body.Doc != nil {
			text += docPara(strings.TrimSpace(d.Body.Doc.Value))
		}
	}
	var uses []string
	for _, at := range a.attentionsUsing(d) {
		line := fmt.Sprintf("- attention `%s`", at.Name.Name)
		if dec := a.decisions[at]; dec != nil {
			line += ": " + decisionSummaryMarkdown(dec)
		}
		uses = append(uses, line)
	}
	if len(uses) == 0 {
		return text + "\n\nnot used by any attention block"
	}
	return text + "\n\nused by:\n" + strings.Join(uses, "\n")
}

// attentionsUsing lists the attention blocks whose settings refer to mod
// d, directly or through other mods.
func (a *analysis) attentionsUsing(d *dsl.ModDecl) []*dsl.AttentionDecl {
	var out []*dsl.AttentionDecl
	for _, decl := range a.file.Decls {
		at, ok := decl.(*dsl.AttentionDecl)
		if !ok {
			continue
		}
		var roots []dsl.Expr
		for _, st := range at.Settings {
			roots = append(roots, st.Value)
		}
		if a.reachableMods(roots)[d] {
			out = append(out, at)
		}
	}
	return out
}

// reachableMods is the set of user mods the expressions refer to, directly
// or through the bodies of the mods they refer to.
func (a *analysis) reachableMods(roots []dsl.Expr) map[*dsl.ModDecl]bool {
	seen := map[*dsl.ModDecl]bool{}
	var visit func(e dsl.Expr)
	visit = func(e dsl.Expr) {
		dsl.Inspect(e, func(e dsl.Expr) bool {
			id, ok := e.(*dsl.Ident)
			if !ok {
				return true
			}
			sym, ok := a.symbolOf(id)
			if !ok || sym.Kind != check.SymMod {
				return true
			}
			m, ok := sym.Decl.(*dsl.ModDecl)
			if !ok || seen[m] {
				return true
			}
			seen[m] = true
			if m.Body != nil {
				for _, e := range m.Body.Exprs() {
					visit(e)
				}
			}
			return true
		})
	}
	for _, e := range roots {
		visit(e)
	}
	return seen
}

// attentionHover shows what an attention block became.
func (a *analysis) attentionHover(d *dsl.AttentionDecl) string {
	name := "?"
	if d.Name != nil {
		name = d.Name.Name
	}
	text := codeBlock("attention " + name)
	dec := a.decisions[d]
	if dec == nil {
		return text + "\nnot classified: " + a.unclassifiedReason()
	}
	return text + "\n" + decisionMarkdown(dec)
}

// unclassifiedReason says why no classification is available.
func (a *analysis) unclassifiedReason() string {
	for _, d := range a.diags {
		if d.Severity == dsl.SeverityError {
			return fmt.Sprintf("the file has errors (first: %s %s)", d.Code, d.Message)
		}
	}
	return "the classifier gave no decision for this block"
}

func codeBlock(s string) string { return "```flex\n" + s + "\n```" }

func docPara(doc string) string {
	if doc == "" {
		return ""
	}
	return "\n\n" + doc
}
