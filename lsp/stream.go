package lsp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"go.lsp.dev/jsonrpc2"
)

// Limits on what one message may hold. A header line or a body beyond
// them is answered with an error and skipped, not read into memory.
const (
	// MaxHeaderLine bounds one header line, in bytes.
	MaxHeaderLine = 4 << 10
	// MaxHeaderLines bounds the header lines of one message.
	MaxHeaderLines = 64
	// MaxMessage bounds one message body, in bytes (a .flex file the
	// parser accepts is far smaller).
	MaxMessage = 64 << 20
)

// stream is the LSP base protocol (Content-Length framed JSON-RPC) over a
// connection, like jsonrpc2.NewStream, except that it survives bad input:
// a malformed header or body is answered with a JSON-RPC error
// (ParseError -32700 for bytes that are not a message, InvalidRequest
// -32600 for JSON that is not a request: batches, object ids, missing
// method) with a null id, and reading goes on with the next message. Only
// the end of the input or a failed write ends it.
//
// A goroutine reads ahead of the handler, up to maxQueued messages, so
// that the server can see what is already waiting (queuedChange) and skip
// work that a later message makes moot.
type stream struct {
	conn io.ReadWriteCloser
	in   *bufio.Reader
	mu   sync.Mutex // serialises writes: replies, notifications, protocol errors

	start       sync.Once
	qmu         sync.Mutex
	queue       []queued      // read, not yet handed to the connection
	queuedBytes int64         // the bytes of the messages in queue
	readErr     error         // why reading ahead stopped, once the queue drains
	pushed      chan struct{} // signalled after a push or the end of reading
	popped      chan struct{} // signalled after a pop
	closed      chan struct{} // closed by Close
	close       sync.Once
	done        chan struct{} // closed when reading ahead stops
}

// queued is one message read ahead, with the document a didChange
// notification replaces (found once, when it is read).
type queued struct {
	msg       jsonrpc2.Message
	n         int64
	changeURI string
}

// maxQueued bounds how many messages are read ahead, and maxQueuedBytes
// their bytes (issue 31: 100 notifications of 50 MB held 5.4 GB); one
// message larger than maxQueuedBytes is still read, alone.
const (
	maxQueued      = 1024
	maxQueuedBytes = 2 * MaxMessage
)

// newStream frames conn.
func newStream(conn io.ReadWriteCloser) *stream {
	return &stream{
		conn: conn, in: bufio.NewReaderSize(conn, MaxHeaderLine),
		pushed: make(chan struct{}, 1), popped: make(chan struct{}, 1),
		closed: make(chan struct{}), done: make(chan struct{}),
	}
}

// readAhead starts the goroutine that reads messages into the queue.
func (s *stream) readAhead() {
	s.start.Do(func() { go s.readLoop() })
}

func (s *stream) readLoop() {
	defer close(s.done)
	for {
		msg, n, err := s.next()
		s.qmu.Lock()
		if err != nil {
			s.readErr = err
			s.qmu.Unlock()
			signal(s.pushed)
			return
		}
		s.queue = append(s.queue, queued{msg: msg, n: n, changeURI: changedDocument(msg)})
		s.queuedBytes += n
		full := s.full()
		s.qmu.Unlock()
		signal(s.pushed)
		for full {
			select {
			case <-s.popped:
			case <-s.closed:
				return
			}
			s.qmu.Lock()
			full = s.full()
			s.qmu.Unlock()
		}
	}
}

// full says whether reading ahead waits for the handler; s.qmu is held.
func (s *stream) full() bool {
	return len(s.queue) >= maxQueued || (len(s.queue) > 0 && s.queuedBytes >= maxQueuedBytes)
}

