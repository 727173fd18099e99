// Package jitlog turns the log of a run-time kernel compiler (NVRTC or
// hiprtc) into diagnostics. Generated kernels carry `#line N "file.flex"`
// directives, so the compiler reports errors in generated code against the
// .flex line that produced it; those messages become diagnostics pointing
// into the caller's dsl.Source. Messages about any other file (the kernel
// template, the prelude) are maskc's own bugs and are reported as such.
package jitlog

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/maskc/maskc/dsl"
)

// Diagnostic codes produced by this package.
const (
	// CodeFlexError is a compiler error in code generated from a .flex line.
	CodeFlexError dsl.Code = "E401"
	// CodeKernelError is a compiler error outside generated code, or a
	// failure whose log names no position.
	CodeKernelError dsl.Code = "E402"
)

// Codes describes every code this package emits.
var Codes = map[dsl.Code]string{
	CodeFlexError:   "the GPU compiler rejected code generated from a .flex line",
	CodeKernelError: "the GPU compiler rejected the kernel template or prelude (a maskc bug)",
}

// Message is one error or warning line of a compiler log.
type Message struct {
	// File is the file name as the compiler printed it.
	File string
	// Line is 1-based; Column is 1-based or 0 when the compiler gives none
	// (NVRTC never does).
	Line, Column int
	// Severity is "error", "warning", "note" or "remark" ("fatal error" and
	// "catastrophic error" count as "error").
	Severity string
	// Text is the message after the severity, e.g.
	// `identifier "x" is undefined`.
	Text string
}

var (
	// NVRTC / EDG: `file(12): error: text`, `file(12): warning #177-D: text`.
	nvrtcLine = regexp.MustCompile(`^(.+?)\((\d+)\): (catastrophic error|error|warning|remark|note)(?: #[\w-]+)?: (.*)$`)
	// hiprtc / clang: `file:12:5: error: text`.
	clangLine = regexp.MustCompile(`^(.+?):(\d+):(\d+): (fatal error|error|warning|note|remark): (.*)$`)
)

// Parse extracts the positioned messages of a log, in order. Lines that are
// not messages (source echoes, carets, summaries) are skipped.
func Parse(log string) []Message {
	var out []Message
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimRight(line, "\r")
		if m := nvrtcLine.FindStringSubmatch(line); m != nil {
			n, err := strconv.Atoi(m[2])
			if err != nil {
				continue
			}
			out = append(out, Message{File: m[1], Line: n, Severity: severity(m[3]), Text: m[4]})
			continue
		}
		if m := clangLine.FindStringSubmatch(line); m != nil {
			n, err1 := strconv.Atoi(m[2])
			c, err2 := strconv.Atoi(m[3])
			if err1 != nil || err2 != nil {
				continue
			}
			out = append(out, Message{File: m[1], Line: n, Column: c, Severity: severity(m[4]), Text: m[5]})
		}
	}
	return out
}

func severity(s string) string {
	if strings.HasSuffix(s, "error") {
		return "error"
	}
	return s
}

// Diagnostics converts a failed compilation's log into diagnostics: errors
// in flex's file become E401 at the line (and column, when given) they name;
// other errors become E402 without a position, naming the generated file
// and line. A compiler's column refers to the generated text, not to the
// .flex line, so the diagnostic underlines the whole .flex line. Warnings are dropped. A log with no parsable error gives one
// E402 carrying the log's first non-empty line. flex may be nil.
func Diagnostics(log string, flex *dsl.Source) dsl.Diagnostics {
	var diags dsl.Diagnostics
	for _, m := range Parse(log) {
		if m.Severity != "error" {
			continue
		}
		if flex != nil && sameFile(m.File, flex.Name) && m.Line >= 1 && m.Line <= flex.LineCount() {
			diags.Add(flex, lineSpan(flex, m.Line), CodeFlexError, "GPU compiler: %s", m.Text).
				WithHint("the code generated for this line does not compile; the expression may use a construct the kernel cannot express")
			continue
		}
		diags.Add(nil, dsl.NoSpan, CodeKernelError, "GPU compiler: %s:%d: %s", m.File, m.Line, m.Text).
			WithHint("this is a bug in maskc's kernel template or code generator; please report it with the .flex file")
	}
	if len(diags) == 0 {
		diags.Add(nil, dsl.NoSpan, CodeKernelError, "GPU compiler failed: %s", firstLine(log))
	}
	diags.Sort()
	return diags
}

// sameFile compares a logged file name with the Source's name, tolerating
// a directory prefix on either side.
func sameFile(logged, name string) bool {
	if logged == name {
		return true
	}
	return filepath.Base(logged) == filepath.Base(name) && (strings.HasSuffix(logged, name) || strings.HasSuffix(name, logged))
}

// lineSpan covers line n of src from its first to its last non-blank
// character.
func lineSpan(src *dsl.Source, n int) dsl.Span {
	text := src.Line(n)
	start := src.LineStart(n)
	first := len(text) - len(strings.TrimLeftFunc(text, unicode.IsSpace))
	last := len(strings.TrimRightFunc(text, unicode.IsSpace))
	if last < first {
		last = first
	}
	return dsl.Span{Start: start + first, End: start + last}
}

func firstLine(log string) string {
	for _, l := range strings.Split(log, "\n") {
		if s := strings.TrimSpace(l); s != "" {
			return s
		}
	}
	return "no compiler output"
}
