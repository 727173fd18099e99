package normaltest

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/normal"
)

// FillBuffers makes random contents for every buffer of p at these sizes:
// segments buffers get non-decreasing ids (runs of 1..maxRun), other int
// buffers small ids, float buffers values in [0.05, 1), bool buffers coins.
func FillBuffers(p *check.Program, e *eval.Env, rng *rand.Rand, maxRun int) {
	sizes := map[dsl.Var]int64{dsl.SizeB: e.B, dsl.SizeH: e.H, dsl.SizeHKV: e.HKV, dsl.SizeQ: e.Q, dsl.SizeKV: e.KV}
	e.Buffers = map[string]*eval.Tensor{}
	for _, b := range p.Buffers {
		dims := make([]int, len(b.Dims))
		for i, d := range b.Dims {
			dims[i] = int(d.Eval(sizes))
		}
		t := eval.NewTensor(dims...)
		switch {
		case b.Segments:
			row := dims[len(dims)-1]
			for r := 0; r < len(t.Data)/max(row, 1); r++ {
				id, left := int64(0), 1+rng.Intn(maxRun)
				for u := 0; u < row; u++ {
					if left == 0 {
						id, left = id+1+int64(rng.Intn(2)), 1+rng.Intn(maxRun)
					}
					t.Data[r*row+u] = float64(id)
					left--
				}
			}
		case b.ElemType() == dsl.TypeInt:
			for i := range t.Data {
				t.Data[i] = float64(rng.Intn(3))
			}
		case b.ElemType() == dsl.TypeBool:
			for i := range t.Data {
				t.Data[i] = float64(rng.Intn(2))
			}
		default:
			for i := range t.Data {
				t.Data[i] = 0.05 + 0.95*rng.Float64()
			}
		}
		e.Buffers[b.Name] = t
	}
}

// FormEval evaluates a canonical form at a point, independently of Canon:
// bounds by arithmetic, segment atoms by reading the buffer, opaque atoms
// with the reference evaluator. ok is false when an atom cannot be
// evaluated at this point (an out-of-range read, a division by zero).
type FormEval struct {
	form   *normal.Form
	opaque map[*normal.Atom]*eval.Bound
	// syms evaluates the form's symbols (extra variables free of q and
	// kv), each compiled as a score mod returning its value.
	syms map[*normal.Extra]*eval.Bound
}

// NewFormEval prepares f, the form of l, for evaluation in e.
func NewFormEval(t testing.TB, f *normal.Form, l *dsl.Lowered, e *eval.Env) *FormEval {
	t.Helper()
	fe := &FormEval{form: f, opaque: map[*normal.Atom]*eval.Bound{}, syms: map[*normal.Extra]*eval.Bound{}}
	for _, x := range f.Extras {
		if x.Kind != normal.ExtraSymbol {
			continue
		}
		fn, err := eval.Compile(&dsl.Lowered{Kind: dsl.ScoreMod, Name: x.Text, Expr: x.Expr, Types: l.Types, Buffers: l.Buffers})
		if err != nil {
			t.Fatalf("compile symbol %s: %v", x.Text, err)
		}
		bd, err := fn.Bind(e)
		if err != nil {
			t.Fatalf("bind symbol %s: %v", x.Text, err)
		}
		fe.syms[x] = bd
	}
	for _, term := range f.Terms {
		for _, a := range term.Atoms {
			if a.Kind != normal.AtomOpaque {
				continue
			}
			expr := a.Expr
			types := l.Types
			if l.TypeOf(expr) == dsl.TypeInt {
				zero := &dsl.IntLit{Sp: dsl.NoSpan, Raw: "0"}
				cmp := &dsl.CompareExpr{Sp: expr.Span(), Operands: []dsl.Expr{expr, zero}, Ops: []dsl.Op{dsl.OpNE}}
				types = map[dsl.Expr]dsl.Type{zero: dsl.TypeInt, cmp: dsl.TypeBool}
				for k, v := range l.Types {
					types[k] = v
				}
				expr = cmp
			}
			fn, err := eval.Compile(&dsl.Lowered{Kind: dsl.MaskMod, Name: a.Text, Expr: expr, Types: types, Buffers: l.Buffers})
			if err != nil {
				t.Fatalf("compile atom %s: %v", a.Text, err)
			}
			bd, err := fn.Bind(e)
			if err != nil {
				t.Fatalf("bind atom %s: %v", a.Text, err)
			}
			fe.opaque[a] = bd
		}
	}
	return fe
}

