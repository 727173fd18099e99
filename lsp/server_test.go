package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

const swaURI = protocol.DocumentURI("file:///work/swa.flex")

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func rng(l1, c1, l2, c2 uint32) protocol.Range {
	return protocol.Range{Start: protocol.Position{Line: l1, Character: c1}, End: protocol.Position{Line: l2, Character: c2}}
}

// jsonEqual compares got, marshalled, with the JSON text want.
func jsonEqual(t *testing.T, what string, got any, want string) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(g, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatalf("bad expectation for %s: %v", what, err)
	}
	ga, _ := json.Marshal(a)
	gb, _ := json.Marshal(b)
	if string(ga) != string(gb) {
		t.Errorf("%s:\n got %s\nwant %s", what, ga, gb)
	}
}

func TestInitializeCapabilities(t *testing.T) {
	c := startServer(t)
	res := c.initialize()
	jsonEqual(t, "capabilities", res, `{
		"capabilities": {
			"textDocumentSync": {"openClose": true, "change": 1},
			"hoverProvider": true,
			"definitionProvider": true,
			"documentSymbolProvider": true,
			"documentFormattingProvider": true,
			"codeLensProvider": {},
			"semanticTokensProvider": {
				"legend": {
					"tokenTypes": ["keyword", "comment", "number", "operator", "function", "parameter",
						"variable", "property", "type", "enumMember", "struct", "string"],
					"tokenModifiers": ["declaration", "readonly", "defaultLibrary"]
				},
				"full": true
			}
		},
		"serverInfo": {"name": "maskc"}
	}`)
	if err := c.shutdown(); err != nil {
		t.Errorf("Serve after shutdown and exit = %v, want nil", err)
	}
}

func TestLifecycleErrors(t *testing.T) {
	c := startServer(t)
	var h protocol.Hover
	err := c.call(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(swaURI, 0, 0)}, &h)
	wantRPCError(t, "hover before initialize", err, jsonrpc2.ServerNotInitialized)

	c.initialize()
	err = c.call(protocol.MethodInitialize, &protocol.InitializeParams{}, nil)
	wantRPCError(t, "second initialize", err, jsonrpc2.InvalidRequest)
	err = c.call("textDocument/notAMethod", struct{}{}, nil)
	wantRPCError(t, "unknown method", err, jsonrpc2.MethodNotFound)
	err = c.call(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(swaURI, 0, 0)}, &h)
	wantRPCError(t, "hover on a document not open", err, jsonrpc2.InvalidParams)
	err = c.call(protocol.MethodTextDocumentHover, json.RawMessage(`{"position": "nowhere"}`), &h)
	wantRPCError(t, "malformed params", err, jsonrpc2.InvalidParams)

	c.mustCall(protocol.MethodShutdown, nil, nil)
	err = c.call(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(swaURI, 0, 0)}, &h)
	wantRPCError(t, "hover after shutdown", err, jsonrpc2.InvalidRequest)
	c.notify(protocol.MethodExit, nil)
	if err := <-c.served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

func TestExitWithoutShutdown(t *testing.T) {
	c := startServer(t)
	c.initialize()
	c.notify(protocol.MethodExit, nil)
	if err := <-c.served; !errors.Is(err, ErrExitWithoutShutdown) {
		t.Errorf("Serve = %v, want ErrExitWithoutShutdown", err)
	}
}

func TestServeEndsWhenInputCloses(t *testing.T) {
	c := startServer(t)
	c.initialize()
	c.conn.Close()
	if err := <-c.served; err == nil || !strings.Contains(err.Error(), "connection ended before exit") {
		t.Errorf("Serve = %v, want a connection-ended error", err)
	}
}

func wantRPCError(t *testing.T, what string, err error, code jsonrpc2.Code) {
	t.Helper()
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) {
		t.Errorf("%s: error %v, want a JSON-RPC error %d", what, err, code)
		return
	}
	if rpcErr.Code != code {
		t.Errorf("%s: error code %d (%s), want %d", what, rpcErr.Code, rpcErr.Message, code)
	}
}

