package lsp

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.lsp.dev/protocol"
)

// FuzzFeatures feeds arbitrary text, as a half-typed file would be, to the
// analysis and to every request, at an arbitrary position: none may panic
// (the server would recover, but there should be nothing to recover from).
func FuzzFeatures(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.flex")
	examples, _ := filepath.Glob("../examples/*.flex")
	for _, p := range append(seeds, examples...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, uint32(3), uint32(12))
			f.Add(b[:len(b)/2], uint32(1), uint32(4))
		}
	}
	f.Add([]byte("mask m(b, h, q, kv) = q 😀 kv # é 中\n"), uint32(0), uint32(25))
	f.Fuzz(func(t *testing.T, text []byte, line, char uint32) {
		a := analyze("fuzz.flex", text, &parseCache{})
		if len(a.panics) > 0 {
			t.Fatalf("analysis panicked: %s", a.panics[0])
		}
		s := newServer()
		const uri = protocol.DocumentURI("file:///fuzz.flex")
		s.docs[uri] = &document{uri: uri, version: 1, a: a}
		ctx := context.Background()
		pos := protocol.TextDocumentPositionParams{TextDocument: textDoc(uri), Position: protocol.Position{Line: line % 64, Character: char % 128}}
		_ = a.protocolDiagnostics()
		if _, err := s.hover(ctx, &protocol.HoverParams{TextDocumentPositionParams: pos}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.definition(ctx, &protocol.DefinitionParams{TextDocumentPositionParams: pos}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.documentSymbol(ctx, &protocol.DocumentSymbolParams{TextDocument: textDoc(uri)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.codeLens(ctx, &protocol.CodeLensParams{TextDocument: textDoc(uri)}); err != nil {
			t.Fatal(err)
		}
		toks, err := s.semanticTokensFull(ctx, &protocol.SemanticTokensParams{TextDocument: textDoc(uri)})
		if err != nil || len(toks.Data)%5 != 0 {
			t.Fatalf("semantic tokens: %v, %d numbers", err, len(toks.Data))
		}
		_, _ = s.formatting(ctx, &protocol.DocumentFormattingParams{TextDocument: textDoc(uri)})
	})
}
