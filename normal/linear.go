package normal

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// NumVars is the number of dsl.Var values a Linear form has coefficients for.
const NumVars = int(dsl.SizeKV) + 1

// MaxExtras is the number of extra variables (floor quotients and symbols
// free of q and kv, Form.Extras) one form may use.
const MaxExtras = 16

// Linear is an integer linear form Σ Coef[v]·v + Σ X[i]·x_i + K over the
// index variables b, h, q, kv, the size symbols B, H, HKV, Q, KV (never
// score) and the extra variables x_i of its Form (Form.Extras[i]). It is
// comparable with ==.
type Linear struct {
	// Coef holds one coefficient per dsl.Var; Coef[dsl.VarScore] is always 0.
	Coef [NumVars]int64
	// X holds one coefficient per extra variable of the form.
	X [MaxExtras]int64
	// K is the constant term.
	K int64
}

// Const is the form with value k.
func Const(k int64) Linear { return Linear{K: k} }

// Var is the form 1·v.
func Var(v dsl.Var) Linear {
	var l Linear
	l.Coef[v] = 1
	return l
}

// extraLinear is the form 1·x_i.
func extraLinear(i int) Linear {
	var l Linear
	l.X[i] = 1
	return l
}

// IsConst reports whether l has no variable term.
func (l Linear) IsConst() bool {
	for _, c := range l.Coef {
		if c != 0 {
			return false
		}
	}
	for _, c := range l.X {
		if c != 0 {
			return false
		}
	}
	return true
}

// UsesExtras reports whether l has a non-zero coefficient on an extra
// variable.
func (l Linear) UsesExtras() bool {
	for _, c := range l.X {
		if c != 0 {
			return true
		}
	}
	return false
}

// Uses reports whether v has a non-zero coefficient.
func (l Linear) Uses(v dsl.Var) bool { return l.Coef[v] != 0 }

// maxCoef bounds the magnitude of a variable's coefficient: below it, a
// coefficient times an index or size (below 2^31) cannot overflow int64,
// so a form never hides an overflow of the expression it came from
// (`q * 2**62 // 2**62` stays opaque, as the kernels refuse it).
const maxCoef = 1 << 31

// coefOK reports whether every coefficient of l is below maxCoef.
func (l Linear) coefOK() bool {
	for _, c := range l.Coef {
		if c >= maxCoef || c <= -maxCoef {
			return false
		}
	}
	for _, c := range l.X {
		if c >= maxCoef || c <= -maxCoef {
			return false
		}
	}
	return true
}

// add returns l + m, or false on overflow.
func (l Linear) add(m Linear) (Linear, bool) {
	var r Linear
	var ok bool
	for i := range l.Coef {
		if r.Coef[i], ok = addInt(l.Coef[i], m.Coef[i]); !ok {
			return r, false
		}
	}
	for i := range l.X {
		if r.X[i], ok = addInt(l.X[i], m.X[i]); !ok {
			return r, false
		}
	}
	r.K, ok = addInt(l.K, m.K)
	return r, ok && r.coefOK()
}

// scale returns c·l, or false on overflow.
func (l Linear) scale(c int64) (Linear, bool) {
	var r Linear
	var ok bool
	for i := range l.Coef {
		if r.Coef[i], ok = mulInt(l.Coef[i], c); !ok {
			return r, false
		}
	}
	for i := range l.X {
		if r.X[i], ok = mulInt(l.X[i], c); !ok {
			return r, false
		}
	}
	r.K, ok = mulInt(l.K, c)
	return r, ok && r.coefOK()
}

// sub returns l - m, or false on overflow.
func (l Linear) sub(m Linear) (Linear, bool) {
	n, ok := m.scale(-1)
	if !ok {
		return n, false
	}
	return l.add(n)
}

// String prints the form with variables first, e.g. "q - kv + 3"; an
// extra variable prints as x0, x1, ...
func (l Linear) String() string { return l.Format(nil) }

// Format prints the form with variables first, naming extra variable i
// name(i) (x0, x1, ... when name is nil), e.g. "q - 4*(q // 4)".
func (l Linear) Format(name func(i int) string) string {
	var b strings.Builder
	type term struct {
		c    int64
		name string
	}
	var terms []term
	for v, c := range l.Coef {
		if c != 0 {
			terms = append(terms, term{c, dsl.Var(v).String()})
		}
	}
	for i, c := range l.X {
		if c == 0 {
			continue
		}
		n := fmt.Sprintf("x%d", i)
		if name != nil {
			n = name(i)
		}
		if c != 1 && c != -1 && strings.Contains(n, " ") {
			n = "(" + n + ")"
		}
		terms = append(terms, term{c, n})
	}
	for _, t := range terms {
		c, name := t.c, t.name
		switch {
		case b.Len() == 0 && c == 1:
		case b.Len() == 0 && c == -1:
			b.WriteString("-")
		case b.Len() == 0:
			fmt.Fprintf(&b, "%d*", c)
		case c == 1:
			b.WriteString(" + ")
		case c == -1:
			b.WriteString(" - ")
		case c < 0:
			fmt.Fprintf(&b, " - %d*", uneg(c))
		default:
			fmt.Fprintf(&b, " + %d*", c)
		}
		b.WriteString(name)
	}
	switch {
	case b.Len() == 0:
		return fmt.Sprint(l.K)
	case l.K > 0:
		fmt.Fprintf(&b, " + %d", l.K)
	case l.K < 0:
		fmt.Fprintf(&b, " - %d", uneg(l.K))
	}
	return b.String()
}

// uneg is |c| for a negative c, printed without overflow for MinInt64.
func uneg(c int64) uint64 { return uint64(-(c + 1)) + 1 }

// addInt and mulInt return ok == false on int64 overflow (dsl's one
// checked arithmetic).
var addInt, mulInt = dsl.AddInt64, dsl.MulInt64

func uabs(a int64) uint64 {
	if a < 0 {
		return uint64(-(a + 1)) + 1
	}
	return uint64(a)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// floorDiv is Python's a // b for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

// Scale returns c·l, or false on overflow.
func (l Linear) Scale(c int64) (Linear, bool) { return l.scale(c) }
