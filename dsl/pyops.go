package dsl

import (
	"errors"
	"fmt"
	"math"
)

// This file gives the scalar operators and built-ins their Python meaning on
// Values, for constant folding in the checker and as the specification the
// reference evaluator is tested against. Where Python and int64 disagree
// (an int that no longer fits, a complex power) the operation is refused
// with an error rather than approximated.

// Errors returned by the scalar operations; the returned error wraps one of
// these, so callers can test with errors.Is and print err.Error().
var (
	// ErrDivisionByZero is `x / 0`, `x // 0`, `x % 0` (int or float) and
	// `0 ** -n`.
	ErrDivisionByZero = errors.New("division by zero")
	// ErrIntegerOverflow is an int result outside int64.
	ErrIntegerOverflow = errors.New("integer overflow")
	// ErrFloatOverflow is a float `**` whose finite operands give an
	// infinite result (Python raises OverflowError there).
	ErrFloatOverflow = errors.New("float overflow")
	// ErrComplexResult is a negative float raised to a non-integer power,
	// which Python answers with a complex number.
	ErrComplexResult = errors.New("negative number raised to a fractional power")
	// ErrNegativeShift is `x << n` or `x >> n` with n < 0 (Python's
	// ValueError: negative shift count).
	ErrNegativeShift = errors.New("negative shift count")
	// ErrOperandType is an operand of a type the operator does not take,
	// e.g. a float operand of `&`.
	ErrOperandType = errors.New("unsupported operand type")
)

// BitOp is x & y, x | y or x ^ y (op OpBitAnd, OpBitOr, OpBitXor) on
// two's-complement int64, which is Python's bitwise arithmetic on ints of
// that range.
func BitOp(op Op, x, y int64) int64 {
	switch op {
	case OpBitAnd:
		return x & y
	case OpBitOr:
		return x | y
	}
	return x ^ y
}

// Shift is Python's x << n (op OpShl, x * 2**n, ErrIntegerOverflow outside
// int64) or x >> n (OpShr, x // 2**n: -1 >> 70 == -1); n < 0 is
// ErrNegativeShift.
func Shift(op Op, x, n int64) (int64, error) {
	if n < 0 {
		return 0, fmt.Errorf("%w: %d %s %d", ErrNegativeShift, x, op, n)
	}
	if op == OpShr {
		return x >> min(n, 63), nil
	}
	if x == 0 {
		return 0, nil
	}
	if n > 63 || x<<n>>n != x {
		return 0, fmt.Errorf("%w: %d << %d", ErrIntegerOverflow, x, n)
	}
	return x << n, nil
}

func operandTypeError(op Op, x, y Value) error {
	return fmt.Errorf("%w for %s: %s and %s", ErrOperandType, op, x.Type, y.Type)
}

func unaryTypeError(op Op, x Value) error {
	return fmt.Errorf("%w for unary %s: %s", ErrOperandType, op, x.Type)
}

// UnaryOp applies -x, +x, not x, ~x with Python semantics (~ on bool is
// logical not, on int bitwise). -x and +x of a bool give an int, as in
// Python; -x of the most negative int64 is an integer overflow.
func UnaryOp(op Op, x Value) (Value, error) {
	if !x.IsValid() {
		return Value{}, unaryTypeError(op, x)
	}
	switch op {
	case OpNeg:
		if x.Type == TypeFloat {
			return Float(-x.F), nil
		}
		if x.I == math.MinInt64 {
			return Value{}, ErrIntegerOverflow
		}
		return Int(-x.I), nil
	case OpPos:
		if x.Type == TypeFloat {
			return x, nil
		}
		return Int(x.I), nil
	case OpNot:
		return Bool(!x.Truth()), nil
	case OpInvert:
		switch x.Type {
		case TypeBool:
			return Bool(x.I == 0), nil
		case TypeInt:
			return Int(^x.I), nil
		}
	}
	return Value{}, unaryTypeError(op, x)
}

