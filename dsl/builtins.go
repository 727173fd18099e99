package dsl

import "math"

// Builtin describes a built-in function of the expression language: its
// declaration and every implementation in one entry, as cel-go's library
// keeps a function's overloads with their implementations. The checker
// types and lowers calls with it (torch spellings and tensor methods
// included), the evaluator and constant folding run Float, the code
// generator writes C, the torch printer writes Torch, the grad package
// differentiates with Deriv, the warp-specialized forward reads Heavy, and
// the language server shows Doc on hover.
//
// A one-argument float function (exp, sin, erf, ...) is one entry with
// Float, C, Torch, Deriv and Heavy set and needs nothing elsewhere; the
// others (min, max, clamp, abs, floor, ceil, int, float, where) have typing
// or semantics of their own, written out where they are used.
type Builtin struct {
	// Name is the canonical name, e.g. "tanh". Sources may also write it
	// with a `torch.` prefix (`torch.tanh`); `math.` is accepted for the
	// float functions.
	Name string
	// MinArgs and MaxArgs bound the number of arguments.
	MinArgs, MaxArgs int
	// Doc is a one-line description with the exact semantics.
	Doc string
	// Float is, for a one-argument float function, its value in float64:
	// the reference evaluator and constant folding use it, so that both
	// agree bit for bit.
	Float func(float64) float64
	// C is the C spelling for float and for double arguments, e.g.
	// {"tanhf", "tanh"} (a maskc_py_* helper of hipsrc/runtime.h where the
	// C library has none).
	C [2]string
	// Torch is the torch function a printed reference calls, e.g.
	// "torch.tanh"; empty where the printer writes the call itself.
	Torch string
	// Method reports that the checker lowers the tensor method `x.NAME()`
	// to this built-in (torch has it with the same semantics).
	Method bool
	// Grad reports that a derivative flows through the arguments
	// (GradOperands).
	Grad bool
	// Deriv, for a one-argument float function, is the derivative's
	// contribution to the argument given the incoming gradient g, the
	// argument x and the call's result y, as torch's derivatives.yaml
	// writes it.
	Deriv func(d Deriver, g, x, y Expr) Expr
	// Heavy is the cost class: true for a transcendental function (a
	// multi-instruction sequence per logit), which makes a score mod too
	// heavy for the warp-specialized forward.
	Heavy bool
}

// Deriver builds the float expressions of a derivative; the grad package
// implements it, recording each node's type.
type Deriver interface {
	// Lit is the float literal v.
	Lit(v float64) Expr
	// Mul, Div, Add and Sub are the float operations on x and y.
	Mul(x, y Expr) Expr
	Div(x, y Expr) Expr
	Add(x, y Expr) Expr
	Sub(x, y Expr) Expr
	// Neg is -x.
	Neg(x Expr) Expr
	// Call is the one-argument float built-in name applied to x.
	Call(name string, x Expr) Expr
}

// mLn2 is M_LN2, the constant torch's exp2 and log2 backward use.
const mLn2 = 0.693147180559945309417232121458176568

// unary returns the entry of a one-argument float function.
func unary(name, doc string, f func(float64) float64, c32, c64 string, deriv func(d Deriver, g, x, y Expr) Expr) *Builtin {
	return &Builtin{Name: name, MinArgs: 1, MaxArgs: 1, Doc: doc, Float: f, C: [2]string{c32, c64},
		Torch: "torch." + name, Method: true, Grad: true, Deriv: deriv, Heavy: true}
}

