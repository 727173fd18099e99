package dsl

// Op is an operator of the expression language.
type Op int

// The operators. Precedence follows Python's, lowest first:
// `if else`, `or`, `and`, `not`, comparisons, `|`, `^`, `&`, `<< >>`, `+ -`,
// `* / // %`, unary `- + ~`, `**` (right associative, binding tighter than
// a unary minus on its left: `-2 ** 2 == -4`).
const (
	OpInvalid Op = iota

	// Arithmetic.
	OpAdd      // +
	OpSub      // -
	OpMul      // *
	OpDiv      // /  true division, always float
	OpFloorDiv // // floor division (Python semantics)
	OpMod      // %  floor modulo: the result has the divisor's sign
	OpPow      // **

	// Logical; on ints & | ^ are bitwise, as in Python.
	OpAnd    // and
	OpOr     // or
	OpBitAnd // &
	OpBitOr  // |
	OpBitXor // ^

	// Shifts of ints (Python's: x << n is x * 2**n, x >> n is x // 2**n,
	// a negative n an error).
	OpShl // <<
	OpShr // >>

	// Unary.
	OpNeg    // -x
	OpPos    // +x
	OpNot    // not x
	OpInvert // ~x: logical not on bool, bitwise not on int

	// Comparisons.
	OpEQ // ==
	OpNE // !=
	OpLT // <
	OpLE // <=
	OpGT // >
	OpGE // >=

	// Identity with None, decided at compile time.
	OpIs    // is
	OpIsNot // is not
)

var opText = [...]string{
	OpInvalid: "?", OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpFloorDiv: "//", OpMod: "%", OpPow: "**",
	OpAnd: "and", OpOr: "or", OpBitAnd: "&", OpBitOr: "|", OpBitXor: "^", OpShl: "<<", OpShr: ">>",
	OpNeg: "-", OpPos: "+", OpNot: "not", OpInvert: "~",
	OpEQ: "==", OpNE: "!=", OpLT: "<", OpLE: "<=", OpGT: ">", OpGE: ">=",
	OpIs: "is", OpIsNot: "is not",
}

// String returns the operator as written in source, e.g. "//".
func (o Op) String() string {
	if o < 0 || int(o) >= len(opText) {
		return "?"
	}
	return opText[o]
}

// IsComparison reports whether o is one of == != < <= > >=.
func (o Op) IsComparison() bool { return o >= OpEQ && o <= OpGE }

// Precedence returns the binding strength of a binary operator (higher binds
// tighter), following Python; 0 for non-binary operators. Comparisons share
// one level.
func (o Op) Precedence() int {
	switch o {
	case OpOr:
		return 1
	case OpAnd:
		return 2
	case OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE, OpIs, OpIsNot:
		return 4
	case OpBitOr:
		return 5
	case OpBitXor:
		return 6
	case OpBitAnd:
		return 7
	case OpShl, OpShr:
		return 8
	case OpAdd, OpSub:
		return 9
	case OpMul, OpDiv, OpFloorDiv, OpMod:
		return 10
	case OpPow:
		return 12
	}
	return 0
}

// Negate returns the comparison that holds exactly when o does not
// (`<` -> `>=`), and OpInvalid for other operators.
func (o Op) Negate() Op {
	switch o {
	case OpEQ:
		return OpNE
	case OpNE:
		return OpEQ
	case OpLT:
		return OpGE
	case OpLE:
		return OpGT
	case OpGT:
		return OpLE
	case OpGE:
		return OpLT
	}
	return OpInvalid
}

// Swap returns the comparison with its operands exchanged (`<` -> `>`),
// and OpInvalid for other operators.
func (o Op) Swap() Op {
	switch o {
	case OpEQ, OpNE:
		return o
	case OpLT:
		return OpGT
	case OpLE:
		return OpGE
	case OpGT:
		return OpLT
	case OpGE:
		return OpLE
	}
	return OpInvalid
}
