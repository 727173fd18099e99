package dsl

import (
	"math"
	"strconv"
)

// Type is the type of an expression or declaration. Scalars follow Python's
// promotion: bool < int < float.
type Type int

const (
	// TypeInvalid marks an expression that failed to check; it suppresses
	// follow-on errors.
	TypeInvalid Type = iota
	// TypeBool is a truth value; a mask body has this type.
	TypeBool
	// TypeInt is a 64-bit signed integer (indices, sizes, int params).
	TypeInt
	// TypeFloat is a float; a score body has this type. The reference
	// evaluator computes in float64, kernels in float32.
	TypeFloat
	// TypeMask is a mask_mod value (a mod reference, and_masks(...), ...).
	TypeMask
	// TypeScore is a score_mod value.
	TypeScore
	// TypeBuffer is a captured tensor name, meaningful only when indexed.
	TypeBuffer
	// TypeTuple is a tuple, e.g. a window `(1023, 0)`.
	TypeTuple
	// TypeWord is a bare word in a setting, e.g. `bshd` or `bf16`.
	TypeWord
	// TypeNone is Python's None: a factory argument or default, compared
	// with `is None` at compile time; never a value in a mod.
	TypeNone
	// TypeFunc is a helper function (a def that is not a mod), meaningful
	// only when called.
	TypeFunc
)

var typeNames = [...]string{"invalid", "bool", "int", "float", "mask", "score", "buffer", "tuple", "word", "None", "function"}

// String returns the type's name as used in messages, e.g. "float".
func (t Type) String() string {
	if t < 0 || int(t) >= len(typeNames) {
		return "invalid"
	}
	return typeNames[t]
}

// IsNumeric reports whether t is bool, int or float (bools promote to int in
// arithmetic, as in Python).
func (t Type) IsNumeric() bool { return t == TypeBool || t == TypeInt || t == TypeFloat }

// Promote returns the Python result type of arithmetic on a and b:
// float if either is float, else int.
func Promote(a, b Type) Type {
	if a == TypeFloat || b == TypeFloat {
		return TypeFloat
	}
	return TypeInt
}

// Value is a scalar constant or run-time value: a bool, an int64 or a
// float64. The zero Value is invalid.
type Value struct {
	// Type is TypeBool, TypeInt or TypeFloat (TypeInvalid for no value).
	Type Type
	// I holds an int, or a bool as 0/1.
	I int64
	// F holds a float.
	F float64
}

// Bool makes a bool Value.
func Bool(b bool) Value {
	if b {
		return Value{Type: TypeBool, I: 1}
	}
	return Value{Type: TypeBool}
}

// Int makes an int Value.
func Int(i int64) Value { return Value{Type: TypeInt, I: i} }

// Float makes a float Value.
func Float(f float64) Value { return Value{Type: TypeFloat, F: f} }

// IsValid reports whether v holds a value.
func (v Value) IsValid() bool { return v.Type == TypeBool || v.Type == TypeInt || v.Type == TypeFloat }

// AsFloat converts v to float64 (true is 1).
func (v Value) AsFloat() float64 {
	if v.Type == TypeFloat {
		return v.F
	}
	return float64(v.I)
}

// AsInt returns v as an int64; bools give 0 or 1, floats truncate.
func (v Value) AsInt() int64 {
	if v.Type == TypeFloat {
		return int64(v.F)
	}
	return v.I
}

// Truth is Python truthiness: non-zero is true.
func (v Value) Truth() bool {
	if v.Type == TypeFloat {
		return v.F != 0
	}
	return v.I != 0
}

// String formats v as the .flex literal that denotes it: "True", "42",
// "30.0", "inf", "-inf", "nan".
func (v Value) String() string {
	switch v.Type {
	case TypeBool:
		if v.I != 0 {
			return "True"
		}
		return "False"
	case TypeInt:
		return strconv.FormatInt(v.I, 10)
	case TypeFloat:
		switch {
		case math.IsInf(v.F, 1):
			return "inf"
		case math.IsInf(v.F, -1):
			return "-inf"
		case math.IsNaN(v.F):
			return "nan"
		}
		s := strconv.FormatFloat(v.F, 'g', -1, 64)
		for _, c := range s {
			if c == '.' || c == 'e' || c == 'n' || c == 'i' {
				return s
			}
		}
		return s + ".0"
	}
	return "<invalid>"
}
