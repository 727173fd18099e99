package lsp

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/internal/golden"
)

// TestGolden runs every feature over each testdata/*.flex file and compares
// a readable dump with testdata/golden/NAME.golden: diagnostics, document
// symbols, code lenses, a hover and a definition at every identifier and
// declaration keyword, semantic tokens (decoded), and formatting. Run with
// -update to rewrite the golden files after an intended change.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.flex")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".flex")
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := dumpFeatures(t, protocol.DocumentURI("file:///work/"+name+".flex"), string(text))
			golden.CheckString(t, filepath.Join("testdata", "golden", name+".golden"), got)
		})
	}
}

// dumpFeatures opens text in a fresh server and records every answer.
func dumpFeatures(t *testing.T, uri protocol.DocumentURI, text string) string {
	c := startServer(t)
	c.initialize()
	var b strings.Builder
	pos := func(p protocol.Position) string { return fmt.Sprintf("%d:%d", p.Line, p.Character) }
	span := func(r protocol.Range) string { return pos(r.Start) + "-" + pos(r.End) }
	lines := strings.Split(text, "\n")
	slice := func(r protocol.Range) string {
		if r.Start.Line != r.End.Line || int(r.Start.Line) >= len(lines) {
			return "…"
		}
		u := utf16Units(lines[r.Start.Line])
		return string(runesOfUnits(u, int(r.Start.Character), int(r.End.Character)))
	}

	b.WriteString("== diagnostics\n")
	for _, d := range c.open(uri, text).Diagnostics {
		fmt.Fprintf(&b, "%s %s %v %q\n", span(d.Range), d.Severity, d.Code, d.Message)
	}

	b.WriteString("\n== symbols\n")
	var symbols []protocol.DocumentSymbol
	c.mustCall(protocol.MethodTextDocumentDocumentSymbol, &protocol.DocumentSymbolParams{TextDocument: textDoc(uri)}, &symbols)
	var dumpSymbols func(indent string, ss []protocol.DocumentSymbol)
	dumpSymbols = func(indent string, ss []protocol.DocumentSymbol) {
		for _, s := range ss {
			fmt.Fprintf(&b, "%s%s %s %s sel %s %q\n", indent, s.Kind, s.Name, span(s.Range), span(s.SelectionRange), s.Detail)
			dumpSymbols(indent+"  ", s.Children)
		}
	}
	dumpSymbols("", symbols)

	b.WriteString("\n== code lenses\n")
	var lenses []protocol.CodeLens
	c.mustCall(protocol.MethodTextDocumentCodeLens, &protocol.CodeLensParams{TextDocument: textDoc(uri)}, &lenses)
	for _, l := range lenses {
		fmt.Fprintf(&b, "%s %q\n", span(l.Range), l.Command.Title)
	}

	b.WriteString("\n== semantic tokens\n")
	var toks protocol.SemanticTokens
	c.mustCall(protocol.MethodSemanticTokensFull, &protocol.SemanticTokensParams{TextDocument: textDoc(uri)}, &toks)
	var line, char uint32
	var points []protocol.Position // where to hover: every token that is a name or keyword
	for i := 0; i+4 < len(toks.Data); i += 5 {
		if toks.Data[i] > 0 {
			char = 0
		}
		line += toks.Data[i]
		char += toks.Data[i+1]
		r := protocol.Range{Start: protocol.Position{Line: line, Character: char}, End: protocol.Position{Line: line, Character: char + toks.Data[i+2]}}
		var mods []string
		for bit, m := range tokenModifiers {
			if toks.Data[i+4]&(1<<bit) != 0 {
				mods = append(mods, string(m))
			}
		}
		fmt.Fprintf(&b, "%s %s %s %q\n", span(r), tokenTypes[toks.Data[i+3]], strings.Join(mods, ","), slice(r))
		switch tokenType(toks.Data[i+3]) {
		case tokComment, tokNumber, tokOperator:
		default:
			points = append(points, r.Start)
		}
	}

	b.WriteString("\n== hover and definition at each name and keyword\n")
	for _, p := range points {
		var h *protocol.Hover
		c.mustCall(protocol.MethodTextDocumentHover, &protocol.HoverParams{TextDocumentPositionParams: at(uri, p.Line, p.Character)}, &h)
		var defs []protocol.Location
		c.mustCall(protocol.MethodTextDocumentDefinition, &protocol.DefinitionParams{TextDocumentPositionParams: at(uri, p.Line, p.Character)}, &defs)
		fmt.Fprintf(&b, "-- %s", pos(p))
		for _, d := range defs {
			fmt.Fprintf(&b, " definition %s", span(d.Range))
		}
		b.WriteString("\n")
		if h == nil {
			b.WriteString("   (no hover)\n")
			continue
		}
		fmt.Fprintf(&b, "   range %s\n", span(*h.Range))
		for _, l := range strings.Split(h.Contents.Value, "\n") {
			b.WriteString("   | " + l + "\n")
		}
	}

	b.WriteString("\n== formatting\n")
	var edits []protocol.TextEdit
	if err := c.call(protocol.MethodTextDocumentFormatting, &protocol.DocumentFormattingParams{TextDocument: textDoc(uri)}, &edits); err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	} else if len(edits) == 0 {
		b.WriteString("already formatted\n")
	}
	for _, e := range edits {
		fmt.Fprintf(&b, "replace %s with:\n%s", span(e.Range), e.NewText)
	}
	if err := c.shutdown(); err != nil {
		t.Errorf("Serve = %v", err)
	}
	return b.String()
}

// utf16Units encodes s as UTF-16 code units.
func utf16Units(s string) []rune {
	var u []rune
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			u = append(u, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		} else {
			u = append(u, r)
		}
	}
	return u
}

// runesOfUnits decodes the code units [from, to) back to characters.
func runesOfUnits(u []rune, from, to int) []rune {
	if from < 0 || to > len(u) || from > to {
		return []rune("<out of range>")
	}
	var out []rune
	for i := from; i < to; i++ {
		if r := u[i]; r >= 0xD800 && r < 0xDC00 && i+1 < to {
			out = append(out, 0x10000+((r-0xD800)<<10)+(u[i+1]-0xDC00))
			i++
		} else {
			out = append(out, r)
		}
	}
	return out
}
