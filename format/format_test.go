package format_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/parser"
)

func parse(t testing.TB, name string, src []byte) *dsl.File {
	t.Helper()
	f, diags := parser.ParseFile(name, src)
	if diags.HasErrors() { // notes (a decorator read past) are fine
		t.Fatalf("%s:\n%s", name, diags.Render())
	}
	return f
}

// TestGolden prints every testdata/*.flex and compares with its .golden
// file; run with -update to rewrite them.
func TestGolden(t *testing.T) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "*.flex"))
	if len(inputs) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, in := range inputs {
		src, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		got := format.Source(parse(t, in, src))
		path := strings.TrimSuffix(in, ".flex") + ".golden"
		golden.Check(t, path, got)
		if golden.Update() {
			continue
		}
		// Idempotence: the golden output is its own canonical form.
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if again := format.Source(parse(t, path, want)); !bytes.Equal(again, want) {
			t.Errorf("%s is not a fixed point:\n%s", path, again)
		}
		// Comments kept, in order.
		assertCommentsKept(t, in, src, got)
	}
}

func assertCommentsKept(t *testing.T, name string, src, out []byte) {
	t.Helper()
	before := parse(t, name, src).Comments
	after := parse(t, name+" (printed)", out).Comments
	if len(before) != len(after) {
		t.Fatalf("%s: %d comments before printing, %d after", name, len(before), len(after))
	}
	for i := range before {
		if before[i].Text != after[i].Text {
			t.Errorf("%s: comment %d is %q after printing, want %q", name, i, after[i].Text, before[i].Text)
		}
	}
}

func TestGoldenStyle(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("testdata", "messy.golden"))
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	s := string(got)
	for _, bad := range []string{"\n\n\n", "\t", " \n", "){", "=(", "(b,h"} {
		if strings.Contains(s, bad) {
			t.Errorf("messy.golden contains %q", bad)
		}
	}
	if !strings.HasSuffix(s, "}\n# the end\n") {
		t.Errorf("messy.golden must end with exactly one newline after the last comment")
	}
}

func TestEmptyFilePrintsNothing(t *testing.T) {
	if out := format.Source(parse(t, "e.flex", nil)); len(out) != 0 {
		t.Errorf("empty file printed as %q", out)
	}
}

// TestExamplesRoundTrip parses, prints and reparses every example: the
// trees must be equal apart from positions, and the examples must already
// be in canonical form.
func TestExamplesRoundTrip(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "examples", "*.flex"))
	if len(paths) == 0 {
		t.Fatal("no examples")
	}
	for _, path := range paths {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f := parse(t, path, src)
		out := format.Source(f)
		g := parse(t, path+" (printed)", out)
		if !equalModuloSpans(reflect.ValueOf(f.Decls), reflect.ValueOf(g.Decls)) {
			t.Errorf("%s: declarations differ after printing and reparsing", path)
		}
		assertCommentsKept(t, path, src, out)
		if !bytes.Equal(out, src) {
			t.Errorf("%s is not canonically formatted; maskc fmt gives:\n%s", path, out)
		}
	}
}

// equalModuloSpans compares two values deeply, ignoring positions: fields
// named Sp and OpSp, and the Source of a file.
func equalModuloSpans(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		if a.Kind() == reflect.Interface && a.Elem().Type() != b.Elem().Type() {
			return false
		}
		return equalModuloSpans(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !equalModuloSpans(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			switch a.Type().Field(i).Name {
			case "Sp", "OpSp", "Source":
				continue
			}
			if !equalModuloSpans(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return a.Interface() == b.Interface()
}

func TestEqualModuloSpansDetectsDifferences(t *testing.T) {
	x, _ := parser.ParseExpr("a", "q - kv <= 1024")
	y, _ := parser.ParseExpr("b", "  q - kv <= 1024")
	z, _ := parser.ParseExpr("c", "q - kv < 1024")
	if !equalModuloSpans(reflect.ValueOf(&x).Elem(), reflect.ValueOf(&y).Elem()) {
		t.Error("same expression at different offsets compares unequal")
	}
	if equalModuloSpans(reflect.ValueOf(&x).Elem(), reflect.ValueOf(&z).Elem()) {
		t.Error("different operators compare equal")
	}
}

// FuzzSourceIdempotent checks that printing is a fixed point and keeps the
// tree and the comments, for any input that parses cleanly.
func FuzzSourceIdempotent(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.flex"))
	more, _ := filepath.Glob(filepath.Join("..", "examples", "*.flex"))
	for _, p := range append(paths, more...) {
		src, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, diags := parser.ParseFile("fuzz.flex", src)
		if len(diags) > 0 {
			return
		}
		out := format.Source(file)
		again, diags := parser.ParseFile("printed.flex", out)
		if len(diags) > 0 {
			t.Fatalf("printed text does not parse:\n%s\n%s", out, diags.Render())
		}
		if !equalModuloSpans(reflect.ValueOf(file.Decls), reflect.ValueOf(again.Decls)) {
			t.Fatalf("printing changed the tree:\n%s", out)
		}
		if len(again.Comments) != len(file.Comments) {
			t.Fatalf("printing lost comments: %d -> %d\n%s", len(file.Comments), len(again.Comments), out)
		}
		if out2 := format.Source(again); !bytes.Equal(out, out2) {
			t.Fatalf("not idempotent:\n%s\n---\n%s", out, out2)
		}
		if len(out) > 0 && (out[len(out)-1] != '\n' || bytes.HasSuffix(out, []byte("\n\n"))) {
			t.Fatalf("output must end with exactly one newline: %q", out)
		}
	})
}

// TestByteOrderMarkKept checks that a UTF-8 byte order mark starting the
// source, which the parser skips, starts the formatted text too, and that
// one is not made up for a file without it.
func TestByteOrderMarkKept(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"kept", "\uFEFFmask  m(b,h,q,kv)=q>=kv\n", "\uFEFFmask m(b, h, q, kv) = q >= kv\n"},
		{"alone", "\uFEFF", "\uFEFF"},
		{"none", "mask  m(b,h,q,kv)=q>=kv\n", "mask m(b, h, q, kv) = q >= kv\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := format.Source(parse(t, "b.flex", []byte(tt.src)))
			if string(out) != tt.want {
				t.Errorf("got %q, want %q", out, tt.want)
			}
			if again := format.Source(parse(t, "b.flex", out)); string(again) != string(out) {
				t.Errorf("not idempotent: %q then %q", out, again)
			}
		})
	}
}
