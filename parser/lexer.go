package parser

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/maskc/maskc/dsl"
)

// Token types produced by the lexer. The grammar matches punctuation by its
// text and everything else by type: one type per role lets participle match
// an operator, or a separator, with a single comparison.
const (
	tokIdent    lexer.TokenType = iota + 1
	tokLiteral                  // numbers (1024, 0x7f, 30.0, .5) and True False true false
	tokKeyword                  // param buffer attention let
	tokOp                       // binary operators: * / // % ** comparisons | ^ & << >> and or if else, and + - after an operand
	tokPrefix                   // prefix operators: ~ not, and + - where an operand is expected
	tokPunct                    // = : , and brackets
	tokNewline                  // a `;`, or the end of a line outside ( ) and [ ]
	tokString                   // a string literal: "inf", 'floor', or a triple-quoted docstring
	tokKwName                   // the name of a keyword argument: `min` in `x.clamp(min=0)`
	tokBareStar                 // a `*` right after `(` and before `,`: a parameter list's bare star first, `def f(*, w)`
)

// keywords are the reserved words; they are never names. `mask` and
// `score` are not reserved: they start declarations only at the start of a
// line, and are ordinary names elsewhere (the score parameter is usually
// called `score`, the attention setting `mask`).
var keywords = map[string]bool{
	"param": true, "buffer": true, "attention": true,
	"let": true, "if": true, "else": true, "and": true, "or": true, "not": true,
	"def": true, "return": true, "elif": true, "assert": true, "pass": true, "raise": true, "is": true, "for": true, "in": true,
	"True": true, "False": true, "true": true, "false": true,
}

// declKeywords start a top-level declaration. `def` starts one only at the
// start of a line (an indented `def` is the inner function of a factory).
var declKeywords = map[string]bool{"param": true, "buffer": true, "mask": true, "score": true, "attention": true, "def": true}

// moduleRoots are the module names whose dotted members lex as one name
// (`torch.where`, `math.inf`, `torch.int64`); after any other operand a
// `.` selects a method (`(q - kv).abs()`, `d.clamp(0, 15)`).
var moduleRoots = map[string]bool{"torch": true, "math": true}

// twoCharPunct are the operators spelled with two characters.
var twoCharPunct = map[string]bool{"**": true, "//": true, "==": true, "!=": true, "<=": true, ">=": true, "<<": true, ">>": true}

// augAssign are the augmented assignments of a def body, `x += e`.
var augAssign = map[string]bool{"+=": true, "-=": true, "*=": true, "/=": true, "//=": true, "%=": true,
	"&=": true, "|=": true, "^=": true, "<<=": true, ">>=": true}

// oneCharPunct are the single-character operators and delimiters.
const oneCharPunct = "+-*/%&|^~<>=:,;()[]{}"

const (
	// MaxNesting is the deepest bracket nesting accepted.
	MaxNesting = 256
	// MaxPrefixRun is the longest run of prefix operators (`-`, `+`, `~`,
	// `not`) accepted in a row.
	MaxPrefixRun = 256
)

// lexResult is the token stream of one piece of a file.
type lexResult struct {
	// tokens ends with an EOF token.
	tokens []lexer.Token
	// comments are the `#` comments met, in order.
	comments []*dsl.Comment
	// err is the first lexical problem, or nil; lexing stops there.
	err *dsl.Diagnostic
	// notes say what the lexer read past (see ignoredLine).
	notes dsl.Diagnostics
	// dels are the `del` statements read past (delLine), in order.
	dels []delStmt
	// inPlace are the in-place tensor statements of a factory's set-up
	// (inPlaceLine), by the offset of the `pass` token standing for each.
	inPlace map[int]*dsl.InPlaceStmt
}

// delStmt is a `del NAME, ...` statement read past: the names it unbinds,
// its span and its indentation (column), whose block ends at the first
// line indented less.
type delStmt struct {
	names []string
	sp    dsl.Span
	col   int
}

// openBracket is an unclosed bracket on the lexer's stack.
type openBracket struct {
	ch  byte
	off int
	// params is set for the parameter list of a def, where `name=` starts
	// a default value, not a keyword argument.
	params bool
}

// scanner tokenizes src.Text[start:end]. Newlines end statements except
// inside parentheses and square brackets (Python's implicit line joining);
// inside braces they separate statements.
type scanner struct {
	src          *dsl.Source
	text         string // src.Text as a string, so that tokens share its memory
	pos, end     int
	out          lexResult
	stack        []openBracket
	prefixRun    int
	afterOperand bool // the last token ends an operand: a name, a literal, `)` or `]`
	pieceStart   int  // where the piece being lexed starts
}

// lex tokenizes the byte range [start, end) of src, whose text is also
// given as a string.
func lex(src *dsl.Source, text string, start, end int) lexResult {
	s := &scanner{src: src, text: text, pos: start, end: end, pieceStart: start}
	s.run()
	if s.out.err == nil {
		s.checkDels()
	}
	return s.out
}

func (s *scanner) fail(sp dsl.Span, code dsl.Code, format string, args ...any) *dsl.Diagnostic {
	d := &dsl.Diagnostic{Source: s.src, Span: sp, Code: code, Severity: dsl.SeverityError, Message: fmt.Sprintf(format, args...)}
	s.out.err = d
	return d
}

func (s *scanner) emit(typ lexer.TokenType, start, end int) {
	s.out.tokens = append(s.out.tokens, lexer.Token{
		Type:  typ,
		Value: s.text[start:end],
		Pos:   lexer.Position{Filename: s.src.Name, Offset: start},
	})
}