// Extras computes the form's extra variables at one point: a quotient by
// Python's floor division of its dividend, a symbol by the evaluator; ok
// is false where a symbol cannot be evaluated.
func (fe *FormEval) Extras(e *eval.Env, b, h, q, kv int64) (xs []int64, ok bool) {
	p := normal.Point{b, h, q, kv, 0, e.B, e.H, e.HKV, e.Q, e.KV}
	xs = make([]int64, len(fe.form.Extras))
	for i, x := range fe.form.Extras {
		switch x.Kind {
		case normal.ExtraDiv:
			n := normal.Value(x.Num, p, xs)
			xs[i] = n / x.Den
			if n%x.Den != 0 && n < 0 {
				xs[i]--
			}
		case normal.ExtraSymbol:
			r, err := fe.syms[x].Score(0, b, h, q, kv)
			if err != nil {
				return nil, false
			}
			xs[i] = int64(r)
		}
	}
	return xs, true
}

// At evaluates the form at one point; ok is false where an atom or a
// symbol cannot be evaluated.
func (fe *FormEval) At(e *eval.Env, b, h, q, kv int64) (value, ok bool) {
	vals := [normal.NumVars]int64{b, h, q, kv, 0, e.B, e.H, e.HKV, e.Q, e.KV}
	xs, ok := fe.Extras(e, b, h, q, kv)
	if !ok {
		return false, false
	}
	lin := func(l normal.Linear) int64 {
		x := l.K
		for v, c := range l.Coef {
			x += c * vals[v]
		}
		for i, c := range l.X {
			if c != 0 {
				x += c * xs[i]
			}
		}
		return x
	}
	for _, term := range fe.form.Terms {
		holds := true
		for _, bd := range term.Bounds {
			x := lin(bd.Dir)
			if !bd.Contains(x) {
				holds = false
			}
		}
		for _, a := range term.Atoms {
			var v bool
			switch a.Kind {
			case normal.AtomSegment:
				buf := e.Buffers[a.Buffer.Name.Name]
				n := int64(buf.Dims[len(buf.Dims)-1])
				if q >= n || kv >= n {
					return false, false
				}
				if a.Batch {
					v = buf.At(int(b), int(q)) == buf.At(int(b), int(kv))
				} else {
					v = buf.At(int(q)) == buf.At(int(kv))
				}
			case normal.AtomOpaque:
				r, err := fe.opaque[a].Mask(b, h, q, kv)
				if err != nil {
					return false, false
				}
				v = r
			}
			if v == a.Neg {
				holds = false
			}
		}
		if holds {
			return true, true
		}
	}
	return false, true
}

// Gen generates random, well-typed .flex mask and score expressions,
// biased so that many of them are some spelling of a Turbo pattern.
type Gen struct {
	// Rng is the source of randomness.
	Rng *rand.Rand
	// DivMod, when set, makes half the patterns floor divisions, remainders
	// and q/kv-free symbols (block, strided, per-batch and per-head
	// masks); unset, the stream of expressions is unchanged by it.
	DivMod bool
	// BoolInt, when set, makes some comparisons a bool's value (0 or 1)
	// compared with an int, as `(q >= 64) == 1` or `flag[q] != 0`; unset,
	// the stream of expressions is unchanged by it.
	BoolInt bool
}

