package classify

import (
	"sort"
	"strings"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/normal"
)

// maxMonomials bounds the polynomial expansion of a score mod.
const maxMonomials = 32

// ScoreShape is what a score mod was recognised as.
type ScoreShape struct {
	// Kind is ScoreNone, ScoreAlibi, ScoreSoftcap, ScoreScale or
	// ScoreGeneratedMod.
	Kind string
	// Slopes names the ALiBi slopes buffer (f32[H] or f32[B, H]).
	Slopes string
	// Symmetric is set for ALiBi written with abs(q - kv): it then equals
	// the kernel's bias on both sides of the diagonal.
	Symmetric bool
	// Cap is the softcap constant C of `C * tanh(score / C)`.
	Cap float64
	// Factor is the constant c of `score * c`.
	Factor float64
	// Reason says why a score is generated.
	Reason string
}

// poly is a polynomial: monomial key (factors joined by "·", sorted; ""
// for the constant) to coefficient.
type poly map[string]float64

type scorer struct {
	lowered *dsl.Lowered
	buffer  func(name string) *check.Buffer
	// reads maps a buffer-read factor ("slopes[h]") to its node.
	reads map[string]*dsl.IndexExpr
}

// shapeOfScore recognises a lowered score mod; nil means no score mod.
func shapeOfScore(l *dsl.Lowered, buffer func(string) *check.Buffer) ScoreShape {
	if l == nil || l.Expr == nil {
		return ScoreShape{Kind: ScoreNone}
	}
	s := &scorer{lowered: l, buffer: buffer, reads: map[string]*dsl.IndexExpr{}}
	if c, ok := s.softcap(l.Expr); ok {
		return ScoreShape{Kind: ScoreSoftcap, Cap: c}
	}
	p, ok := s.poly(l.Expr)
	if !ok {
		return ScoreShape{Kind: ScoreGeneratedMod, Reason: "score_mod is not ALiBi, softcap or a scale: `" + format.Expr(l.Expr) + "` has no Turbo kernel"}
	}
	if len(p) == 1 && p["score"] == 1 {
		return ScoreShape{Kind: ScoreNone}
	}
	if len(p) == 1 && p["score"] > 0 {
		return ScoreShape{Kind: ScoreScale, Factor: p["score"]}
	}
	if sh, ok := s.alibi(p); ok {
		return sh
	}
	return ScoreShape{Kind: ScoreGeneratedMod, Reason: "score_mod is not ALiBi, softcap or a scale: `" + format.Expr(l.Expr) + "` has no Turbo kernel"}
}

// softcap matches `C * tanh(score / C)` and `tanh(score / C) * C`, C > 0.
func (s *scorer) softcap(e dsl.Expr) (float64, bool) {
	m, ok := dsl.Unparen(e).(*dsl.BinaryExpr)
	if !ok || m.Op != dsl.OpMul {
		return 0, false
	}
	for _, pair := range [][2]dsl.Expr{{m.X, m.Y}, {m.Y, m.X}} {
		c, ok := constFloat(pair[0])
		if !ok || !(c > 0) {
			continue
		}
		call, ok := dsl.Unparen(pair[1]).(*dsl.CallExpr)
		if !ok || normal.CallName(call) != "tanh" || len(call.Args) != 1 {
			continue
		}
		div, ok := dsl.Unparen(call.Args[0]).(*dsl.BinaryExpr)
		if !ok || div.Op != dsl.OpDiv {
			continue
		}
		if r, ok := dsl.Unparen(div.X).(*dsl.VarRef); !ok || r.Var != dsl.VarScore {
			continue
		}
		if d, ok := constFloat(div.Y); ok && d == c {
			return c, true
		}
	}
	return 0, false
}

func constFloat(e dsl.Expr) (float64, bool) {
	switch x := dsl.Unparen(e).(type) {
	case *dsl.FloatLit:
		return x.Value, true
	case *dsl.IntLit:
		return float64(x.Value), true
	}
	return 0, false
}

// alibi matches score + S*(kv - q) (any spelling that expands to it) and
// score - S*abs(q - kv), S a read of an f32[H] buffer at [h] or an
// f32[B, H] buffer at [b, h].
func (s *scorer) alibi(p poly) (ScoreShape, bool) {
	if p["score"] != 1 {
		return ScoreShape{}, false
	}
	for f, read := range s.reads {
		if !s.isSlopes(read) {
			continue
		}
		linear := poly{"score": 1, monomial(f, "kv"): 1, monomial(f, "q"): -1}
		symmetric := poly{"score": 1, monomial(f, "abs(q - kv)"): -1}
		name := format.Expr(read.X)
		if equalPoly(p, linear) {
			return ScoreShape{Kind: ScoreAlibi, Slopes: name}, true
		}
		if equalPoly(p, symmetric) {
			return ScoreShape{Kind: ScoreAlibi, Slopes: name, Symmetric: true}, true
		}
	}
	return ScoreShape{}, false
}

