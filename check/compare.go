package check

// Comparisons (chained, as Python reads them) and the warnings where torch
// reads an operator otherwise.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/maskc/maskc/dsl"
)

func (l *lowering) compare(f *frame, x *dsl.CompareExpr) result {
	if len(x.Operands) != len(x.Ops)+1 || len(x.Ops) == 0 {
		l.errorf(f, x.Sp, CodeNotAValue, "malformed comparison")
		return result{}
	}
	if slices.Contains(x.Ops, dsl.OpIs) || slices.Contains(x.Ops, dsl.OpIsNot) {
		return l.isNone(f, x)
	}
	if len(x.Ops) == 1 && isWord(f, x.Operands[0]) && isWord(f, x.Operands[1]) {
		return l.compareWords(f, x)
	}
	ops := make([]result, len(x.Operands))
	for i, o := range x.Operands {
		ops[i] = l.value(f, o)
	}
	if f.record && f.site == nil {
		l.bitwisePrecedence(f, x)
	}
	if len(x.Operands) > 2 {
		for _, o := range ops {
			if o.ok() && !o.isConst() {
				l.torchWarning(f, x.Sp, "a chained comparison", "(a <= b) & (b <= c)", "")
				break
			}
		}
	}
	return l.compareOf(f, x, ops)
}

// compareOf lowers the chain x with its operands already lowered to ops.
func (l *lowering) compareOf(f *frame, x *dsl.CompareExpr, ops []result) result {
	for _, o := range ops {
		if !o.ok() {
			return result{}
		}
	}
	var acc result
	for i, op := range x.Ops {
		a, b := ops[i], ops[i+1]
		sp := x.Operands[i].Span().Join(x.Operands[i+1].Span())
		var link result
		if a.isConst() && b.isConst() {
			t, err := dsl.CompareOp(op, a.val, b.val)
			if err != nil {
				l.errorf(f, sp, CodeFoldError, "constant comparison: %v", err)
				return result{}
			}
			link = l.constant(f, dsl.Bool(t), sp)
		} else {
			node := &dsl.CompareExpr{Sp: l.span(f, sp), Operands: []dsl.Expr{a.node, b.node}, Ops: []dsl.Op{op}}
			link = l.add(f, node, dsl.TypeBool, a.size+b.size+1)
		}
		if !link.ok() {
			return result{}
		}
		if i == 0 {
			acc = link
			continue
		}
		if acc.isConst() && link.isConst() {
			acc = l.constant(f, dsl.Bool(acc.val.I != 0 && link.val.I != 0), x.Sp)
		} else {
			node := &dsl.BinaryExpr{Sp: l.span(f, x.Sp), Op: dsl.OpAnd, OpSp: l.span(f, x.Sp), X: acc.node, Y: link.node}
			acc = l.add(f, node, dsl.TypeBool, acc.size+link.size+1)
		}
		if !acc.ok() {
			return result{}
		}
	}
	return acc
}

// torchWarning warns, in the user's own def body, about Python that torch
// cannot run on tensors (`and`, `or`, `not`, a chained comparison, `x if c
// else y`, Python's min/max/int/float of run-time values): maskc gives it
// Python's meaning per element, but torch raises on the very same text, so
// the def no longer runs as FlexAttention code. what names the construct,
// need what torch lacks, use and alt the torch spellings.
func (l *lowering) torchWarning(f *frame, sp dsl.Span, what, use, alt string) {
	l.torchWarningNeeds(f, sp, what, "the truth value of a tensor", use, alt)
}

func (l *lowering) torchWarningNeeds(f *frame, sp dsl.Span, what, need, use, alt string) {
	if !f.python || !f.record || f.site != nil {
		return
	}
	hint := "write " + use
	if alt != "" {
		hint += " (or " + alt + ")"
	}
	l.warnf(f, sp, CodeTorchBool, "%s needs %s: torch raises on it, so this def no longer runs as Python", what, need).
		WithHint("%s, which torch evaluates per element", hint)
}

// bitwisePrecedence warns about `a >= b & c < d`, which Python reads as
// `a >= (b & c) < d`: a `&`, `|` or `^` between two comparisons of a chain. At
// either end of a chain (`q & 1 == 0`) the bitwise reading is usually meant.
func (l *lowering) bitwisePrecedence(f *frame, x *dsl.CompareExpr) {
	for i, o := range x.Operands {
		if i == 0 || i == len(x.Operands)-1 {
			continue
		}
		be, ok := o.(*dsl.BinaryExpr)
		if !ok || (be.Op != dsl.OpBitAnd && be.Op != dsl.OpBitOr && be.Op != dsl.OpBitXor) {
			continue
		}
		var reads strings.Builder
		for j, oo := range x.Operands {
			if j > 0 {
				fmt.Fprintf(&reads, " %s ", x.Ops[j-1])
			}
			if j == i {
				fmt.Fprintf(&reads, "(%s)", f.src.Slice(oo.Span()))
			} else {
				reads.WriteString(f.src.Slice(oo.Span()))
			}
		}
		d := l.warnf(f, be.OpSp, CodeBitwisePrecedence, "`%s` binds tighter than comparisons: this reads %s", be.Op, reads.String())
		if len(x.Operands) == 3 && i == 1 {
			d.WithHint("parenthesise each comparison: (%s %s %s) %s (%s %s %s)",
				f.src.Slice(x.Operands[0].Span()), x.Ops[0], f.src.Slice(be.X.Span()), be.Op,
				f.src.Slice(be.Y.Span()), x.Ops[1], f.src.Slice(x.Operands[2].Span()))
		} else {
			d.WithHint("parenthesise each comparison on both sides of `%s`", be.Op)
		}
	}
}

// compareWords folds `a == b` or `a != b` of two strings known at compile
// time (a factory's mode argument against a literal: `if kind ==
// "causal":`), as Python compares them.
func (l *lowering) compareWords(f *frame, x *dsl.CompareExpr) result {
	op := x.Ops[0]
	a, okA := knownWord(f, x.Operands[0])
	b, okB := knownWord(f, x.Operands[1])
	switch {
	case op != dsl.OpEQ && op != dsl.OpNE:
		l.errorf(f, x.Sp, CodeStringValue, "strings compare only with == and != here").
			WithHint("compare the factory's string arguments with == or != in its `if`")
		return result{}
	case !okA || !okB:
		l.errorf(f, x.Sp, CodeStringValue, "`%s` compares a string with a value that is not a string known at compile time", sourceText(f, x)).
			WithHint("compare a factory's string argument with a string literal: `if kind == \"causal\":`")
		return result{}
	}
	return l.constant(f, dsl.Bool((a == b) == (op == dsl.OpEQ)), x.Sp)
}