func (s *scanner) lastType() lexer.TokenType {
	if n := len(s.out.tokens); n > 0 {
		return s.out.tokens[n-1].Type
	}
	return tokNewline // the start of input behaves like the start of a line
}

func (s *scanner) run() {
	for s.pos < s.end && s.out.err == nil {
		c := s.text[s.pos]
		switch {
		case s.pos == 0 && strings.HasPrefix(s.text, dsl.ByteOrderMark):
			s.pos += len(dsl.ByteOrderMark) // editors on Windows start UTF-8 files with it
		case c == ' ' || c == '\t' || c == '\f':
			s.pos++
		case c == '\r' && dsl.LineEndAt(s.text, s.pos) == 2:
			s.pos++ // the "\r" of "\r\n"
		case c == '\r':
			s.loneCR()
		case c == '\\' && s.pos+1 < s.end && dsl.LineEndAt(s.text, s.pos+1) > 0:
			// Python's explicit line joining: the next line continues this one.
			s.pos += 1 + dsl.LineEndAt(s.text, s.pos+1)
		case c == '\n':
			if (len(s.stack) == 0 || s.stack[len(s.stack)-1].ch == '{') && s.lastType() != tokNewline {
				s.emit(tokNewline, s.pos, s.pos+1)
			}
			s.pos++
		case c == '#':
			s.comment()
		case s.atLineStart() && s.ignoredLine():
			// a decorator, `f.__name__ = ...` or a string statement: kept
			// as text for fmt, no tokens
		case isIdentStart(c):
			s.word()
		case isDigit(c) || c == '.' && s.pos+1 < s.end && isDigit(s.text[s.pos+1]):
			s.number()
		case c == '.' && s.afterOperand && s.pos+1 < s.end && isIdentStart(s.text[s.pos+1]):
			// A method selector: `(q - kv).abs()`.
			s.emit(tokPunct, s.pos, s.pos+1)
			s.pos++
			s.afterOperand = false
		case c == '"' || c == '\'':
			s.str()
		default:
			s.punct()
		}
	}
	if s.out.err == nil && len(s.stack) > 0 {
		b := s.stack[len(s.stack)-1]
		s.fail(dsl.Span{Start: b.off, End: b.off + 1}, CodeUnclosedBracket, "unclosed `%c`", b.ch).
			WithHint("add the matching `%c`", closerOf(b.ch))
	}
	s.out.tokens = append(s.out.tokens, lexer.EOFToken(lexer.Position{Filename: s.src.Name, Offset: s.end}))
}

// comment scans a `#` comment to the end of its line. Comments are copied
// into generated code, so a character that some reader would take for a
// line end or that reorders the displayed text (dsl.IsUnsafeRune) is an
// error there too.
func (s *scanner) comment() {
	start := s.pos
	for s.pos < s.end && dsl.LineEndAt(s.text, s.pos) == 0 {
		r, size := utf8.DecodeRuneInString(s.text[s.pos:s.end])
		if dsl.IsUnsafeRune(r) {
			sp := dsl.Span{Start: s.pos, End: s.pos + size}
			s.fail(sp, CodeInvalidChar, "invalid character %s in a comment", dsl.EscapeRune(r)).
				WithHint("remove it: control characters and bidirectional marks show text other than what tools read")
			return
		}
		s.pos += size
	}
	if s.pos < s.end && s.text[s.pos] == '\r' && dsl.LineEndAt(s.text, s.pos) == 1 {
		s.loneCR()
		return
	}
	end := s.pos
	for end > start && (s.text[end-1] == '\r' || s.text[end-1] == ' ' || s.text[end-1] == '\t') {
		end--
	}
	s.out.comments = append(s.out.comments, &dsl.Comment{Sp: dsl.Span{Start: start, End: end}, Text: s.text[start:end]})
}

func (s *scanner) word() {
	start := s.pos
	s.pos++
	for s.pos < s.end {
		c := s.text[s.pos]
		if isIdentStart(c) || isDigit(c) {
			s.pos++
		} else if c == '.' && s.pos+1 < s.end && isIdentStart(s.text[s.pos+1]) && moduleRoots[s.rootWord(start)] {
			s.pos += 2
		} else {
			break
		}
	}
	w := s.text[start:s.pos]
	if stringPrefixes[strings.ToLower(w)] && s.pos < s.end && (s.text[s.pos] == '"' || s.text[s.pos] == '\'') {
		s.strFrom(start) // f"...", r'...': Python's string prefixes
		return
	}
	if !keywords[w] {
		s.emit(tokIdent, start, s.pos)
		s.operand()
		return
	}
	switch w {
	case "not":
		s.prefixOperator(start)
		s.emit(tokPrefix, start, s.pos)
		s.afterOperand = false
		return
	case "True", "False", "true", "false":
		s.emit(tokLiteral, start, s.pos)
		s.operand()
		return
	case "is":
		// `is not` is one operator, as in Python.
		if rest := s.text[s.pos:s.end]; len(rest) > 4 && (rest[0] == ' ' || rest[0] == '\t') {
			if t := strings.TrimLeft(rest, " \t"); strings.HasPrefix(t, "not") && (len(t) == 3 || !isIdentStart(t[3]) && !isDigit(t[3])) {
				s.pos = s.end - len(t) + 3
				s.out.tokens = append(s.out.tokens, lexer.Token{Type: tokOp, Value: "is not", Pos: lexer.Position{Filename: s.src.Name, Offset: start}})
				break
			}
		}
		s.emit(tokOp, start, s.pos)
	case "and", "or", "if", "else":
		s.emit(tokOp, start, s.pos)
	default:
		s.emit(tokKeyword, start, s.pos)
	}
	s.afterOperand = false
	s.prefixRun = 0
}

