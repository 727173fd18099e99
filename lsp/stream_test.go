package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the server's writers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// readFrames splits the server's output into message bodies.
func readFrames(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(out))
	var msgs []map[string]any
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			return msgs
		}
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Content-Length:")))
		if err != nil {
			t.Fatalf("bad header %q", line)
		}
		r.ReadString('\n')
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("server wrote non-JSON %q", body)
		}
		msgs = append(msgs, m)
	}
}

// TestMalformedMessagesAreAnsweredAndServingGoesOn: every malformed message
// gets a JSON-RPC error with a null id, and the requests after it are
// served as usual.
func TestMalformedMessagesAreAnsweredAndServingGoesOn(t *testing.T) {
	bad := []struct {
		name, raw string
		code      float64
	}{
		{"body not JSON", frame("hello"), -32700},
		{"truncated JSON", frame(`{"jsonrpc":"2.0","id":1,`), -32700},
		{"garbage header", "garbage\r\n\r\n", -32700},
		{"negative length", "Content-Length: -4\r\n\r\n", -32700},
		{"non-numeric length", "Content-Length: abc\r\n\r\n", -32700},
		{"header line too long", "X-Junk: " + strings.Repeat("x", 3*MaxHeaderLine) + "\r\n" + frame(`{}`), -32700},
		{"batch", frame(`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]`), -32600},
		{"object id", frame(`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize","params":{}}`), -32600},
		{"number", frame(`42`), -32600},
		{"method not a string", frame(`{"jsonrpc":"2.0","id":7,"method":5}`), -32600},
		{"neither request nor response", frame(`{"jsonrpc":"2.0"}`), -32600},
	}
	var in strings.Builder
	for _, b := range bad {
		in.WriteString(b.raw)
	}
	in.WriteString(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`))
	in.WriteString(frame(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`))
	in.WriteString(frame(`{"jsonrpc":"2.0","method":"exit"}`))
	var out lockedBuffer
	if err := Serve(context.Background(), strings.NewReader(in.String()), &out); err != nil {
		t.Fatalf("Serve = %v, want nil after shutdown and exit", err)
	}
	msgs := readFrames(t, out.b.Bytes())
	if len(msgs) != len(bad)+2 {
		t.Fatalf("%d messages back, want %d: %v", len(msgs), len(bad)+2, msgs)
	}
	for i, b := range bad {
		m := msgs[i]
		e, _ := m["error"].(map[string]any)
		if id, ok := m["id"]; !ok || id != nil || e == nil || e["code"] != b.code {
			t.Errorf("%s: got %v, want error %v with id null", b.name, m, b.code)
		}
	}
	if init := msgs[len(bad)]; init["id"] != float64(1) || init["result"] == nil {
		t.Errorf("initialize after the bad messages: %v", init)
	}
}

// TestQueuedChangesAreCoalesced: changes that a newer change of the same
// document already follows are not analysed (no diagnostics published for
// them), except where a request between them needs that text, which it
// then sees. 200 quick edits of a 20 000-line file took 33 s before a
// hover was answered.
func TestQueuedChangesAreCoalesced(t *testing.T) {
	const uri = "file:///w/c.flex"
	doc := func(name string) string {
		return fmt.Sprintf("mask %s(b, h, q, kv) = q >= kv\nattention a {\n    mask = %s\n}\n", name, name)
	}
	msg := func(id int, method string, params any) string {
		m := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
		if id > 0 {
			m["id"] = id
		}
		b, _ := json.Marshal(m)
		return frame(string(b))
	}
	change := func(v int, text string) string {
		return msg(0, "textDocument/didChange", map[string]any{
			"textDocument":   map[string]any{"uri": uri, "version": v},
			"contentChanges": []any{map[string]any{"text": text}},
		})
	}
	hover := func(id int) string {
		return msg(id, "textDocument/hover", map[string]any{
			"textDocument": map[string]any{"uri": uri}, "position": map[string]any{"line": 0, "character": 6},
		})
	}
	var in strings.Builder
	in.WriteString(msg(1, "initialize", map[string]any{"capabilities": map[string]any{}}))
	in.WriteString(msg(0, "textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": "maskc", "version": 1, "text": doc("first")},
	}))
	v := 1
	for i := 0; i < 50; i++ {
		v++
		in.WriteString(change(v, doc(fmt.Sprintf("typing%d", i))))
	}
	v++
	in.WriteString(change(v, doc("alpha")))
	in.WriteString(hover(2)) // must see alpha, though beta is queued
	v++
	in.WriteString(change(v, doc("beta")))
	in.WriteString(hover(3))
	in.WriteString(msg(4, "shutdown", nil))
	in.WriteString(msg(0, "exit", nil))

	var out lockedBuffer
	st := newStream(&stdio{in: strings.NewReader(in.String()), out: &out})
	st.readAhead()
	<-st.done // everything is queued before the first message is handled
	if err := serve(context.Background(), st, Options{}); err != nil {
		t.Fatalf("serve = %v", err)
	}
	var versions []float64
	hovers := map[float64]string{}
	for _, m := range readFrames(t, out.b.Bytes()) {
		if m["method"] == "textDocument/publishDiagnostics" {
			versions = append(versions, m["params"].(map[string]any)["version"].(float64))
		}
		if id, ok := m["id"].(float64); ok && (id == 2 || id == 3) {
			b, _ := json.Marshal(m["result"])
			hovers[id] = string(b)
		}
	}
	if fmt.Sprint(versions) != fmt.Sprint([]float64{1, float64(v - 1), float64(v)}) {
		t.Errorf("diagnostics published for versions %v, want only 1, %d (needed by a hover) and %d", versions, v-1, v)
	}
	if !strings.Contains(hovers[2], "alpha") || !strings.Contains(hovers[3], "beta") {
		t.Errorf("hovers saw the wrong text: %q, %q", hovers[2], hovers[3])
	}
}

