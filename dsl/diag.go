package dsl

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Severity says how bad a diagnostic is. Only errors make a compilation fail.
type Severity int

const (
	// SeverityError stops compilation.
	SeverityError Severity = iota
	// SeverityWarning is reported but does not stop compilation.
	SeverityWarning
	// SeverityNote is information attached to a compilation, e.g. why a
	// block became a generated kernel.
	SeverityNote
)

// String returns "error", "warning" or "note", as printed in diagnostics.
func (s Severity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	default:
		return "note"
	}
}

// MarshalText makes a Severity encode as its name in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Code is a stable diagnostic code such as "E012" or "W003". Codes never
// change meaning once released; tests, docs and editor quick-fixes key on them.
// Ranges: E001-E019 syntax (parser), E020-E099 and W001-W049 checking,
// E100-E199 and W100-W149 classification, E200-E299 attention configuration
// rules, E300-E399 code generation, E400-E499 runtime.
type Code string

// Diagnostic is one positioned message about a source file.
type Diagnostic struct {
	// Source is the file the diagnostic is about; nil for errors that have
	// no file (a missing file, say), which render without a position.
	Source *Source
	// Span is the byte range to underline, e.g. the `0` of `q // 0`.
	Span Span
	// Code identifies the kind of problem, e.g. "E021".
	Code Code
	// Severity is error, warning or note.
	Severity Severity
	// Message says what is wrong, lower case, no final period:
	// "division by constant zero".
	Message string
	// Hint optionally says how to fix it: "write the mask as ...".
	Hint string
}

// Position returns the start position of the diagnostic, or the zero
// Position when it has no source or span.
func (d *Diagnostic) Position() Position {
	if d.Source == nil || !d.Span.IsValid() {
		return Position{}
	}
	return d.Source.Position(d.Span.Start)
}

// EndPosition returns the position just past the diagnostic's span.
func (d *Diagnostic) EndPosition() Position {
	if d.Source == nil || !d.Span.IsValid() {
		return Position{}
	}
	return d.Source.Position(d.Span.End)
}

func (d *Diagnostic) fileName() string {
	if d.Source == nil {
		return ""
	}
	return d.Source.Name
}