// rootWord is the first dot-separated part of the word starting at start.
func (s *scanner) rootWord(start int) string {
	w := s.text[start:s.pos]
	if i := strings.IndexByte(w, '.'); i >= 0 {
		return w[:i]
	}
	return w
}

// operand records that the last token ended an operand.
func (s *scanner) operand() {
	s.afterOperand = true
	s.prefixRun = 0
}

// prefixOperator counts a prefix operator starting at off and refuses an
// unreasonably long run of them, which would nest the tree too deeply.
func (s *scanner) prefixOperator(off int) {
	s.prefixRun++
	if s.prefixRun > MaxPrefixRun {
		s.fail(dsl.Span{Start: off, End: s.pos}, CodeOperatorChain, "more than %d prefix operators in a row", MaxPrefixRun).
			WithHint("simplify the expression: `- -x` is `x`, `not not x` is `x`")
	}
}

// stringPrefixes are Python's string prefixes, lower-cased. A string keeps
// its prefix in its token; maskc computes no f-string's fields, so one with
// `{...}` is only ever a message (a value read from it is refused as the
// text it holds).
var stringPrefixes = map[string]bool{"f": true, "r": true, "b": true, "u": true, "rb": true, "br": true, "fr": true, "rf": true}

// str scans a string literal: '...' or "..." on one line, or a
// triple-quoted docstring that may span lines. There are no escapes.
func (s *scanner) str() { s.strFrom(s.pos) }

// strFrom scans a string literal whose opening quote is at s.pos and whose
// token starts at start (before a prefix such as f).
func (s *scanner) strFrom(start int) {
	q := s.text[s.pos]
	if s.pos+2 < s.end && s.text[s.pos+1] == q && s.text[s.pos+2] == q {
		closer := s.text[s.pos : s.pos+3]
		i := strings.Index(s.text[s.pos+3:s.end], closer)
		if i < 0 {
			s.fail(dsl.Span{Start: start, End: start + 3}, CodeBadString, "unterminated docstring").
				WithHint("close it with %s", closer)
			return
		}
		if s.unsafeInString(s.pos+3, s.pos+3+i, true) {
			return
		}
		s.pos += 3 + i + 3
		s.emit(tokString, start, s.pos)
		s.operand()
		return
	}
	s.pos++
	for s.pos < s.end && s.text[s.pos] != q {
		if s.unsafeInString(s.pos, s.pos+1, false) {
			return
		}
		switch s.text[s.pos] {
		case '\\':
			s.fail(dsl.Span{Start: s.pos, End: s.pos + 1}, CodeBadString, "escapes are not supported in strings").
				WithHint("strings are only `float(\"inf\")` and keyword values such as rounding_mode=\"floor\"")
			return
		case '\n':
			s.fail(dsl.Span{Start: start, End: s.pos}, CodeBadString, "unterminated string").
				WithHint("close it with %c on the same line", q)
			return
		}
		s.pos++
	}
	if s.pos >= s.end {
		s.fail(dsl.Span{Start: start, End: s.pos}, CodeBadString, "unterminated string").
			WithHint("close it with %c on the same line", q)
		return
	}
	s.pos++
	s.emit(tokString, start, s.pos)
	s.operand()
}

// unsafeInString refuses, in the string text [from, to), a character that
// some reader would take for a line end or that reorders the displayed
// text: a control character (a docstring may hold its own line ends, "\n"
// or "\r\n"), or a bidirectional mark. Strings, like comments, are copied
// into generated code as its source lines.
func (s *scanner) unsafeInString(from, to int, docstring bool) bool {
	for i := from; i < to; {
		r, size := utf8.DecodeRuneInString(s.text[i:s.end])
		ok := true
		switch {
		case r == '\n' || r == '\r' && i+1 < s.end && s.text[i+1] == '\n':
			ok = docstring || r == '\n' // a one-line string ends at '\n': reported by the caller
		case r == '\t':
		case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
			ok = false
		case r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x2028 || r == 0x2029:
			ok = false
		}
		if !ok {
			s.fail(dsl.Span{Start: i, End: i + size}, CodeBadString, "invalid character U+%04X in a string", r).
				WithHint("remove it: control characters and bidirectional marks show text other than what tools read")
			return true
		}
		i += size
	}
	return false
}

func (s *scanner) number() {
	start := s.pos
	hex := s.pos+1 < s.end && s.text[s.pos] == '0' && (s.text[s.pos+1] == 'x' || s.text[s.pos+1] == 'X')
	for s.pos < s.end {
		c := s.text[s.pos]
		switch {
		case isDigit(c) || isIdentStart(c) || c == '.':
			s.pos++
		case (c == '+' || c == '-') && !hex && (s.text[s.pos-1] == 'e' || s.text[s.pos-1] == 'E'):
			s.pos++
		default:
			goto done
		}
	}
done:
	raw := s.text[start:s.pos]
	sp := dsl.Span{Start: start, End: s.pos}
	if _, _, _, err := parseNumber(raw); err != nil {
		s.fail(sp, err.code, "%s", err.msg).WithHint("%s", err.hint)
		return
	}
	s.emit(tokLiteral, start, s.pos)
	s.operand()
}

// numberError says why a literal was refused.
type numberError struct {
	code      dsl.Code
	msg, hint string
}

const numberHint = "write an integer such as `1024`, `1_000` or `0x7f`, or a float such as `30.0`, `1e-4` or `.5`"

