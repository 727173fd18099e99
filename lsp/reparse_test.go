package lsp

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/maskc/maskc/parser"
)

// sameParse fails unless the cached parse of text equals parser.ParseFile's,
// node for node and diagnostic for diagnostic.
func sameParse(t *testing.T, cache *parseCache, text string) {
	t.Helper()
	gotFile, gotDiags := cache.parse("p.flex", []byte(text))
	wantFile, wantDiags := parser.ParseFile("p.flex", []byte(text))
	if !reflect.DeepEqual(gotFile, wantFile) {
		t.Fatalf("cached parse differs from ParseFile for %q", text)
	}
	if len(gotDiags) != len(wantDiags) {
		t.Fatalf("cached parse: %d diagnostics, ParseFile %d, for %q:\n%s\n---\n%s", len(gotDiags), len(wantDiags), text, gotDiags.Render(), wantDiags.Render())
	}
	for i := range gotDiags {
		if !reflect.DeepEqual(*gotDiags[i], *wantDiags[i]) {
			t.Fatalf("diagnostic %d: cached %s, ParseFile %s", i, gotDiags[i].Render(), wantDiags[i].Render())
		}
	}
}

func TestParseCacheMatchesParser(t *testing.T) {
	swa := readFixture(t, "swa.flex")
	// Each row is a sequence of versions of one document.
	edits := [][]string{
		{swa, strings.Replace(swa, "1024", "10240", 1), swa},
		{swa, "# new first line\n" + swa, swa},
		{swa, swa + "mask half(b, h, q, kv) = q >=\n", "# x\n" + swa + "mask half(b, h, q, kv) = q >=\n"},
		{"mask a(b, h, q, kv) = (q\nmask c(b, h, q, kv) = q]\n", "\n\nmask a(b, h, q, kv) = (q\nmask c(b, h, q, kv) = q]\n"},
		{"param A = 1\nparam A = 1\n", "param A = 1\nparam A = 1\nparam A = 1\n"},
		{"mask m(b, h, q, kv) = f(q]\n", "\nmask m(b, h, q, kv) = f(q]\n"},
		{"", "param", "param X", "param X =", "param X = 1", "\xff"},
	}
	for _, versions := range edits {
		var cache parseCache
		for _, v := range versions {
			sameParse(t, &cache, v)
		}
	}
}

func FuzzParseCache(f *testing.F) {
	f.Add("param W = 1\nmask m(b, h, q, kv) = q >= kv\n", 12, "# é\n")
	f.Add("mask a(b, h, q, kv) = (q\nattention x {\n mask = a\n}\n", 0, "\n")
	if examples, _ := filepath.Glob("../examples/*.flex"); len(examples) > 0 {
		for _, p := range examples {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b), len(b)/2, "mask z(b, h, q, kv) = q == kv\n")
			}
		}
	}
	f.Fuzz(func(t *testing.T, text string, at int, insert string) {
		if at < 0 || at > len(text) {
			at = len(text) / 2
		}
		var cache parseCache
		sameParse(t, &cache, text)
		sameParse(t, &cache, text[:at]+insert+text[at:])
		sameParse(t, &cache, text)
	})
}