// Error returns the one-line form "file:line:col: error[E021]: message".
// Control characters and bidirectional overrides in the file name or the
// message (which may quote source text) are escaped (Printable).
func (d *Diagnostic) Error() string {
	var b strings.Builder
	if name := d.fileName(); name != "" {
		b.WriteString(Printable(name))
		if d.Source != nil && d.Span.IsValid() {
			p := d.Position()
			fmt.Fprintf(&b, ":%d:%d", p.Line, p.Column)
		}
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%s[%s]: %s", d.Severity, d.Code, Printable(d.Message))
	return b.String()
}

// MaxSnippet is the most columns of a source line a rendered diagnostic
// shows; a longer line is cut to a window around the span, marked "...".
const MaxSnippet = 120

// Render returns the full human form: the one-line header, the source line
// with a caret line under the span, and the hint, e.g.
//
//	ex.flex:3:27: error[E021]: division by constant zero
//	   3 | mask m(b, h, q, kv) = q // 0 == 1
//	     |                            ^
//	     = hint: divide by a non-zero constant or a param
//
// The source line is shown safely: tabs become spaces, control characters
// and bidirectional overrides are escaped (the carets still line up under
// their escapes), and a line longer than MaxSnippet columns is cut.
func (d *Diagnostic) Render() string {
	var b strings.Builder
	b.WriteString(d.Error())
	b.WriteByte('\n')
	if d.Source != nil && d.Span.IsValid() {
		start := d.Position()
		end := d.EndPosition()
		line := d.Source.Line(start.Line)
		gutter := fmt.Sprint(start.Line)
		pad := strings.Repeat(" ", len(gutter))
		first := start.Column - 1 // span in runes of line: [first, last)
		last := first + 1
		if end.Line == start.Line && end.Column > start.Column {
			last = end.Column - 1
		} else if end.Line > start.Line {
			last = max(utf8.RuneCountInString(line), first+1)
		}
		text, caretAt, caretLen := snippet(line, first, last)
		fmt.Fprintf(&b, " %s | %s\n", gutter, text)
		fmt.Fprintf(&b, " %s | %s%s\n", pad, strings.Repeat(" ", caretAt), strings.Repeat("^", caretLen))
		if d.Hint != "" {
			fmt.Fprintf(&b, " %s = hint: %s\n", pad, Printable(d.Hint))
		}
	} else if d.Hint != "" {
		fmt.Fprintf(&b, "  = hint: %s\n", Printable(d.Hint))
	}
	return b.String()
}

// snippet renders line for display with the span of runes [first, last)
// underlined: the displayed text, the column of the first caret and the
// number of carets. Unsafe runes are escaped, tabs become one space, and a
// display wider than MaxSnippet is cut to a window that starts a little
// before the span.
func snippet(line string, first, last int) (text string, caretAt, caretLen int) {
	var cells []string // display of each rune (an invalid byte counts as one)
	for i := 0; i < len(line); {
		r, size := utf8.DecodeRuneInString(line[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			cells = append(cells, EscapeRune(rune(line[i-1])))
		case r == '\t':
			cells = append(cells, " ")
		case IsUnsafeRune(r):
			cells = append(cells, EscapeRune(r))
		default:
			cells = append(cells, string(r))
		}
	}
	col := make([]int, len(cells)+1) // display column where rune i starts
	for i, c := range cells {
		col[i+1] = col[i] + utf8.RuneCountInString(c)
	}
	first = max(0, min(first, len(cells)))
	last = max(first+1, min(last, len(cells)+1))
	colOf := func(i int) int {
		if i > len(cells) {
			return col[len(cells)] + i - len(cells)
		}
		return col[i]
	}
	caretAt, caretEnd := colOf(first), colOf(last)
	if col[len(cells)] <= MaxSnippet {
		return strings.Join(cells, ""), caretAt, caretEnd - caretAt
	}
	// A window of MaxSnippet columns from a little before the span.
	const lead = 20
	from := 0
	for from < len(cells) && col[from] < caretAt-lead {
		from++
	}
	to := from
	for to < len(cells) && col[to+1]-col[from] <= MaxSnippet {
		to++
	}
	var b strings.Builder
	shift := col[from]
	if from > 0 {
		b.WriteString("...")
		shift -= 3
	}
	b.WriteString(strings.Join(cells[from:to], ""))
	if to < len(cells) {
		b.WriteString("...")
	}
	caretAt -= shift
	caretEnd = min(caretEnd, col[to]) - shift
	return b.String(), caretAt, max(1, caretEnd-caretAt)
}

// JSONDiagnostic is the machine-readable form printed by `maskc check
// --json`: 1-based lines and columns, end exclusive.
type JSONDiagnostic struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"end_line"`
	EndColumn int    `json:"end_column"`
	Code      Code   `json:"code"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
	Hint      string `json:"hint"`
}

// JSON returns the machine-readable form of d.
func (d *Diagnostic) JSON() JSONDiagnostic {
	s, e := d.Position(), d.EndPosition()
	return JSONDiagnostic{
		File: d.fileName(), Line: s.Line, Column: s.Column, EndLine: e.Line, EndColumn: e.Column,
		Code: d.Code, Severity: d.Severity.String(), Message: d.Message, Hint: d.Hint,
	}
}

// Diagnostics is a list of diagnostics, possibly from several files, in the
// spirit of go/scanner.ErrorList: stages append to it and never stop at the
// first problem.
type Diagnostics []*Diagnostic

// Add appends an error-severity diagnostic and returns it so the caller may
// set a hint.
func (l *Diagnostics) Add(src *Source, sp Span, code Code, format string, args ...any) *Diagnostic {
	return l.add(src, sp, code, SeverityError, format, args...)
}

// Warn appends a warning.
func (l *Diagnostics) Warn(src *Source, sp Span, code Code, format string, args ...any) *Diagnostic {
	return l.add(src, sp, code, SeverityWarning, format, args...)
}

func (l *Diagnostics) add(src *Source, sp Span, code Code, sev Severity, format string, args ...any) *Diagnostic {
	d := &Diagnostic{Source: src, Span: sp, Code: code, Severity: sev, Message: fmt.Sprintf(format, args...)}
	*l = append(*l, d)
	return d
}

// WithHint sets the hint of d and returns d, for chaining after Add.
func (d *Diagnostic) WithHint(format string, args ...any) *Diagnostic {
	d.Hint = fmt.Sprintf(format, args...)
	return d
}

// Sort orders the list by file name, then position, then code, and removes
// exact duplicates (same file, span, code and message).
func (l *Diagnostics) Sort() {
	s := *l
	sort.SliceStable(s, func(i, j int) bool {
		a, b := s[i], s[j]
		if a.fileName() != b.fileName() {
			return a.fileName() < b.fileName()
		}
		if a.Span.Start != b.Span.Start {
			return a.Span.Start < b.Span.Start
		}
		if a.Span.End != b.Span.End {
			return a.Span.End < b.Span.End
		}
		return a.Code < b.Code
	})
	out := s[:0]
	for i, d := range s {
		if i > 0 {
			p := out[len(out)-1]
			if p.fileName() == d.fileName() && p.Span == d.Span && p.Code == d.Code && p.Message == d.Message {
				continue
			}
		}
		out = append(out, d)
	}
	*l = out
}

// HasErrors reports whether any diagnostic has error severity.
func (l Diagnostics) HasErrors() bool {
	for _, d := range l {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Errors returns only the error-severity diagnostics.
func (l Diagnostics) Errors() Diagnostics {
	var out Diagnostics
	for _, d := range l {
		if d.Severity == SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// Err returns the list as an error if it holds any error, else nil, like
// go/scanner.ErrorList.Err.
func (l Diagnostics) Err() error {
	if !l.HasErrors() {
		return nil
	}
	return l
}

// Error implements error: the first error's one-line form, plus a count of
// the rest.
func (l Diagnostics) Error() string {
	errs := l.Errors()
	switch len(errs) {
	case 0:
		return "no errors"
	case 1:
		return errs[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", errs[0].Error(), len(errs)-1)
}

// Render returns every diagnostic in its full human form, separated by blank
// lines.
func (l Diagnostics) Render() string {
	var b strings.Builder
	for i, d := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.Render())
	}
	return b.String()
}

// MarshalJSON encodes the list as a JSON array of JSONDiagnostic, never null.
func (l Diagnostics) MarshalJSON() ([]byte, error) {
	out := make([]JSONDiagnostic, 0, len(l))
	for _, d := range l {
		out = append(out, d.JSON())
	}
	return json.Marshal(out)
}
