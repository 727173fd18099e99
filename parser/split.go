package parser

import "bytes"

// docstringAfter returns the quote character of the triple-quoted string
// still open at the end of the line that starts text, given the one open at
// its start (0 for none): a line inside a docstring never starts a
// declaration. It reads strings and comments as the lexer does.
func docstringAfter(text []byte, doc byte) byte {
	for i := 0; i < len(text) && text[i] != '\n'; i++ {
		c := text[i]
		switch {
		case doc != 0:
			if c == doc && i+2 < len(text) && text[i+1] == doc && text[i+2] == doc {
				doc, i = 0, i+2
			}
		case c == '#':
			return 0
		case c == '"' || c == '\'':
			if i+2 < len(text) && text[i+1] == c && text[i+2] == c {
				doc, i = c, i+2
				continue
			}
			for i++; i < len(text) && text[i] != '\n' && text[i] != c; i++ {
			}
			if i >= len(text) || text[i] == '\n' {
				return 0
			}
		}
	}
	return doc
}

// DeclStarts cuts text into pieces that each hold at most one top-level
// declaration, so that a syntax error in one declaration cannot hide errors
// in the next. A piece starts at every line whose first word is a
// declaration keyword (`param`, `buffer`, `mask`, `score`, `attention`, or
// `def` at the start of the line)
// followed by a name (not a keyword) on the same line; such a line can never
// continue a valid declaration (a setting `mask = ...` is followed by `=`, a
// result `score if c else 0` by a keyword).
// The first piece holds whatever precedes the first declaration (comments,
// blank lines). It returns the start offsets of the pieces; the first is 0.
// ParseFile parses the pieces separately; the language server re-parses
// only the pieces an edit touched, so both must cut at the same places.
func DeclStarts(text []byte) []int {
	starts := []int{0}
	doc := byte(0) // the quote of the docstring a line starts in, or 0
	for line := 0; line < len(text); {
		inDoc := doc != 0
		doc = docstringAfter(text[line:], doc)
		if inDoc {
			next := bytes.IndexByte(text[line:], '\n')
			if next < 0 {
				break
			}
			line += next + 1
			continue
		}
		i := line
		for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
			i++
		}
		j := i
		for j < len(text) && isIdentStart(text[j]) {
			j++
		}
		if j > i && declKeywords[string(text[i:j])] {
			k := j
			for k < len(text) && (text[k] == ' ' || text[k] == '\t') {
				k++
			}
			n := k
			for n < len(text) && (isIdentStart(text[n]) || isDigit(text[n])) {
				n++
			}
			top := string(text[i:j]) != "def" || i == line // an indented def is a factory's inner function
			if k > j && n > k && !keywords[string(text[k:n])] && line > 0 && top {
				starts = append(starts, line)
			}
		}
		next := bytes.IndexByte(text[line:], '\n')
		if next < 0 {
			break
		}
		line += next + 1
	}
	return starts
}