// BinaryOp applies an arithmetic or logical operator with Python semantics
// and promotion (bool < int < float):
//
//   - + - * on ints are exact int64 arithmetic (ErrIntegerOverflow when the
//     result does not fit); with a float operand they are float64;
//   - / is true division and always gives a float (exactly rounded, as
//     Python's, also for ints beyond 2**53);
//   - // and % are floor division and floor modulo on ints and floats:
//     -3 // 2 == -2, -3 % 2 == 1, -3.5 % 2 == 0.5, 3 % -2 == -1; the
//     float forms follow CPython's float_divmod, including the infinities
//     (-5.0 // inf == -1.0, -5.0 % inf == inf);
//   - ** gives an int for int ** non-negative int, a float for int **
//     negative int; 0 ** negative is ErrDivisionByZero, a negative float
//     to a non-integer power ErrComplexResult, a finite float power that
//     overflows ErrFloatOverflow;
//   - & | ^ are logical on two bools and bitwise otherwise (bool & int is
//     an int, as in Python); floats are refused;
//   - << and >> shift ints (bools count as 0 and 1; floats are refused):
//     x << n is x * 2**n (ErrIntegerOverflow beyond int64), x >> n is
//     x // 2**n; a negative n is ErrNegativeShift;
//   - and / or take two bools.
//
// Division or modulo by zero, int or float, is ErrDivisionByZero.
func BinaryOp(op Op, x, y Value) (Value, error) {
	if !x.IsValid() || !y.IsValid() {
		return Value{}, operandTypeError(op, x, y)
	}
	switch op {
	case OpAnd, OpOr:
		if x.Type != TypeBool || y.Type != TypeBool {
			return Value{}, operandTypeError(op, x, y)
		}
		if op == OpAnd {
			return Bool(x.I != 0 && y.I != 0), nil
		}
		return Bool(x.I != 0 || y.I != 0), nil
	case OpBitAnd, OpBitOr, OpBitXor:
		if x.Type == TypeFloat || y.Type == TypeFloat {
			return Value{}, operandTypeError(op, x, y)
		}
		r := BitOp(op, x.I, y.I)
		if x.Type == TypeBool && y.Type == TypeBool {
			return Bool(r != 0), nil
		}
		return Int(r), nil
	case OpShl, OpShr:
		if x.Type == TypeFloat || y.Type == TypeFloat {
			return Value{}, operandTypeError(op, x, y)
		}
		i, err := Shift(op, x.I, y.I)
		return Int(i), err
	case OpDiv:
		if x.Type != TypeFloat && y.Type != TypeFloat {
			f, err := IntTrueDiv(x.I, y.I)
			return Float(f), err
		}
		if y.AsFloat() == 0 {
			return Value{}, ErrDivisionByZero
		}
		return Float(x.AsFloat() / y.AsFloat()), nil
	case OpPow:
		if x.Type != TypeFloat && y.Type != TypeFloat && y.I >= 0 {
			i, err := IntPow(x.I, y.I)
			return Int(i), err
		}
		f, err := FloatPow(x.AsFloat(), y.AsFloat())
		return Float(f), err
	case OpAdd, OpSub, OpMul, OpFloorDiv, OpMod:
	default:
		return Value{}, operandTypeError(op, x, y)
	}
	if x.Type == TypeFloat || y.Type == TypeFloat {
		a, b := x.AsFloat(), y.AsFloat()
		switch op {
		case OpAdd:
			return Float(a + b), nil
		case OpSub:
			return Float(a - b), nil
		case OpMul:
			return Float(a * b), nil
		case OpFloorDiv:
			q, _, err := FloatDivMod(a, b)
			return Float(q), err
		default:
			_, m, err := FloatDivMod(a, b)
			return Float(m), err
		}
	}
	a, b := x.I, y.I
	var (
		r   int64
		err error
	)
	switch op {
	case OpAdd:
		r, err = IntAdd(a, b)
	case OpSub:
		r, err = IntSub(a, b)
	case OpMul:
		r, err = IntMul(a, b)
	case OpFloorDiv:
		r, err = IntFloorDiv(a, b)
	default:
		r, err = IntMod(a, b)
	}
	return Int(r), err
}

