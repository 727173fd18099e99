package lsp

import (
	"bytes"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// lexKind is the lexical class of a highlighting token.
type lexKind int

const (
	lexOther lexKind = iota // punctuation and characters that start no token
	lexComment
	lexNumber
	lexOperator
	lexKeyword
	lexIdent
	lexString
)

// lexeme is one token of the highlighting scan.
type lexeme struct {
	kind lexKind
	span dsl.Span
}

// keywords are the reserved words of the .flex language, as the parser
// reserves them.
var keywords = map[string]bool{
	"param": true, "buffer": true, "mask": true, "score": true, "attention": true,
	"let": true, "if": true, "else": true, "and": true, "or": true, "not": true,
	"def": true, "return": true,
	"True": true, "False": true, "true": true, "false": true,
}

// operators are the operator spellings, longest first where they share a
// prefix.
var operators = []string{"**", "//", "==", "!=", "<=", ">=", "<<", ">>", "+", "-", "*", "/", "%", "&", "|", "^", "~", "<", ">"}

// scan splits text into highlighting tokens. Unlike the parser's lexer it
// never fails: anything it does not recognise is skipped one character at
// a time, so a half-typed or binary file still gets highlighted. Dotted
// module names (`torch.tanh`) are one identifier, as in the parser; after
// any other name a `.` selects a method, and the method is its own name.
func scan(text []byte) []lexeme {
	var out []lexeme
	for i := 0; i < len(text); {
		c := text[i]
		start := i
		switch {
		case c == '#':
			for i < len(text) && dsl.LineEndAt(text, i) == 0 {
				i++
			}
			end := i
			for end > start && (text[end-1] == '\r' || text[end-1] == ' ' || text[end-1] == '\t') {
				end--
			}
			out = append(out, lexeme{lexComment, dsl.Span{Start: start, End: end}})
		case isIdentStart(c):
			i++
			for i < len(text) {
				if isIdentStart(text[i]) || isDigit(text[i]) {
					i++
				} else if text[i] == '.' && i+1 < len(text) && isIdentStart(text[i+1]) && moduleRoot(text[start:i]) {
					i += 2
				} else {
					break
				}
			}
			kind := lexIdent
			if keywords[string(text[start:i])] {
				kind = lexKeyword
			}
			out = append(out, lexeme{kind, dsl.Span{Start: start, End: i}})
		case isDigit(c) || c == '.' && i+1 < len(text) && isDigit(text[i+1]):
			i = scanNumber(text, i)
			out = append(out, lexeme{lexNumber, dsl.Span{Start: start, End: i}})
		case c == '"' || c == '\'':
			i = scanString(text, i)
			out = append(out, lexeme{lexString, dsl.Span{Start: start, End: i}})
		default:
			kind, n := lexOther, 1
			for _, op := range operators {
				if len(text)-i >= len(op) && string(text[i:i+len(op)]) == op {
					kind, n = lexOperator, len(op)
					break
				}
			}
			i += n
			if kind == lexOperator {
				out = append(out, lexeme{kind, dsl.Span{Start: start, End: i}})
			}
		}
	}
	return out
}

// moduleRoot reports whether the dotted name so far starts with a module
// whose members lex as one name (the parser's moduleRoots).
func moduleRoot(name []byte) bool {
	root, _, _ := strings.Cut(string(name), ".")
	return root == "torch" || root == "math"
}

// scanString returns the end of the string literal starting at i: to the
// closing quote on the same line, or past the closing triple quote of a
// docstring (or the end of the text when it is not closed).
func scanString(text []byte, i int) int {
	q := text[i]
	if i+2 < len(text) && text[i+1] == q && text[i+2] == q {
		closer := []byte{q, q, q}
		if j := bytes.Index(text[i+3:], closer); j >= 0 {
			return i + 3 + j + 3
		}
		return len(text)
	}
	for i++; i < len(text) && text[i] != '\n'; i++ {
		if text[i] == q {
			return i + 1
		}
	}
	return i
}

// scanNumber returns the end of the number literal starting at i: digits,
// letters (hex digits, exponents, and the malformed tails the parser
// reports), underscores, dots, and a sign right after an exponent.
func scanNumber(text []byte, i int) int {
	hex := i+1 < len(text) && text[i] == '0' && (text[i+1] == 'x' || text[i+1] == 'X')
	for i < len(text) {
		c := text[i]
		switch {
		case isDigit(c) || isIdentStart(c) || c == '.':
			i++
		case (c == '+' || c == '-') && !hex && (text[i-1] == 'e' || text[i-1] == 'E'):
			i++
		default:
			return i
		}
	}
	return i
}

func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