// isSlopes reports whether read is slopes[h] of an f32[H] buffer or
// slopes[b, h] of an f32[B, H] buffer.
func (s *scorer) isSlopes(read *dsl.IndexExpr) bool {
	id, ok := read.X.(*dsl.Ident)
	if !ok || s.buffer == nil {
		return false
	}
	b := s.buffer(id.Name)
	if b == nil || b.DType != "f32" || len(b.Dims) != len(read.Indices) {
		return false
	}
	want := []dsl.Var{dsl.VarH}
	sizes := []dsl.Var{dsl.SizeH}
	if len(read.Indices) == 2 {
		want = []dsl.Var{dsl.VarB, dsl.VarH}
		sizes = []dsl.Var{dsl.SizeB, dsl.SizeH}
	} else if len(read.Indices) != 1 {
		return false
	}
	for i, ix := range read.Indices {
		r, ok := dsl.Unparen(ix).(*dsl.VarRef)
		if !ok || r.Var != want[i] || !b.Dims[i].IsSize(sizes[i]) {
			return false
		}
	}
	return true
}

func equalPoly(a, b poly) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// monomial joins factors into a sorted key.
func monomial(factors ...string) string {
	var fs []string
	for _, f := range factors {
		if f != "" {
			fs = append(fs, strings.Split(f, "·")...)
		}
	}
	sort.Strings(fs)
	return strings.Join(fs, "·")
}

// poly expands e into a polynomial over score, the index variables, size
// symbols, buffer reads and abs(linear) factors.
func (s *scorer) poly(e dsl.Expr) (poly, bool) {
	switch x := dsl.Unparen(e).(type) {
	case *dsl.FloatLit:
		return poly{"": x.Value}, true
	case *dsl.IntLit:
		return poly{"": float64(x.Value)}, true
	case *dsl.BoolLit:
		if x.Value {
			return poly{"": 1}, true
		}
		return poly{}, true
	case *dsl.VarRef:
		return poly{x.Var.String(): 1}, true
	case *dsl.IndexExpr:
		if s.lowered.TypeOf(x) == dsl.TypeBool {
			return nil, false
		}
		f := format.Expr(x)
		s.reads[f] = x
		return poly{f: 1}, true
	case *dsl.UnaryExpr:
		p, ok := s.poly(x.X)
		if !ok {
			return nil, false
		}
		switch x.Op {
		case dsl.OpPos:
			return p, true
		case dsl.OpNeg:
			return scalePoly(p, -1), true
		}
	case *dsl.BinaryExpr:
		a, ok1 := s.poly(x.X)
		b, ok2 := s.poly(x.Y)
		if !ok1 || !ok2 {
			return nil, false
		}
		switch x.Op {
		case dsl.OpAdd:
			return addPoly(a, b, 1)
		case dsl.OpSub:
			return addPoly(a, b, -1)
		case dsl.OpMul:
			return mulPoly(a, b)
		case dsl.OpDiv:
			if len(b) == 1 && b[""] != 0 {
				return scalePoly(a, 1/b[""]), true
			}
		}
	case *dsl.CallExpr:
		if normal.CallName(x) == "abs" && len(x.Args) == 1 {
			v, ok := normal.LinearOf(s.lowered, x.Args[0])
			if !ok || v.K != 0 {
				return nil, false
			}
			for _, k := range v.Coef {
				if k < 0 {
					v, _ = v.Scale(-1)
				}
				if k != 0 {
					break
				}
			}
			return poly{"abs(" + v.String() + ")": 1}, true
		}
	}
	return nil, false
}

func scalePoly(p poly, c float64) poly {
	out := poly{}
	for k, v := range p {
		if v*c != 0 {
			out[k] = v * c
		}
	}
	return out
}

func addPoly(a, b poly, sign float64) (poly, bool) {
	out := poly{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] += sign * v
		if out[k] == 0 {
			delete(out, k)
		}
	}
	return out, len(out) <= maxMonomials
}

func mulPoly(a, b poly) (poly, bool) {
	if len(a)*len(b) > maxMonomials {
		return nil, false
	}
	out := poly{}
	for ka, va := range a {
		for kb, vb := range b {
			k := monomial(ka, kb)
			out[k] += va * vb
			if out[k] == 0 {
				delete(out, k)
			}
		}
	}
	return out, true
}
