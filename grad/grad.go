// Package grad differentiates a lowered score mod symbolically: from the
// typed expression of a `score`, it derives d score_out / d score and
// d score_out / d buf[i] for every float buffer read, as expressions of the
// same lowered form (dsl.Lowered), which the reference evaluator (eval)
// computes in float64 and the code generator emits as maskc_score_grad.
//
// Differentiation is reverse mode over the expression DAG, with
// torch.autograd's formulas (tools/autograd/derivatives.yaml and
// torch/csrc/autograd/FunctionsManual.cpp) written out operation by
// operation, so that the kinks and special values come out as torch's do:
// abs'(0) = 0, min/max ties split the gradient in half, clamp passes it at
// the bounds, where's untaken branch gets exactly 0, sqrt'(0) = inf, and
// the edge cases of ** (exponent 0, base 0) follow pow_backward. Each
// rule's comment names the torch formula it copies.
//
// A derivative flows only along dsl.GradOperands: comparisons, floor, ceil
// and `//` stop it (the checker warns where that cuts the score off from
// a value it depends on, see check.CodeNoGradient).
//
// Layering: grad imports dsl and format; eval, codegen and the commands
// import grad.
package grad

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
)

// MaxNodes bounds the size of one derivative expression counted as a tree
// (shared subexpressions once per use), what a tree-walking evaluator
// builds. Derivatives of nested smooth functions grow quadratically with
// the nesting depth: 700 nested tanh fit (and generate in a third of a
// second), 1500 do not; real scores need a few hundred nodes.
const MaxNodes = 1 << 20

// ErrTooLarge is returned for a score whose derivative is larger than
// MaxNodes.
var ErrTooLarge = errors.New("derivative too large")

// ErrNotScore is returned when the lowered mod is not a float score.
var ErrNotScore = errors.New("not a score mod")

// Gradient is the derivative of one lowered score.
type Gradient struct {
	// Score is the score that was differentiated.
	Score *dsl.Lowered
	// DScore is d score_out / d score: a float expression over the index
	// variables, the sizes, the score and the buffers Score reads. It is
	// the literal 0.0 when the output does not depend on the score.
	DScore dsl.Expr
	// Reads are the differentiable float-buffer reads of Score, one per
	// structurally distinct read (bias[h] read twice is one Read), in the
	// order they first appear.
	Reads []Read
	// Types gives the type of every node of DScore, of each Read's D and
	// of the forward nodes they share with Score.Expr.
	Types map[dsl.Expr]dsl.Type
}

// Read is one differentiable read of a float buffer.
type Read struct {
	// Buffer is the buffer read.
	Buffer *dsl.BufferDecl
	// Index is the read in Score.Expr (the first, when it appears more
	// than once); its Indices say which element.
	Index *dsl.IndexExpr
	// D is d score_out / d Buffer[Index.Indices...].
	D dsl.Expr
}

// Lowered wraps a derivative expression of g (g.DScore or a Read's D) as a
// float score over the same variables and buffers as g.Score, which
// eval and codegen take.
func (g *Gradient) Lowered(e dsl.Expr, name string) *dsl.Lowered {
	return &dsl.Lowered{Kind: dsl.ScoreMod, Name: name, Expr: e, Types: g.Types, Buffers: g.Score.Buffers}
}