// FuzzStream feeds arbitrary bytes to the server's framing: it never
// panics or hangs, answers what it cannot read with JSON-RPC errors, and
// ends when the input does.
//
//	go test ./lsp -run '^$' -fuzz FuzzStream -fuzztime 20s
func FuzzStream(f *testing.F) {
	f.Add([]byte(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`)))
	f.Add([]byte("garbage\r\n\r\n" + frame("hello")))
	f.Add([]byte("Content-Length: -4\r\n\r\nContent-Length: 99999999999\r\n\r\n"))
	f.Add([]byte(frame(`[1,2]`) + frame(`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`)))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out lockedBuffer
		done := make(chan error, 1)
		go func() { done <- Serve(context.Background(), bytes.NewReader(in), &out) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("Serve did not end with its input")
		}
		_ = readFrames(t, out.b.Bytes())
	})
}

// TestBadHeaderDoesNotDesynchronise: a message whose header gives no
// usable length, followed by its body, costs one error and nothing more:
// the requests after it are answered with their ids (issue 31: every later
// request got -32700 with a null id, for good; with two Content-Length
// headers the last won and the stream lost sync).
func TestBadHeaderDoesNotDesynchronise(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":99,"method":"shutdown"}`
	pretty := "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 98,\n  \"method\": \"shutdown\"\n}"
	bad := []struct{ name, raw string }{
		{"misspelled header", "Content-Lenght: 45\r\n\r\n" + body},
		{"65 header lines", strings.Repeat("X-Pad: 1\r\n", 65) + "Content-Length: 45\r\n\r\n" + body},
		{"length 2x", "Content-Length: 2x\r\n\r\n" + body},
		{"two lengths that disagree", "Content-Length: 45\r\nContent-Length: 3\r\n\r\n" + body},
		{"no length, pretty body", "Content-Type: x\r\n\r\n" + pretty},
		{"no length, body longer than a header line", "X: 1\r\n\r\n" + `{"pad":"` + strings.Repeat("x", 3*MaxHeaderLine) + `"}`},
	}
	hover := func(id int) string {
		return frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"textDocument/hover","params":{"textDocument":{"uri":"file:///none.flex"},"position":{"line":0,"character":0}}}`, id))
	}
	var in strings.Builder
	in.WriteString(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`))
	for i, b := range bad {
		in.WriteString(b.raw)
		in.WriteString(hover(10 + i))
	}
	in.WriteString(frame(`{"jsonrpc":"2.0","id":2,"method":"shutdown"}`))
	in.WriteString(frame(`{"jsonrpc":"2.0","method":"exit"}`))
	var out lockedBuffer
	if err := Serve(context.Background(), strings.NewReader(in.String()), &out); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	var nullErrors int
	ids := map[float64]bool{}
	for _, m := range readFrames(t, out.b.Bytes()) {
		if id, ok := m["id"].(float64); ok {
			ids[id] = true
		} else if m["id"] == nil && m["error"] != nil {
			nullErrors++
		}
	}
	for i, b := range bad {
		if !ids[float64(10+i)] {
			t.Errorf("%s: the request after it (id %d) was not answered", b.name, 10+i)
		}
	}
	if ids[99] || ids[98] {
		t.Error("the body of a message without a usable length was served")
	}
	if !ids[2] || nullErrors != len(bad) {
		t.Errorf("shutdown answered %v, %d errors with a null id, want %d", ids[2], nullErrors, len(bad))
	}
}

// TestReadAheadIsBoundedInBytes: large messages are not read ahead beyond
// maxQueuedBytes while the handler is busy (issue 31: up to 1,024
// messages of up to 64 MiB were, 5.4 GB for 100 of 50 MB).
func TestReadAheadIsBoundedInBytes(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"x/pad","params":{"s":"` + strings.Repeat("a", MaxMessage/4) + `"}}`
	var in strings.Builder
	for i := 0; i < 12; i++ {
		in.WriteString(frame(big))
	}
	st := newStream(&stdio{in: strings.NewReader(in.String()), out: io.Discard})
	st.readAhead()
	time.Sleep(500 * time.Millisecond) // nobody reads: the read-ahead stops
	st.qmu.Lock()
	n, bytes := len(st.queue), st.queuedBytes
	st.qmu.Unlock()
	if bytes > maxQueuedBytes+MaxMessage || n >= 12 {
		t.Errorf("%d messages, %d bytes read ahead; want at most %d bytes", n, bytes, maxQueuedBytes+MaxMessage)
	}
	for i := 0; i < 12; i++ {
		if _, _, err := st.Read(context.Background()); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	st.Close()
}