// divMod returns a random comparison built from // and % by constants and
// from symbols that read neither q nor kv.
func (g *Gen) divMod() string {
	c := 1 + g.Rng.Intn(5)
	if g.Rng.Intn(6) == 0 {
		c = -c
	}
	w := g.small()
	lin := g.pick("q", "kv", "(q - kv)", "(kv - q)", "(q + kv)", "(2 * q - kv)", "(q - kv + W)", "(q + 3)", "abs(q - kv)",
		"(q - prefix[b])", "min(q, kv)", "(q - kv + h)")
	sym := g.pick("prefix[b]", "(b * h)", "prefix[b] // 2", "(h * W)", "prefix[h % 2]")
	switch g.Rng.Intn(9) {
	case 0:
		return fmt.Sprintf("%s // %d %s %d", lin, c, g.pick("==", "<=", ">=", "<", ">", "!="), w-3)
	case 1:
		return fmt.Sprintf("%s %% %d %s %d", lin, c, g.pick("==", "<=", ">=", "<", ">", "!="), w%3)
	case 2:
		return fmt.Sprintf("q // %d %s kv // %d", c, g.pick("==", "<=", ">=", "<", ">", "!="), c)
	case 3:
		return fmt.Sprintf("%s %% %d == %s", lin, c, lin)
	case 4:
		return fmt.Sprintf("kv %s %s", g.pick("<", "<=", ">=", "=="), sym)
	case 5:
		return fmt.Sprintf("q - kv <= %s", sym)
	case 6:
		return fmt.Sprintf("(%s // %d) %% %d == %d", lin, c, 1+g.Rng.Intn(3), g.Rng.Intn(2))
	case 7:
		return fmt.Sprintf("abs(q // %d - kv // %d) <= %d", c, c, w%3)
	}
	return fmt.Sprintf("%s %% %d %s kv %% %d", g.pick("q", "kv", "(q + 1)"), c, g.pick("==", "<=", ">="), c)
}

func (g *Gen) pick(xs ...string) string { return xs[g.Rng.Intn(len(xs))] }

func (g *Gen) small() int { return g.Rng.Intn(8) }

// Pattern returns a random spelling of a pattern ingredient.
func (g *Gen) Pattern() string {
	if g.DivMod && g.Rng.Intn(2) == 0 {
		return g.divMod()
	}
	w := g.small()
	r := g.small()
	switch g.Rng.Intn(12) {
	case 0, 1:
		return g.pick("q >= kv", "kv <= q", "not (kv > q)", "q - kv >= 0", "~(q < kv)",
			"where(q >= kv, True, False)", "(True if q >= kv else False)", "min(q, kv) == kv", "max(q, kv) == q",
			"kv <= q + KV - Q", "0 <= q - kv")
	case 2, 3:
		return g.pick(
			fmt.Sprintf("q - kv <= %d", w), fmt.Sprintf("q - kv < %d", w), fmt.Sprintf("kv >= q - %d", w),
			fmt.Sprintf("abs(q - kv) <= %d", w), fmt.Sprintf("kv - q <= %d", r), fmt.Sprintf("kv - q < %d", r),
			fmt.Sprintf("0 <= q - kv <= %d", w), fmt.Sprintf("-%d <= q - kv <= %d", r, w),
			fmt.Sprintf("q - kv + KV - Q <= %d", w), "q == kv", "q - kv <= W")
	case 4, 5:
		return g.pick("doc[q] == doc[kv]", "doc[kv] == doc[q]", "ids[q] == ids[kv]", "doc[q] != doc[kv]", "same(b, h, q, kv)")
	case 6:
		return g.pick(fmt.Sprintf("kv < %d", w), fmt.Sprintf("q < %d", w), fmt.Sprintf("kv >= %d", w),
			fmt.Sprintf("q >= %d", w), "kv < Q", "q < KV", "kv < prefix[b]")
	case 7:
		return g.pick("h == 0", "b < 1", "h >= 1", "h != b", fmt.Sprintf("q - kv <= %d + h", w))
	case 8:
		return fmt.Sprintf("%s %s %s", g.IntExpr(1), g.pick("<", "<=", ">", ">=", "==", "!="), g.IntExpr(1))
	case 9:
		return g.pick("(q - kv) % 3 == 0", "q * kv <= 12", "flag[q]", "bias[h] > 0.5", "q // 2 == kv // 2",
			"(q & 1) == 0", "tanh(1.0 * q) > 0.5")
	case 10:
		return g.pick("True", "False")
	}
	return g.pick("cm(b, h, q, kv)", "win(b, h, q, kv)")
}