// parseNumber validates a number literal with Python's rules and returns
// whether it is a float, and its value.
func parseNumber(raw string) (bool, int64, float64, *numberError) {
	malformed := &numberError{CodeMalformedNumber, fmt.Sprintf("malformed number `%s`", raw), numberHint}
	lower := strings.ToLower(raw)
	if len(lower) > 1 && lower[0] == '0' && (lower[1] == 'x' || lower[1] == 'o' || lower[1] == 'b') {
		v, err := strconv.ParseInt(raw, 0, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return false, 0, 0, &numberError{CodeNumberRange, fmt.Sprintf("integer `%s` does not fit in 64 bits", raw), "integers are 64-bit signed: at most 9223372036854775807"}
			}
			return false, 0, 0, malformed
		}
		return false, v, 0, nil
	}
	if strings.ContainsAny(lower, ".e") {
		if strings.Contains(raw, "_.") || strings.Contains(raw, "._") || strings.HasSuffix(raw, "_") {
			return false, 0, 0, malformed
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return false, 0, 0, &numberError{CodeNumberRange, fmt.Sprintf("float `%s` is out of range", raw), "floats are 64-bit: write `inf` for infinity"}
			}
			return false, 0, 0, malformed
		}
		if dsl.FloatUnderflows(raw, f) {
			return false, 0, 0, &numberError{CodeNumberRange, fmt.Sprintf("float `%s` is too small for 64 bits: it would be 0", raw), "the smallest positive float is 5e-324; write 0 for zero"}
		}
		return true, 0, f, nil
	}
	if len(raw) > 1 && raw[0] == '0' && strings.Trim(raw, "0_") != "" {
		return false, 0, 0, &numberError{CodeMalformedNumber, fmt.Sprintf("malformed number `%s`: leading zeros are not allowed", raw),
			fmt.Sprintf("write `%s`, or `0o%s` for an octal number", strings.TrimLeft(raw, "0_"), strings.TrimLeft(raw, "0_"))}
	}
	v, err := strconv.ParseInt(raw, 0, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return false, 0, 0, &numberError{CodeNumberRange, fmt.Sprintf("integer `%s` does not fit in 64 bits", raw), "integers are 64-bit signed: at most 9223372036854775807"}
		}
		return false, 0, 0, malformed
	}
	return false, v, 0, nil
}

func (s *scanner) punct() {
	start := s.pos
	c := s.text[s.pos]
	for _, n := range []int{3, 2} {
		if s.pos+n <= s.end && augAssign[s.text[s.pos:s.pos+n]] {
			s.pos += n
			s.emit(tokPunct, start, s.pos)
			s.afterOperand = false
			s.prefixRun = 0
			return
		}
	}
	if s.pos+1 < s.end {
		two := s.text[s.pos : s.pos+2]
		switch {
		case two == "&&" || two == "||":
			word := map[string]string{"&&": "and", "||": "or"}[two]
			s.fail(dsl.Span{Start: start, End: start + 2}, CodeForeignOperator, "`%s` is not an operator here", two).
				WithHint("write `%s` (or `%c` between masks)", word, c)
			return
		case twoCharPunct[two]:
			s.pos += 2
			s.emit(tokOp, start, s.pos)
			s.afterOperand = false
			s.prefixRun = 0
			return
		}
	}
	if c == '!' {
		s.fail(dsl.Span{Start: start, End: start + 1}, CodeForeignOperator, "`!` is not an operator here").
			WithHint("write `not x` (or `~m` for a mask), and `!=` for inequality")
		return
	}
	if strings.IndexByte(oneCharPunct, c) < 0 {
		s.invalidChar()
		return
	}
	s.pos++
	switch c {
	case '(', '[', '{':
		if len(s.stack) >= MaxNesting {
			s.fail(dsl.Span{Start: start, End: s.pos}, CodeNestingTooDeep, "brackets nested more than %d deep", MaxNesting).
				WithHint("split the expression with `let` bindings in a block body")
			return
		}
		n := len(s.out.tokens)
		params := c == '(' && n >= 2 && s.out.tokens[n-1].Type == tokIdent && s.out.tokens[n-2].Value == "def"
		s.stack = append(s.stack, openBracket{c, start, params})
	case ')', ']', '}':
		if len(s.stack) == 0 {
			s.fail(dsl.Span{Start: start, End: s.pos}, CodeUnmatchedBracket, "`%c` closes nothing", c).
				WithHint("remove it, or add the opening `%c` before it", openerOf(c))
			return
		}
		top := s.stack[len(s.stack)-1]
		if closerOf(top.ch) != c && s.closesLower(c) {
			// `f(x]` or `{ (a }`: the inner bracket is the one left open.
			s.fail(dsl.Span{Start: top.off, End: top.off + 1}, CodeUnclosedBracket, "unclosed `%c`", top.ch).
				WithHint("add the matching `%c` before the `%c`", closerOf(top.ch), c)
			return
		}
		if closerOf(top.ch) != c {
			openPos := s.src.Position(top.off)
			s.fail(dsl.Span{Start: start, End: s.pos}, CodeUnmatchedBracket, "`%c` does not match the `%c` opened at %d:%d", c, top.ch, openPos.Line, openPos.Column).
				WithHint("close the `%c` with `%c` first", top.ch, closerOf(top.ch))
			return
		}
		s.stack = s.stack[:len(s.stack)-1]
	}
	typ := punctType(c)
	if top := len(s.stack) - 1; c == '=' && top >= 0 && s.stack[top].ch == '(' && !s.stack[top].params {
		// `name=` inside a call is a keyword argument: `clamp(min=0)`.
		if n := len(s.out.tokens); n > 0 && s.out.tokens[n-1].Type == tokIdent {
			s.out.tokens[n-1].Type = tokKwName
		}
	}
	if c == '~' || (c == '-' || c == '+') && !s.afterOperand {
		// A sign where an operand is expected is a prefix operator.
		typ = tokPrefix
		s.prefixOperator(start)
		if s.out.err != nil {
			return
		}
	} else {
		s.prefixRun = 0
	}
	if c == '*' && s.bareStarFirst(start) {
		typ = tokBareStar
	}
	s.emit(typ, start, s.pos)
	s.afterOperand = c == ')' || c == ']'
}

