package dsl

// Builtin describes a built-in function of the expression language. The
// checker types calls with it, the evaluator and the code generator implement
// it, and the language server shows Doc on hover.
type Builtin struct {
	// Name is the canonical name, e.g. "tanh". Sources may also write it
	// with a `torch.` prefix (`torch.tanh`); `math.` is accepted for the
	// float functions.
	Name string
	// MinArgs and MaxArgs bound the number of arguments.
	MinArgs, MaxArgs int
	// Doc is a one-line description with the exact semantics.
	Doc string
}

// Builtins lists every built-in function by canonical name.
var Builtins = map[string]*Builtin{
	"min":     {Name: "min", MinArgs: 2, MaxArgs: 2, Doc: "min(x, y): the smaller of x and y; int if both are int, else float"},
	"max":     {Name: "max", MinArgs: 2, MaxArgs: 2, Doc: "max(x, y): the larger of x and y; int if both are int, else float"},
	"abs":     {Name: "abs", MinArgs: 1, MaxArgs: 1, Doc: "abs(x): absolute value, same type as x"},
	"clamp":   {Name: "clamp", MinArgs: 3, MaxArgs: 3, Doc: "clamp(x, lo, hi): min(max(x, lo), hi), as torch.clamp"},
	"exp":     {Name: "exp", MinArgs: 1, MaxArgs: 1, Doc: "exp(x): e**x, float"},
	"exp2":    {Name: "exp2", MinArgs: 1, MaxArgs: 1, Doc: "exp2(x): 2**x, float"},
	"log":     {Name: "log", MinArgs: 1, MaxArgs: 1, Doc: "log(x): natural logarithm, float (-inf at 0, nan below)"},
	"log2":    {Name: "log2", MinArgs: 1, MaxArgs: 1, Doc: "log2(x): base-2 logarithm, float"},
	"sqrt":    {Name: "sqrt", MinArgs: 1, MaxArgs: 1, Doc: "sqrt(x): square root, float (nan below 0)"},
	"tanh":    {Name: "tanh", MinArgs: 1, MaxArgs: 1, Doc: "tanh(x): hyperbolic tangent, float"},
	"sigmoid": {Name: "sigmoid", MinArgs: 1, MaxArgs: 1, Doc: "sigmoid(x): 1 / (1 + exp(-x)), float"},
	"floor":   {Name: "floor", MinArgs: 1, MaxArgs: 1, Doc: "floor(x): round toward -inf; same type as x (as torch.floor)"},
	"ceil":    {Name: "ceil", MinArgs: 1, MaxArgs: 1, Doc: "ceil(x): round toward +inf; same type as x (as torch.ceil)"},
	"int":     {Name: "int", MinArgs: 1, MaxArgs: 1, Doc: "int(x): x as an int, a float truncated toward zero (Python's int(), torch's .long(), .int(), .to(torch.int64)); NaN gives 0 and a float outside the int64 range its nearest bound"},
	"float":   {Name: "float", MinArgs: 1, MaxArgs: 1, Doc: "float(x): x as a float (Python's float(), torch's .float(), .to(torch.float32)); True is 1.0"},
	"where":   {Name: "where", MinArgs: 3, MaxArgs: 3, Doc: "where(c, x, y): x where c holds, else y (as torch.where); both branches are evaluated"},
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
