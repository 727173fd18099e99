package dsl

import (
	"fmt"
	"math"
)

// Python's float arithmetic and the float built-ins on float64, where Go's
// math package differs from CPython and torch: floor division and modulo
// (CPython's float_divmod), ** (CPython's float_pow, computed in
// double-double and rounded once), a log that is right on subnormals, and
// torch's NaN-propagating minimum and maximum.

// FloatDivMod returns Python's (x // y, x % y) on floats, following
// CPython's float_divmod: the modulo has the sign of y, and the quotient is
// snapped to an integral value. y == 0 is ErrDivisionByZero.
func FloatDivMod(x, y float64) (div, mod float64, err error) {
	if y == 0 {
		return 0, 0, ErrDivisionByZero
	}
	mod = math.Mod(x, y)
	d := (x - mod) / y
	if mod != 0 {
		if (y < 0) != (mod < 0) {
			mod += y
			d -= 1.0
		}
	} else {
		mod = math.Copysign(0, y)
	}
	if d != 0 {
		div = math.Floor(d)
		if d-div > 0.5 {
			div += 1.0
		}
	} else {
		div = math.Copysign(0, x/y)
	}
	return div, mod, nil
}

// FloatPow returns Python's x ** y on floats, following CPython's
// float_pow case by case: an infinite y is decided by |x| against 1 (so
// 0.0 ** -inf == inf), 0 to a negative finite power is ErrDivisionByZero,
// a negative x to a non-integer power ErrComplexResult, and a finite result
// too large for float64 ErrFloatOverflow; NaN follows C99 (1 ** nan == 1,
// nan ** 0 == 1). The value is computed in double-double precision and
// rounded once, so it is the correctly rounded power; glibc's pow, which
// Python calls, is within 0.52 ulp, so the two agree except in rare
// near-ties (26 of 60000 random cases), where they differ by one ulp.
func FloatPow(x, y float64) (float64, error) {
	switch {
	case y == 0:
		return 1, nil
	case math.IsNaN(x):
		return x, nil
	case math.IsNaN(y):
		if x == 1 {
			return 1, nil
		}
		return y, nil
	case math.IsInf(y, 0):
		switch ax := math.Abs(x); {
		case ax == 1:
			return 1, nil
		case (y > 0) == (ax > 1):
			return math.Inf(1), nil
		}
		return 0, nil
	case math.IsInf(x, 0):
		return math.Pow(x, y), nil // C99 rules, as CPython's
	case x == 0:
		if y < 0 {
			return 0, fmt.Errorf("%w: 0.0 cannot be raised to a negative power", ErrDivisionByZero)
		}
		return math.Pow(x, y), nil // x (keeping -0.0) for an odd integer y, else 0
	case x < 0 && y != math.Trunc(y):
		return 0, ErrComplexResult
	}
	negative := false
	if x < 0 { // y is an integer here
		x, negative = -x, math.Mod(y, 2) != 0
	}
	r := powPositive(x, y)
	if math.IsInf(r, 0) {
		return 0, ErrFloatOverflow
	}
	if negative {
		r = -r
	}
	return r, nil
}

// powPositive is x ** y for finite x > 0 and finite non-zero y, computed
// as exp(y * log(x)) in double-double arithmetic (about 100 bits), so the
// result is the correctly rounded float64 except in astronomically rare
// near-ties. Go's math.Pow is off by up to ~15 ulp for large exponents and
// by a factor of 3 for subnormal x (its log is wrong there on amd64).
func powPositive(x, y float64) float64 {
	if x == 1 {
		return 1
	}
	m, e := math.Frexp(x) // x = m * 2**e, m in [0.5, 1)
	if m < math.Sqrt2/2 {
		m, e = m*2, e-1
	}
	// log(m) = 2 atanh(z) = 2 (z + z**3/3 + z**5/5 + ...), z = (m-1)/(m+1),
	// |z| <= 0.172, so each term gains at least 5 bits.
	z := ddDiv(dd{m - 1, 0}, twoSum(m, 1))
	z2 := ddMul(z, z)
	sum, term := z, z
	for k := 3.0; k < 80; k += 2 {
		term = ddMul(term, z2)
		t := ddDivFloat(term, k)
		sum = ddAdd(sum, t)
		if math.Abs(t.hi) <= 0x1p-110*math.Abs(sum.hi) {
			break
		}
	}
	logx := ddAdd(ddMulFloat(ln2, float64(e)), dd{2 * sum.hi, 2 * sum.lo})
	switch t := y * logx.hi; {
	case t > 1000: // far past overflow; also keeps the products finite
		return math.Inf(1)
	case t < -1000:
		return 0
	}
	return ddExp(ddMulFloat(logx, y))
}

