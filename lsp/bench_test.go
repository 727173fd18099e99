package lsp

import (
	"fmt"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/parser"
)

// bigFile returns a valid .flex file of exactly lines lines: blocks of ten
// lines with a param, two mods (one with a let block), an attention block
// combining them, and a comment with multi-byte characters.
func bigFile(lines int) []byte {
	var b strings.Builder
	for i := 0; i < lines/10; i++ {
		fmt.Fprintf(&b, "param W%d = %d\n", i, i+1)
		fmt.Fprintf(&b, "mask causal%d(b, h, q, kv) = q >= kv\n", i)
		fmt.Fprintf(&b, "mask win%d(b, h, q, kv) {\n", i)
		fmt.Fprintf(&b, "    let d = q - kv\n")
		fmt.Fprintf(&b, "    d >= 0 and d <= W%d\n", i)
		fmt.Fprintf(&b, "}\n")
		fmt.Fprintf(&b, "attention layer%d {\n", i)
		fmt.Fprintf(&b, "    mask = and_masks(causal%d, win%d)\n", i, i)
		fmt.Fprintf(&b, "}\n")
		fmt.Fprintf(&b, "# layer %d: café 中文 😀\n", i)
	}
	return []byte(b.String())
}

// TestBigFileIsClean makes sure the benchmark measures a full re-check
// (parse, check and classify) and not an early exit on errors.
func TestBigFileIsClean(t *testing.T) {
	text := bigFile(5000)
	if n := strings.Count(string(text), "\n"); n != 5000 {
		t.Fatalf("bigFile has %d lines", n)
	}
	a := analyze("big.flex", text, nil)
	if len(a.diags) != 0 || len(a.panics) != 0 {
		t.Fatalf("big file: %d diagnostics (first %v), %d panics", len(a.diags), a.diags[0], len(a.panics))
	}
	if len(a.decisions) != 500 {
		t.Fatalf("big file: %d classified blocks, want 500", len(a.decisions))
	}
}

// BenchmarkRecheck5000Lines measures what the server does on every change
// of a 5 000-line file: parse (reusing the unchanged declarations), check,
// classify and convert the diagnostics. Each iteration edits a line in the
// middle of the file, alternating between two versions.
func BenchmarkRecheck5000Lines(b *testing.B) {
	text := bigFile(5000)
	edited := []byte(strings.Replace(string(text), "param W250 = 251", "param W250 = 2510", 1))
	versions := [][]byte{text, edited}
	var cache parseCache
	analyze("big.flex", text, &cache)
	i := 0
	for b.Loop() {
		i++
		a := analyze("big.flex", versions[i%2], &cache)
		_ = a.protocolDiagnostics()
	}
}

// BenchmarkOpen5000Lines measures the first analysis of a 5 000-line file,
// with nothing to reuse.
func BenchmarkOpen5000Lines(b *testing.B) {
	text := bigFile(5000)
	for b.Loop() {
		var cache parseCache
		a := analyze("big.flex", text, &cache)
		_ = a.protocolDiagnostics()
	}
}

// BenchmarkSemanticTokens5000Lines measures a full semantic-token request
// on the same file.
func BenchmarkSemanticTokens5000Lines(b *testing.B) {
	a := analyze("big.flex", bigFile(5000), nil)
	for b.Loop() {
		_ = encodeTokens(a.lines, a.semanticTokens())
	}
}

// BenchmarkRecheckStages5000Lines splits BenchmarkRecheck5000Lines by
// stage, to show where the time goes.
func BenchmarkRecheckStages5000Lines(b *testing.B) {
	text := bigFile(5000)
	f, _ := parser.ParseFile("big.flex", text)
	prog, _ := check.Check(f, check.Options{})
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			parser.ParseFile("big.flex", text)
		}
	})
	b.Run("check", func(b *testing.B) {
		for b.Loop() {
			check.Check(f, check.Options{})
		}
	})
	b.Run("classify", func(b *testing.B) {
		for b.Loop() {
			classify.Classify(prog, classify.Options{})
		}
	})
	b.Run("lsp", func(b *testing.B) {
		a := analyze("big.flex", text, nil)
		for b.Loop() {
			_ = collectIdents(a.file)
			_ = a.protocolDiagnostics()
		}
	})
}

// tooLarge is a document of valid declarations over parser.MaxFileSize.
func tooLarge() []byte {
	return bigFile(2 * parser.MaxFileSize / 300 * 10)
}

// TestRefusedDocumentIsNotAnalysed: a document the parser refuses unread
// (E005) gets that diagnostic and nothing else: no declaration scan, no
// semantic tokens, no identifiers.
func TestRefusedDocumentIsNotAnalysed(t *testing.T) {
	text := tooLarge()
	if len(text) <= parser.MaxFileSize {
		t.Fatalf("test document is only %d bytes", len(text))
	}
	a := analyze("huge.flex", text, &parseCache{})
	if len(a.diags) != 1 || a.diags[0].Code != parser.CodeFileTooLarge {
		t.Fatalf("diagnostics %v, want E005 alone", a.diags)
	}
	if toks := a.semanticTokens(); len(toks) != 0 {
		t.Errorf("%d semantic tokens for a refused document", len(toks))
	}
	if len(a.idents) != 0 || len(a.file.Decls) != 0 {
		t.Errorf("refused document analysed: %d identifiers, %d declarations", len(a.idents), len(a.file.Decls))
	}
}

// BenchmarkRefusedDocument reports what a change to a too-large document
// costs: the analysis and a semantic-token request.
func BenchmarkRefusedDocument(b *testing.B) {
	text := tooLarge()
	var cache parseCache
	for b.Loop() {
		a := analyze("huge.flex", text, &cache)
		_ = a.protocolDiagnostics()
		_ = encodeTokens(a.lines, a.semanticTokens())
	}
}
