package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync/atomic"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// ServerName is the name the server reports to clients in its
// initialize result.
const ServerName = "maskc"

// ErrExitWithoutShutdown is returned by Serve when the client sends `exit`
// without a `shutdown` request first; the protocol asks the server to exit
// with status 1 then.
var ErrExitWithoutShutdown = errors.New("lsp: exit notification without a shutdown request")

// Serve runs a language server for .flex files, reading LSP messages from in
// and writing them to out (usually standard input and output), until the
// client sends `exit`, in ends, or ctx is cancelled. It returns nil after an
// orderly shutdown and exit, ErrExitWithoutShutdown for an exit without
// shutdown, and otherwise the reason the connection ended.
//
// Messages are handled one at a time in the order they arrive, so a
// request always sees every earlier change to its document. Each request
// runs under a recover: a panic is logged to the client (window/logMessage)
// and answered with an internal error, and the server keeps running.
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	return ServeWith(ctx, in, out, Options{})
}

// Options configure ServeWith.
type Options struct {
	// PicturesDir, when not empty, turns on the tile-map pictures: a code
	// lens per attention block that writes its picture there and shows it,
	// and a link to it in the block's hover (DefaultPicturesDir is where
	// `maskc lsp` puts them).
	PicturesDir string
}

// ServeWith is Serve with options.
func ServeWith(ctx context.Context, in io.Reader, out io.Writer, opts Options) error {
	return serve(ctx, newStream(&stdio{in: in, out: out}), opts)
}

// serve is ServeWith on a framed stream.
func serve(ctx context.Context, st *stream, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := newServer()
	s.pictures = opts.PicturesDir
	s.changeQueued = st.queuedChange
	conn := jsonrpc2.NewConn(st)
	s.conn = conn
	conn.Go(ctx, s.handle)
	select {
	case <-s.exited:
	case <-conn.Done():
	case <-ctx.Done():
	}
	conn.Close()
	s.drawer.stop()
	switch {
	case s.exitRequested.Load() && s.shutdownRequested.Load():
		return nil
	case s.exitRequested.Load():
		return ErrExitWithoutShutdown
	case ctx.Err() != nil && conn.Err() == nil:
		return ctx.Err()
	}
	return fmt.Errorf("lsp: connection ended before exit: %w", conn.Err())
}

// stdio joins a reader and a writer into the io.ReadWriteCloser that
// jsonrpc2 streams want. Close closes whichever of the two can be closed,
// which unblocks a pending read.
type stdio struct {
	in  io.Reader
	out io.Writer
}

func (s *stdio) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *stdio) Write(p []byte) (int, error) { return s.out.Write(p) }
func (s *stdio) Close() error {
	var errs []error
	if c, ok := s.in.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := s.out.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// server is the state of one client connection. All methods run on the
// connection's single reader goroutine, so the state needs no locking; the
// two flags Serve reads from its own goroutine are atomic.
type server struct {
	conn jsonrpc2.Conn
	docs map[protocol.DocumentURI]*document

	// changeQueued reports whether a later didChange of a document has
	// already arrived (nil: never), so the change before it need not be
	// analysed.
	changeQueued func(uri string) bool

	initialized       bool          // initialize has been answered
	shutdownRequested atomic.Bool   // shutdown has been answered
	exitRequested     atomic.Bool   // exit has arrived
	exited            chan struct{} // closed on exit

	pictures     string        // where tile-map pictures go; "" turns them off
	drawer       pictureDrawer // draws them off the request path
	showDocument bool          // the client takes window/showDocument
}

func newServer() *server {
	return &server{docs: make(map[protocol.DocumentURI]*document), exited: make(chan struct{})}
}

// A method answers one request or notification. Results of notifications
// are discarded.
type method func(s *server, ctx context.Context, params json.RawMessage) (any, error)

// handles adapts a typed method to a method, decoding the JSON params into
// the protocol type P.
func handles[P, R any](f func(*server, context.Context, *P) (R, error)) method {
	return func(s *server, ctx context.Context, raw json.RawMessage) (any, error) {
		var params P
		if len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &params); err != nil {
				return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: %v", err)
			}
		}
		return f(s, ctx, &params)
	}
}

