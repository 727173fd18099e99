package normal

import (
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
)

// MaxTerms bounds the disjunctive normal form; a mask whose DNF grows past it
// is marked TooComplex and becomes a generated kernel.
const MaxTerms = 64

// maxPieces bounds the piecewise-linear expansion of one integer operand
// (abs, min, max, clamp and int conditionals split it into pieces).
const maxPieces = 16

// Canon computes the canonical form of a lowered mask. A nil mask is the
// always-true form. Canon never evaluates the mask: it rewrites the
// expression (negation pushed to the atoms, conditionals and where() turned
// into and/or, abs/min/max/clamp split into linear pieces, integer
// comparisons normalised to bounds with `<` as `<= -1`) and simplifies
// bounds using only facts true for every length: 0 <= q < Q, 0 <= kv < KV,
// 0 <= b < B, 0 <= h < H.
func Canon(l *dsl.Lowered) *Form {
	if l == nil || l.Expr == nil {
		return &Form{Terms: []*Term{{}}}
	}
	c := &canonizer{lowered: l}
	terms, ok := c.dnf(c.formula(l.Expr))
	if !ok {
		return &Form{TooComplex: true}
	}
	return c.finish(terms)
}

type canonizer struct {
	lowered *dsl.Lowered
	// extras are the form's extra variables, by index; divs and syms find
	// an existing one again.
	extras []*Extra
	divs   map[divKey]int
	syms   map[string]int
}

type divKey struct {
	num Linear
	den int64
}

// floorLinear is floor(num / den) for den >= 1: num itself, a constant, or
// a constant plus a floor-quotient extra variable (whose dividend's
// constant is reduced mod den). false when the extras are exhausted.
func (c *canonizer) floorLinear(num Linear, den int64) (Linear, bool) {
	if den == 1 {
		return num, true
	}
	if num.IsConst() {
		return Const(floorDiv(num.K, den)), true
	}
	// Common factors of the dividend and divisor cancel exactly.
	g := uint64(den)
	for _, k := range num.Coef {
		g = gcd(g, uabs(k))
	}
	for _, k := range num.X {
		g = gcd(g, uabs(k))
	}
	g = gcd(g, uabs(num.K))
	if g > 1 {
		for i := range num.Coef {
			num.Coef[i] /= int64(g)
		}
		for i := range num.X {
			num.X[i] /= int64(g)
		}
		num.K /= int64(g)
		den /= int64(g)
		if den == 1 {
			return num, true
		}
	}
	// floor((n + K) / d) = K // d + floor((n + K % d) / d).
	whole := floorDiv(num.K, den)
	num.K -= whole * den
	key := divKey{num, den}
	i, ok := c.divs[key]
	if !ok {
		if len(c.extras) >= MaxExtras {
			return Linear{}, false
		}
		e := divExtra(num, den, c.extras)
		i = len(c.extras)
		c.extras = append(c.extras, e)
		if c.divs == nil {
			c.divs = map[divKey]int{}
		}
		c.divs[key] = i
	}
	l := extraLinear(i)
	l.K = whole
	return l, true
}

// symbol is the extra variable for e, an int expression that reads
// neither q nor kv; false when the extras are exhausted.
func (c *canonizer) symbol(e dsl.Expr) (Linear, bool) {
	e = dsl.Unparen(e)
	text := format.Expr(e)
	i, ok := c.syms[text]
	if !ok {
		if len(c.extras) >= MaxExtras {
			return Linear{}, false
		}
		i = len(c.extras)
		c.extras = append(c.extras, &Extra{Kind: ExtraSymbol, Expr: e, Text: text, Vars: exprVars(e)})
		if c.syms == nil {
			c.syms = map[string]int{}
		}
		c.syms[text] = i
	}
	return extraLinear(i), true
}

// freeOfQKV reports whether e reads neither q, kv nor the score.
func freeOfQKV(e dsl.Expr) bool {
	free := true
	dsl.Inspect(e, func(n dsl.Expr) bool {
		if r, ok := n.(*dsl.VarRef); ok && (r.Var == dsl.VarQ || r.Var == dsl.VarKV || r.Var == dsl.VarScore) {
			free = false
		}
		return free
	})
	return free
}

func (c *canonizer) typeOf(e dsl.Expr) dsl.Type { return c.lowered.TypeOf(e) }

// DistanceRange returns the bounds on d = q - kv that every true point of
// the form satisfies: the hull of the top-left `q - kv` bounds of all
// terms. A side is unbounded when some term does not bound it. The code
// generator uses it to skip tiles that lie wholly outside the band. ok is
// false for a TooComplex form; a never-true form gives the empty bound
// Lo = 1 > Hi = 0.
func (f *Form) DistanceRange() (b Bound, ok bool) {
	if f.TooComplex {
		return Bound{}, false
	}
	b = Bound{Dir: distance}
	if len(f.Terms) == 0 {
		return Bound{Dir: distance, Lo: 1, Hi: 0, HasLo: true, HasHi: true}, true
	}
	for i, t := range f.Terms {
		var tb Bound
		for _, x := range t.Bounds {
			if x.Dir == distance {
				tb = x
			}
		}
		if i == 0 {
			b.Lo, b.HasLo, b.Hi, b.HasHi = tb.Lo, tb.HasLo, tb.Hi, tb.HasHi
			continue
		}
		b.HasLo = b.HasLo && tb.HasLo
		b.Lo = min(b.Lo, tb.Lo)
		b.HasHi = b.HasHi && tb.HasHi
		b.Hi = max(b.Hi, tb.Hi)
	}
	if !b.HasLo {
		b.Lo = 0
	}
	if !b.HasHi {
		b.Hi = 0
	}
	return b, true
}

// distance is the direction q - kv.
var distance = func() Linear { l := Var(dsl.VarQ); l.Coef[dsl.VarKV] = -1; return l }()

// LinearOf is e as one linear form over the index variables and sizes, when
// it is one (no pieces, no extra variables): `q - kv`, `2 * (kv - q) + 1`.
func LinearOf(l *dsl.Lowered, e dsl.Expr) (Linear, bool) {
	c := &canonizer{lowered: l}
	ps, ok := c.pieces(e)
	if !ok || len(ps) != 1 || !alwaysTrue(ps[0].cond) || ps[0].val.UsesExtras() {
		return Linear{}, false
	}
	return ps[0].val, true
}

// CallName is the built-in a call names (its canonical spelling), or the
// called identifier, or "".
func CallName(x *dsl.CallExpr) string { return callName(x) }
