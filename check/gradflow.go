package check

import (
	"github.com/maskc/maskc/dsl"
)

// gradientWarnings reports CodeNoGradient for every attention's score:
// each place where the score's output depends on the score or on a float
// buffer only through a construct that stops the gradient (floor, ceil,
// `//`, a comparison used as a number). The forward is exact and the
// backward matches torch.autograd, which gives the same zero there; the
// warning says that training learns nothing through that term.
func (c *checker) gradientWarnings() {
	seen := map[dsl.Span]bool{}
	for _, a := range c.prog.Attentions {
		if a.Score == nil {
			continue
		}
		for _, blk := range gradientBlocks(a.Score) {
			if seen[blk.span] {
				continue
			}
			seen[blk.span] = true
			d := c.diags.Warn(c.src, blk.span, CodeNoGradient, "no gradient flows through %s: %s", blk.what, blk.why)
			d.WithHint("%s", blk.hint)
		}
	}
}

// gradBlock is one place where a gradient path is cut.
type gradBlock struct {
	span            dsl.Span
	what, why, hint string
}

// gradientBlocks finds, in score l, the nodes through which the output
// would depend on a differentiable input (the score, a float buffer read)
// but along which dsl.GradOperands carries no derivative. Only places that
// the output reaches along differentiable edges count: floor(score) > 0 as
// the condition of a where is no loss.
func gradientBlocks(l *dsl.Lowered) []gradBlock {
	leaf := map[dsl.Expr]string{} // what a node depends on: "the score" or "buffer NAME"
	var order []dsl.Expr
	seen := map[dsl.Expr]bool{}
	var visit func(dsl.Expr)
	visit = func(e dsl.Expr) {
		if e == nil || seen[e] {
			return
		}
		seen[e] = true
		for _, o := range dsl.Operands(e) {
			visit(o)
		}
		order = append(order, e)
		switch x := e.(type) {
		case *dsl.VarRef:
			if x.Var == dsl.VarScore {
				leaf[e] = "the score"
			}
			return
		case *dsl.IndexExpr:
			if l.TypeOf(e) == dsl.TypeFloat {
				if id, ok := x.X.(*dsl.Ident); ok {
					leaf[e] = "buffer " + id.Name
				}
			}
			return
		}
		for _, o := range dsl.Operands(e) {
			if w, ok := leaf[o]; ok {
				leaf[e] = w
				break
			}
		}
	}
	visit(l.Expr)

	reached := map[dsl.Expr]bool{l.Expr: true}
	for i := len(order) - 1; i >= 0; i-- { // parents before operands
		e := order[i]
		if !reached[e] {
			continue
		}
		for _, o := range dsl.GradOperands(e) {
			reached[o] = true
		}
	}

	var out []gradBlock
	for _, e := range order {
		if !reached[e] {
			continue
		}
		flows := map[dsl.Expr]bool{}
		for _, o := range dsl.GradOperands(e) {
			flows[o] = true
		}
		for _, o := range dsl.Operands(e) {
			w, dep := leaf[o]
			if !dep {
				continue
			}
			switch {
			case flows[o] && l.TypeOf(o) == dsl.TypeBool:
				// A bool promoted to a number: (score > 0) * 2.
				out = append(out, gradBlock{o.Span(), "a comparison of " + w + " used as a number",
					"a bool carries no gradient (in torch too), so training learns nothing through it",
					"the forward is exact and this is only a warning; to choose between values write where(cond, a, b), which passes the gradient to the branch taken"})
			case !flows[o] && l.TypeOf(o) == dsl.TypeFloat && l.TypeOf(e) != dsl.TypeBool:
				// A float turned into a number without a derivative: floor,
				// ceil, //. (Comparisons give bools: reported where a bool
				// becomes a number, if it does.)
				out = append(out, stopBlock(e, w))
			}
		}
	}
	return dedupe(out)
}

// stopBlock describes the construct e that stops the gradient of w.
func stopBlock(e dsl.Expr, w string) gradBlock {
	b := gradBlock{span: e.Span(), what: "this expression's use of " + w,
		why:  "it has no derivative, so maskc's backward treats it as a constant",
		hint: "the forward is exact and this is only a warning; if " + w + " should be trained here, write the term differently"}
	switch x := e.(type) {
	case *dsl.CallExpr:
		if id, ok := x.Fun.(*dsl.Ident); ok {
			b.what = id.Name + " of " + w
			if id.Name == "int" {
				b.why = "an integer carries no gradient (torch's .long() and int() are not differentiable), so training learns nothing through it"
				b.hint = "the forward is exact and this is only a warning; if " + w + " should be trained here, keep the term a float"
			}
			if id.Name == "floor" || id.Name == "ceil" {
				b.why = "its derivative is 0 wherever it is defined (torch.autograd gives 0 too), so training learns nothing through it"
				b.hint = "the forward is exact and this is only a warning; if " + w + " should be trained here, write the term without " + id.Name
			}
		}
	case *dsl.BinaryExpr:
		b.what = "`" + x.Op.String() + "` of " + w
		if x.Op == dsl.OpFloorDiv {
			b.why = "floor division is piecewise constant and torch.autograd refuses to differentiate it (floor_divide's derivative is not implemented); maskc's backward treats it as a constant, derivative 0"
			b.hint = "the forward is exact and this is only a warning; if " + w + " should be trained here, use `/` (and floor only what needs it)"
		}
	}
	return b
}

// dedupe keeps the first block at each span (x // y with both operands
// depending on the score is one block).
func dedupe(bs []gradBlock) []gradBlock {
	seen := map[dsl.Span]bool{}
	out := bs[:0]
	for _, b := range bs {
		if !seen[b.span] {
			seen[b.span] = true
			out = append(out, b)
		}
	}
	return out
}
