package lsp

import (
	"strings"
	"testing"
	"unicode/utf8"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/dsl"
)

// multibyteText has a two-byte (é, one UTF-16 unit), a three-byte (中, one
// unit) and a four-byte character (😀, two units: a surrogate pair) in
// comments before code, and a CRLF line.
const multibyteText = "# café\n" + // line 0
	"param W = 1 # 中文 😀 x\r\n" + // line 1
	"# 😀😀 y\n" + // line 2
	"mask m(b, h, q, kv) = q >= kv" // line 3, no final newline

func TestLineMapPosition(t *testing.T) {
	m := lineMap{src: dsl.NewSource("t.flex", []byte(multibyteText))}
	text := multibyteText
	tests := []struct {
		name   string
		offset int
		want   protocol.Position
	}{
		{"start", 0, protocol.Position{Line: 0, Character: 0}},
		{"after é", len("# café"), protocol.Position{Line: 0, Character: 6}},
		{"end of line 0 is its newline", len("# café"), protocol.Position{Line: 0, Character: 6}},
		{"param", len("# café\n"), protocol.Position{Line: 1, Character: 0}},
		{"after 中文", len("# café\nparam W = 1 # 中文"), protocol.Position{Line: 1, Character: 16}},
		{"after 😀 (two units)", len("# café\nparam W = 1 # 中文 😀"), protocol.Position{Line: 1, Character: 19}},
		{"x after 😀", len("# café\nparam W = 1 # 中文 😀 "), protocol.Position{Line: 1, Character: 20}},
		{"between 😀😀", len("# café\nparam W = 1 # 中文 😀 x\r\n# 😀"), protocol.Position{Line: 2, Character: 4}},
		{"y after 😀😀", len("# café\nparam W = 1 # 中文 😀 x\r\n# 😀😀 "), protocol.Position{Line: 2, Character: 7}},
		{"kv on last line", len(text) - 2, protocol.Position{Line: 3, Character: 27}},
		{"end of text", len(text), protocol.Position{Line: 3, Character: 29}},
		{"past end clamps", len(text) + 10, protocol.Position{Line: 3, Character: 29}},
		{"negative clamps", -3, protocol.Position{Line: 0, Character: 0}},
		{"inside é moves back", len("# caf") + 1, protocol.Position{Line: 0, Character: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.position(tt.offset); got != tt.want {
				t.Errorf("position(%d) = %+v, want %+v", tt.offset, got, tt.want)
			}
		})
	}
}

func TestLineMapOffset(t *testing.T) {
	m := lineMap{src: dsl.NewSource("t.flex", []byte(multibyteText))}
	line1 := len("# café\n")
	line2 := len("# café\nparam W = 1 # 中文 😀 x\r\n")
	tests := []struct {
		name string
		pos  protocol.Position
		want int
	}{
		{"start", protocol.Position{Line: 0, Character: 0}, 0},
		{"after é", protocol.Position{Line: 0, Character: 6}, len("# café")},
		{"past end of line 0 clamps before newline", protocol.Position{Line: 0, Character: 99}, len("# café")},
		{"after 中", protocol.Position{Line: 1, Character: 15}, line1 + len("param W = 1 # 中")},
		{"x after 😀", protocol.Position{Line: 1, Character: 20}, line1 + len("param W = 1 # 中文 😀 ")},
		{"inside surrogate pair rounds down", protocol.Position{Line: 1, Character: 18}, line1 + len("param W = 1 # 中文 ")},
		{"past end of CRLF line clamps before CR", protocol.Position{Line: 1, Character: 99}, line1 + len("param W = 1 # 中文 😀 x")},
		{"y after 😀😀", protocol.Position{Line: 2, Character: 7}, line2 + len("# 😀😀 ")},
		{"line past the end", protocol.Position{Line: 40, Character: 0}, len(multibyteText)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.offset(tt.pos); got != tt.want {
				t.Errorf("offset(%+v) = %d, want %d", tt.pos, got, tt.want)
			}
		})
	}
}