// bareStarFirst reports whether the `*` at start opens a parameter list
// as Python's bare star (`(*, w)`): the token before it is `(` and the
// next character that is not a space is `,`.
func (s *scanner) bareStarFirst(start int) bool {
	n := len(s.out.tokens)
	if n == 0 || s.out.tokens[n-1].Value != "(" {
		return false
	}
	for i := start + 1; i < s.end; i++ {
		switch s.text[i] {
		case ' ', '\t':
			continue
		case ',':
			return true
		}
		return false
	}
	return false
}

// punctType is the token type of a one-character operator or delimiter.
func punctType(c byte) lexer.TokenType {
	switch c {
	case '+', '-', '*', '/', '%', '<', '>', '|', '&', '^':
		return tokOp
	case '~':
		return tokPrefix
	case ';':
		return tokNewline
	}
	return tokPunct
}

// closesLower reports whether closer c matches a bracket below the top of
// the stack.
func (s *scanner) closesLower(c byte) bool {
	for i := len(s.stack) - 2; i >= 0; i-- {
		if closerOf(s.stack[i].ch) == c {
			return true
		}
	}
	return false
}

// loneCR refuses a carriage return that no newline follows: the C
// preprocessor and editors end a line there, the .flex language would not.
func (s *scanner) loneCR() {
	s.fail(dsl.Span{Start: s.pos, End: s.pos + 1}, CodeInvalidChar, "carriage return (U+000D) without a newline").
		WithHint("end lines with \\n or \\r\\n; a lone \\r is a line end for some tools and not for others")
}

func (s *scanner) invalidChar() {
	r, size := utf8.DecodeRuneInString(s.text[s.pos:s.end])
	sp := dsl.Span{Start: s.pos, End: s.pos + size}
	var hint string
	switch r {
	case '\\':
		hint = "a `\\` joins lines only as the last character of its line; or break long expressions inside parentheses"
	case '.':
		hint = "a `.` selects a method after a value, as in `(q_idx - kv_idx).abs()`"
	case '$', '@', '?', '`':
		hint = "expressions use Python operators: + - * / // % ** == != < <= > >= & | ^ ~ << >> and or not"
	default:
		hint = "names are ASCII letters, digits and `_`; comments start with `#`"
	}
	if r < 0x20 || r == 0x7f {
		s.fail(sp, CodeInvalidChar, "invalid control character U+%04X", r).WithHint("%s", hint)
		return
	}
	s.fail(sp, CodeInvalidChar, "invalid character `%c` (U+%04X)", r, r).WithHint("%s", hint)
}