// BoolExpr returns a random bool expression of at most depth levels.
func (g *Gen) BoolExpr(depth int) string {
	if depth <= 0 || g.Rng.Intn(3) == 0 {
		return g.Pattern()
	}
	a := g.BoolExpr(depth - 1)
	b := g.BoolExpr(depth - 1)
	switch g.Rng.Intn(10) {
	case 0, 1, 2:
		return fmt.Sprintf("(%s and %s)", a, b)
	case 3, 4:
		return fmt.Sprintf("(%s or %s)", a, b)
	case 5:
		return fmt.Sprintf("not (%s)", a)
	case 6:
		return fmt.Sprintf("((%s) & (%s))", a, b)
	case 7:
		return fmt.Sprintf("((%s) | (%s))", a, b)
	case 8:
		c := g.BoolExpr(depth - 1)
		return g.pick(fmt.Sprintf("where(%s, %s, %s)", a, b, c), fmt.Sprintf("(%s if %s else %s)", b, a, c))
	}
	if g.BoolInt && g.Rng.Intn(2) == 0 {
		op := g.pick("==", "!=", "<", "<=", ">", ">=")
		n := g.pick("0", "1", "0", "1", "2", "-1", g.IntExpr(1))
		return g.pick(fmt.Sprintf("(%s) %s %s", a, op, n), fmt.Sprintf("%s %s (%s)", n, op, a))
	}
	return g.pick(fmt.Sprintf("(%s) == (%s)", a, b), fmt.Sprintf("(%s) != (%s)", a, b), fmt.Sprintf("~(%s)", a))
}

// IntExpr returns a random int expression.
func (g *Gen) IntExpr(depth int) string {
	if depth <= 0 || g.Rng.Intn(2) == 0 {
		return g.pick("q", "kv", "q", "kv", "b", "h", fmt.Sprint(g.Rng.Intn(12)-3), "Q", "KV", "W")
	}
	a, b := g.IntExpr(depth-1), g.IntExpr(depth-1)
	switch g.Rng.Intn(8) {
	case 0, 1:
		return fmt.Sprintf("(%s + %s)", a, b)
	case 2, 3:
		return fmt.Sprintf("(%s - %s)", a, b)
	case 4:
		return fmt.Sprintf("(%d * %s)", g.Rng.Intn(5)-2, a)
	case 5:
		return g.pick(fmt.Sprintf("abs(%s)", a), fmt.Sprintf("min(%s, %s)", a, b), fmt.Sprintf("max(%s, %s)", a, b),
			fmt.Sprintf("clamp(%s, 0, %d)", a, g.small()))
	case 6:
		return fmt.Sprintf("(%s if %s else %s)", a, g.Pattern(), b)
	}
	return g.pick(fmt.Sprintf("(%s %% 3)", a), fmt.Sprintf("(%s // 2)", a), fmt.Sprintf("(%s * %s)", a, b))
}

// Score returns a random score body over s, biased to the score patterns.
func (g *Gen) Score() string {
	return g.pick(
		"s", "s + slopes[h] * (kv - q)", "s - slopes[h] * (q - kv)", "slopes[h] * kv - slopes[h] * q + s",
		"s - slopes[h] * abs(q - kv)", "s - slopes[h] * abs(kv - q)", "s + slopes[h] * (q - kv)",
		"20.0 * tanh(s / 20.0)", "tanh(s / 7.5) * 7.5", "s * 2.0", "2 * s", "s + 0.0",
		"s + (q - kv)", "where(q >= kv, s, -inf)", "s * slopes[h]", "s + bias[h]")
}

// Header declares the parameters, buffers and mods the generated
// expressions use.
const Header = `
param W = 4
buffer doc: i32[KV] segments
buffer ids: i32[KV]
buffer prefix: i32[B]
buffer flag: bool[Q]
buffer bias: f32[H]
buffer slopes: f32[H]
mask cm(b, h, q, kv) = q >= kv
mask win(b, h, q, kv) = q - kv <= W
mask same(b, h, q, kv) = doc[q] == doc[kv]
`