// TestLineMapRoundTrip checks offset(position(o)) == o at every character
// boundary of the text.
func TestLineMapRoundTrip(t *testing.T) {
	m := lineMap{src: dsl.NewSource("t.flex", []byte(multibyteText))}
	for o := 0; o <= len(multibyteText); o++ {
		if o < len(multibyteText) && !utf8.RuneStart(multibyteText[o]) {
			continue
		}
		if o > 0 && multibyteText[o-1] == '\r' {
			continue // between CR and LF is not a position LSP can name
		}
		if got := m.offset(m.position(o)); got != o {
			t.Errorf("offset(position(%d)) = %d", o, got)
		}
	}
}

func FuzzLineMap(f *testing.F) {
	f.Add([]byte(multibyteText), 7, uint32(1), uint32(19))
	f.Add([]byte("\xff\xfe\n\x00"), 1, uint32(0), uint32(1))
	f.Fuzz(func(t *testing.T, text []byte, off int, line, char uint32) {
		m := lineMap{src: dsl.NewSource("f.flex", text)}
		p := m.position(off)
		if o := m.offset(p); o < 0 || o > len(text) {
			t.Fatalf("offset(position(%d)) = %d out of range", off, o)
		}
		o := m.offset(protocol.Position{Line: line, Character: char})
		if o < 0 || o > len(text) {
			t.Fatalf("offset = %d out of range", o)
		}
		// Right after a "\r" is no LSP position (it belongs to the line
		// terminator), so the round trip may stop before the "\r".
		if q := m.position(o); m.offset(q) != o && !(o > 0 && text[o-1] == '\r') {
			t.Fatalf("position/offset disagree at %d: %+v -> %d", o, q, m.offset(q))
		}
	})
}

// TestPosCursorAgreesAndIsLinear: the cursor gives lineMap.position's
// answer for every offset in increasing order (inside multi-byte characters
// too), and decodes each byte once; on a 240 KB line, recounting from the
// line's start per token took 23 s.
func TestPosCursorAgreesAndIsLinear(t *testing.T) {
	long := "mask m(b, h, q, kv) = q >= kv # " + strings.Repeat("é😀中 a ", 20000) + "\n"
	for _, text := range []string{multibyteText, long + multibyteText + long} {
		m := lineMap{src: dsl.NewSource("t.flex", []byte(text))}
		c := posCursor{m: m}
		for off := 0; off <= len(text)+1; off++ {
			got := c.position(off)
			if len(text) > 1000 && off%997 > 8 && off < len(text)-8 {
				continue // lineMap.position is linear per call: sample it
			}
			if want := m.position(off); got != want {
				t.Fatalf("offset %d: cursor %v, lineMap %v", off, got, want)
			}
		}
		if c.scanned > len(text) {
			t.Errorf("cursor decoded %d bytes of a %d-byte text", c.scanned, len(text))
		}
		// Going back restarts from the line's start and stays right.
		if got, want := c.position(5), m.position(5); got != want {
			t.Errorf("backwards: cursor %v, lineMap %v", got, want)
		}
	}
}

// BenchmarkSemanticTokensLongLine measures semantic tokens for a file
// whose one line holds 240 KB of tokens.
func BenchmarkSemanticTokensLongLine(b *testing.B) {
	text := "mask m(b, h, q, kv) = q >= kv" + strings.Repeat(" and q >= kv", 20000) + "\n"
	a := analyze("long.flex", []byte(text), nil)
	for b.Loop() {
		_ = encodeTokens(a.lines, a.semanticTokens())
	}
}

// TestLoneCRIsALineEnd: the server counts a lone "\r" as a line end, as
// the protocol (and so the editor) does, so diagnostics after one land on
// the line the editor shows.
func TestLoneCRIsALineEnd(t *testing.T) {
	text := "# a\rmask m(b, h, q, kv) = q >= kv\n"
	a := analyze("cr.flex", []byte(text), nil)
	if len(a.diags) == 0 {
		t.Fatal("a lone CR is accepted")
	}
	if got := a.lines.position(strings.Index(text, "mask")); got != (protocol.Position{Line: 1, Character: 0}) {
		t.Errorf("mask at %v, want line 1 character 0", got)
	}
	if r := a.lines.rangeOf(a.diags[0].Span); r.Start != (protocol.Position{Line: 0, Character: 3}) {
		t.Errorf("diagnostic at %v, want 0:3", r.Start)
	}
}