// TestSession drives one document through the features a client uses
// while editing, with the exact expected results.
func TestSession(t *testing.T) {
	c := startServer(t)
	c.initialize()
	text := readFixture(t, "swa.flex")

	diags := c.open(swaURI, text)
	jsonEqual(t, "diagnostics on open", diags, `{
		"uri": "file:///work/swa.flex", "version": 1,
		"diagnostics": [{
			"range": {"start": {"line": 2, "character": 6}, "end": {"line": 2, "character": 12}},
			"severity": 2, "code": "W001", "source": "maskc",
			"message": "param UNUSED is never used\nhint: remove it, or use it in a mod, a buffer dimension or a setting"
		}]
	}`)

	var hover protocol.Hover
	c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(swaURI, 7, 12)}, &hover)
	wantHover := "```flex\nattention swa_layer\n```\n" +
		"**sliding_window_causal** → `flash_attn_func(causal=True, window_size=(1023, 0))`, precondition sq == skv\n\n" +
		"otherwise: generated kernel\n\n" +
		"why: the mask is 0 <= q - kv <= 1023: window_size=(1023, 0) keeps 1024 keys including the diagonal; " +
		"the kernel aligns bottom-right, exact when Sq == Skv\n\n" +
		"mask: `0 <= q - kv <= 1023`"
	if hover.Contents.Kind != protocol.Markdown || hover.Contents.Value != wantHover {
		t.Errorf("hover on the attention block:\n got %q\nwant %q", hover.Contents.Value, wantHover)
	}
	if want := rng(7, 10, 7, 19); hover.Range == nil || *hover.Range != want {
		t.Errorf("hover range = %v, want %v", hover.Range, want)
	}

	// The `attention` keyword of the block shows the same classification.
	var hoverKeyword protocol.Hover
	c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(swaURI, 7, 2)}, &hoverKeyword)
	if hoverKeyword.Contents.Value != wantHover {
		t.Errorf("hover on `attention`:\n got %q\nwant %q", hoverKeyword.Contents.Value, wantHover)
	}

	hoverTests := []struct {
		name      string
		line, col uint32
		want      string
	}{
		{"param use", 5, 60, "```flex\nparam WINDOW = 1024\n```\nvalue `1024` (int)\n\ncompile-time constant; `-D WINDOW=VALUE` overrides it"},
		{"mod used through another mod", 4, 7, "```flex\nmask causal(b, h, q_idx, kv_idx)\n```\n\nused by:\n" +
			"- attention `swa_layer`: **sliding_window_causal** → `flash_attn_func(causal=True, window_size=(1023, 0))`, precondition sq == skv"},
		{"mod parameter", 4, 20, "(mod parameter) `q_idx`: int\n\nmod parameter q_idx (q)"},
		{"setting key", 8, 5, "(setting) `mask`\n\nmask = MOD: the mask mod (a mask, a factory instantiation, and_masks/or_masks)"},
	}
	for _, tt := range hoverTests {
		var h protocol.Hover
		c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(swaURI, tt.line, tt.col)}, &h)
		if h.Contents.Value != tt.want {
			t.Errorf("hover on %s:\n got %q\nwant %q", tt.name, h.Contents.Value, tt.want)
		}
	}

	// A blank line has nothing to say: the result is null.
	var nothing *protocol.Hover
	c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(swaURI, 3, 0)}, &nothing)
	if nothing != nil {
		t.Errorf("hover on a blank line = %+v, want null", nothing)
	}

	var defs []protocol.Location
	c.mustCall(protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: at(swaURI, 8, 12)}, &defs)
	jsonEqual(t, "definition of `local`", defs, `[{"uri": "file:///work/swa.flex", "range": {"start": {"line": 5, "character": 5}, "end": {"line": 5, "character": 10}}}]`)
	c.mustCall(protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: at(swaURI, 4, 38)}, &defs)
	jsonEqual(t, "definition of `q_idx` in the body", defs, `[{"uri": "file:///work/swa.flex", "range": {"start": {"line": 4, "character": 18}, "end": {"line": 4, "character": 23}}}]`)

	var symbols []protocol.DocumentSymbol
	c.mustCall(protocol.MethodTextDocumentDocumentSymbol, &protocol.DocumentSymbolParams{TextDocument: textDoc(swaURI)}, &symbols)
	jsonEqual(t, "document symbols", symbols, `[
		{"name": "WINDOW", "detail": "= 1024", "kind": 14, "range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 19}}, "selectionRange": {"start": {"line": 1, "character": 6}, "end": {"line": 1, "character": 12}}},
		{"name": "UNUSED", "detail": "= 3", "kind": 14, "range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 16}}, "selectionRange": {"start": {"line": 2, "character": 6}, "end": {"line": 2, "character": 12}}},
		{"name": "causal", "detail": "mask(b, h, q_idx, kv_idx)", "kind": 12, "range": {"start": {"line": 4, "character": 0}, "end": {"line": 4, "character": 50}}, "selectionRange": {"start": {"line": 4, "character": 5}, "end": {"line": 4, "character": 11}}},
		{"name": "local", "detail": "mask(b, h, q, kv)", "kind": 12, "range": {"start": {"line": 5, "character": 0}, "end": {"line": 5, "character": 65}}, "selectionRange": {"start": {"line": 5, "character": 5}, "end": {"line": 5, "character": 10}}},
		{"name": "swa_layer", "detail": "sliding_window_causal → flash_attn_func(causal=True, window_size=(1023, 0))", "kind": 23,
		 "range": {"start": {"line": 7, "character": 0}, "end": {"line": 9, "character": 1}}, "selectionRange": {"start": {"line": 7, "character": 10}, "end": {"line": 7, "character": 19}},
		 "children": [{"name": "mask", "detail": "local", "kind": 7, "range": {"start": {"line": 8, "character": 4}, "end": {"line": 8, "character": 16}}, "selectionRange": {"start": {"line": 8, "character": 4}, "end": {"line": 8, "character": 8}}}]}
	]`)

	var lenses []protocol.CodeLens
	c.mustCall(protocol.MethodTextDocumentCodeLens, &protocol.CodeLensParams{TextDocument: textDoc(swaURI)}, &lenses)
	jsonEqual(t, "code lenses", lenses, `[{
		"range": {"start": {"line": 7, "character": 10}, "end": {"line": 7, "character": 19}},
		"command": {"title": "flash_attn_func(causal=True, window_size=(1023, 0)) if sq == skv, else generated", "command": ""}
	}]`)

	// The fixture is formatted canonically already: no edits.
	var edits []protocol.TextEdit
	c.mustCall(protocol.MethodTextDocumentFormatting, &protocol.DocumentFormattingParams{TextDocument: textDoc(swaURI)}, &edits)
	if len(edits) != 0 {
		t.Errorf("formatting a canonical file: %d edits, want none: %+v", len(edits), edits)
	}

	// Typing: a half-typed declaration gives a syntax error, and
	// formatting is refused while it lasts.
	broken := text + "mask half(b, h, q, kv) = q >=\n"
	c.change(swaURI, 2, broken)
	diags = c.nextDiagnostics()
	jsonEqual(t, "diagnostics after a half-typed edit", diags.Diagnostics, `[{
		"range": {"start": {"line": 10, "character": 29}, "end": {"line": 10, "character": 29}},
		"severity": 1, "code": "E011", "source": "maskc",
		"message": "expected an expression after `+"`>=`"+`, found end of line\nhint: complete the expression; to continue it on the next line, put it in parentheses"
	}]`)
	err := c.call(protocol.MethodTextDocumentFormatting, &protocol.DocumentFormattingParams{TextDocument: textDoc(swaURI)}, &edits)
	if err == nil || !strings.Contains(err.Error(), "cannot format /work/swa.flex: the file has syntax errors") {
		t.Errorf("formatting a file with syntax errors: err = %v", err)
	}
	// Hover still works on the intact declarations.
	c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(swaURI, 5, 60)}, &hover)
	if !strings.HasPrefix(hover.Contents.Value, "```flex\nparam WINDOW = 1024\n```") {
		t.Errorf("hover on a param in a broken file: %q", hover.Contents.Value)
	}

	// An out-of-order change (version 2 again) is ignored: no new
	// diagnostics, and requests still see version 2's text.
	c.change(swaURI, 2, text)
	if log := c.nextLog(); !strings.Contains(log.Message, "ignoring out-of-order change") || log.Type != protocol.MessageTypeWarning {
		t.Errorf("log after a stale change: %+v", log)
	}
	err = c.call(protocol.MethodTextDocumentFormatting, &protocol.DocumentFormattingParams{TextDocument: textDoc(swaURI)}, &edits)
	if err == nil {
		t.Errorf("formatting after a stale change: the stale text was used")
	}

	// An unformatted text gets one edit replacing the whole document.
	messy := "param   WINDOW=1024 # 中文 😀\nmask causal(b,h,q,kv)=q>=kv\nattention a { mask = causal }\n"
	c.change(swaURI, 3, messy)
	diags = c.nextDiagnostics()
	if len(diags.Diagnostics) != 1 || diags.Diagnostics[0].Code != "W001" || diags.Version != 3 {
		t.Errorf("diagnostics of version 3: %+v", diags)
	}
	c.mustCall(protocol.MethodTextDocumentFormatting, &protocol.DocumentFormattingParams{TextDocument: textDoc(swaURI)}, &edits)
	jsonEqual(t, "formatting edit", edits, `[{
		"range": {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}},
		"newText": "param WINDOW = 1024  # 中文 😀\nmask causal(b, h, q, kv) = q >= kv\nattention a {\n    mask = causal\n}\n"
	}]`)

	c.notify(protocol.MethodTextDocumentDidClose, &protocol.DidCloseTextDocumentParams{TextDocument: textDoc(swaURI)})
	diags = c.nextDiagnostics()
	if len(diags.Diagnostics) != 0 {
		t.Errorf("diagnostics after close: %+v, want none", diags.Diagnostics)
	}
	if err := c.shutdown(); err != nil {
		t.Errorf("Serve = %v", err)
	}
}

