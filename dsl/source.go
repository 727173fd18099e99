package dsl

import (
	"sort"
	"unicode/utf8"
)

// Source is the text of one .flex file (or an in-memory string) and the
// index needed to turn byte offsets into lines and columns.
type Source struct {
	// Name is what diagnostics print before the position, usually the path
	// given on the command line, e.g. "examples/causal.flex".
	Name string
	// Text is the file content exactly as read.
	Text []byte

	lineStarts []int // byte offset at which each line begins
}

// ByteOrderMark is the UTF-8 byte order mark. At the start of a file the
// parser skips it (editors on Windows write it) and the formatter keeps it.
const ByteOrderMark = "\uFEFF"

// LineEndAt is the one rule for line ends, shared by positions, the lexer,
// the language server and the generator: it returns the length of the line
// terminator at text[i], 1 for "\n", 2 for "\r\n", 1 for a lone "\r"
// (which the Language Server Protocol and the C preprocessor count as a
// line end; the lexer refuses it, so that no tool sees a line where
// another does not), and 0 elsewhere.
func LineEndAt[T string | []byte](text T, i int) int {
	switch {
	case i >= len(text):
		return 0
	case text[i] == '\n':
		return 1
	case text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n':
		return 2
	case text[i] == '\r':
		return 1
	}
	return 0
}

// NewSource indexes text under name. Lines end as LineEndAt says.
func NewSource(name string, text []byte) *Source {
	s := &Source{Name: name, Text: text, lineStarts: []int{0}}
	for i := 0; i < len(text); i++ {
		if text[i] != '\n' && text[i] != '\r' {
			continue
		}
		n := LineEndAt(text, i)
		s.lineStarts = append(s.lineStarts, i+n)
		i += n - 1
	}
	return s
}

// Position is a human-oriented location: 1-based line, and a 1-based column
// counted in characters (Unicode code points), as editors and compilers print
// them. Offset is the byte offset it came from.
type Position struct {
	Offset int
	Line   int
	Column int
}

// Position converts a byte offset into a line and column. Offsets outside
// the text are clamped to it.
func (s *Source) Position(offset int) Position {
	if offset < 0 {
		offset = 0
	}
	if offset > len(s.Text) {
		offset = len(s.Text)
	}
	line := s.LineOf(offset)
	start := s.lineStarts[line-1]
	return Position{Offset: offset, Line: line, Column: utf8.RuneCount(s.Text[start:offset]) + 1}
}

// LineOf is the 1-based line holding offset (clamped to the text), found
// without counting columns: O(log lines).
func (s *Source) LineOf(offset int) int {
	offset = max(0, min(offset, len(s.Text)))
	return sort.Search(len(s.lineStarts), func(i int) bool { return s.lineStarts[i] > offset })
}

// LineCount is the number of lines; a final line without a newline counts.
func (s *Source) LineCount() int { return len(s.lineStarts) }

// LineStart is the byte offset of the first byte of 1-based line n.
func (s *Source) LineStart(n int) int {
	if n < 1 {
		return 0
	}
	if n > len(s.lineStarts) {
		return len(s.Text)
	}
	return s.lineStarts[n-1]
}

// Line returns the text of 1-based line n without its line terminator.
func (s *Source) Line(n int) string {
	if n < 1 || n > len(s.lineStarts) {
		return ""
	}
	start := s.lineStarts[n-1]
	end := len(s.Text)
	if n < len(s.lineStarts) {
		end = s.lineStarts[n] - 1 // the "\n" or lone "\r"
		if end > start && s.Text[end] == '\n' && s.Text[end-1] == '\r' {
			end--
		}
	}
	return string(s.Text[start:end])
}

// Slice returns the source text covered by sp.
func (s *Source) Slice(sp Span) string {
	a, b := sp.Start, sp.End
	if a < 0 {
		a = 0
	}
	if b > len(s.Text) {
		b = len(s.Text)
	}
	if a > b {
		return ""
	}
	return string(s.Text[a:b])
}

// Span is a half-open byte range [Start, End) in a Source. The zero Span is a
// valid empty span at offset 0; NoSpan marks nodes synthesised by the
// compiler rather than written by the user.
type Span struct {
	Start int
	End   int
}

// NoSpan is the span of nodes that do not come from source text, such as the
// mods of the standard library after inlining.
var NoSpan = Span{Start: -1, End: -1}

// IsValid reports whether sp points into source text.
func (sp Span) IsValid() bool { return sp.Start >= 0 && sp.End >= sp.Start }

// Join returns the smallest span covering both spans; an invalid span is
// ignored.
func (sp Span) Join(o Span) Span {
	if !sp.IsValid() {
		return o
	}
	if !o.IsValid() {
		return sp
	}
	if o.Start < sp.Start {
		sp.Start = o.Start
	}
	if o.End > sp.End {
		sp.End = o.End
	}
	return sp
}

// Contains reports whether byte offset off lies in sp (End inclusive, so a
// cursor just after a token still "touches" it, as editors expect).
func (sp Span) Contains(off int) bool { return sp.IsValid() && off >= sp.Start && off <= sp.End }
