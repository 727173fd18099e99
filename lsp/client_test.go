package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// testTimeout bounds every wait of a protocol test, so that a server that
// stops answering fails the test instead of hanging it.
const testTimeout = 10 * time.Second

// testClient is the client end of a server started by startServer,
// connected through in-memory pipes.
type testClient struct {
	t     *testing.T
	conn  jsonrpc2.Conn
	diags chan *protocol.PublishDiagnosticsParams
	logs  chan *protocol.LogMessageParams
	shows chan *protocol.ShowMessageParams
	// served receives Serve's result when it returns; stopped is closed
	// then.
	served  chan error
	stopped chan struct{}
}

// pipeRW joins the two pipe ends a side of the connection uses.
type pipeRW struct {
	io.ReadCloser
	io.WriteCloser
}

func (p pipeRW) Close() error { return errors.Join(p.ReadCloser.Close(), p.WriteCloser.Close()) }

// startServer runs Serve on pipes and returns a connected client. The
// server is stopped (without the shutdown handshake) when the test ends,
// unless the test already ended it.
func startServer(t *testing.T) *testClient {
	t.Helper()
	return startServerWith(t, Options{})
}

// startServerWith is startServer with server options.
func startServerWith(t *testing.T, opts Options) *testClient {
	t.Helper()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	c := &testClient{
		t:       t,
		diags:   make(chan *protocol.PublishDiagnosticsParams, 100),
		logs:    make(chan *protocol.LogMessageParams, 100),
		shows:   make(chan *protocol.ShowMessageParams, 100),
		served:  make(chan error, 1),
		stopped: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		c.served <- ServeWith(ctx, serverIn, serverOut, opts)
		close(c.stopped)
	}()
	c.conn = jsonrpc2.NewConn(jsonrpc2.NewStream(pipeRW{clientIn, clientOut}))
	c.conn.Go(ctx, c.handle)
	t.Cleanup(func() {
		cancel()
		c.conn.Close()
		// The server (its picture drawer too) has ended before the test's
		// directories are removed.
		select {
		case <-c.stopped:
		case <-time.After(testTimeout):
			t.Error("the server did not end after its context was cancelled")
		}
	})
	return c
}

// handle receives the server's notifications.
func (c *testClient) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
	switch req.Method() {
	case protocol.MethodTextDocumentPublishDiagnostics:
		var p protocol.PublishDiagnosticsParams
		if err := json.Unmarshal(req.Params(), &p); err != nil {
			c.t.Errorf("bad publishDiagnostics params: %v", err)
		}
		c.diags <- &p
	case protocol.MethodWindowLogMessage:
		var p protocol.LogMessageParams
		if err := json.Unmarshal(req.Params(), &p); err != nil {
			c.t.Errorf("bad logMessage params: %v", err)
		}
		c.logs <- &p
	case protocol.MethodWindowShowMessage:
		var p protocol.ShowMessageParams
		if err := json.Unmarshal(req.Params(), &p); err != nil {
			c.t.Errorf("bad showMessage params: %v", err)
		}
		c.shows <- &p
	default:
		c.t.Errorf("unexpected message from server: %s", req.Method())
	}
	return reply(ctx, nil, nil)
}

// call sends a request and decodes its result into result.
func (c *testClient) call(method string, params, result any) error {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err := c.conn.Call(ctx, method, params, result)
	return err
}

// mustCall is call that fails the test on error.
func (c *testClient) mustCall(method string, params, result any) {
	c.t.Helper()
	if err := c.call(method, params, result); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// notify sends a notification.
func (c *testClient) notify(method string, params any) {
	c.t.Helper()
	if err := c.conn.Notify(context.Background(), method, params); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// initialize performs the initialize/initialized handshake.
func (c *testClient) initialize() *protocol.InitializeResult {
	c.t.Helper()
	var res protocol.InitializeResult
	c.mustCall(protocol.MethodInitialize, &protocol.InitializeParams{ProcessID: 1}, &res)
	c.notify(protocol.MethodInitialized, &protocol.InitializedParams{})
	return &res
}

// open sends didOpen for text under uri and returns the diagnostics the
// server publishes for it.
func (c *testClient) open(uri protocol.DocumentURI, text string) *protocol.PublishDiagnosticsParams {
	c.t.Helper()
	c.notify(protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
		TextDocument: protocol.TextDocumentItem{URI: uri, LanguageID: "maskc-flex", Version: 1, Text: text},
	})
	return c.nextDiagnostics()
}

// change sends a full-text didChange.
func (c *testClient) change(uri protocol.DocumentURI, version int32, text string) {
	c.t.Helper()
	c.notify(protocol.MethodTextDocumentDidChange, &protocol.DidChangeTextDocumentParams{
		TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: uri}, Version: version},
		ContentChanges: []protocol.TextDocumentContentChangeEvent{{Text: text}},
	})
}

// nextDiagnostics waits for the next publishDiagnostics notification.
func (c *testClient) nextDiagnostics() *protocol.PublishDiagnosticsParams {
	c.t.Helper()
	select {
	case p := <-c.diags:
		return p
	case <-time.After(testTimeout):
		c.t.Fatal("no publishDiagnostics from the server")
		return nil
	}
}

// nextLog waits for the next window/logMessage notification.
func (c *testClient) nextLog() *protocol.LogMessageParams {
	c.t.Helper()
	select {
	case p := <-c.logs:
		return p
	case <-time.After(testTimeout):
		c.t.Fatal("no logMessage from the server")
		return nil
	}
}

// shutdown performs the shutdown/exit handshake and returns Serve's result.
func (c *testClient) shutdown() error {
	c.t.Helper()
	c.mustCall(protocol.MethodShutdown, nil, nil)
	c.notify(protocol.MethodExit, nil)
	select {
	case err := <-c.served:
		return err
	case <-time.After(testTimeout):
		c.t.Fatal("Serve did not return after exit")
		return nil
	}
}

// textDoc is the identifier of uri.
func textDoc(uri protocol.DocumentURI) protocol.TextDocumentIdentifier {
	return protocol.TextDocumentIdentifier{URI: uri}
}

// at is the position-params of (line, character) in uri.
func at(uri protocol.DocumentURI, line, char uint32) protocol.TextDocumentPositionParams {
	return protocol.TextDocumentPositionParams{TextDocument: textDoc(uri), Position: protocol.Position{Line: line, Character: char}}
}
