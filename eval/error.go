package eval

import (
	"errors"
	"fmt"

	"github.com/maskc/maskc/dsl"
)

// Causes an *Error wraps besides those of dsl (dsl.ErrDivisionByZero,
// dsl.ErrIntegerOverflow, ...); test for them with errors.Is.
var (
	// ErrIndexOutOfRange is a buffer read at an index outside [0, extent).
	// Python would wrap a negative index around; a kernel must never read
	// there, so the oracle refuses it.
	ErrIndexOutOfRange = errors.New("buffer index out of range")
	// ErrBadBuffer is a buffer missing from the Env, of the wrong shape, or
	// holding an element its dtype cannot hold (a fraction in an i32
	// buffer).
	ErrBadBuffer = errors.New("bad buffer")
	// ErrBadPoint is an index variable outside its extent, e.g. q >= Q.
	ErrBadPoint = errors.New("point out of range")
	// ErrUnsupported is a lowered expression Compile cannot evaluate: a node
	// the lowered form does not allow, or an operand type an operator does
	// not take.
	ErrUnsupported = errors.New("cannot evaluate")
)

// Error is a failure to compile or evaluate a mod, positioned at the
// source text responsible (Span may be dsl.NoSpan for synthesised nodes).
type Error struct {
	// Mod describes the mod, e.g. "mask and_masks(causal, same_doc)".
	Mod string
	// Span is the expression responsible, e.g. the `doc[q + 1]` read.
	Span dsl.Span
	// Err is the cause, e.g. ErrIndexOutOfRange or dsl.ErrDivisionByZero.
	Err error
	// Detail says what happened, e.g. "buffer doc: index 9 outside [0, 8)
	// in dimension 0 at b=0 h=0 q=9 kv=2".
	Detail string
}

// Error returns "mod: detail", with the byte span when there is one.
func (e *Error) Error() string {
	if e.Span.IsValid() {
		return fmt.Sprintf("%s: %s (source bytes %d-%d)", e.Mod, e.Detail, e.Span.Start, e.Span.End)
	}
	return fmt.Sprintf("%s: %s", e.Mod, e.Detail)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Locate returns the one-line form with the position in src, e.g.
// "doc.flex:4:30: mask same_doc: buffer doc: index 9 outside [0, 8) ...".
func (e *Error) Locate(src *dsl.Source) string {
	if src == nil || !e.Span.IsValid() {
		return e.Error()
	}
	p := src.Position(e.Span.Start)
	return fmt.Sprintf("%s:%d:%d: %s: %s", src.Name, p.Line, p.Column, e.Mod, e.Detail)
}