// CompareOp applies == != < <= > >= across bool, int and float with Python
// semantics: an int and a float compare exactly (2**53 + 1 != 2.0**53),
// and NaN compares false except with !=.
func CompareOp(op Op, x, y Value) (bool, error) {
	if !x.IsValid() || !y.IsValid() || !op.IsComparison() {
		return false, operandTypeError(op, x, y)
	}
	var c int // -1, 0, 1; meaningful unless unordered
	switch {
	case x.Type != TypeFloat && y.Type != TypeFloat:
		c = cmpInt(x.I, y.I)
	case x.Type == TypeFloat && y.Type == TypeFloat:
		if math.IsNaN(x.F) || math.IsNaN(y.F) {
			return op == OpNE, nil
		}
		c = cmpFloat(x.F, y.F)
	case x.Type == TypeFloat:
		if math.IsNaN(x.F) {
			return op == OpNE, nil
		}
		c = -CompareIntFloat(y.I, x.F)
	default:
		if math.IsNaN(y.F) {
			return op == OpNE, nil
		}
		c = CompareIntFloat(x.I, y.F)
	}
	switch op {
	case OpEQ:
		return c == 0, nil
	case OpNE:
		return c != 0, nil
	case OpLT:
		return c < 0, nil
	case OpLE:
		return c <= 0, nil
	case OpGT:
		return c > 0, nil
	default:
		return c >= 0, nil
	}
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CallBuiltin evaluates a built-in of Builtins by canonical name (a
// `torch.` or `math.` prefix is also accepted), with the semantics in its
// Doc string:
//
//   - min, max, clamp: int when no argument is a float, bool when all are
//     bool, else float; a NaN argument gives NaN (torch.minimum/maximum);
//   - abs, floor, ceil: same type as the argument (a bool gives an int);
//   - the float functions (Builtin.Float: exp, log, sqrt, sin, ...): float, with torch's values at
//     the edges (log(0) == -inf, log(-1) and sqrt(-1) are NaN, exp of a
//     large argument is +inf);
//   - int: truncation toward zero (see TruncInt); float: conversion;
//   - where(c, x, y): c must be a bool; the result is x or y promoted to
//     their common type.
func CallBuiltin(name string, args []Value) (Value, error) {
	b := LookupBuiltin(name)
	if b == nil {
		return Value{}, fmt.Errorf("unknown built-in %q", name)
	}
	if len(args) < b.MinArgs || len(args) > b.MaxArgs {
		return Value{}, fmt.Errorf("%s takes %d argument(s), got %d", b.Name, b.MinArgs, len(args))
	}
	for _, a := range args {
		if !a.IsValid() {
			return Value{}, fmt.Errorf("%w for %s: %s", ErrOperandType, b.Name, a.Type)
		}
	}
	switch b.Name {
	case "min", "max":
		return minMax(b.Name == "max", args[0], args[1]), nil
	case "clamp":
		return minMax(false, minMax(true, args[0], args[1]), args[2]), nil
	case "abs":
		x := args[0]
		if x.Type == TypeFloat {
			return Float(math.Abs(x.F)), nil
		}
		if x.I == math.MinInt64 {
			return Value{}, ErrIntegerOverflow
		}
		if x.I < 0 {
			return Int(-x.I), nil
		}
		return Int(x.I), nil
	case "floor", "ceil":
		x := args[0]
		if x.Type != TypeFloat {
			return Int(x.I), nil
		}
		if b.Name == "floor" {
			return Float(math.Floor(x.F)), nil
		}
		return Float(math.Ceil(x.F)), nil
	case "int":
		if args[0].Type != TypeFloat {
			return Int(args[0].I), nil
		}
		return Int(TruncInt(args[0].F)), nil
	case "float":
		return Float(args[0].AsFloat()), nil
	case "where":
		c, x, y := args[0], args[1], args[2]
		if c.Type != TypeBool {
			return Value{}, fmt.Errorf("%w for where condition: %s (want bool)", ErrOperandType, c.Type)
		}
		t := whereType(x.Type, y.Type)
		if c.I != 0 {
			return convert(x, t), nil
		}
		return convert(y, t), nil
	}
	f := FloatFunc(b.Name)
	if f == nil {
		return Value{}, fmt.Errorf("built-in %s has no evaluator", b.Name)
	}
	return Float(f(args[0].AsFloat())), nil
}

// TruncInt converts f to an int64 as the built-in int does: truncation
// toward zero, NaN to 0, and values beyond the int64 range (infinities
// included) to the nearest bound. The generated kernels convert the same
// way (maskc_py_int in the kernel prelude).
func TruncInt(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= 9223372036854775807.0: // 2**63, the first float past the range
		return math.MaxInt64
	case f <= -9223372036854775808.0:
		return math.MinInt64
	}
	return int64(f)
}

// whereType is the common type of where's branches: bool only when both are.
func whereType(a, b Type) Type {
	if a == TypeBool && b == TypeBool {
		return TypeBool
	}
	return Promote(a, b)
}

// convert changes v to type t (bool->int->float only).
func convert(v Value, t Type) Value {
	switch t {
	case TypeFloat:
		return Float(v.AsFloat())
	case TypeInt:
		return Int(v.I)
	}
	return v
}

// minMax returns min(x, y) or max(x, y) in their common type; NaN
// propagates as in torch.minimum.
func minMax(isMax bool, x, y Value) Value {
	t := whereType(x.Type, y.Type)
	if t != TypeFloat {
		if (x.I < y.I) != isMax && x.I != y.I {
			return convert(x, t)
		}
		return convert(y, t)
	}
	a, b := x.AsFloat(), y.AsFloat()
	if isMax {
		return Float(FloatMax(a, b))
	}
	return Float(FloatMin(a, b))
}
