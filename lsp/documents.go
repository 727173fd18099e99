package lsp

import (
	"context"
	"net/url"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// document is one open text document and the analysis of its latest text.
type document struct {
	uri     protocol.DocumentURI
	version int32
	a       *analysis
	parses  parseCache
	// pending is text not analysed yet because a later change had already
	// arrived (coalescing); stale says a is older than it.
	pending string
	stale   bool
}

// didOpen starts tracking a document, analyses it and publishes its
// diagnostics.
func (s *server) didOpen(ctx context.Context, p *protocol.DidOpenTextDocumentParams) (any, error) {
	d := &document{uri: p.TextDocument.URI, version: p.TextDocument.Version}
	s.docs[d.uri] = d
	s.update(ctx, d, p.TextDocument.Text)
	return nil, nil
}

// didChange replaces a document's text (the server asks for full-text
// sync, so the last change holds the whole text), re-analyses it and
// publishes its diagnostics. A change whose version is not newer than the
// one the server has is out of order and ignored: the server always works
// on the latest text.
func (s *server) didChange(ctx context.Context, p *protocol.DidChangeTextDocumentParams) (any, error) {
	uri, version := p.TextDocument.URI, p.TextDocument.Version
	d, ok := s.docs[uri]
	if !ok {
		// A client that skipped didOpen still sends the whole text.
		d = &document{uri: uri, version: version - 1}
		s.docs[uri] = d
	}
	if version <= d.version {
		s.logf(protocol.MessageTypeWarning, "maskc lsp: ignoring out-of-order change to %s: version %d after %d", uri, version, d.version)
		return nil, nil
	}
	if len(p.ContentChanges) == 0 {
		return nil, nil
	}
	d.version = version
	text := p.ContentChanges[len(p.ContentChanges)-1].Text
	if s.changeQueued != nil && s.changeQueued(string(uri)) {
		// Typing fast: a newer text is already waiting, so analysing this
		// one would only be thrown away. A request before that change
		// still sees this text (analysisOf analyses it first).
		d.pending, d.stale = text, true
		return nil, nil
	}
	s.update(ctx, d, text)
	return nil, nil
}

// didClose forgets a document and clears its diagnostics.
func (s *server) didClose(ctx context.Context, p *protocol.DidCloseTextDocumentParams) (any, error) {
	uri := p.TextDocument.URI
	delete(s.docs, uri)
	return nil, s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics,
		&protocol.PublishDiagnosticsParams{URI: uri, Diagnostics: []protocol.Diagnostic{}})
}

// update analyses text as the new content of d and publishes the result.
func (s *server) update(ctx context.Context, d *document, text string) {
	d.pending, d.stale = "", false
	d.a = analyze(sourceName(d.uri), []byte(text), &d.parses)
	for _, p := range d.a.panics {
		s.logf(protocol.MessageTypeError, "maskc lsp: internal error analysing %s: %s", d.uri, p)
	}
	params := &protocol.PublishDiagnosticsParams{
		URI:         d.uri,
		Version:     uint32(max(d.version, 0)),
		Diagnostics: d.a.protocolDiagnostics(),
	}
	if err := s.conn.Notify(ctx, protocol.MethodTextDocumentPublishDiagnostics, params); err != nil {
		s.logf(protocol.MessageTypeError, "maskc lsp: publishing diagnostics for %s: %v", d.uri, err)
	}
}

// analysisOf returns the analysis of the open document uri.
func (s *server) analysisOf(uri protocol.DocumentURI) (*analysis, error) {
	d, ok := s.docs[uri]
	if !ok {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "document not open: %s", uri)
	}
	if d.stale {
		s.update(context.Background(), d, d.pending)
	}
	return d.a, nil
}

// sourceName is the name diagnostics use for a document: the file path of
// a file: URI, else the URI itself.
func sourceName(uri protocol.DocumentURI) string {
	u, err := url.Parse(string(uri))
	if err != nil || u.Scheme != "file" || u.Path == "" {
		return string(uri)
	}
	return u.Path
}
