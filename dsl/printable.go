package dsl

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// IsUnsafeRune reports whether r must not reach a terminal or generated
// text as it is: C0 and C1 control characters and DEL (an ESC starts a
// terminal escape sequence, a CR or form feed ends a line for some readers
// but not others), the bidirectional overrides, embeddings, isolates and
// marks (which reorder how the text around them is displayed: "Trojan
// Source"), the line and paragraph separators and the byte order mark.
// Tab is not unsafe.
func IsUnsafeRune(r rune) bool {
	switch {
	case r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029, r == 0xfeff:
		return true
	}
	return false
}

// EscapeRune is how an unsafe rune is shown: \x1b below U+0100, \u202e
// above.
func EscapeRune(r rune) string {
	if r < 0x100 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}

// Printable returns s with every unsafe rune (IsUnsafeRune) and every
// byte that is not valid UTF-8 escaped (\xff), for diagnostics and for text
// copied from sources or file names into generated code and messages.
func Printable(s string) string {
	unsafe := func(i int) (bool, int) {
		r, size := utf8.DecodeRuneInString(s[i:])
		return (r == utf8.RuneError && size == 1) || IsUnsafeRune(r), size
	}
	i := 0
	for i < len(s) {
		bad, size := unsafe(i)
		if bad {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		bad, size := unsafe(i)
		if bad && size == 1 && s[i] >= 0x80 {
			b.WriteString(EscapeRune(rune(s[i])))
		} else if bad {
			r, _ := utf8.DecodeRuneInString(s[i:])
			b.WriteString(EscapeRune(r))
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
