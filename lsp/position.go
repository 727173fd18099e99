package lsp

import (
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/dsl"
)

// A lineMap converts between byte offsets into a document's text and LSP
// positions: a 0-based line and a 0-based character counted in UTF-16 code
// units, which is what the protocol requires by default. A character outside
// the Basic Multilingual Plane (an emoji, say) is two code units; an
// invalid UTF-8 byte counts as one, as it decodes to U+FFFD.
type lineMap struct {
	src *dsl.Source
}

// position converts a byte offset into an LSP position. Offsets outside the
// text are clamped to it; an offset inside a multi-byte character is moved
// back to the start of that character.
func (m lineMap) position(offset int) protocol.Position {
	text := m.src.Text
	offset = max(0, min(offset, len(text)))
	line := m.src.LineOf(offset)
	start := m.src.LineStart(line)
	offset = runeStart(text, start, offset)
	return protocol.Position{Line: uint32(line - 1), Character: uint32(utf16Len(text[start:offset]))}
}

// A posCursor converts byte offsets into LSP positions like
// lineMap.position, but remembers where it stopped: offsets given in
// increasing order (semantic tokens, in text order) decode each byte of a
// line once, instead of once per token from the line's start, which was
// quadratic on a long line. An offset behind the cursor or on another line
// restarts from its line's start.
type posCursor struct {
	m       lineMap
	off     int               // byte offset of pos, a character start
	pos     protocol.Position // position of off
	scanned int               // bytes decoded so far
}

// position is lineMap.position(offset).
func (c *posCursor) position(offset int) protocol.Position {
	text := c.m.src.Text
	offset = max(0, min(offset, len(text)))
	line := c.m.src.LineOf(offset)
	start := c.m.src.LineStart(line)
	offset = runeStart(text, start, offset)
	if c.pos.Line != uint32(line-1) || offset < c.off || c.off < start {
		c.off, c.pos = start, protocol.Position{Line: uint32(line - 1)}
	}
	c.pos.Character += uint32(utf16Len(text[c.off:offset]))
	c.scanned += offset - c.off
	c.off = offset
	return c.pos
}

// offset converts an LSP position into a byte offset. A line past the end
// gives the end of the text; a character past the end of its line gives the
// end of the line (before its "\n" or "\r\n"); a character that falls
// between the two code units of a surrogate pair gives the start of that
// character.
func (m lineMap) offset(p protocol.Position) int {
	text := m.src.Text
	line := int(p.Line) + 1
	if line > m.src.LineCount() {
		return len(text)
	}
	start := m.src.LineStart(line)
	end := start + len(m.src.Line(line))
	units := int(p.Character)
	off := start
	for off < end {
		r, size := utf8.DecodeRune(text[off:end])
		w := runeUTF16Len(r)
		if units < w {
			break
		}
		units -= w
		off += size
	}
	return off
}

// rangeOf converts a span into an LSP range; an invalid span (a node
// synthesised by the compiler) becomes the empty range at the start of the
// document.
func (m lineMap) rangeOf(sp dsl.Span) protocol.Range {
	if !sp.IsValid() {
		return protocol.Range{}
	}
	return protocol.Range{Start: m.position(sp.Start), End: m.position(sp.End)}
}

// runeStart moves offset back to the start of the valid UTF-8 character
// it falls inside, if any, without crossing lineStart.
func runeStart(text []byte, lineStart, offset int) int {
	if offset >= len(text) || utf8.RuneStart(text[offset]) {
		return offset
	}
	for back := 1; back < utf8.UTFMax && offset-back >= lineStart; back++ {
		if utf8.RuneStart(text[offset-back]) {
			if _, size := utf8.DecodeRune(text[offset-back:]); size > back {
				return offset - back
			}
			break
		}
	}
	return offset
}

// utf16Len is the number of UTF-16 code units needed for b.
func utf16Len(b []byte) int {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		n += runeUTF16Len(r)
		b = b[size:]
	}
	return n
}

// runeUTF16Len is 2 for characters outside the Basic Multilingual Plane and
// 1 for all others (including utf8.RuneError).
func runeUTF16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}