// ddExp is exp(t) rounded to float64, +Inf on overflow.
func ddExp(t dd) float64 {
	switch {
	case t.hi > 709.8:
		return math.Inf(1)
	case t.hi < -745.2:
		return 0
	}
	// t = k ln2 + r, |r| <= ln2/2; exp(r) = (1 + expm1(r/256))**256.
	k := math.Round(t.hi / ln2.hi)
	r := ddAdd(t, ddMulFloat(ln2, -k))
	s := dd{r.hi / 256, r.lo / 256}
	// expm1(s) by Taylor series, |s| < 0.00136: 12 terms reach 2**-120.
	p := dd{}
	for n := 12.0; n >= 1; n-- {
		p = ddDivFloat(ddMul(ddAdd(p, dd{1, 0}), s), n) // p = s/n * (1 + p)
	}
	for range 8 { // expm1(2s) = 2 expm1(s) + expm1(s)**2
		p = ddAdd(dd{2 * p.hi, 2 * p.lo}, ddMul(p, p))
	}
	one := ddAdd(dd{1, 0}, p) // in (0.7, 1.42)
	if k > -1022 {
		return math.Ldexp(one.hi, int(k)) // exact: a normal result
	}
	// A subnormal result: round the double-double once, to the subnormal
	// grid of 2**-1074, rather than to 53 bits and then again.
	u := math.Ldexp(one.hi, int(k)+1074) // < 2**53: exact
	n := math.Floor(u)
	switch f := (u - n) + math.Ldexp(one.lo, int(k)+1074); {
	case f > 0.5, f == 0.5 && math.Mod(n, 2) == 1:
		n++
	case f < -0.5, f == -0.5 && math.Mod(n, 2) == 1:
		n--
	}
	return math.Ldexp(n, -1074)
}

// dd is a double-double: the unevaluated sum hi + lo with |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

// ln2 is log(2) as a double-double.
var ln2 = dd{0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56}

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func ddAdd(a, b dd) dd {
	s := twoSum(a.hi, b.hi)
	t := twoSum(a.lo, b.lo)
	s = quickTwoSum(s.hi, s.lo+t.hi)
	return quickTwoSum(s.hi, s.lo+t.lo)
}

func ddMul(a, b dd) dd {
	p := a.hi * b.hi
	e := math.FMA(a.hi, b.hi, -p) + (a.hi*b.lo + a.lo*b.hi)
	return quickTwoSum(p, e)
}

func ddMulFloat(a dd, b float64) dd {
	p := a.hi * b
	e := math.FMA(a.hi, b, -p) + a.lo*b
	return quickTwoSum(p, e)
}

func ddDivFloat(a dd, b float64) dd {
	q1 := a.hi / b
	r := ddAdd(a, ddMulFloat(dd{q1, 0}, -b))
	q2 := r.hi / b
	return quickTwoSum(q1, q2)
}

func ddDiv(a, b dd) dd {
	q1 := a.hi / b.hi
	r := ddAdd(a, ddMul(b, dd{-q1, 0}))
	q2 := r.hi / b.hi
	r = ddAdd(r, ddMul(b, dd{-q2, 0}))
	q3 := r.hi / b.hi
	return ddAdd(quickTwoSum(q1, q2), dd{q3, 0})
}

// Log is the natural logarithm, also right for subnormal x (math.Log on
// amd64 is not: it gives -709.09 for 5e-324, whose log is -744.44).
func Log(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		return math.Log(x*0x1p54) - 54*math.Ln2
	}
	return math.Log(x)
}

// FloatFunc returns the float64 function of a one-argument float built-in
// (Builtin.Float: exp, sin, erf, ...) by canonical name, or nil; the
// reference evaluator uses the same functions so that folding and
// evaluation agree bit for bit.
func FloatFunc(name string) func(float64) float64 {
	if b := Builtins[name]; b != nil {
		return b.Float
	}
	return nil
}

// Sigmoid is 1 / (1 + exp(-x)), computed without overflow for large |x|.
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// FloatMin is torch.minimum on scalars: NaN if either is NaN, and -0 < +0.
func FloatMin(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Min(a, b)
}

// FloatMax is torch.maximum on scalars: NaN if either is NaN, and +0 > -0.
func FloatMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

// FloatUnderflows reports whether the decimal literal raw, which parsed as
// f, is a non-zero number that float64 rounds to zero (`1e-400`): taking
// it silently as 0 would turn a tiny divisor into a division by zero far
// from its cause. The lexer and -D overrides both refuse it.
func FloatUnderflows(raw string, f float64) bool {
	if f != 0 {
		return false
	}
	mant := raw
	for i := 0; i < len(raw); i++ {
		if raw[i] == 'e' || raw[i] == 'E' {
			mant = raw[:i]
			break
		}
	}
	for i := 0; i < len(mant); i++ {
		if mant[i] >= '1' && mant[i] <= '9' {
			return true
		}
	}
	return false
}