// Builtins lists every built-in function by canonical name.
var Builtins = map[string]*Builtin{
	"min":   {Name: "min", MinArgs: 2, MaxArgs: 2, Grad: true, Doc: "min(x, y): the smaller of x and y; int if both are int, else float"},
	"max":   {Name: "max", MinArgs: 2, MaxArgs: 2, Grad: true, Doc: "max(x, y): the larger of x and y; int if both are int, else float"},
	"abs":   {Name: "abs", MinArgs: 1, MaxArgs: 1, Grad: true, Method: true, Torch: "torch.abs", Doc: "abs(x): absolute value, same type as x"},
	"clamp": {Name: "clamp", MinArgs: 3, MaxArgs: 3, Grad: true, Doc: "clamp(x, lo, hi): min(max(x, lo), hi), as torch.clamp"},
	"exp": unary("exp", "exp(x): e**x, float", math.Exp, "expf", "exp",
		func(d Deriver, g, x, y Expr) Expr { return d.Mul(g, y) }),
	"exp2": unary("exp2", "exp2(x): 2**x, float", math.Exp2, "exp2f", "exp2",
		func(d Deriver, g, x, y Expr) Expr { return d.Mul(d.Mul(g, y), d.Lit(mLn2)) }),
	"log": unary("log", "log(x): natural logarithm, float (-inf at 0, nan below)", Log, "logf", "log",
		func(d Deriver, g, x, y Expr) Expr { return d.Div(g, x) }),
	"log2": unary("log2", "log2(x): base-2 logarithm, float", math.Log2, "log2f", "log2",
		func(d Deriver, g, x, y Expr) Expr { return d.Div(g, d.Mul(x, d.Lit(mLn2))) }),
	"sqrt": unary("sqrt", "sqrt(x): square root, float (nan below 0)", math.Sqrt, "sqrtf", "sqrt",
		func(d Deriver, g, x, y Expr) Expr { return d.Div(g, d.Mul(d.Lit(2), y)) }), // inf at 0
	"tanh": unary("tanh", "tanh(x): hyperbolic tangent, float", math.Tanh, "tanhf", "tanh",
		func(d Deriver, g, x, y Expr) Expr { return d.Mul(g, d.Sub(d.Lit(1), d.Mul(y, y))) }),
	"sigmoid": unary("sigmoid", "sigmoid(x): 1 / (1 + exp(-x)), float", Sigmoid, "maskc_py_sigmoid", "maskc_py_sigmoid",
		func(d Deriver, g, x, y Expr) Expr { return d.Mul(d.Mul(g, d.Sub(d.Lit(1), y)), y) }),
	"sin": unary("sin", "sin(x): sine of x radians, float", math.Sin, "sinf", "sin",
		func(d Deriver, g, x, y Expr) Expr { return d.Mul(g, d.Call("cos", x)) }),
	"cos": unary("cos", "cos(x): cosine of x radians, float", math.Cos, "cosf", "cos",
		func(d Deriver, g, x, y Expr) Expr { return d.Mul(g, d.Neg(d.Call("sin", x))) }),
	"tan": unary("tan", "tan(x): tangent of x radians, float", math.Tan, "tanf", "tan",
		func(d Deriver, g, x, y Expr) Expr { return d.Mul(g, d.Add(d.Lit(1), d.Mul(y, y))) }),
	"erf": unary("erf", "erf(x): the error function 2/sqrt(pi) * integral of exp(-t**2) from 0 to x, float", math.Erf, "erff", "erf",
		func(d Deriver, g, x, y Expr) Expr {
			return d.Mul(d.Mul(d.Lit(2/math.Sqrt(math.Pi)), d.Call("exp", d.Neg(d.Mul(x, x)))), g)
		}),
	"floor": {Name: "floor", MinArgs: 1, MaxArgs: 1, Method: true, C: [2]string{"floorf", "floor"}, Torch: "torch.floor", Doc: "floor(x): round toward -inf; same type as x (as torch.floor)"},
	"ceil":  {Name: "ceil", MinArgs: 1, MaxArgs: 1, Method: true, C: [2]string{"ceilf", "ceil"}, Torch: "torch.ceil", Doc: "ceil(x): round toward +inf; same type as x (as torch.ceil)"},
	"int":   {Name: "int", MinArgs: 1, MaxArgs: 1, Doc: "int(x): x as an int, a float truncated toward zero (Python's int(), torch's .long(), .int(), .to(torch.int64)); NaN gives 0 and a float outside the int64 range its nearest bound"},
	"float": {Name: "float", MinArgs: 1, MaxArgs: 1, Grad: true, Doc: "float(x): x as a float (Python's float(), torch's .float(), .to(torch.float32)); True is 1.0"},
	"where": {Name: "where", MinArgs: 3, MaxArgs: 3, Doc: "where(c, x, y): x where c holds, else y (as torch.where); both branches are evaluated"},
}

// LookupBuiltin resolves a possibly prefixed name (`torch.tanh`,
// `math.exp`) to its built-in, or nil.
func LookupBuiltin(name string) *Builtin {
	for _, p := range []string{"torch.", "math."} {
		if len(name) > len(p) && name[:len(p)] == p {
			name = name[len(p):]
			break
		}
	}
	return Builtins[name]
}
