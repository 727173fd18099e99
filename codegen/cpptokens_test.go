package codegen

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/parser"
)

// cppTokens runs the C preprocessor's first phases over src, in process:
// trigraphs replaced, backslash-newline splices removed (also with blanks
// between them, as clang does), every line end (LF, CRLF, a lone CR, as
// clang reads them) one newline, comments dropped, and the rest split into
// preprocessing tokens. It returns the tokens space-separated, each
// directive on a line of its own ending in "<EOL>"; a #line directive is
// kept as "#line" alone (its number and file name vary by design). An
// unterminated comment, string or character literal is an error. It
// expands no macros: a comment or file name that became code or a
// directive, or that swallowed code, shows as tokens that differ.
func cppTokens(src string) (string, error) {
	for tri, rep := range map[string]string{"??=": "#", "??/": "\\", "??'": "^", "??(": "[", "??)": "]", "??!": "|", "??<": "{", "??>": "}", "??-": "~"} {
		src = strings.ReplaceAll(src, tri, rep)
	}
	// Line ends, then splices.
	src = strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\r", "\n")
	var spliced strings.Builder
	for i := 0; i < len(src); i++ {
		if src[i] == '\\' {
			j := i + 1
			for j < len(src) && strings.IndexByte(" \t\v\f", src[j]) >= 0 {
				j++
			}
			if j < len(src) && src[j] == '\n' {
				i = j
				continue
			}
		}
		spliced.WriteByte(src[i])
	}
	s := spliced.String()
	var out strings.Builder
	emit := func(tok string) {
		if out.Len() > 0 && !strings.HasSuffix(out.String(), "\n") {
			out.WriteByte(' ')
		}
		out.WriteString(tok)
	}
	lineStart, directive, dropping := true, false, false
	puncts := []string{">>=", "<<=", "...", "->*", "::", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##", ".*"}
	isIdent := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			if directive {
				out.WriteString(" <EOL>\n")
			}
			lineStart, directive, dropping = true, false, false
			i++
			continue
		case strings.IndexByte(" \t\v\f", c) >= 0:
			i++
			continue
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return "", errors.New("unterminated /* comment")
			}
			i += 2 + end + 2
			continue
		}
		var tok string
		switch {
		case c == '"' || c == '\'':
			j := i + 1
			for ; j < len(s) && s[j] != c; j++ {
				if s[j] == '\n' {
					return "", fmt.Errorf("unterminated literal %q", s[i:j])
				}
				if s[j] == '\\' {
					j++
				}
			}
			if j >= len(s) {
				return "", fmt.Errorf("unterminated literal %q", s[i:])
			}
			tok = s[i : j+1]
		case isIdent(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			tok = s[i:j]
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i + 1
			for j < len(s) && (isIdent(s[j]) || s[j] == '.' || (s[j] == '+' || s[j] == '-') && strings.IndexByte("eEpP", s[j-1]) >= 0) {
				j++
			}
			tok = s[i:j]
		default:
			tok = s[i : i+1]
			for _, p := range puncts {
				if strings.HasPrefix(s[i:], p) {
					tok = p
					break
				}
			}
		}
		i += len(tok)
		if lineStart && tok == "#" {
			directive = true
		} else if directive && tok == "line" && strings.HasSuffix(out.String(), "#") {
			out.WriteString("line")
			dropping = true
			lineStart = false
			continue
		}
		lineStart = false
		if !dropping {
			emit(tok)
		}
	}
	if directive {
		out.WriteString(" <EOL>\n")
	}
	return out.String(), nil
}

// generatedTokens generates the attention block of a file with mask
// expression mask and comment three times, named name, and returns the
// tokens of its generated part; ok is false when the front end or the
// generator refuses the file.
func generatedTokens(t *testing.T, mask, comment, name string) (string, bool) {
	t.Helper()
	text := "# " + comment + "\nmask m(b, h, q, kv) = " + mask + "  # " + comment + "\nattention a {\n    mask = m  # " + comment + "\n}\n"
	file, diags := parser.ParseFile(name, []byte(text))
	if diags.HasErrors() {
		return "", false
	}
	p, diags := check.Check(file, check.Options{})
	if diags.HasErrors() || len(p.Attentions) != 1 {
		return "", false
	}
	k, diags := Generate(p, p.Attentions[0], Options{SourceName: name})
	if diags.HasErrors() {
		return "", false
	}
	toks, err := cppTokens(k.Generated)
	if err != nil {
		t.Fatalf("mask %q, comment %q, file %q: %v", mask, comment, name, err)
	}
	return toks, true
}

// TestCppTokens pins the in-process preprocessor on the ways text escaped
// a comment or a string before (issue 17), so that FuzzGeneratedTokens
// would see them.
func TestCppTokens(t *testing.T) {
	tests := []struct{ src, want string }{
		{"a // c\nb", "a b"},
		{"a // c \\\nb", "a"},   // a trailing backslash splices the next line into the comment
		{"a // c \\  \nb", "a"}, // also with blanks before the line end
		{"a // c ??/\nb", "a"},  // the trigraph of a backslash
		{"a // c \r#define kv q\nb", "a # define kv q <EOL>\nb"}, // a lone CR ends the line
		{"#line 3 \"x.flex\"\na", "#line <EOL>\na"},
		{"x /* c */ y", "x y"},
		{"s = \"a\\\"b\";", "s = \"a\\\"b\" ;"},
		{"a >>= b->c", "a >>= b -> c"},
		{"f = 1.5e-3f", "f = 1.5e-3f"},
	}
	for _, tt := range tests {
		got, err := cppTokens(tt.src)
		if err != nil || got != tt.want {
			t.Errorf("cppTokens(%q) = %q, %v; want %q", tt.src, got, err, tt.want)
		}
	}
	for _, bad := range []string{"#line 1 \"new\nline\"", "/* open", "'x"} {
		if _, err := cppTokens(bad); err == nil {
			t.Errorf("cppTokens(%q): no error", bad)
		}
	}
}

// FuzzGeneratedTokens is FuzzPreprocessedMask's property with the C
// preprocessor's tokenizer in process (cppTokens) instead of one hipcc -E
// per input, so it reaches thousands of inputs a minute (issue 31: about
// ten a minute, fuzzing almost nothing): whatever the comments and the
// file name hold, the generated part's tokens are those generated for the
// same mask with a harmless comment and name.
//
//	go test ./codegen -run '^$' -fuzz FuzzGeneratedTokens -fuzztime 60s
func FuzzGeneratedTokens(f *testing.F) {
	masks := []string{"q - 3 <= kv <= q", "kv < 16 or q // 8 == kv // 8", "abs(q - kv) <= 2 * (h + 1)",
		"(q - kv) % 4 == 0 and q >= kv"}
	for i, s := range escapeSeeds {
		f.Add(masks[i%len(masks)], s.comment, s.name)
	}
	want := map[string]string{} // by mask
	f.Fuzz(func(t *testing.T, mask, comment, name string) {
		if name == "" || strings.ContainsRune(name, 0) || strings.ContainsAny(mask, "#\r\n") {
			return // not a file name, or a mask that is not one line of code
		}
		w, seen := want[mask]
		if !seen {
			w, _ = generatedTokens(t, mask, "harmless", "ref.flex")
			want[mask] = w
		}
		if w == "" {
			return // the mask is refused
		}
		got, ok := generatedTokens(t, mask, comment, name)
		if ok && got != w {
			t.Fatalf("mask %q, comment %q, file %q: the generated tokens differ from the intended mask's:\n%s\n---- want\n%s", mask, comment, name, got, w)
		}
	})
}
