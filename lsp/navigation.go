package lsp

import (
	"context"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
)

// definition answers textDocument/definition: the declaring name of the
// param, buffer, mod, mod parameter or let under the cursor. Built-ins,
// size symbols and standard-library mods have no location in the document
// and give no result.
func (s *server) definition(_ context.Context, p *protocol.DefinitionParams) ([]protocol.Location, error) {
	a, err := s.analysisOf(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	id := a.identAt(a.lines.offset(p.Position))
	if id == nil {
		return nil, nil
	}
	sym, ok := a.symbolOf(id)
	if !ok {
		return nil, nil
	}
	name := declaringIdent(sym)
	if name == nil || !name.Sp.IsValid() || sym.Kind == check.SymStdMod {
		return nil, nil
	}
	return []protocol.Location{{URI: p.TextDocument.URI, Range: a.lines.rangeOf(name.Sp)}}, nil
}

// declaringIdent is the name written in the declaration of sym, or nil.
func declaringIdent(sym check.Symbol) *dsl.Ident {
	switch d := sym.Decl.(type) {
	case *dsl.Ident:
		return d
	case *dsl.LetStmt:
		return d.Name
	case dsl.Decl:
		return d.DeclName()
	}
	return nil
}

// documentSymbol answers textDocument/documentSymbol: one symbol per
// declaration, with a mod's lets and an attention block's settings as
// children.
func (s *server) documentSymbol(_ context.Context, p *protocol.DocumentSymbolParams) ([]protocol.DocumentSymbol, error) {
	a, err := s.analysisOf(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	return a.documentSymbols(), nil
}

func (a *analysis) documentSymbols() []protocol.DocumentSymbol {
	out := []protocol.DocumentSymbol{}
	for _, d := range a.file.Decls {
		name := d.DeclName()
		if name == nil || name.Name == "" {
			continue
		}
		sym := protocol.DocumentSymbol{
			Name:           name.Name,
			Range:          a.lines.rangeOf(d.Span()),
			SelectionRange: a.lines.rangeOf(name.Sp),
		}
		switch d := d.(type) {
		case *dsl.ParamDecl:
			sym.Kind = protocol.SymbolKindConstant
			sym.Detail = a.paramDetail(d)
		case *dsl.BufferDecl:
			sym.Kind = protocol.SymbolKindVariable
			sym.Detail = bufferDetail(d)
		case *dsl.ModDecl:
			sym.Kind = protocol.SymbolKindFunction
			sym.Detail = modSignature(d)
			if d.Body != nil {
				for _, l := range d.Body.Lets {
					if l.Name == nil {
						continue
					}
					sym.Children = append(sym.Children, protocol.DocumentSymbol{
						Name: l.Name.Name, Kind: protocol.SymbolKindVariable, Detail: exprText(l.Value),
						Range: a.lines.rangeOf(l.Sp), SelectionRange: a.lines.rangeOf(l.Name.Sp),
					})
				}
			}
		case *dsl.AttentionDecl:
			sym.Kind = protocol.SymbolKindStruct
			if dec := a.decisions[d]; dec != nil {
				sym.Detail = decisionSummary(dec)
			}
			for _, st := range d.Settings {
				if st.Key == nil {
					continue
				}
				sym.Children = append(sym.Children, protocol.DocumentSymbol{
					Name: st.Key.Name, Kind: protocol.SymbolKindProperty, Detail: exprText(st.Value),
					Range: a.lines.rangeOf(st.Sp), SelectionRange: a.lines.rangeOf(st.Key.Sp),
				})
			}
		}
		out = append(out, sym)
	}
	return out
}

// paramDetail is "= value" with the folded value when the checker has it.
func (a *analysis) paramDetail(d *dsl.ParamDecl) string {
	if a.prog != nil {
		if p := a.prog.Param(d.Name.Name); p != nil && p.Decl == d && p.Value.IsValid() {
			return "= " + p.Value.String()
		}
	}
	return "= " + exprText(d.Value)
}

// bufferDetail is the declared type, e.g. "i32[KV] segments".
func bufferDetail(d *dsl.BufferDecl) string {
	var b strings.Builder
	if d.DType != nil {
		b.WriteString(d.DType.Name)
	}
	b.WriteByte('[')
	for i, e := range d.Dims {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(exprText(e))
	}
	b.WriteByte(']')
	if d.Property != nil {
		b.WriteString(" " + d.Property.Name)
	}
	return b.String()
}

// modSignature is the head of a mod declaration without its name, e.g.
// "mask(b, h, q, kv)" or "mask(W)(b, h, q, kv)".
func modSignature(d *dsl.ModDecl) string {
	var b strings.Builder
	b.WriteString(d.Kind.String())
	if d.FactoryParams != nil {
		b.WriteString("(" + strings.Join(d.FactoryParamNames(), ", ") + ")")
	}
	b.WriteString(identList(d.Params))
	return b.String()
}

func identList(ids []*dsl.Ident) string {
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != nil {
			names = append(names, id.Name)
		}
	}
	return "(" + strings.Join(names, ", ") + ")"
}

// exprText prints e canonically, as `maskc fmt` would.
func exprText(e dsl.Expr) string {
	if e == nil {
		return ""
	}
	return format.Expr(e)
}
