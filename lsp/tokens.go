package lsp

import (
	"context"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
)

// tokenType indexes tokenTypes, the legend the server announces.
type tokenType uint32

const (
	tokKeyword tokenType = iota
	tokComment
	tokNumber
	tokOperator
	tokFunction  // mods, built-ins, combinators
	tokParameter // mod and factory parameters
	tokVariable  // params, buffers, lets, size symbols
	tokProperty  // attention setting keys
	tokType      // buffer element types
	tokEnumMember
	tokStruct // attention blocks
	tokString // string literals: float("inf"), rounding_mode="floor", docstrings
)

// tokenTypes is the semantic token legend, in tokenType order.
var tokenTypes = []protocol.SemanticTokenTypes{
	protocol.SemanticTokenKeyword,
	protocol.SemanticTokenComment,
	protocol.SemanticTokenNumber,
	protocol.SemanticTokenOperator,
	protocol.SemanticTokenFunction,
	protocol.SemanticTokenParameter,
	protocol.SemanticTokenVariable,
	protocol.SemanticTokenProperty,
	protocol.SemanticTokenType,
	protocol.SemanticTokenEnumMember,
	protocol.SemanticTokenStruct,
	protocol.SemanticTokenString,
}

// tokenModifier is a bit in the modifier set of a token.
type tokenModifier uint32

const (
	modDeclaration tokenModifier = 1 << iota
	modReadonly
	modDefaultLibrary
)

// tokenModifiers is the modifier legend, in bit order.
var tokenModifiers = []protocol.SemanticTokenModifiers{
	protocol.SemanticTokenModifierDeclaration,
	protocol.SemanticTokenModifierReadonly,
	protocol.SemanticTokenModifierDefaultLibrary,
}

// semanticTokensProvider is the semanticTokensProvider server capability.
// go.lsp.dev/protocol v0.12.0's SemanticTokensOptions lacks the legend and
// full fields of LSP 3.16, so this embeds it and adds them.
type semanticTokensProvider struct {
	protocol.SemanticTokensOptions
	Legend protocol.SemanticTokensLegend `json:"legend"`
	Full   bool                          `json:"full"`
}

func semanticTokensOptions() *semanticTokensProvider {
	return &semanticTokensProvider{
		Legend: protocol.SemanticTokensLegend{TokenTypes: tokenTypes, TokenModifiers: tokenModifiers},
		Full:   true,
	}
}

