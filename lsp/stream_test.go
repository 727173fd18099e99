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
