package dsl

import (
	"fmt"
	"math"
	"math/big"
)

// Python's int arithmetic on int64: exact, with floor division and modulo,
// and ErrIntegerOverflow where Python's unbounded ints would leave int64.
// The checker folds with these, the reference evaluator computes with them.

// AddInt64, SubInt64 and MulInt64 are the one checked int64 arithmetic:
// the result and whether it fits in int64 (on false the result is 0). The
// Int* operations below, the code generator's range analysis and the
// normal form's linear forms all use them.

// AddInt64 returns a + b and whether it fits in int64.
func AddInt64(a, b int64) (int64, bool) {
	c := a + b
	if (a^c)&(b^c) < 0 {
		return 0, false
	}
	return c, true
}

// SubInt64 returns a - b and whether it fits in int64.
func SubInt64(a, b int64) (int64, bool) {
	c := a - b
	if (a^b)&(a^c) < 0 {
		return 0, false
	}
	return c, true
}

// MulInt64 returns a * b and whether it fits in int64.
func MulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	return c, true
}

// checked turns a checked result into Python's: the value or
// ErrIntegerOverflow.
func checked(c int64, ok bool) (int64, error) {
	if !ok {
		return 0, ErrIntegerOverflow
	}
	return c, nil
}

// IntAdd returns a + b, or ErrIntegerOverflow.
func IntAdd(a, b int64) (int64, error) { return checked(AddInt64(a, b)) }

// IntSub returns a - b, or ErrIntegerOverflow.
func IntSub(a, b int64) (int64, error) { return checked(SubInt64(a, b)) }

// IntMul returns a * b, or ErrIntegerOverflow.
func IntMul(a, b int64) (int64, error) { return checked(MulInt64(a, b)) }

// IntFloorDiv returns Python's a // b: the quotient rounded toward minus
// infinity. b == 0 is ErrDivisionByZero; MinInt64 // -1 is
// ErrIntegerOverflow.
func IntFloorDiv(a, b int64) (int64, error) {
	if b == 0 {
		return 0, ErrDivisionByZero
	}
	if b == -1 && a == math.MinInt64 {
		return 0, ErrIntegerOverflow
	}
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q, nil
}

// IntMod returns Python's a % b, which has the sign of b (or is 0).
// b == 0 is ErrDivisionByZero.
func IntMod(a, b int64) (int64, error) {
	if b == 0 {
		return 0, ErrDivisionByZero
	}
	r := a % b // Go defines MinInt64 % -1 == 0
	if r != 0 && (r < 0) != (b < 0) {
		r += b
	}
	return r, nil
}

// IntTrueDiv returns Python's a / b for ints: the exact quotient rounded to
// the nearest float64. b == 0 is ErrDivisionByZero.
func IntTrueDiv(a, b int64) (float64, error) {
	if b == 0 {
		return 0, ErrDivisionByZero
	}
	const exact = 1 << 53
	if a >= -exact && a <= exact && b >= -exact && b <= exact {
		return float64(a) / float64(b), nil // both exact: one rounding
	}
	if a == 0 {
		return math.Copysign(0, float64(b)), nil // 0 / -n == -0.0
	}
	f, _ := new(big.Rat).SetFrac(big.NewInt(a), big.NewInt(b)).Float64()
	return f, nil
}

// MaxIntPowExponent is the largest constant exponent of an int power with
// a non-constant base (generated code unrolls it by squaring; past 62 only
// bases -1, 0 and 1 stay in int64).
const MaxIntPowExponent = 1 << 20

// IntPow returns a ** e for e >= 0, or ErrIntegerOverflow. A negative e is
// a float power in Python; IntPow refuses it with ErrOperandType.
func IntPow(a, e int64) (int64, error) {
	if e < 0 {
		return 0, fmt.Errorf("%w: int ** negative int is a float", ErrOperandType)
	}
	r := int64(1)
	for {
		var err error
		if e&1 != 0 {
			if r, err = IntMul(r, a); err != nil {
				return 0, err
			}
		}
		e >>= 1
		if e == 0 {
			return r, nil
		}
		// |a| >= 2 here means the final |r| >= a*a, so an overflow of the
		// square is an overflow of the result.
		if a, err = IntMul(a, a); err != nil {
			return 0, err
		}
	}
}

// CompareIntFloat compares the int i with the non-NaN float f exactly, as
// Python does, returning -1, 0 or 1.
func CompareIntFloat(i int64, f float64) int {
	const two63 = 9223372036854775808.0
	switch {
	case f >= two63:
		return -1
	case f < -two63:
		return 1
	}
	t := math.Trunc(f)
	if c := cmpInt(i, int64(t)); c != 0 {
		return c
	}
	return cmpFloat(0, f-t)
}