// methods are the requests and notifications the server implements, by
// LSP method name.
var methods = map[string]method{
	protocol.MethodInitialize:                 handles((*server).initialize),
	protocol.MethodInitialized:                handles((*server).ignore),
	protocol.MethodShutdown:                   handles((*server).shutdown),
	protocol.MethodExit:                       handles((*server).exit),
	protocol.MethodTextDocumentDidOpen:        handles((*server).didOpen),
	protocol.MethodTextDocumentDidChange:      handles((*server).didChange),
	protocol.MethodTextDocumentDidClose:       handles((*server).didClose),
	protocol.MethodTextDocumentHover:          handles((*server).hover),
	protocol.MethodTextDocumentDefinition:     handles((*server).definition),
	protocol.MethodTextDocumentDocumentSymbol: handles((*server).documentSymbol),
	protocol.MethodTextDocumentFormatting:     handles((*server).formatting),
	protocol.MethodSemanticTokensFull:         handles((*server).semanticTokensFull),
	protocol.MethodTextDocumentCodeLens:       handles((*server).codeLens),
	protocol.MethodWorkspaceExecuteCommand:    handles((*server).executeCommand),
}

// handle is the jsonrpc2 handler: it dispatches one message, recovers a
// panic, and replies. It returns an error only when the reply cannot be
// written, which ends the connection.
func (s *server) handle(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
	_, isCall := req.(*jsonrpc2.Call)
	result, err := s.dispatch(ctx, req, isCall)
	if !isCall {
		return nil
	}
	return reply(ctx, result, err)
}

// dispatch finds and runs the method for req, turning a panic into an
// internal error.
func (s *server) dispatch(ctx context.Context, req jsonrpc2.Request, isCall bool) (result any, err error) {
	name := req.Method()
	defer func() {
		if r := recover(); r != nil {
			s.logf(protocol.MessageTypeError, "maskc lsp: internal error in %s: %v\n%s", name, r, debug.Stack())
			result, err = nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "internal error in %s: %v", name, r)
		}
	}()
	m, ok := methods[name]
	switch {
	case !ok && isCall:
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "method not supported: %s", name)
	case !ok:
		return nil, nil // notifications we do not know ($/cancelRequest, $/setTrace, ...) are ignored
	case name == protocol.MethodExit:
		// exit is honoured in every state.
	case s.shutdownRequested.Load():
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "%s after shutdown", name)
	case !s.initialized && name != protocol.MethodInitialize:
		if !isCall {
			return nil, nil // the protocol says to drop notifications before initialize
		}
		return nil, jsonrpc2.Errorf(jsonrpc2.ServerNotInitialized, "%s before initialize", name)
	}
	return m(s, ctx, req.Params())
}

// logf sends a window/logMessage notification to the client.
func (s *server) logf(typ protocol.MessageType, format string, args ...any) {
	msg := &protocol.LogMessageParams{Type: typ, Message: fmt.Sprintf(format, args...)}
	_ = s.conn.Notify(context.Background(), protocol.MethodWindowLogMessage, msg)
}

// ignore accepts a notification the server has nothing to do for.
func (s *server) ignore(context.Context, *json.RawMessage) (any, error) { return nil, nil }

// initialize answers the client's capabilities with the server's.
func (s *server) initialize(_ context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	if s.initialized {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "initialize sent twice")
	}
	s.initialized = true
	if w := p.Capabilities.Window; w != nil && w.ShowDocument != nil {
		s.showDocument = w.ShowDocument.Support
	}
	var commands *protocol.ExecuteCommandOptions
	if s.pictures != "" {
		commands = &protocol.ExecuteCommandOptions{Commands: []string{drawCommand}}
	}
	return &protocol.InitializeResult{
		Capabilities: protocol.ServerCapabilities{
			TextDocumentSync: &protocol.TextDocumentSyncOptions{
				OpenClose: true,
				Change:    protocol.TextDocumentSyncKindFull,
			},
			HoverProvider:              true,
			DefinitionProvider:         true,
			DocumentSymbolProvider:     true,
			DocumentFormattingProvider: true,
			CodeLensProvider:           &protocol.CodeLensOptions{},
			SemanticTokensProvider:     semanticTokensOptions(),
			ExecuteCommandProvider:     commands,
		},
		ServerInfo: &protocol.ServerInfo{Name: ServerName},
	}, nil
}

// shutdown prepares for exit: every later request but exit is refused.
func (s *server) shutdown(context.Context, *json.RawMessage) (any, error) {
	s.shutdownRequested.Store(true)
	return nil, nil
}

// exit ends Serve.
func (s *server) exit(context.Context, *json.RawMessage) (any, error) {
	if !s.exitRequested.Swap(true) {
		close(s.exited)
	}
	return nil, nil
}