// Buffers returns the buffers that have at least one differentiable read,
// in the order of g.Score.Buffers.
func (g *Gradient) Buffers() []*dsl.BufferDecl {
	var out []*dsl.BufferDecl
	for _, d := range g.Score.Buffers {
		for _, r := range g.Reads {
			if r.Buffer == d {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// String prints the score and its derivatives, one per line:
//
//	score NAME = EXPR
//	d/d score = EXPR
//	d/d bias[h] = EXPR
func (g *Gradient) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "score %s = %s\n", g.Score.Name, format.Expr(g.Score.Expr))
	fmt.Fprintf(&b, "d/d score = %s\n", format.Expr(g.DScore))
	for _, r := range g.Reads {
		fmt.Fprintf(&b, "d/d %s = %s\n", format.Expr(r.Index), format.Expr(r.D))
	}
	return b.String()
}

// Differentiate returns the derivatives of the lowered score l.
func Differentiate(l *dsl.Lowered) (*Gradient, error) {
	if l == nil || l.Expr == nil || l.Kind != dsl.ScoreMod {
		return nil, ErrNotScore
	}
	b := &builder{l: l, types: make(map[dsl.Expr]dsl.Type, 2*len(l.Types)), active: map[dsl.Expr]bool{}, adj: map[dsl.Expr][]dsl.Expr{}}
	for n, t := range l.Types {
		b.types[n] = t
	}
	order := postOrder(l.Expr)
	for _, e := range order {
		if b.typeOf(e) == dsl.TypeInvalid {
			return nil, fmt.Errorf("grad: score %s: a %T node has no recorded type", l.Name, e)
		}
		b.active[e] = b.isActive(e)
	}
	g := &Gradient{Score: l, Types: b.types}
	var scores []dsl.Expr
	reads := map[string]int{} // structural key -> index in g.Reads
	var readAdj [][]dsl.Expr
	if b.active[l.Expr] {
		b.adj[l.Expr] = []dsl.Expr{b.lit(1, l.Expr.Span())}
	}
	for i := len(order) - 1; i >= 0; i-- {
		e := order[i]
		cs := b.adj[e]
		if !b.active[e] || len(cs) == 0 {
			continue
		}
		grad := b.sum(cs, e.Span())
		switch x := e.(type) {
		case *dsl.VarRef:
			scores = append(scores, grad)
			continue
		case *dsl.IndexExpr:
			k := format.Expr(x) // the buffer name and the index expressions
			j, ok := reads[k]
			if !ok {
				j = len(g.Reads)
				reads[k] = j
				g.Reads = append(g.Reads, Read{Buffer: b.buffer(x), Index: x})
				readAdj = append(readAdj, nil)
			}
			readAdj[j] = append(readAdj[j], grad)
			continue
		}
		for _, c := range b.local(e, grad) {
			if b.active[c.operand] {
				b.adj[c.operand] = append(b.adj[c.operand], c.d)
			}
		}
	}
	// Leaves met in reverse order: sum them in source order.
	reverse(scores)
	g.DScore = b.lit(0, l.Expr.Span())
	if len(scores) > 0 {
		g.DScore = b.sum(scores, l.Expr.Span())
	}
	for j := range g.Reads {
		reverse(readAdj[j])
		g.Reads[j].D = b.sum(readAdj[j], g.Reads[j].Index.Span())
	}
	// Reads in the order they first appear in the source.
	firstSeen := map[*dsl.IndexExpr]int{}
	for i, e := range order {
		if x, ok := e.(*dsl.IndexExpr); ok {
			if _, seen := firstSeen[x]; !seen {
				firstSeen[x] = i
			}
		}
	}
	sortReads(g.Reads, firstSeen)
	sizes := map[dsl.Expr]int{}
	for _, e := range append([]dsl.Expr{g.DScore}, readExprs(g.Reads)...) {
		if treeSize(e, sizes) > MaxNodes {
			return nil, fmt.Errorf("%w: more than %d nodes", ErrTooLarge, MaxNodes)
		}
	}
	return g, nil
}

func readExprs(rs []Read) []dsl.Expr {
	out := make([]dsl.Expr, len(rs))
	for i, r := range rs {
		out[i] = r.D
	}
	return out
}

func reverse(xs []dsl.Expr) {
	for i, j := 0, len(xs)-1; i < j; i, j = i+1, j-1 {
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// sortReads orders reads by the post-order position of their Index node
// (insertion sort: there are few).
func sortReads(rs []Read, pos map[*dsl.IndexExpr]int) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && pos[rs[j].Index] < pos[rs[j-1].Index]; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// treeSize is the node count of e as a tree, saturating above MaxNodes.
func treeSize(e dsl.Expr, memo map[dsl.Expr]int) int {
	if n, ok := memo[e]; ok {
		return n
	}
	n := 1
	for _, o := range dsl.Operands(e) {
		n += treeSize(o, memo)
		if n > MaxNodes {
			n = MaxNodes + 1
			break
		}
	}
	memo[e] = n
	return n
}

// postOrder lists the distinct nodes of the DAG rooted at e, every node
// after all of its operands.
func postOrder(e dsl.Expr) []dsl.Expr {
	var out []dsl.Expr
	seen := map[dsl.Expr]bool{}
	var visit func(dsl.Expr)
	visit = func(x dsl.Expr) {
		if x == nil || seen[x] {
			return
		}
		seen[x] = true
		for _, o := range dsl.Operands(x) {
			visit(o)
		}
		out = append(out, x)
	}
	visit(e)
	return out
}

// builder holds the state of one differentiation.
type builder struct {
	l      *dsl.Lowered
	types  map[dsl.Expr]dsl.Type
	active map[dsl.Expr]bool       // the node's value depends differentiably on a leaf
	adj    map[dsl.Expr][]dsl.Expr // contributions to each node's adjoint
}

func (b *builder) typeOf(e dsl.Expr) dsl.Type { return b.types[e] }

// isActive reports whether e requires grad in torch's sense: a float that
// is the score, a float buffer read, or computed from an active operand
// along a differentiable edge. Operands are decided before e.
func (b *builder) isActive(e dsl.Expr) bool {
	if b.typeOf(e) != dsl.TypeFloat {
		return false
	}
	switch x := e.(type) {
	case *dsl.VarRef:
		return x.Var == dsl.VarScore
	case *dsl.IndexExpr:
		return b.buffer(x) != nil
	}
	for _, o := range dsl.GradOperands(e) {
		if b.active[o] {
			return true
		}
	}
	return false
}

// buffer returns the declaration of the buffer x reads.
func (b *builder) buffer(x *dsl.IndexExpr) *dsl.BufferDecl {
	id, ok := x.X.(*dsl.Ident)
	if !ok {
		return nil
	}
	for _, d := range b.l.Buffers {
		if d != nil && d.Name != nil && d.Name.Name == id.Name {
			return d
		}
	}
	return nil
}

// contrib is one term of an operand's adjoint.
type contrib struct {
	operand dsl.Expr
	d       dsl.Expr
}

// ln2 is M_LN2, the constant torch's exp2 and log2 backward use.
const ln2 = 0.693147180559945309417232121458176568

// local returns the contributions node e with adjoint g makes to its
// operands' adjoints, by torch's formula for e's operation. Terms for
// inactive operands may be included; the caller drops them.
func (b *builder) local(e dsl.Expr, g dsl.Expr) []contrib {
	sp := e.Span()
	switch x := e.(type) {
	case *dsl.UnaryExpr:
		switch x.Op {
		case dsl.OpNeg: // neg: self: grad.neg()
			return []contrib{{x.X, b.neg(g, sp)}}
		case dsl.OpPos:
			return []contrib{{x.X, g}}
		}
	case *dsl.BinaryExpr:
		return b.binary(x, g, sp)
	case *dsl.CondExpr:
		// where.self: self: where(condition, grad, 0), other:
		// where(condition, 0, grad); `x if c else y` is where(c, x, y).
		return b.where(x.Cond, x.Then, x.Else, g, sp)
	case *dsl.CallExpr:
		return b.call(x, e, g, sp)
	}
	return nil
}

func (b *builder) binary(x *dsl.BinaryExpr, g dsl.Expr, sp dsl.Span) []contrib {
	X, Y := x.X, x.Y
	switch x.Op {
	case dsl.OpAdd: // add.Tensor: self: grad, other: grad (alpha = 1)
		return []contrib{{X, g}, {Y, g}}
	case dsl.OpSub: // sub.Tensor: self: grad, other: -grad (alpha = 1)
		return []contrib{{X, g}, {Y, b.neg(g, sp)}}
	case dsl.OpMul: // mul_tensor_backward: grad * other, grad * self
		var cs []contrib
		if b.active[X] {
			cs = append(cs, contrib{X, b.mul(g, Y, sp)})
		}
		if b.active[Y] {
			cs = append(cs, contrib{Y, b.mul(g, X, sp)})
		}
		return cs
	case dsl.OpDiv:
		// div_tensor_self_backward: grad / other;
		// div_tensor_other_backward: -grad * ((self / other) / other).
		var cs []contrib
		if b.active[X] {
			cs = append(cs, contrib{X, b.bin(dsl.OpDiv, g, Y, sp)})
		}
		if b.active[Y] {
			q := b.bin(dsl.OpDiv, b.bin(dsl.OpDiv, X, Y, sp), Y, sp)
			cs = append(cs, contrib{Y, b.mul(b.neg(g, sp), q, sp)})
		}
		return cs
	case dsl.OpMod:
		// remainder.Tensor: self: grad;
		// other: -grad * self.div(other, rounding_mode="floor").
		var cs []contrib
		if b.active[X] {
			cs = append(cs, contrib{X, g})
		}
		if b.active[Y] {
			cs = append(cs, contrib{Y, b.mul(b.neg(g, sp), b.bin(dsl.OpFloorDiv, X, Y, sp), sp)})
		}
		return cs
	case dsl.OpPow:
		return b.pow(x, g, sp)
	}
	return nil
}

// pow differentiates x ** y (result r = the node itself).
func (b *builder) pow(x *dsl.BinaryExpr, g dsl.Expr, sp dsl.Span) []contrib {
	X, Y := x.X, x.Y
	var cs []contrib
	if b.active[X] {
		if c, ok := literal(Y); ok {
			// pow_backward (Scalar exponent): zeros when the exponent is 0,
			// else grad * (exponent * self.pow(exponent - 1)); the
			// exponent - 1 is computed on the host in double.
			if c != 0 {
				var ym1 dsl.Expr
				if lit, isInt := Y.(*dsl.IntLit); isInt {
					ym1 = b.intLit(lit.Value-1, sp)
				} else {
					ym1 = b.lit(c-1, sp)
				}
				cs = append(cs, contrib{X, b.mul(g, b.mul(Y, b.bin(dsl.OpPow, X, ym1, sp), sp), sp)})
			}
		} else {
			// pow_backward_self: where(exponent == 0.0, 0,
			// grad * (exponent * self.pow(exponent - 1))).
			d := b.mul(g, b.mul(Y, b.bin(dsl.OpPow, X, b.bin(dsl.OpSub, Y, b.intLit(1, sp), sp), sp), sp), sp)
			cs = append(cs, contrib{X, b.where1(b.cmp(dsl.OpEQ, Y, b.lit(0, sp), sp), b.lit(0, sp), d, sp)})
		}
	}
	if b.active[Y] {
		if c, ok := literal(X); ok {
			// pow_backward_exponent (Scalar base): grad * (result *
			// log(base)), and grad * where(exponent >= 0, 0, ...) when
			// the base is 0.
			d := b.mul(x, b.lit(math.Log(c), sp), sp)
			if c == 0 {
				d = b.where1(b.cmp(dsl.OpGE, Y, b.lit(0, sp), sp), b.lit(0, sp), d, sp)
			}
			cs = append(cs, contrib{Y, b.mul(g, d, sp)})
		} else {
			// pow_backward_exponent (Tensor base): grad * where(self == 0
			// & exponent >= 0, 0, result * self.log()).
			cond := b.bin(dsl.OpAnd, b.cmp(dsl.OpEQ, X, b.lit(0, sp), sp), b.cmp(dsl.OpGE, Y, b.lit(0, sp), sp), sp)
			d := b.where1(cond, b.lit(0, sp), b.mul(x, b.fn1("log", sp, X), sp), sp)
			cs = append(cs, contrib{Y, b.mul(g, d, sp)})
		}
	}
	return cs
}

// where differentiates where(c, x, y): where.self's formulas.
func (b *builder) where(c, x, y, g dsl.Expr, sp dsl.Span) []contrib {
	var cs []contrib
	if b.active[x] {
		cs = append(cs, contrib{x, b.where1(c, g, b.lit(0, sp), sp)})
	}
	if b.active[y] {
		cs = append(cs, contrib{y, b.where1(c, b.lit(0, sp), g, sp)})
	}
	return cs
}

func (b *builder) call(x *dsl.CallExpr, e, g dsl.Expr, sp dsl.Span) []contrib {
	id, _ := x.Fun.(*dsl.Ident)
	if id == nil {
		return nil
	}
	args := x.Args
	one := func(d func() dsl.Expr) []contrib {
		if len(args) != 1 || !b.active[args[0]] {
			return nil
		}
		return []contrib{{args[0], d()}}
	}
	X := args[0]
	switch id.Name {
	case "where":
		return b.where(args[0], args[1], args[2], g, sp)
	case "min", "max":
		// minimum: self: where(self == other, grad / 2, grad)
		//   .masked_fill_(self > other, 0), other: the same with
		//   self < other; maximum swaps the comparisons. Ties split the
		//   gradient evenly; NaN (no comparison holds) passes it to both.
		Y := args[1]
		half := b.where1(b.cmp(dsl.OpEQ, X, Y, sp), b.bin(dsl.OpDiv, g, b.lit(2, sp), sp), g, sp)
		dropX, dropY := dsl.OpGT, dsl.OpLT
		if id.Name == "max" {
			dropX, dropY = dsl.OpLT, dsl.OpGT
		}
		var cs []contrib
		if b.active[X] {
			cs = append(cs, contrib{X, b.where1(b.cmp(dropX, X, Y, sp), b.lit(0, sp), half, sp)})
		}
		if b.active[Y] {
			cs = append(cs, contrib{Y, b.where1(b.cmp(dropY, X, Y, sp), b.lit(0, sp), half, sp)})
		}
		return cs
	case "clamp":
		// clamp_backward: where(self >= min & self <= max, grad, 0) (the
		// bounds themselves pass the gradient); clamp_backward_min_max:
		// min: where(self < min & min < max, grad, 0), max:
		// where(self > max | max < min, grad, 0).
		lo, hi := args[1], args[2]
		var cs []contrib
		if b.active[X] {
			c := b.bin(dsl.OpAnd, b.cmp(dsl.OpGE, X, lo, sp), b.cmp(dsl.OpLE, X, hi, sp), sp)
			cs = append(cs, contrib{X, b.where1(c, g, b.lit(0, sp), sp)})
		}
		if b.active[lo] {
			c := b.bin(dsl.OpAnd, b.cmp(dsl.OpLT, X, lo, sp), b.cmp(dsl.OpLT, lo, hi, sp), sp)
			cs = append(cs, contrib{lo, b.where1(c, g, b.lit(0, sp), sp)})
		}
		if b.active[hi] {
			c := b.bin(dsl.OpOr, b.cmp(dsl.OpGT, X, hi, sp), b.cmp(dsl.OpLT, hi, lo, sp), sp)
			cs = append(cs, contrib{hi, b.where1(c, g, b.lit(0, sp), sp)})
		}
		return cs
	case "abs":
		// abs: grad * self.sgn(); sgn(0) = 0.
		return one(func() dsl.Expr {
			sgn := b.where1(b.cmp(dsl.OpGT, X, b.lit(0, sp), sp), b.lit(1, sp),
				b.where1(b.cmp(dsl.OpLT, X, b.lit(0, sp), sp), b.lit(-1, sp), b.lit(0, sp), sp), sp)
			return b.mul(g, sgn, sp)
		})
	case "float": // float(x) of a float is x (torch: .float()/.double() pass grad)
		return one(func() dsl.Expr { return g })
	}
	if bi := dsl.Builtins[id.Name]; bi != nil && bi.Deriv != nil { // the float functions: their registry entry
		return one(func() dsl.Expr { return bi.Deriv(deriver{b, sp}, g, X, e) })
	}
	return nil
}

// deriver builds a built-in's derivative (dsl.Builtin.Deriv) with b, at sp.
type deriver struct {
	b  *builder
	sp dsl.Span
}

func (d deriver) Lit(v float64) dsl.Expr                { return d.b.lit(v, d.sp) }
func (d deriver) Mul(x, y dsl.Expr) dsl.Expr            { return d.b.mul(x, y, d.sp) }
func (d deriver) Div(x, y dsl.Expr) dsl.Expr            { return d.b.bin(dsl.OpDiv, x, y, d.sp) }
func (d deriver) Add(x, y dsl.Expr) dsl.Expr            { return d.b.bin(dsl.OpAdd, x, y, d.sp) }
func (d deriver) Sub(x, y dsl.Expr) dsl.Expr            { return d.b.bin(dsl.OpSub, x, y, d.sp) }
func (d deriver) Neg(x dsl.Expr) dsl.Expr               { return d.b.neg(x, d.sp) }
func (d deriver) Call(name string, x dsl.Expr) dsl.Expr { return d.b.fn1(name, d.sp, x) }

// literal returns the value of an int or float literal.
func literal(e dsl.Expr) (float64, bool) {
	switch x := e.(type) {
	case *dsl.IntLit:
		return float64(x.Value), true
	case *dsl.FloatLit:
		return x.Value, true
	}
	return 0, false
}

// isFloatLit reports whether e is the float literal v.
func isFloatLit(e dsl.Expr, v float64) bool {
	x, ok := e.(*dsl.FloatLit)
	return ok && x.Value == v
}

func (b *builder) record(e dsl.Expr, t dsl.Type) dsl.Expr {
	b.types[e] = t
	return e
}

func (b *builder) lit(v float64, sp dsl.Span) dsl.Expr {
	return b.record(&dsl.FloatLit{Sp: sp, Value: v}, dsl.TypeFloat)
}

func (b *builder) intLit(v int64, sp dsl.Span) dsl.Expr {
	return b.record(&dsl.IntLit{Sp: sp, Value: v}, dsl.TypeInt)
}

// bin builds x op y, typed by Python's rules. A division of two float
// literals whose quotient is exact in float32 (the tie's grad / 2 with
// grad = 1) is folded.
func (b *builder) bin(op dsl.Op, x, y dsl.Expr, sp dsl.Span) dsl.Expr {
	if lx, ok := x.(*dsl.FloatLit); ok && op == dsl.OpDiv {
		if ly, ok := y.(*dsl.FloatLit); ok && ly.Value != 0 {
			if q := lx.Value / ly.Value; q*ly.Value == lx.Value && float64(float32(q)) == q {
				return b.lit(q, sp)
			}
		}
	}
	var t dsl.Type
	switch op {
	case dsl.OpAnd, dsl.OpOr:
		t = dsl.TypeBool
	case dsl.OpDiv:
		t = dsl.TypeFloat
	default:
		t = dsl.Promote(b.typeOf(x), b.typeOf(y))
	}
	return b.record(&dsl.BinaryExpr{Sp: sp, Op: op, OpSp: sp, X: x, Y: y}, t)
}

// mul is x * y, with 1.0 * y = y and -1.0 * y = -y for a float y (exact
// for every y, NaN and infinities included).
func (b *builder) mul(x, y dsl.Expr, sp dsl.Span) dsl.Expr {
	switch {
	case isFloatLit(x, 1) && b.typeOf(y) == dsl.TypeFloat:
		return y
	case isFloatLit(y, 1) && b.typeOf(x) == dsl.TypeFloat:
		return x
	case isFloatLit(x, -1) && b.typeOf(y) == dsl.TypeFloat:
		return b.neg(y, sp)
	}
	return b.bin(dsl.OpMul, x, y, sp)
}

// neg is -x; a literal is negated in place.
func (b *builder) neg(x dsl.Expr, sp dsl.Span) dsl.Expr {
	if l, ok := x.(*dsl.FloatLit); ok {
		return b.lit(-l.Value, sp)
	}
	t := b.typeOf(x)
	if t == dsl.TypeBool {
		t = dsl.TypeInt
	}
	return b.record(&dsl.UnaryExpr{Sp: sp, Op: dsl.OpNeg, X: x}, t)
}

func (b *builder) cmp(op dsl.Op, x, y dsl.Expr, sp dsl.Span) dsl.Expr {
	return b.record(&dsl.CompareExpr{Sp: sp, Operands: []dsl.Expr{x, y}, Ops: []dsl.Op{op}}, dsl.TypeBool)
}

// where1 builds where(c, x, y).
func (b *builder) where1(c, x, y dsl.Expr, sp dsl.Span) dsl.Expr {
	t := dsl.Promote(b.typeOf(x), b.typeOf(y))
	fun := b.record(&dsl.Ident{Sp: sp, Name: "where"}, t)
	return b.record(&dsl.CallExpr{Sp: sp, Fun: fun, Args: []dsl.Expr{c, x, y}}, t)
}

// fn1 builds a call of a one-argument float built-in.
func (b *builder) fn1(name string, sp dsl.Span, x dsl.Expr) dsl.Expr {
	fun := b.record(&dsl.Ident{Sp: sp, Name: name}, dsl.TypeFloat)
	return b.record(&dsl.CallExpr{Sp: sp, Fun: fun, Args: []dsl.Expr{x}}, dsl.TypeFloat)
}

// sum adds the terms left to right.
func (b *builder) sum(terms []dsl.Expr, sp dsl.Span) dsl.Expr {
	acc := terms[0]
	for _, t := range terms[1:] {
		acc = b.bin(dsl.OpAdd, acc, t, sp)
	}
	return acc
}