func closerOf(open byte) byte {
	switch open {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

func openerOf(close byte) byte {
	switch close {
	case ')':
		return '('
	case ']':
		return '['
	}
	return '{'
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

// atLineStart reports whether s.pos is the first non-blank character of a
// statement line: outside brackets, with only blanks before it on its line.
func (s *scanner) atLineStart() bool {
	if len(s.stack) > 0 || s.lastType() != tokNewline {
		return false
	}
	for i := s.pos - 1; i >= 0 && s.text[i] != '\n'; i-- {
		if c := s.text[i]; c != ' ' && c != '\t' && c != '\f' {
			return false
		}
	}
	return true
}

// restOfLine returns the end of the line that s.pos is on (before its
// newline) and whether the text from `from` to there is blank or a comment.
func (s *scanner) restOfLine(from int) (end int, blank bool) {
	end = from
	for end < s.end && s.text[end] != '\n' && s.text[end] != '\r' {
		end++
	}
	rest := strings.TrimSpace(s.text[from:end])
	return end, rest == "" || strings.HasPrefix(rest, "#")
}

// Decorators that leave a function computing what it computed: a cache,
// a compiler, a gradient mode. maskc reads past them with a note.
var transparentDecorators = map[string]bool{
	"lru_cache": true, "cache": true, "functools.lru_cache": true, "functools.cache": true,
	"torch.compile": true, "torch.no_grad": true, "torch.inference_mode": true,
	"torch.compiler.disable": true, "torch._dynamo.disable": true,
	// A method's decorators that make it a plain function of its
	// parameters (FastVideo's @staticmethod mask helpers).
	"staticmethod": true,
}

// functionAttributes are the attributes of a Python function whose
// assignment (`fn.__name__ = "..."`) changes nothing it computes.
var functionAttributes = map[string]bool{"__name__": true, "__qualname__": true, "__doc__": true}

// ignoredLine reads past, at the start of a statement line, Python that
// does not change what a mod computes: a decorator from
// transparentDecorators (with a note), `fn.__name__ = ...`, and a string
// statement other than a docstring. The line is kept as a comment, so
// `maskc fmt` prints it back unchanged. It reports whether it consumed the
// line; a decorator maskc does not know is an error.
func (s *scanner) ignoredLine() bool {
	start := s.pos
	c := s.text[start]
	switch {
	case c == '@':
		end, _ := s.restOfLine(start)
		text := strings.TrimRight(beforeComment(s.text[start:end]), " \t")
		name := strings.TrimSpace(text[1:])
		if i := strings.IndexByte(name, '('); i >= 0 {
			name = strings.TrimSpace(name[:i])
		}
		sp := dsl.Span{Start: start, End: start + len(text)}
		if !transparentDecorators[name] {
			s.fail(sp, CodeDecorator, "decorator @%s may change the function it wraps; maskc reads past only decorators that do not", name).
				WithHint("remove it, or use one maskc knows leaves the function unchanged: @functools.lru_cache, @torch.compile, @torch.no_grad")
			return true
		}
		s.out.notes = append(s.out.notes, &dsl.Diagnostic{Source: s.src, Span: sp, Code: CodeDecorator, Severity: dsl.SeverityNote,
			Message: fmt.Sprintf("decorator @%s ignored: it does not change what the function computes", name)})
		s.keepLine(start, end)
		return true
	case isIdentStart(c):
		i := start
		for i < s.end && (isIdentStart(s.text[i]) || isDigit(s.text[i])) {
			i++
		}
		if w := s.text[start:i]; (w == "import" || w == "from") && i < s.end && (s.text[i] == ' ' || s.text[i] == '\t') {
			return s.importLine(start, w)
		}
		if s.text[start:i] == "del" && i < s.end && (s.text[i] == ' ' || s.text[i] == '\t') {
			return s.delLine(start, i)
		}
		if !keywords[s.text[start:i]] && (s.inPlaceLine(start, i) || s.setupBuildLine(start, i)) {
			return true
		}
		if i >= s.end || s.text[i] != '.' {
			return false
		}
		j := i + 1
		for j < s.end && (isIdentStart(s.text[j]) || isDigit(s.text[j])) {
			j++
		}
		if !functionAttributes[s.text[i+1:j]] {
			return false
		}
		k := j
		for k < s.end && (s.text[k] == ' ' || s.text[k] == '\t') {
			k++
		}
		if k >= s.end || s.text[k] != '=' || k+1 < s.end && s.text[k+1] == '=' {
			return false
		}
		end, _ := s.restOfLine(k)
		s.keepLine(start, end)
		return true
	case c == '"' || c == '\'':
		n := len(s.out.tokens)
		if n >= 2 && s.out.tokens[n-2].Value == ":" {
			return false // a def's docstring, which the grammar reads
		}
		save := s.pos
		s.str()
		if s.out.err != nil {
			return true
		}
		if end, blank := s.restOfLine(s.pos); blank {
			s.out.tokens = s.out.tokens[:n]
			s.afterOperand = false
			s.keepLine(start, end)
			return true
		}
		s.out.tokens, s.pos = s.out.tokens[:n], save
		return false
	}
	return false
}

// Modules whose imports a pasted file needs for what .flex has built in
// (torch and its functions, math, functools.partial, FlexAttention's
// and_masks/or_masks, type annotations): their imports are read past
// silently. Any other import gets a note: the names it binds mean
// nothing here unless the file defines them.
var knownImports = map[string]bool{
	"torch": true, "math": true, "functools": true, "typing": true, "__future__": true,
	"jaxtyping": true, "einops": true,
}

// importLine reads past a Python import statement starting at start
// (keyword "import" or "from"): `import torch`, `import torch.nn.functional
// as F`, `from functools import partial`, `from torch.nn.attention.flex_attention
// import (and_masks, or_masks)` over several lines. It is kept as a comment,
// so that `maskc fmt` prints it back; the names it binds are not defined by
// it (torch, math, partial, and_masks and or_masks are built in). A
// statement that is not an import's shape (no module name, `from m` without
// `import`) is left to the grammar's error.
func (s *scanner) importLine(start int, keyword string) bool {
	end, _ := s.restOfLine(start)
	line := beforeComment(s.text[start:end])
	fields := strings.Fields(strings.NewReplacer(",", " , ", "(", " ( ", ")", " ) ").Replace(line))
	if len(fields) < 2 || !isDottedName(fields[1]) {
		return false
	}
	if keyword == "from" {
		if len(fields) < 4 || fields[2] != "import" {
			return false
		}
		if fields[3] == "(" && !strings.Contains(line, ")") {
			// A parenthesised list over several lines, up to its ')': each
			// line names and commas only, so that an unclosed list reads
			// past nothing else.
			for {
				if end >= s.end {
					return false
				}
				next, _ := s.restOfLine(end + dsl.LineEndAt(s.text, end))
				text := beforeComment(s.text[end:next])
				names, closed := strings.CutSuffix(strings.TrimSpace(text), ")")
				for _, name := range strings.FieldsFunc(names, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
					if !isDottedName(name) {
						return false
					}
				}
				end = next
				if closed {
					break
				}
				if strings.Contains(text, ")") {
					return false
				}
			}
		}
	}
	module := strings.SplitN(fields[1], ".", 2)[0]
	if !knownImports[module] {
		sp := dsl.Span{Start: start, End: start + len(strings.TrimRight(line, " \t"))}
		s.out.notes = append(s.out.notes, &dsl.Diagnostic{Source: s.src, Span: sp, Code: CodeImport, Severity: dsl.SeverityNote,
			Message: fmt.Sprintf("import of %s read past: .flex has no modules, so a name it imports means something here only if this file defines it", fields[1])})
	}
	s.keepLine(start, end)
	return true
}

// delLine reads past `del NAME, ...` (after the keyword at i), Python's
// way of saying that a def does not use a parameter (`del b, h`), kept as a
// comment so that `maskc fmt` prints it back. Unbinding a name changes
// nothing a mod computes unless the name is read after it, which
// checkDels refuses. Any other target (`del x[0]`) is left to the
// grammar's error.
func (s *scanner) delLine(start, i int) bool {
	end, _ := s.restOfLine(start)
	line := strings.TrimRight(beforeComment(s.text[start:end]), " \t")
	parts := strings.Split(line[i-start:], ",")
	if n := len(parts); n > 1 && strings.TrimSpace(parts[n-1]) == "" {
		parts = parts[:n-1] // `del b, h,`
	}
	names := make([]string, 0, len(parts))
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if keywords[p] || !isName(p) {
			return false
		}
		names = append(names, p)
	}
	s.out.dels = append(s.out.dels, delStmt{names: names, sp: dsl.Span{Start: start, End: start + len(line)},
		col: s.src.Position(start).Column})
	s.keepLine(start, end)
	return true
}

// checkDels refuses a name read after a `del` that unbound it, in the
// del's block (the lines after it indented at least as far as the del, or
// as the line after it where that is less), unless a statement at the
// block's indentation bound it again first: Python raises NameError there,
// where maskc would read the name.
func (s *scanner) checkDels() {
	for _, d := range s.out.dels {
		gone := map[string]bool{}
		for _, n := range d.names {
			gone[n] = true
		}
		lineStart := true
		blockCol := -1 // the del's block: the del's indentation, or the next line's where less (maskc fmt re-indents the del)
		for k, t := range s.out.tokens {
			if t.Type == tokNewline {
				lineStart = true
				continue
			}
			start := lineStart
			lineStart = false
			if t.Pos.Offset < d.sp.End || t.Type == lexer.EOF {
				continue
			}
			if start {
				col := s.src.Position(t.Pos.Offset).Column
				if blockCol < 0 {
					blockCol = min(d.col, col)
				}
				if col < blockCol {
					break // the del's block has ended
				}
				if col == blockCol && t.Type == tokIdent && k+1 < len(s.out.tokens) && s.out.tokens[k+1].Value == "=" {
					delete(gone, t.Value) // bound again
					continue
				}
			}
			if t.Type != tokIdent || !gone[t.Value] || k > 0 && s.out.tokens[k-1].Value == "." {
				continue
			}
			s.fail(span(t), CodeDeletedName, "%s is read after `del %s` on line %d unbound it: Python raises NameError here",
				t.Value, t.Value, s.src.LineOf(d.sp.Start)).
				WithHint("remove %s from the `del`, or stop reading it", t.Value)
			return
		}
	}
}

// beforeComment returns a line's text up to its `#` comment, if any.
func beforeComment(line string) string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		return line[:i]
	}
	return line
}