// semanticTokensFull answers textDocument/semanticTokens/full.
func (s *server) semanticTokensFull(_ context.Context, p *protocol.SemanticTokensParams) (*protocol.SemanticTokens, error) {
	a, err := s.analysisOf(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	return &protocol.SemanticTokens{Data: encodeTokens(a.lines, a.semanticTokens())}, nil
}

// semanticToken is one highlighted range of a single line.
type semanticToken struct {
	span dsl.Span
	typ  tokenType
	mods tokenModifier
}

// semanticTokens classifies the text of the document. The lexical classes
// (keywords, comments, numbers, operators) come from scanning the text, so
// half-typed files are highlighted too; identifiers are classified by what
// the checker resolved them to, and by their syntactic role where it did not.
func (a *analysis) semanticTokens() []semanticToken {
	if a.refused {
		return nil
	}
	roles := a.identRoles()
	var out []semanticToken
	for _, lx := range scan(a.file.Source.Text) {
		t := semanticToken{span: lx.span}
		switch lx.kind {
		case lexComment:
			t.typ = tokComment
		case lexNumber:
			t.typ = tokNumber
		case lexOperator:
			t.typ = tokOperator
		case lexString:
			t.typ = tokString
		case lexKeyword, lexIdent:
			if r, ok := roles[lx.span.Start]; ok {
				t.typ, t.mods = r.typ, r.mods
			} else if lx.kind == lexKeyword {
				t.typ = tokKeyword
			} else {
				continue
			}
		default:
			continue
		}
		out = append(out, t)
	}
	return out
}

// identRoles gives the token class of every identifier the parser saw,
// keyed by its start offset.
func (a *analysis) identRoles() map[int]semanticToken {
	roles := make(map[int]semanticToken, len(a.idents))
	for _, id := range a.idents {
		if sym, ok := a.symbolOf(id); ok {
			if typ, mods, ok := symbolToken(sym); ok {
				if _, isDef := a.prog.Info.Defs[id]; isDef && sym.Kind != check.SymSetting && sym.Kind != check.SymWord {
					mods |= modDeclaration
				}
				roles[id.Sp.Start] = semanticToken{span: id.Sp, typ: typ, mods: mods}
			}
		}
	}
	// Syntactic roles for what the checker left unresolved (a broken file).
	for _, d := range a.file.Decls {
		set := func(id *dsl.Ident, typ tokenType, mods tokenModifier) {
			if id == nil {
				return
			}
			if _, ok := roles[id.Sp.Start]; !ok {
				roles[id.Sp.Start] = semanticToken{span: id.Sp, typ: typ, mods: mods}
			}
		}
		switch d := d.(type) {
		case *dsl.ParamDecl:
			set(d.Name, tokVariable, modDeclaration|modReadonly)
		case *dsl.BufferDecl:
			set(d.Name, tokVariable, modDeclaration)
			set(d.DType, tokType, 0)
			set(d.Property, tokEnumMember, 0)
		case *dsl.ModDecl:
			set(d.Name, tokFunction, modDeclaration)
			set(d.Inner, tokFunction, modDeclaration)
			for _, id := range d.FactoryParams {
				set(id, tokParameter, modDeclaration|modReadonly)
			}
			for _, id := range d.Params {
				set(id, tokParameter, modDeclaration)
			}
			if d.Body != nil {
				for _, l := range d.Body.Lets {
					set(l.Name, tokVariable, modDeclaration)
				}
				for _, e := range bodyExprs(d.Body) {
					dsl.Inspect(e, func(e dsl.Expr) bool {
						switch x := e.(type) {
						case *dsl.SelectorExpr: // a tensor method, `.abs()`
							set(x.Sel, tokFunction, modDefaultLibrary)
						case *dsl.KeywordArg: // `min=` in `.clamp(min=0)`
							set(x.Name, tokParameter, 0)
						case *dsl.Ident: // torch.div, torch.int64
							if _, _, ok := check.PortingDoc(x.Name); ok {
								set(x, tokFunction, modDefaultLibrary)
							} else if strings.HasPrefix(x.Name, "torch.") {
								set(x, tokEnumMember, modDefaultLibrary)
							}
						}
						return true
					})
				}
			}
		case *dsl.AttentionDecl:
			set(d.Name, tokStruct, modDeclaration)
			for _, st := range d.Settings {
				set(st.Key, tokProperty, 0)
			}
		}
	}
	return roles
}

// symbolToken maps a resolved symbol onto a token class.
func symbolToken(sym check.Symbol) (tokenType, tokenModifier, bool) {
	switch sym.Kind {
	case check.SymParam:
		return tokVariable, modReadonly, true
	case check.SymBuffer, check.SymLet:
		return tokVariable, 0, true
	case check.SymMod:
		return tokFunction, 0, true
	case check.SymStdMod, check.SymBuiltin, check.SymCombinator:
		return tokFunction, modDefaultLibrary, true
	case check.SymModParam:
		return tokParameter, 0, true
	case check.SymFactoryParam:
		return tokParameter, modReadonly, true
	case check.SymSize:
		return tokVariable, modReadonly | modDefaultLibrary, true
	case check.SymConstant:
		return tokNumber, modDefaultLibrary, true
	case check.SymSetting:
		return tokProperty, 0, true
	case check.SymWord:
		return tokEnumMember, 0, true
	case check.SymAttention:
		return tokStruct, 0, true
	}
	return 0, 0, false
}

// encodeTokens writes tokens in LSP's relative encoding: for each token
// the line delta, the start delta (from the previous token's start when on
// the same line), the length, the type and the modifier bits, with
// positions and lengths in UTF-16 code units.
func encodeTokens(m lineMap, toks []semanticToken) []uint32 {
	data := make([]uint32, 0, 5*len(toks))
	var prev protocol.Position
	c := posCursor{m: m}
	for _, t := range toks {
		start, end := c.position(t.span.Start), c.position(t.span.End)
		if end.Line != start.Line || end.Character <= start.Character {
			continue // tokens never span lines; skip anything odd
		}
		deltaStart := start.Character
		if start.Line == prev.Line {
			deltaStart -= prev.Character
		}
		data = append(data, start.Line-prev.Line, deltaStart, end.Character-start.Character, uint32(t.typ), uint32(t.mods))
		prev = start
	}
	return data
}
