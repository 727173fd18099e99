package codegen

import (
	"fmt"

	"github.com/maskc/maskc/dsl"
)

// This file reads block structure out of atoms the normal form keeps
// opaque: comparisons of block indices such as `q // 64 == kv // 64`
// (chunked attention), `(q - N) // 16 >= (kv - N) // 16` (block causal) or
// `q // 128 > kv` (strided). With F(q) = floor(fq(q) / cq) and G(kv) =
// floor(fk(kv) / ck), fq linear in q alone and fk in kv alone, both with
// positive coefficients, F and G are non-decreasing, so over a q range
// [qa, qb] F lies in [F(qa), F(qb)] and the relation bounds kv exactly
// through the floor-division facts ck*G <= fk <= ck*G + ck - 1; over a tile
// the relation holds everywhere when it holds between the extreme block
// indices. The atom stays in the mask, evaluated per element on partial
// tiles: the bounds only decide which tiles are visited and which are full.

// blockRel is the atom G(kv) op F(q), op one of <=, <, >=, >, ==.
type blockRel struct {
	fq linear // linear in q alone, q > 0
	cq int64  // > 0
	fk linear // linear in kv alone, kv > 0
	ck int64  // > 0
	op dsl.Op
}

// blockOf reads an opaque atom as a block relation.
func (a *analyzer) blockOf(at atom) (blockRel, bool) {
	if at.kind != atomOpaque {
		return blockRel{}, false
	}
	x, ok := dsl.Unparen(at.e).(*dsl.CompareExpr)
	if !ok || len(x.Operands) != 2 {
		return blockRel{}, false
	}
	op := x.Ops[0]
	if at.neg {
		op = op.Negate()
	}
	if op == dsl.OpNE || op == dsl.OpInvalid {
		return blockRel{}, false
	}
	l, lc, lv, ok1 := a.blockSide(x.Operands[0])
	r, rc, rv, ok2 := a.blockSide(x.Operands[1])
	if !ok1 || !ok2 || lv == rv {
		return blockRel{}, false
	}
	if lv == dsl.VarQ { // F op G: G swap(op) F
		l, lc, r, rc, op = r, rc, l, lc, op.Swap()
	}
	return blockRel{fq: r, cq: rc, fk: l, ck: lc, op: op}, true
}

// blockSide reads e as floor(lin / c) (c = 1 without a division) with lin
// linear in exactly one of q and kv, its coefficient positive.
func (a *analyzer) blockSide(e dsl.Expr) (linear, int64, dsl.Var, bool) {
	if a.l.TypeOf(e) != dsl.TypeInt {
		return linear{}, 0, 0, false
	}
	c := int64(1)
	if x, ok := dsl.Unparen(e).(*dsl.BinaryExpr); ok && x.Op == dsl.OpFloorDiv {
		lit, ok := dsl.Unparen(x.Y).(*dsl.IntLit)
		if !ok || lit.Value < 1 || lit.Value >= coefLimit {
			return linear{}, 0, 0, false
		}
		c, e = lit.Value, x.X
	}
	s, ok := a.side(e)
	if !ok || s.op != sideLeaf {
		return linear{}, 0, 0, false
	}
	l := s.lin
	switch {
	case l.q > 0 && l.kv == 0:
		return l, c, dsl.VarQ, true
	case l.kv > 0 && l.q == 0:
		return l, c, dsl.VarKV, true
	}
	return linear{}, 0, 0, false
}

// text prints the relation for comments and reasons.
func (r blockRel) text() string {
	div := func(l linear, c int64, v string) string {
		s := sumCode(linTerms(l, v), l.c, func(c int64) string { return fmt.Sprint(c) })
		if c == 1 {
			return s
		}
		return "(" + s + ") // " + fmt.Sprint(c)
	}
	return div(r.fk, r.ck, "kv") + " " + r.op.String() + " " + div(r.fq, r.cq, "q")
}

// linTerms lists l's q, kv and free terms for sumCode.
func linTerms(l linear, v string) []term {
	ts := []term{{l.q, "q"}, {l.kv, "kv"}}
	for _, t := range l.terms {
		ts = append(ts, term{t.coef, exprText(t.e)})
	}
	return ts
}

// fBounds gives the bounds that G op F puts on G when F ranges over
// [fmin, fmax]: G >= gLo (when hasLo) and G <= gHi (when hasHi).
func (r blockRel) gBounds(fmin, fmax int64) (gLo, gHi int64, hasLo, hasHi bool) {
	switch r.op {
	case dsl.OpLE:
		return 0, fmax, false, true
	case dsl.OpLT:
		return 0, fmax - 1, false, true
	case dsl.OpGE:
		return fmin, 0, true, false
	case dsl.OpGT:
		return fmin + 1, 0, true, false
	}
	return fmin, fmax, true, true
}

// fBounds gives the bounds that G op F puts on F when G ranges over
// [gmin, gmax].
func (r blockRel) fBounds(gmin, gmax int64) (fLo, fHi int64, hasLo, hasHi bool) {
	switch r.op {
	case dsl.OpLE: // F >= G
		return gmin, 0, true, false
	case dsl.OpLT:
		return gmin + 1, 0, true, false
	case dsl.OpGE: // F <= G
		return 0, gmax, false, true
	case dsl.OpGT:
		return 0, gmax - 1, false, true
	}
	return gmin, gmax, true, true
}

// holdsAll reports whether G op F holds for every G in [gmin, gmax] and F
// in [fmin, fmax].
func (r blockRel) holdsAll(gmin, gmax, fmin, fmax int64) bool {
	switch r.op {
	case dsl.OpLE:
		return gmax <= fmin
	case dsl.OpLT:
		return gmax < fmin
	case dsl.OpGE:
		return gmin >= fmax
	case dsl.OpGT:
		return gmin > fmax
	}
	return gmin == gmax && fmin == fmax && gmin == fmin
}
