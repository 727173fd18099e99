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
// A piece also starts at a Python module constant, `NAME = ...` at the very
// start of a line outside any bracket (an attention block's settings are
// inside its braces).
// The first piece holds whatever precedes the first declaration (comments,
// blank lines). It returns the start offsets of the pieces; the first is 0.
// ParseFile parses the pieces separately; the language server re-parses
// only the pieces an edit touched, so both must cut at the same places.
func DeclStarts(text []byte) []int {
	starts := []int{0}
	doc := byte(0) // the quote of the docstring a line starts in, or 0
	depth := 0     // brackets open at the start of the line
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
		open := depth > 0
		depth = bracketsAfter(text[line:], depth)
		if !open && line > 0 && isGlobalAssign(text[line:]) {
			starts = append(starts, line)
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

// isGlobalAssign reports whether the line that starts text is `NAME = ...`
// from its first column: a name that is not a keyword, then `=` (not `==`).
func isGlobalAssign(text []byte) bool {
	if len(text) == 0 || !isIdentStart(text[0]) {
		return false
	}
	j := 1
	for j < len(text) && (isIdentStart(text[j]) || isDigit(text[j])) {
		j++
	}
	if keywords[string(text[:j])] || declKeywords[string(text[:j])] {
		return false
	}
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	return j < len(text) && text[j] == '=' && (j+1 == len(text) || text[j+1] != '=')
}

// bracketsAfter returns how many brackets ((, [, {) are open at the end of
// the line that starts text, given depth open at its start. Brackets in
// strings and comments do not count; it stops at a triple-quoted string
// (docstringAfter skips the lines inside one).
func bracketsAfter(text []byte, depth int) int {
	for i := 0; i < len(text) && text[i] != '\n'; i++ {
		switch c := text[i]; c {
		case '#':
			return depth
		case '"', '\'':
			if i+2 < len(text) && text[i+1] == c && text[i+2] == c {
				return depth
			}
			for i++; i < len(text) && text[i] != '\n' && text[i] != c; i++ {
				if text[i] == '\\' {
					i++
				}
			}
			if i >= len(text) || text[i] == '\n' {
				return depth
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return depth
}