// isDottedName reports whether t is a module path: names joined by dots.
func isDottedName(t string) bool {
	for _, part := range strings.Split(t, ".") {
		if !isName(part) {
			return false
		}
	}
	return true
}

// isName reports whether t is one Python name (letters, digits, `_`, not
// starting with a digit).
func isName(t string) bool {
	if t == "" || !isIdentStart(t[0]) {
		return false
	}
	for i := 1; i < len(t); i++ {
		if !isIdentStart(t[i]) && !isDigit(t[i]) {
			return false
		}
	}
	return true
}

// keepLine records text[start:end] as a comment (Python read past) and
// moves past it.
func (s *scanner) keepLine(start, end int) {
	for end > start && (s.text[end-1] == ' ' || s.text[end-1] == '\t') {
		end--
	}
	s.out.comments = append(s.out.comments, &dsl.Comment{Sp: dsl.Span{Start: start, End: end}, Text: s.text[start:end], Python: true})
	s.pos = end
}

// inPlaceAssign are the operators of an assignment into a tensor,
// `ids[a:b] = 3`, `sel[i] |= x`.
var inPlaceAssign = map[string]bool{"=": true, "+=": true, "-=": true, "*=": true, "/=": true, "//=": true, "%=": true,
	"|=": true, "&=": true, "^=": true}

// inPlaceLine reads, at the start of a statement line of a factory's
// set-up (inFactorySetup), a statement that changes a tensor in place: an
// assignment into it (`ids[a:b] = 3`, `sel[i][j] = True`) or an in-place
// method (`ids.fill_(0)`, `x.index_fill_(0, idx, 1)`), the name at
// [start, i) being the tensor. It stands a `pass` token in its place,
// which the converter makes a dsl.InPlaceStmt, so that the checker refuses
// it where the factory is called, after the set-up's earlier statements
// (a block holding only it still parses). It reports whether it read one.
func (s *scanner) inPlaceLine(start, i int) bool {
	j := i
	for j < s.end && s.text[j] == '[' {
		if j = s.closing(j); j < 0 {
			return false
		}
	}
	method := ""
	switch {
	case j > i && j < s.end:
		k := j
		for k < s.end && (s.text[k] == ' ' || s.text[k] == '\t') {
			k++
		}
		op := k
		for op < s.end && strings.IndexByte("+-*/%|&^=", s.text[op]) >= 0 {
			op++
		}
		if !inPlaceAssign[s.text[k:op]] {
			return false
		}
		j = op
	case j < s.end && s.text[j] == '.':
		k := j + 1
		for k < s.end && (isIdentStart(s.text[k]) || isDigit(s.text[k])) {
			k++
		}
		method = s.text[j+1 : k]
		if !strings.HasSuffix(method, "_") || strings.HasPrefix(method, "_") || k >= s.end || s.text[k] != '(' {
			return false
		}
		if j = s.closing(k); j < 0 {
			return false
		}
		if _, blank := s.restOfLine(j); !blank {
			return false
		}
	default:
		return false
	}
	if !s.inFactorySetup(start) {
		return false
	}
	// The statement ends at the first line end outside brackets.
	end := j
	for depth := 0; end < s.end; end++ {
		c := s.text[end]
		if depth == 0 && (c == '\n' || c == '\r' || c == '#') {
			break
		}
		switch c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
	}
	for end > start && (s.text[end-1] == ' ' || s.text[end-1] == '\t') {
		end--
	}
	if s.out.inPlace == nil {
		s.out.inPlace = map[int]*dsl.InPlaceStmt{}
	}
	s.out.inPlace[start] = &dsl.InPlaceStmt{Sp: dsl.Span{Start: start, End: end},
		Target: &dsl.Ident{Sp: dsl.Span{Start: start, End: i}, Name: s.text[start:i]}, Method: method}
	s.out.tokens = append(s.out.tokens, lexer.Token{Type: tokKeyword, Value: "pass", Pos: lexer.Position{Filename: s.src.Name, Offset: start}})
	s.afterOperand = false
	s.pos = end
	return true
}