// signal wakes whoever waits on c, without blocking.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Read returns the next well-formed message.
func (s *stream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	s.readAhead()
	for {
		s.qmu.Lock()
		if len(s.queue) > 0 {
			q := s.queue[0]
			s.queue[0] = queued{}
			s.queue = s.queue[1:]
			s.queuedBytes -= q.n
			s.qmu.Unlock()
			signal(s.popped)
			return q.msg, q.n, nil
		}
		err := s.readErr
		s.qmu.Unlock()
		if err != nil {
			return nil, 0, err
		}
		select {
		case <-s.pushed:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
}

// queuedChange reports whether a didChange notification for uri has been
// read and waits to be handled.
func (s *stream) queuedChange(uri string) bool {
	s.qmu.Lock()
	defer s.qmu.Unlock()
	for _, q := range s.queue {
		if q.changeURI == uri {
			return true
		}
	}
	return false
}

// changedDocument is the URI a didChange notification replaces, else "".
func changedDocument(msg jsonrpc2.Message) string {
	n, ok := msg.(*jsonrpc2.Notification)
	if !ok || n.Method() != "textDocument/didChange" {
		return ""
	}
	var p struct {
		TextDocument struct {
			URI string `json:"uri"`
		} `json:"textDocument"`
	}
	if json.Unmarshal(n.Params(), &p) != nil {
		return ""
	}
	return p.TextDocument.URI
}

// next reads the next well-formed message, answering and skipping the
// malformed ones before it.
func (s *stream) next() (jsonrpc2.Message, int64, error) {
	for {
		body, n, perr, err := s.readFrame()
		if err != nil {
			return nil, n, err
		}
		if perr == nil {
			var msg jsonrpc2.Message
			if msg, perr = decode(body); perr == nil {
				return msg, n, nil
			}
		}
		if err := s.writeRaw(errorResponse(perr)); err != nil {
			return nil, n, err
		}
	}
}

// readFrame reads one header and body. perr is a protocol error to answer
// (the stream is positioned after the bad message); err ends the stream.
//
// A message whose header gives no usable length (no Content-Length, a
// misspelled one, one that is not a number, two that disagree) cannot be
// skipped by its length: its body is then read as header text, and a
// header line with text before its Content-Length (the unframed body ran
// into the next header, which a body without a line end does) starts a new
// message there, the text before it skipped. So one bad message costs one
// error, never the messages after it.
func (s *stream) readFrame() (body []byte, n int64, perr *jsonrpc2.Error, err error) {
	length := int64(-1)
	lengths, conflict := 0, false
	for lines := 0; ; lines++ {
		line, m, long, err := s.readLine()
		n += m
		if err != nil {
			return nil, n, nil, err
		}
		if i := contentLengthAt(line); i > 0 || (i == 0 && long) {
			line, long = line[i:], false
			length, lengths, conflict, perr, lines = -1, 0, false, nil, 0
		}
		if long {
			perr = jsonrpc2.NewError(jsonrpc2.ParseError, fmt.Sprintf("header line longer than %d bytes", MaxHeaderLine))
			continue
		}
		if line == "" {
			if lines == 0 {
				lines-- // blank lines between messages are tolerated
				continue
			}
			break
		}
		if lines >= MaxHeaderLines && perr == nil {
			perr = jsonrpc2.NewError(jsonrpc2.ParseError, fmt.Sprintf("more than %d header lines", MaxHeaderLines))
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			perr = jsonrpc2.NewError(jsonrpc2.ParseError, fmt.Sprintf("invalid header line %q", clip(line)))
			continue
		}
		if strings.EqualFold(strings.TrimSpace(name), jsonrpc2.HdrContentLength) {
			lengths++
			v, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			switch {
			case err != nil || v < 0:
				perr = jsonrpc2.NewError(jsonrpc2.ParseError, fmt.Sprintf("invalid Content-Length %q", clip(strings.TrimSpace(value))))
				length, conflict = -1, true
			case lengths > 1 && v != length:
				perr = jsonrpc2.NewError(jsonrpc2.ParseError, "two Content-Length headers that disagree")
				length, conflict = -1, true
			case !conflict:
				length = v
			}
		}
	}
	if length < 0 {
		if perr == nil {
			perr = jsonrpc2.NewError(jsonrpc2.ParseError, "header without Content-Length")
		}
		return nil, n, perr, nil // no length: resynchronise on the next header
	}
	if length > MaxMessage {
		m, err := io.CopyN(io.Discard, s.in, length)
		n += m
		if err != nil {
			return nil, n, nil, err
		}
		return nil, n, jsonrpc2.NewError(jsonrpc2.ParseError, fmt.Sprintf("message of %d bytes, more than %d", length, MaxMessage)), nil
	}
	// Read as the bytes arrive: a header cannot make the server allocate
	// memory the client never sends.
	body, err = io.ReadAll(io.LimitReader(s.in, length))
	n += int64(len(body))
	if err == nil && int64(len(body)) < length {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, n, nil, err
	}
	return body, n, perr, nil
}

// contentLengthAt is where a Content-Length header starts in line (any
// case, a colon after the name), else -1.
func contentLengthAt(line string) int {
	lower := strings.ToLower(line)
	name := strings.ToLower(jsonrpc2.HdrContentLength)
	at := -1
	for off := 0; ; {
		i := strings.Index(lower[off:], name)
		if i < 0 {
			return at
		}
		i += off
		if rest := strings.TrimLeft(lower[i+len(name):], " \t"); strings.HasPrefix(rest, ":") {
			at = i // the last one: the text before it is what ran into it
		}
		off = i + len(name)
	}
}

// readLine reads one header line without its line end; long says it was
// longer than MaxHeaderLine: line is then its last bytes (up to twice
// MaxHeaderLine), where the header that an unframed body ran into is.
func (s *stream) readLine() (line string, n int64, long bool, err error) {
	var tail []byte
	for {
		chunk, err := s.in.ReadSlice('\n')
		n += int64(len(chunk))
		if errors.Is(err, bufio.ErrBufferFull) {
			long = true
			tail = append(tail[:0:0], append(tail[max(0, len(tail)-MaxHeaderLine):], chunk...)...)
			continue
		}
		if err != nil {
			if err == io.EOF && n > 0 {
				err = io.ErrUnexpectedEOF
			}
			return "", n, long, err
		}
		if long {
			tail = append(tail[max(0, len(tail)-MaxHeaderLine):], chunk...)
			return strings.TrimRight(string(tail), "\r\n"), n, true, nil
		}
		return strings.TrimRight(string(chunk), "\r\n"), n, false, nil
	}
}

// decode turns a body into a message, or into the error to answer.
func decode(body []byte) (jsonrpc2.Message, *jsonrpc2.Error) {
	if !json.Valid(body) {
		return nil, jsonrpc2.NewError(jsonrpc2.ParseError, "message body is not JSON")
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if len(trimmed) > 0 && trimmed[0] == '[' {
			return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "batch messages are not supported by the Language Server Protocol")
		}
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "message is not a JSON object")
	}
	var shape struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if err := json.Unmarshal(body, &shape); err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, err.Error())
	}
	if id := bytes.TrimSpace(shape.ID); len(id) > 0 && string(id) != "null" {
		var num int32
		var str string
		if json.Unmarshal(id, &num) != nil && json.Unmarshal(id, &str) != nil {
			return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, fmt.Sprintf("id %s is neither a string nor a 32-bit integer", clip(string(id))))
		}
	}
	if m := bytes.TrimSpace(shape.Method); len(m) > 0 {
		var name string
		if json.Unmarshal(m, &name) != nil {
			return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, "method is not a string")
		}
	}
	msg, err := jsonrpc2.DecodeMessage(body)
	if err != nil {
		return nil, jsonrpc2.NewError(jsonrpc2.InvalidRequest, err.Error())
	}
	return msg, nil
}

// clip shortens text quoted in an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// errorResponse is the JSON-RPC error response, with a null id, for a
// message that could not be read.
func errorResponse(e *jsonrpc2.Error) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      *int            `json:"id"`
		Error   *jsonrpc2.Error `json:"error"`
	}{"2.0", nil, e})
	return b
}

// Write sends a message.
func (s *stream) Write(_ context.Context, msg jsonrpc2.Message) (int64, error) {
	data, err := json.Marshal(msg)
	if err != nil {
		return 0, fmt.Errorf("marshaling message: %w", err)
	}
	return int64(len(data)), s.writeRaw(data)
}

// writeRaw frames and sends one body.
func (s *stream) writeRaw(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	frame := append(fmt.Appendf(nil, "%s: %d%s", jsonrpc2.HdrContentLength, len(data), jsonrpc2.HdrContentSeparator), data...)
	if _, err := s.conn.Write(frame); err != nil {
		return fmt.Errorf("write to stream: %w", err)
	}
	return nil
}

// Close closes the connection, which ends reading ahead.
func (s *stream) Close() error {
	s.close.Do(func() { close(s.closed) })
	return s.conn.Close()
}