// TestSemanticTokens checks the encoding, including UTF-16 lengths of a
// comment with multi-byte characters.
func TestSemanticTokens(t *testing.T) {
	c := startServer(t)
	c.initialize()
	const uri = protocol.DocumentURI("file:///work/tokens.flex")
	c.open(uri, "# é中😀\nparam W = 2\nmask m(b, h, q, kv) = abs(q - kv) <= W  # ok\n")
	var toks protocol.SemanticTokens
	c.mustCall(protocol.MethodSemanticTokensFull, &protocol.SemanticTokensParams{TextDocument: textDoc(uri)}, &toks)
	// Each row: delta line, delta start, length, type, modifiers.
	want := []uint32{
		0, 0, 6, uint32(tokComment), 0, // "# é中😀" is 6 UTF-16 units
		1, 0, 5, uint32(tokKeyword), 0, // param
		0, 6, 1, uint32(tokVariable), uint32(modDeclaration | modReadonly), // W
		0, 4, 1, uint32(tokNumber), 0, // 2
		1, 0, 4, uint32(tokKeyword), 0, // mask
		0, 5, 1, uint32(tokFunction), uint32(modDeclaration), // m
		0, 2, 1, uint32(tokParameter), uint32(modDeclaration), // b
		0, 3, 1, uint32(tokParameter), uint32(modDeclaration), // h
		0, 3, 1, uint32(tokParameter), uint32(modDeclaration), // q
		0, 3, 2, uint32(tokParameter), uint32(modDeclaration), // kv
		0, 6, 3, uint32(tokFunction), uint32(modDefaultLibrary), // abs
		0, 4, 1, uint32(tokParameter), 0, // q
		0, 2, 1, uint32(tokOperator), 0, // -
		0, 2, 2, uint32(tokParameter), 0, // kv
		0, 4, 2, uint32(tokOperator), 0, // <=
		0, 3, 1, uint32(tokVariable), uint32(modReadonly), // W
		0, 3, 4, uint32(tokComment), 0, // # ok
	}
	if len(toks.Data) != len(want) {
		t.Fatalf("got %d numbers, want %d:\n%v", len(toks.Data), len(want), toks.Data)
	}
	for i := range want {
		if toks.Data[i] != want[i] {
			t.Errorf("token %d field %d = %d, want %d (got row %v)", i/5, i%5, toks.Data[i], want[i], toks.Data[i/5*5:i/5*5+5])
		}
	}
}

// TestPanicIsRecovered installs a method that panics and checks that the
// client gets an internal error and a log message, and that the server
// keeps serving.
func TestPanicIsRecovered(t *testing.T) {
	methods["maskc/testPanic"] = func(*server, context.Context, json.RawMessage) (any, error) { panic("boom") }
	t.Cleanup(func() { delete(methods, "maskc/testPanic") })
	c := startServer(t)
	c.initialize()
	err := c.call("maskc/testPanic", struct{}{}, nil)
	wantRPCError(t, "panicking method", err, jsonrpc2.InternalError)
	if log := c.nextLog(); log.Type != protocol.MessageTypeError || !strings.Contains(log.Message, "internal error in maskc/testPanic: boom") {
		t.Errorf("log message = %+v", log)
	}
	c.open(swaURI, readFixture(t, "swa.flex"))
	if err := c.shutdown(); err != nil {
		t.Errorf("Serve = %v", err)
	}
}
