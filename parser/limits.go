package parser

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/maskc/maskc/dsl"
)

// MaxFileSize is the largest input accepted, in bytes. Larger input is
// refused before it is looked at, so that a huge file costs nothing.
const MaxFileSize = 1 << 20

// checkInput refuses input that is too large or not text. It returns nil for
// acceptable input. Only the first offending byte is reported.
func checkInput(src *dsl.Source) *dsl.Diagnostic {
	text := src.Text
	if len(text) > MaxFileSize {
		// No span: the snippet would be the file's first line, possibly all of it.
		return &dsl.Diagnostic{Source: src, Span: dsl.NoSpan, Code: CodeFileTooLarge, Severity: dsl.SeverityError,
			Message: fmt.Sprintf("file is %d bytes; at most %d (1 MiB) are accepted", len(text), MaxFileSize),
			Hint:    "a .flex file holds a few declarations; split generated content into several files"}
	}
	bad := bytes.IndexByte(text, 0)
	if !utf8.Valid(text) {
		off := firstInvalidUTF8(text)
		if bad < 0 || off < bad {
			bad = off
		}
	}
	if bad < 0 {
		return nil
	}
	msg := fmt.Sprintf("binary input: invalid UTF-8 byte 0x%02X", text[bad])
	if text[bad] == 0 {
		msg = "binary input: NUL byte"
	}
	// The snippet of a binary line is unreadable; point at the byte alone.
	return &dsl.Diagnostic{Source: src, Span: dsl.Span{Start: bad, End: bad + 1}, Code: CodeBinaryInput, Severity: dsl.SeverityError,
		Message: msg, Hint: "a .flex file must be UTF-8 text; is this the right file?"}
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}
