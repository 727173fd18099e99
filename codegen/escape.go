package codegen

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/maskc/maskc/dsl"
)

// Text copied from a .flex file or a file name into generated code goes
// through these two functions, so that nothing from the source reaches the
// C preprocessor as code.

// cComment makes s safe as the rest of a `//` comment line: characters that
// a reader could take for a line end or that reorder the displayed text
// (dsl.IsUnsafeRune: a CR ends a line for the preprocessor) are escaped, a
// trailing backslash (which would splice the next line into the comment)
// is written \x5c, and the trigraph ??/ (a backslash where trigraphs are on)
// is broken up.
func cComment(s string) string {
	s = dsl.Printable(s)
	s = strings.ReplaceAll(s, "??/", `?\x3f/`)
	t := strings.TrimRight(s, " \t")
	if strings.HasSuffix(t, `\`) {
		s = t[:len(t)-1] + `\x5c`
	}
	return s
}

// cString quotes s as a C string literal for #line: backslash and quote
// escaped, control bytes, invalid UTF-8 and unsafe runes as three-digit
// octal escapes (unlike \x, they cannot swallow the characters after them),
// other UTF-8 kept as it is.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '?' && strings.HasPrefix(s[i:], "??"):
			b.WriteString(`?\077`) // no trigraph
			size = 2
		case (r == utf8.RuneError && size == 1) || r < 0x20 || dsl.IsUnsafeRune(r):
			for _, c := range []byte(s[i : i+size]) {
				fmt.Fprintf(&b, `\%03o`, c)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}