// setupBuildLine reads, at the start of a statement line of a factory's
// set-up (inFactorySetup), an assignment to a name (or to names unpacked,
// `a, b = ...`) whose value holds a list display or a slice, which only
// set-up code on tensors writes (`offsets = torch.cat([torch.tensor([0]),
// counts.cumsum(0)[:-1]])`): no expression of a mod has either. It stands a
// `pass` token in its place, as inPlaceLine does, which the converter makes
// a dsl.InPlaceStmt whose Built names the construct, so that the checker
// refuses the set-up (E082, naming the tensor) where the factory is called
// instead of the parser refusing the construct. The name at [start, i) is
// the first one assigned. It reports whether it read one.
func (s *scanner) setupBuildLine(start, i int) bool {
	j := i
	var also []*dsl.Ident
	for {
		for j < s.end && (s.text[j] == ' ' || s.text[j] == '\t') {
			j++
		}
		if j >= s.end || s.text[j] != ',' {
			break
		}
		j++
		for j < s.end && (s.text[j] == ' ' || s.text[j] == '\t') {
			j++
		}
		k := j
		for k < s.end && (isIdentStart(s.text[k]) || isDigit(s.text[k])) {
			k++
		}
		if k == j {
			return false
		}
		also = append(also, &dsl.Ident{Sp: dsl.Span{Start: j, End: k}, Name: s.text[j:k]})
		j = k
	}
	if j+1 >= s.end || s.text[j] != '=' || s.text[j+1] == '=' {
		return false
	}
	built, end := s.builtBy(j + 1)
	if built == "" || !s.inFactorySetup(start) {
		return false
	}
	for end > start && (s.text[end-1] == ' ' || s.text[end-1] == '\t') {
		end--
	}
	if s.out.inPlace == nil {
		s.out.inPlace = map[int]*dsl.InPlaceStmt{}
	}
	s.out.inPlace[start] = &dsl.InPlaceStmt{Sp: dsl.Span{Start: start, End: end},
		Target: &dsl.Ident{Sp: dsl.Span{Start: start, End: i}, Name: s.text[start:i]}, Built: built, Also: also}
	s.out.tokens = append(s.out.tokens, lexer.Token{Type: tokKeyword, Value: "pass", Pos: lexer.Position{Filename: s.src.Name, Offset: start}})
	s.afterOperand = false
	s.pos = end
	return true
}

// builtBy scans an assignment's value from from to the end of its
// statement (the first line end outside brackets), skipping strings, and
// returns the first list display or slice in it ("a list `[...]`", "a
// slice `[...:...]`"; "" when it holds neither) and the statement's end. A
// `[` after a name, `)` or `]` is a subscript, and a `:` directly inside a
// subscript makes it a slice; another `[` opens a list.
func (s *scanner) builtBy(from int) (string, int) {
	type open struct {
		c         byte
		subscript bool
	}
	var stack []open
	found := ""
	prev := byte('=')
	k := from
	for ; k < s.end; k++ {
		c := s.text[k]
		if len(stack) == 0 && (c == '\n' || c == '\r' || c == '#') {
			break
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '\\':
			continue // a line continuation
		case '"', '\'':
			e := strings.IndexByte(s.text[k+1:s.end], c)
			if e < 0 {
				return "", s.end
			}
			k += 1 + e
		case '(', '{':
			stack = append(stack, open{c: c})
		case '[':
			sub := isIdentStart(prev) || isDigit(prev) || prev == ')' || prev == ']'
			if !sub && found == "" {
				found = "a list `[...]`"
			}
			stack = append(stack, open{c: c, subscript: sub})
		case ')', ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ':':
			if n := len(stack); n > 0 && stack[n-1].subscript && found == "" {
				found = "a slice `[...:...]`"
			}
		}
		prev = c
	}
	return found, k
}

// closing returns the offset just past the bracket that closes the one at
// open, skipping strings, or -1 when none does before the piece ends.
func (s *scanner) closing(open int) int {
	depth := 0
	for k := open; k < s.end; k++ {
		switch c := s.text[k]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth--; depth == 0 {
				return k + 1
			}
		case '"', '\'':
			e := strings.IndexByte(s.text[k+1:s.end], c)
			if e < 0 {
				return -1
			}
			k += 1 + e
		}
	}
	return -1
}

// inFactorySetup reports whether the statement line at start is in the
// set-up of a factory def: indented under the piece's top-level def,
// before any inner def, with an inner def after it.
func (s *scanner) inFactorySetup(start int) bool {
	lineStart := strings.LastIndexByte(s.text[:start], '\n') + 1
	if lineStart == start {
		return false // the top level
	}
	indentedDef := func(line string) bool {
		t := strings.TrimLeft(line, " \t")
		return len(t) < len(line) && strings.HasPrefix(t, "def ")
	}
	pieceStart := strings.LastIndexByte(s.text[:s.pieceStart], '\n') + 1
	for _, line := range strings.Split(s.text[pieceStart:lineStart], "\n") {
		if indentedDef(line) {
			return false // in or after an inner def
		}
	}
	for _, line := range strings.Split(s.text[start:s.end], "\n")[1:] {
		if indentedDef(line) {
			return true
		}
	}
	return false
}
