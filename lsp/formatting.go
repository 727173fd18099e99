package lsp

import (
	"context"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/format"
)

// codeRequestFailed is LSP's RequestFailed error code: the request was
// valid but could not be carried out.
const codeRequestFailed jsonrpc2.Code = -32803

// formatting answers textDocument/formatting with the canonical text of
// `maskc fmt` as one edit replacing the whole document, or no edit when
// the text is already canonical. A file with syntax errors is refused: its
// tree is incomplete and formatting it would drop text.
func (s *server) formatting(_ context.Context, p *protocol.DocumentFormattingParams) ([]protocol.TextEdit, error) {
	a, err := s.analysisOf(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	if !a.syntaxOK {
		return nil, jsonrpc2.Errorf(codeRequestFailed, "cannot format %s: the file has syntax errors", a.file.Source.Name)
	}
	text := a.file.Source.Text
	formatted := format.Source(a.file)
	if string(formatted) == string(text) {
		return []protocol.TextEdit{}, nil
	}
	whole := protocol.Range{End: a.lines.position(len(text))}
	return []protocol.TextEdit{{Range: whole, NewText: string(formatted)}}, nil
}
