package eval

import (
	"errors"
	"math"
	"testing"

	"github.com/maskc/maskc/dsl"
)

var (
	inf     = math.Inf(1)
	nan     = math.NaN()
	negZero = math.Copysign(0, -1)
)

// literal turns a Value into the literal expression denoting it.
func literal(v dsl.Value) dsl.Expr {
	switch v.Type {
	case dsl.TypeBool:
		return blit(v.I != 0)
	case dsl.TypeInt:
		return ilit(v.I)
	}
	return flit(v.F)
}

func sameValue(a, b dsl.Value) bool {
	if a.Type != b.Type || a.I != b.I {
		return false
	}
	if math.IsNaN(a.F) && math.IsNaN(b.F) {
		return true
	}
	return math.Float64bits(a.F) == math.Float64bits(b.F)
}

// TestArithmetic runs Python's arithmetic through the evaluator. Each row
// was produced by evaluating the trailing comment with python3 (an int
// outside int64 is ErrIntegerOverflow); the same cases pass through
// dsl.BinaryOp in dsl/pyops_test.go.
func TestArithmetic(t *testing.T) {
	tests := []struct {
		op      dsl.Op
		x, y    dsl.Value
		want    dsl.Value
		wantErr error
	}{
		{dsl.OpFloorDiv, dsl.Int(7), dsl.Int(2), dsl.Int(3), nil},                                                    // 7 // 2
		{dsl.OpMod, dsl.Int(7), dsl.Int(2), dsl.Int(1), nil},                                                         // 7 % 2
		{dsl.OpFloorDiv, dsl.Int(7), dsl.Int(-2), dsl.Int(-4), nil},                                                  // 7 // -2
		{dsl.OpMod, dsl.Int(7), dsl.Int(-2), dsl.Int(-1), nil},                                                       // 7 % -2
		{dsl.OpFloorDiv, dsl.Int(-7), dsl.Int(2), dsl.Int(-4), nil},                                                  // -7 // 2
		{dsl.OpMod, dsl.Int(-7), dsl.Int(2), dsl.Int(1), nil},                                                        // -7 % 2
		{dsl.OpFloorDiv, dsl.Int(-7), dsl.Int(-2), dsl.Int(3), nil},                                                  // -7 // -2
		{dsl.OpMod, dsl.Int(-7), dsl.Int(-2), dsl.Int(-1), nil},                                                      // -7 % -2
		{dsl.OpFloorDiv, dsl.Float(3.5), dsl.Float(2.0), dsl.Float(1.0), nil},                                        // 3.5 // 2.0
		{dsl.OpMod, dsl.Float(3.5), dsl.Float(2.0), dsl.Float(1.5), nil},                                             // 3.5 % 2.0
		{dsl.OpFloorDiv, dsl.Float(3.5), dsl.Float(-2.0), dsl.Float(-2.0), nil},                                      // 3.5 // -2.0
		{dsl.OpMod, dsl.Float(3.5), dsl.Float(-2.0), dsl.Float(-0.5), nil},                                           // 3.5 % -2.0
		{dsl.OpFloorDiv, dsl.Float(-3.5), dsl.Float(2.0), dsl.Float(-2.0), nil},                                      // -3.5 // 2.0
		{dsl.OpMod, dsl.Float(-3.5), dsl.Float(2.0), dsl.Float(0.5), nil},                                            // -3.5 % 2.0
		{dsl.OpFloorDiv, dsl.Float(-3.5), dsl.Float(-2.0), dsl.Float(1.0), nil},                                      // -3.5 // -2.0
		{dsl.OpMod, dsl.Float(-3.5), dsl.Float(-2.0), dsl.Float(-1.5), nil},                                          // -3.5 % -2.0
		{dsl.OpFloorDiv, dsl.Int(-3), dsl.Float(2.0), dsl.Float(-2.0), nil},                                          // -3 // 2.0
		{dsl.OpMod, dsl.Int(-3), dsl.Float(2.0), dsl.Float(1.0), nil},                                                // -3 % 2.0
		{dsl.OpFloorDiv, dsl.Bool(true), dsl.Int(-2), dsl.Int(-1), nil},                                              // True // -2
		{dsl.OpMod, dsl.Bool(true), dsl.Int(-2), dsl.Int(-1), nil},                                                   // True % -2
		{dsl.OpFloorDiv, dsl.Int(5), dsl.Int(0), dsl.Value{}, dsl.ErrDivisionByZero},                                 // 5 // 0
		{dsl.OpMod, dsl.Int(5), dsl.Int(0), dsl.Value{}, dsl.ErrDivisionByZero},                                      // 5 % 0
		{dsl.OpFloorDiv, dsl.Float(5.0), dsl.Float(0.0), dsl.Value{}, dsl.ErrDivisionByZero},                         // 5.0 // 0.0
		{dsl.OpMod, dsl.Float(5.0), dsl.Float(0.0), dsl.Value{}, dsl.ErrDivisionByZero},                              // 5.0 % 0.0
		{dsl.OpFloorDiv, dsl.Int(5), dsl.Float(0.0), dsl.Value{}, dsl.ErrDivisionByZero},                             // 5 // 0.0
		{dsl.OpMod, dsl.Int(5), dsl.Float(0.0), dsl.Value{}, dsl.ErrDivisionByZero},                                  // 5 % 0.0
		{dsl.OpFloorDiv, dsl.Float(-5.0), dsl.Float(inf), dsl.Float(-1.0), nil},                                      // -5.0 // inf
		{dsl.OpMod, dsl.Float(-5.0), dsl.Float(inf), dsl.Float(inf), nil},                                            // -5.0 % inf
		{dsl.OpFloorDiv, dsl.Int(-9223372036854775808), dsl.Int(-1), dsl.Value{}, dsl.ErrIntegerOverflow},            // -9223372036854775808 // -1
		{dsl.OpMod, dsl.Int(-9223372036854775808), dsl.Int(-1), dsl.Int(0), nil},                                     // -9223372036854775808 % -1
		{dsl.OpAdd, dsl.Int(4611686018427387904), dsl.Int(4611686018427387904), dsl.Value{}, dsl.ErrIntegerOverflow}, // 4611686018427387904 + 4611686018427387904
		{dsl.OpSub, dsl.Int(4611686018427387904), dsl.Int(4611686018427387904), dsl.Int(0), nil},                     // 4611686018427387904 - 4611686018427387904
		{dsl.OpMul, dsl.Int(4611686018427387904), dsl.Int(4611686018427387904), dsl.Value{}, dsl.ErrIntegerOverflow}, // 4611686018427387904 * 4611686018427387904
		{dsl.OpAdd, dsl.Int(-9223372036854775808), dsl.Int(1), dsl.Int(-9223372036854775807), nil},                   // -9223372036854775808 + 1
		{dsl.OpSub, dsl.Int(-9223372036854775808), dsl.Int(1), dsl.Value{}, dsl.ErrIntegerOverflow},                  // -9223372036854775808 - 1
		{dsl.OpMul, dsl.Int(-9223372036854775808), dsl.Int(1), dsl.Int(-9223372036854775808), nil},                   // -9223372036854775808 * 1
		{dsl.OpAdd, dsl.Bool(true), dsl.Float(2.5), dsl.Float(3.5), nil},                                             // True + 2.5
		{dsl.OpSub, dsl.Bool(true), dsl.Float(2.5), dsl.Float(-1.5), nil},                                            // True - 2.5
		{dsl.OpMul, dsl.Bool(true), dsl.Float(2.5), dsl.Float(2.5), nil},                                             // True * 2.5
		{dsl.OpAdd, dsl.Int(3), dsl.Bool(true), dsl.Int(4), nil},                                                     // 3 + True
		{dsl.OpSub, dsl.Int(3), dsl.Bool(true), dsl.Int(2), nil},                                                     // 3 - True
		{dsl.OpMul, dsl.Int(3), dsl.Bool(true), dsl.Int(3), nil},                                                     // 3 * True
		{dsl.OpDiv, dsl.Int(-7), dsl.Int(2), dsl.Float(-3.5), nil},                                                   // -7 / 2
		{dsl.OpDiv, dsl.Int(1), dsl.Int(0), dsl.Value{}, dsl.ErrDivisionByZero},                                      // 1 / 0
		{dsl.OpDiv, dsl.Float(1.0), dsl.Float(0.0), dsl.Value{}, dsl.ErrDivisionByZero},                              // 1.0 / 0.0
		{dsl.OpDiv, dsl.Int(1152921504606846977), dsl.Int(3), dsl.Float(3.843071682022823e+17), nil},                 // 1152921504606846977 / 3
		{dsl.OpPow, dsl.Int(2), dsl.Int(10), dsl.Int(1024), nil},                                                     // 2 ** 10
		{dsl.OpPow, dsl.Int(2), dsl.Int(63), dsl.Value{}, dsl.ErrIntegerOverflow},                                    // 2 ** 63
		{dsl.OpPow, dsl.Int(-2), dsl.Int(63), dsl.Int(-9223372036854775808), nil},                                    // -2 ** 63
		{dsl.OpPow, dsl.Int(2), dsl.Int(-1), dsl.Float(0.5), nil},                                                    // 2 ** -1
		{dsl.OpPow, dsl.Int(0), dsl.Int(-1), dsl.Value{}, dsl.ErrDivisionByZero},                                     // 0 ** -1
		{dsl.OpPow, dsl.Float(-8.0), dsl.Float(0.3333333333333333), dsl.Value{}, dsl.ErrComplexResult},               // -8.0 ** 0.3333333333333333
		{dsl.OpPow, dsl.Float(10.0), dsl.Float(400.0), dsl.Value{}, dsl.ErrFloatOverflow},                            // 10.0 ** 400.0
		{dsl.OpPow, dsl.Float(2.0), dsl.Float(0.5), dsl.Float(1.4142135623730951), nil},                              // 2.0 ** 0.5
		{dsl.OpPow, dsl.Bool(true), dsl.Int(3), dsl.Int(1), nil},                                                     // True ** 3
	}
	for _, tt := range tests {
		e := bin(tt.op, literal(tt.x), literal(tt.y))
		got, err := evalValue(dsl.MaskMod, e, smallEnv(), 0, [4]int64{})
		if tt.wantErr != nil {
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("%v %v %v: err = %v, want %v", tt.x, tt.op, tt.y, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !sameValue(got, tt.want) {
			t.Errorf("%v %v %v = %v (%v), %v; want %v (%v)", tt.x, tt.op, tt.y, got, got.Type, err, tt.want, tt.want.Type)
		}
	}
}
