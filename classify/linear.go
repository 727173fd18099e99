package classify

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// numVars is the number of dsl.Var values a Linear form has coefficients for.
const numVars = int(dsl.SizeKV) + 1

// Linear is an integer linear form Σ Coef[v]·v + K over the index variables
// b, h, q, kv and the size symbols B, H, HKV, Q, KV (never score).
type Linear struct {
	// Coef holds one coefficient per dsl.Var; Coef[dsl.VarScore] is always 0.
	Coef [numVars]int64
	// K is the constant term.
	K int64
}

// constLinear is the form with value k.
func constLinear(k int64) Linear { return Linear{K: k} }

// varLinear is the form 1·v.
func varLinear(v dsl.Var) Linear {
	var l Linear
	l.Coef[v] = 1
	return l
}

// IsConst reports whether l has no variable term.
func (l Linear) IsConst() bool {
	for _, c := range l.Coef {
		if c != 0 {
			return false
		}
	}
	return true
}

// Uses reports whether v has a non-zero coefficient.
func (l Linear) Uses(v dsl.Var) bool { return l.Coef[v] != 0 }

// only reports whether every non-zero coefficient belongs to one of vs.
func (l Linear) only(vs ...dsl.Var) bool {
	for v, c := range l.Coef {
		if c == 0 {
			continue
		}
		found := false
		for _, w := range vs {
			if dsl.Var(v) == w {
				found = true
			}
		}
		if !found {
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
	r.K, ok = addInt(l.K, m.K)
	return r, ok
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
	r.K, ok = mulInt(l.K, c)
	return r, ok
}

// sub returns l - m, or false on overflow.
func (l Linear) sub(m Linear) (Linear, bool) {
	n, ok := m.scale(-1)
	if !ok {
		return n, false
	}
	return l.add(n)
}

// String prints the form with variables first, e.g. "q - kv + 3".
func (l Linear) String() string {
	var b strings.Builder
	for v, c := range l.Coef {
		if c == 0 {
			continue
		}
		name := dsl.Var(v).String()
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

func addInt(a, b int64) (int64, bool) {
	s := a + b
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, false
	}
	return s, true
}

func mulInt(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	hi, lo := bits.Mul64(uabs(a), uabs(b))
	neg := (a < 0) != (b < 0)
	if hi != 0 || (!neg && lo > 1<<63-1) || (neg && lo > 1<<63) {
		return 0, false
	}
	if neg {
		return int64(-lo), true
	}
	return int64(lo), true
}

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
