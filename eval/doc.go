// Package eval is maskc's oracle: a float64 reference evaluator for lowered
// mask and score mods, and a float64 reference attention built on it. Every
// later stage (the classifier's exactness proofs, the generated kernels, the
// Turbo mapping) is tested against it.
//
// Compile turns a *dsl.Lowered into a Func, a tree of typed closures that
// evaluates one point in tens of nanoseconds. The semantics are Python's,
// as dsl.BinaryOp, dsl.CompareOp and dsl.CallBuiltin define them: ints are
// exact int64 with floor `//` and `%`, floats are float64, `and`, `or` and
// `x if c else y` short-circuit, `&`, `|` and where evaluate both sides.
// Where Python would raise (division by zero, an int overflowing int64) or
// a kernel must not go (a buffer index outside its extent, which Python
// would wrap around), evaluation returns an *Error positioned at the source
// span responsible; it never panics.
//
// CompileGrad and BindGrad evaluate the derivatives of a score
// (grad.Differentiate) in float64, with torch's IEEE arithmetic instead of
// Python's exceptions (a derivative such as 1/x is inf at 0, as in
// torch.autograd).
//
// Attention computes softmax(score_mod(q.k*scale) masked) @ v with GQA,
// an optional per-head sink, and the natural-log LSE, in float64 on small
// shapes.
package eval
