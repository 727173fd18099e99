package check

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// This file lowers the Python and torch spellings that FlexAttention code
// uses (tensor methods, torch.* functions, casts, keyword arguments) to the
// language's own operations, with torch's semantics.

// callArgs is a call's arguments lowered: positional ones in order, and
// keyword ones by name.
type callArgs struct {
	exprs []dsl.Expr // the positional arguments as written
	vals  []result
	kw    map[string]*dsl.KeywordArg
}

// torchFuncs are the torch functions lowered here, by name after `torch.`;
// the value is the number of positional arguments each takes.
var torchFuncs = map[string]int{
	"logical_and": 2, "logical_or": 2, "logical_xor": 2, "logical_not": 1,
	"minimum": 2, "maximum": 2, "remainder": 2, "fmod": 2, "floor_divide": 2, "div": 2, "clamp": 1,
	"eq": 2, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2,
	"full_like": 2, "zeros_like": 1, "ones_like": 1,
	"bitwise_and": 2, "bitwise_or": 2, "bitwise_xor": 2, "bitwise_not": 1,
	"bitwise_left_shift": 2, "bitwise_right_shift": 2,
}

// tensorMethods are the tensor methods lowered here, with the number of
// positional arguments after the receiver each takes (-1: see method):
// the built-ins marked Method (x.abs(), x.sin(), ...) and those below.
var tensorMethods = func() map[string]int {
	m := map[string]int{}
	for name, b := range dsl.Builtins {
		if b.Method {
			m[name] = b.MinArgs - 1
		}
	}
	for name, n := range otherMethods {
		m[name] = n
	}
	return m
}()

var otherMethods = map[string]int{
	"clamp": -1, "clamp_min": 1, "clamp_max": 1,
	"float": 0, "double": 0, "int": 0, "long": 0, "bool": 0, "to": 1,
	"logical_and": 1, "logical_or": 1, "logical_xor": 1, "logical_not": 0,
	"minimum": 1, "maximum": 1, "remainder": 1, "fmod": 1, "floor_divide": 1, "div": 1,
	"eq": 1, "ne": 1, "lt": 1, "le": 1, "gt": 1, "ge": 1,
	"bitwise_and": 1, "bitwise_or": 1, "bitwise_xor": 1, "bitwise_not": 0,
	"bitwise_left_shift": 1, "bitwise_right_shift": 1,
}

// torchCall lowers x when it is a method call or a torch function that
// this file handles, and reports whether it did.
func (l *lowering) torchCall(f *frame, x *dsl.CallExpr) (result, bool) {
	switch fun := x.Fun.(type) {
	case *dsl.SelectorExpr:
		return l.method(f, x, fun), true
	case *dsl.Ident:
		if f.names[fun.Name] != nil {
			return result{}, false
		}
		if fun.Name == "float" && len(x.Args) == 1 {
			if s, ok := x.Args[0].(*dsl.StringLit); ok {
				return l.floatString(f, s), true
			}
		}
		if (fun.Name == "math.floor" || fun.Name == "math.ceil") && len(x.Args) == 1 {
			return l.mathRound(f, x, fun), true
		}
		name, ok := strings.CutPrefix(fun.Name, "torch.")
		if _, known := torchFuncs[name]; !ok || !known {
			return result{}, false
		}
		a := l.callArgs(f, x.Args)
		return l.operation(f, x, fun.Name, name, a), true
	}
	return result{}, false
}

// callArgs lowers a call's arguments.
func (l *lowering) callArgs(f *frame, args []dsl.Expr) callArgs {
	a := callArgs{kw: map[string]*dsl.KeywordArg{}}
	for _, e := range args {
		if k, ok := e.(*dsl.KeywordArg); ok {
			a.kw[k.Name.Name] = k
			continue
		}
		a.exprs = append(a.exprs, e)
		a.vals = append(a.vals, l.value(f, e))
	}
	return a
}

// method lowers a tensor method call, x = recv.name(args).
func (l *lowering) method(f *frame, x *dsl.CallExpr, sel *dsl.SelectorExpr) result {
	recv := l.expr(f, sel.X)
	if recv.typ == dsl.TypeBuffer {
		if _, own := bufferMethods[sel.Sel.Name]; own || len(recv.buf.Dims) != 0 || len(recv.rows) != 0 {
			return l.bufferMethod(f, x, sel, recv.buf)
		}
		// An element method of a 0-d buffer (offset.abs()): of its value.
	}
	recv = l.valueOf(f, sel.X, recv)
	name := sel.Sel.Name
	if _, ok := newScalarMethods[name]; ok {
		return l.newScalar(f, x, sel, recv)
	}
	var a callArgs
	if name == "to" {
		// The argument is a dtype, not a value: to() reads it itself.
		a = callArgs{exprs: x.Args, kw: map[string]*dsl.KeywordArg{}}
		for range x.Args {
			a.vals = append(a.vals, result{typ: dsl.TypeWord})
		}
	} else {
		a = l.callArgs(f, x.Args)
	}
	if _, ok := tensorMethods[name]; !ok {
		names := make([]string, 0, len(tensorMethods)+len(newScalarMethods))
		for n := range tensorMethods {
			names = append(names, n)
		}
		for n := range newScalarMethods {
			names = append(names, n)
		}
		sort.Strings(names)
		d := l.errorf(f, sel.Sel.Sp, CodeMethod, "tensor method .%s is not supported", name)
		prefixed := ""
		for _, n := range names {
			if len(n) >= 3 && (strings.HasPrefix(name, n) || strings.HasPrefix(n, name)) {
				prefixed = n
			}
		}
		if prefixed != "" {
			d.WithHint("did you mean .%s()? (%s)", prefixed, operationMeaning[prefixed])
		} else if h := didYouMean(name, names); h != "" {
			d.WithHint("%s", h)
		} else {
			d.WithHint("supported methods: .%s()", strings.Join(names, "(), ."))
		}
		return result{}
	}
	a.exprs = append([]dsl.Expr{sel.X}, a.exprs...)
	a.vals = append([]result{recv}, a.vals...)
	return l.operation(f, x, "."+name, name, a)
}

// operation lowers torch operation name (a method's receiver is the first
// argument); what is how the source spells it, for messages.
func (l *lowering) operation(f *frame, x *dsl.CallExpr, what, name string, a callArgs) result {
	want, isMethod := tensorMethods[name], strings.HasPrefix(what, ".")
	if !isMethod {
		want = torchFuncs[name]
	} else if want >= 0 {
		want++ // the receiver
	}
	allowed := map[string]bool{}
	switch name {
	case "clamp":
		allowed["min"], allowed["max"] = true, true
	case "div":
		allowed["rounding_mode"] = true
	}
	for k, kw := range a.kw {
		if !allowed[k] {
			l.expr(f, kw.Value)
			l.errorf(f, kw.Name.Sp, CodeKeywordArg, "%s takes no keyword argument %s=", what, k).
				WithHint("pass the arguments by position, as torch documents %s", what)
			return result{}
		}
	}
	for _, v := range a.vals {
		if !v.ok() {
			return result{}
		}
	}
	if name == "clamp" {
		return l.clamp(f, x, what, a)
	}
	if len(a.vals) != want {
		n := want
		if isMethod {
			n--
		}
		l.errorf(f, x.Sp, CodeArgCount, "%s takes %d %s, got %d", what, n, plural(n, "argument", "arguments"), len(a.vals)-(want-n)).
			WithHint("%s", operationDoc(name))
		return result{}
	}
	v := a.vals
	if b := dsl.Builtins[name]; b != nil && b.Method {
		return l.builtinOf(f, x, b, a.exprs, v)
	}
	if op, ok := bitwiseOps[name]; ok {
		return l.binop(f, x, op, a.exprs[0], a.exprs[1], v[0], v[1])
	}
	switch name {
	case "float", "double":
		return l.toFloat(f, x, a.exprs[0], v[0])
	case "int", "long":
		return l.toInt(f, x, a.exprs[0], v[0])
	case "bool":
		return l.truth(f, x, a.exprs[0], v[0])
	case "to":
		return l.to(f, x, a)
	case "clamp_min":
		return l.builtinOf(f, x, dsl.Builtins["max"], a.exprs, v)
	case "clamp_max":
		return l.builtinOf(f, x, dsl.Builtins["min"], a.exprs, v)
	case "minimum":
		return l.builtinOf(f, x, dsl.Builtins["min"], a.exprs, v)
	case "maximum":
		return l.builtinOf(f, x, dsl.Builtins["max"], a.exprs, v)
	case "remainder":
		return l.binop(f, x, dsl.OpMod, a.exprs[0], a.exprs[1], v[0], v[1])
	case "fmod":
		return l.fmod(f, x, a)
	case "floor_divide":
		return l.binop(f, x, dsl.OpFloorDiv, a.exprs[0], a.exprs[1], v[0], v[1])
	case "div":
		return l.div(f, x, a)
	case "eq", "ne", "lt", "le", "gt", "ge":
		op := map[string]dsl.Op{"eq": dsl.OpEQ, "ne": dsl.OpNE, "lt": dsl.OpLT, "le": dsl.OpLE, "gt": dsl.OpGT, "ge": dsl.OpGE}[name]
		return l.cmp(f, x, op, a.exprs[0], a.exprs[1], v[0], v[1])
	case "full_like", "zeros_like", "ones_like":
		return l.fullLike(f, x, name, a)
	case "bitwise_not":
		return l.unaryOf(f, &dsl.UnaryExpr{Sp: x.Sp, Op: dsl.OpInvert, X: a.exprs[0]}, v[0])
	case "logical_not":
		t := l.truth(f, x, a.exprs[0], v[0])
		return l.unaryOf(f, &dsl.UnaryExpr{Sp: x.Sp, Op: dsl.OpNot, X: a.exprs[0]}, t)
	}
	// logical_and, logical_or, logical_xor: torch reads each operand as
	// a bool (non-zero is true) and gives a bool.
	p, q := l.truth(f, x, a.exprs[0], v[0]), l.truth(f, x, a.exprs[1], v[1])
	switch name {
	case "logical_and":
		return l.binop(f, x, dsl.OpAnd, a.exprs[0], a.exprs[1], p, q)
	case "logical_or":
		return l.binop(f, x, dsl.OpOr, a.exprs[0], a.exprs[1], p, q)
	}
	return l.cmp(f, x, dsl.OpNE, a.exprs[0], a.exprs[1], p, q)
}

// bitwiseOps are the operators torch's bitwise functions are.
var bitwiseOps = map[string]dsl.Op{"bitwise_and": dsl.OpBitAnd, "bitwise_or": dsl.OpBitOr, "bitwise_xor": dsl.OpBitXor,
	"bitwise_left_shift": dsl.OpShl, "bitwise_right_shift": dsl.OpShr}

// operationMeaning says what each operation lowers to, for hovers.
// (A built-in's own method, x.sin(), lowers to sin(x).)
var operationMeaning = func() map[string]string {
	m := map[string]string{}
	for name, b := range dsl.Builtins {
		if b.Method {
			m[name] = name + "(x)"
		}
	}
	for name, s := range otherMeanings {
		m[name] = s
	}
	return m
}()

var otherMeanings = map[string]string{
	"clamp":     "max(x, lo) then min(., hi); either bound may be left out",
	"clamp_min": "max(x, lo)", "clamp_max": "min(x, hi)",
	"float": "float(x)", "double": "float(x)", "int": "int(x): truncation toward zero", "long": "int(x): truncation toward zero",
	"bool": "x != 0", "to": "int(x), float(x) or x != 0 by dtype (torch.int64, int32, float32, float64, bool)",
	"logical_and": "(x != 0) and (y != 0)", "logical_or": "(x != 0) or (y != 0)",
	"logical_xor": "(x != 0) != (y != 0)", "logical_not": "not (x != 0)",
	"minimum": "min(x, y)", "maximum": "max(x, y)", "remainder": "x % y (sign of y, as Python)",
	"fmod":         "the remainder of x / y truncated toward zero (sign of x, as C's fmod); ints only",
	"floor_divide": "x // y", "div": "x / y; rounding_mode=\"floor\": x // y; \"trunc\": toward zero",
	"full_like": "the constant v in x's dtype", "zeros_like": "0 in x's dtype", "ones_like": "1 in x's dtype",
	"eq": "x == y", "ne": "x != y", "lt": "x < y", "le": "x <= y", "gt": "x > y", "ge": "x >= y",
	"bitwise_and": "x & y", "bitwise_or": "x | y", "bitwise_xor": "x ^ y", "bitwise_not": "~x",
	"bitwise_left_shift": "x << y", "bitwise_right_shift": "x >> y",
}

// PortingDoc describes a tensor method (name ".abs") or a torch function
// (name "torch.logical_and") that the checker lowers: its usage as torch
// documents it and what it lowers to. ok is false for other names.
func PortingDoc(name string) (usage, meaning string, ok bool) {
	op, isMethod := strings.CutPrefix(name, ".")
	if isMethod {
		_, ok = tensorMethods[op]
	} else if op, ok = strings.CutPrefix(name, "torch."); ok {
		_, ok = torchFuncs[op]
	}
	if !ok {
		return "", "", false
	}
	return operationDoc(op), operationMeaning[op], true
}

// operationDoc is the usage line of a torch operation, for hints.
func operationDoc(name string) string {
	switch name {
	case "clamp":
		return "x.clamp(lo, hi), x.clamp(min=lo), x.clamp(max=hi), torch.clamp(x, lo, hi)"
	case "to":
		return "x.to(torch.int64), .to(torch.int32), .to(torch.float32), .to(torch.bool)"
	case "div":
		return "torch.div(x, y), torch.div(x, y, rounding_mode=\"floor\"), rounding_mode=\"trunc\""
	case "logical_not":
		return "torch.logical_not(x) or x.logical_not()"
	case "full_like":
		return "torch.full_like(x, v)"
	case "zeros_like", "ones_like":
		return "torch." + name + "(x)"
	}
	if n, ok := torchFuncs[name]; ok && n == 2 {
		return "torch." + name + "(x, y) or x." + name + "(y)"
	}
	return "x." + name + "()"
}

// binop builds `ea op eb` from lowered operands; x is the call it comes
// from (its span), ea and eb the operands as written (for messages).
func (l *lowering) binop(f *frame, x *dsl.CallExpr, op dsl.Op, ea, eb dsl.Expr, a, b result) result {
	return l.binaryOf(f, &dsl.BinaryExpr{Sp: x.Sp, Op: op, OpSp: x.Fun.Span(), X: ea, Y: eb}, a, b)
}

// cmp builds the comparison `ea op eb` from lowered operands.
func (l *lowering) cmp(f *frame, x *dsl.CallExpr, op dsl.Op, ea, eb dsl.Expr, a, b result) result {
	return l.compareOf(f, &dsl.CompareExpr{Sp: x.Sp, Operands: []dsl.Expr{ea, eb}, Ops: []dsl.Op{op}}, []result{a, b})
}

// constAt is a constant of v's type standing for the literal k (0 or 1).
func (l *lowering) constAt(f *frame, t dsl.Type, k int64, sp dsl.Span) result {
	if t == dsl.TypeFloat {
		return l.constant(f, dsl.Float(float64(k)), sp)
	}
	return l.constant(f, dsl.Int(k), sp)
}

// truth reads v as torch reads a tensor as bool: non-zero is true.
func (l *lowering) truth(f *frame, x *dsl.CallExpr, e dsl.Expr, v result) result {
	if !v.ok() || v.typ == dsl.TypeBool {
		return v
	}
	return l.cmp(f, x, dsl.OpNE, e, e, v, l.constAt(f, v.typ, 0, x.Sp))
}

// toInt converts v to an int as .long() and int() do: truncation toward
// zero.
func (l *lowering) toInt(f *frame, x *dsl.CallExpr, e dsl.Expr, v result) result {
	if !v.ok() || v.typ == dsl.TypeInt {
		return v
	}
	return l.builtinOf(f, x, dsl.Builtins["int"], []dsl.Expr{e}, []result{v})
}

// toFloat converts v to a float.
func (l *lowering) toFloat(f *frame, x *dsl.CallExpr, e dsl.Expr, v result) result {
	if !v.ok() || v.typ == dsl.TypeFloat {
		return v
	}
	return l.builtinOf(f, x, dsl.Builtins["float"], []dsl.Expr{e}, []result{v})
}

// torchDTypes are the dtypes .to() converts to exactly, by the name written
// after `torch.`, with the scalar type they give.
var torchDTypes = map[string]dsl.Type{
	"int64": dsl.TypeInt, "long": dsl.TypeInt, "int32": dsl.TypeInt, "int": dsl.TypeInt,
	"float32": dsl.TypeFloat, "float": dsl.TypeFloat, "float64": dsl.TypeFloat, "double": dsl.TypeFloat,
	"bool": dsl.TypeBool,
}

// torchDType is the scalar type of e when e names a dtype that maskc
// converts to exactly (torchDTypes: torch.int64, torch.bool, ...).
func torchDType(e dsl.Expr) (dsl.Type, bool) {
	if id, ok := dsl.Unparen(e).(*dsl.Ident); ok {
		if name, ok := strings.CutPrefix(id.Name, "torch."); ok {
			t, known := torchDTypes[name]
			return t, known
		}
	}
	return dsl.TypeInvalid, false
}

// to lowers x.to(torch.DTYPE), and x.to(y.device), which moves no value.
func (l *lowering) to(f *frame, x *dsl.CallExpr, a callArgs) result {
	arg := a.exprs[1]
	if k, ok := arg.(*dsl.KeywordArg); ok {
		arg = k.Value
	}
	if sel, ok := dsl.Unparen(arg).(*dsl.SelectorExpr); ok && sel.Sel.Name == "device" {
		l.expr(f, sel.X) // for its diagnostics; a device changes no value
		return a.vals[0]
	}
	if sel, ok := dsl.Unparen(arg).(*dsl.SelectorExpr); ok && sel.Sel.Name == "dtype" {
		return l.toDTypeOf(f, x, a, sel)
	}
	t, ok := torchDType(arg)
	if !ok {
		l.errorf(f, arg.Span(), CodeConversion, ".to(%s) is not a conversion maskc makes exactly", sourceText(f, arg)).
			WithHint("convert with .to(torch.int64), .to(torch.int32), .to(torch.float32) or .to(torch.bool); half-precision rounding is not modelled")
		return result{}
	}
	switch t {
	case dsl.TypeInt:
		return l.toInt(f, x, a.exprs[0], a.vals[0])
	case dsl.TypeFloat:
		return l.toFloat(f, x, a.exprs[0], a.vals[0])
	}
	return l.truth(f, x, a.exprs[0], a.vals[0])
}

// toDTypeOf lowers x.to(y.dtype): a conversion to the element type of y,
// a value (an index, the score) or a buffer or its element. A float32
// score or buffer is a float here, an int32 index an int (see the README
// on maskc's 64-bit arithmetic); half-precision buffers, whose rounding
// maskc does not model, are refused as .to(torch.float16) is.
func (l *lowering) toDTypeOf(f *frame, x *dsl.CallExpr, a callArgs, sel *dsl.SelectorExpr) result {
	var t dsl.Type
	var buf *Buffer
	switch y := dsl.Unparen(sel.X).(type) {
	case *dsl.IndexExpr:
		if r := l.expr(f, y.X); r.typ == dsl.TypeBuffer {
			buf = r.buf
		}
	case *dsl.Ident:
		if r := l.expr(f, y); r.typ == dsl.TypeBuffer {
			buf = r.buf
		}
	}
	switch {
	case buf != nil && (buf.DType == "f16" || buf.DType == "bf16"):
		l.errorf(f, sel.Span(), CodeConversion, ".to(%s) converts to %s's %s, whose rounding maskc does not model", sourceText(f, sel), buf.Name, buf.DType).
			WithHint("declare %s as f32, or convert with .to(torch.float32)", buf.Name)
		return result{}
	case buf != nil:
		t = map[string]dsl.Type{"i32": dsl.TypeInt, "i64": dsl.TypeInt, "f32": dsl.TypeFloat, "f64": dsl.TypeFloat, "bool": dsl.TypeBool}[buf.DType]
	default:
		r := l.value(f, sel.X)
		if !r.ok() {
			return result{}
		}
		t = r.typ
	}
	switch t {
	case dsl.TypeInt:
		return l.toInt(f, x, a.exprs[0], a.vals[0])
	case dsl.TypeFloat:
		return l.toFloat(f, x, a.exprs[0], a.vals[0])
	case dsl.TypeBool:
		return l.truth(f, x, a.exprs[0], a.vals[0])
	}
	l.errorf(f, sel.Span(), CodeConversion, ".to(%s) is not a conversion maskc makes exactly", sourceText(f, sel))
	return result{}
}

// clamp lowers x.clamp(lo, hi), x.clamp(min=lo, max=hi) and
// torch.clamp(x, ...): max(x, lo) then min(., hi), either bound optional.
func (l *lowering) clamp(f *frame, x *dsl.CallExpr, what string, a callArgs) result {
	bounds := [2]dsl.Expr{} // lo, hi as written
	vals := [2]result{}
	for i, k := range []string{"min", "max"} {
		if 1+i < len(a.exprs) {
			if kw := a.kw[k]; kw != nil {
				l.errorf(f, kw.Name.Sp, CodeKeywordArg, "%s gets %s both by position and as %s=", what, k, k).
					WithHint("pass it once")
				return result{}
			}
			bounds[i], vals[i] = a.exprs[1+i], a.vals[1+i]
		} else if kw := a.kw[k]; kw != nil {
			bounds[i], vals[i] = kw.Value, l.value(f, kw.Value)
			if !vals[i].ok() {
				return result{}
			}
		}
	}
	if len(a.exprs) > 3 || len(a.exprs) == 0 || bounds[0] == nil && bounds[1] == nil {
		l.errorf(f, x.Sp, CodeArgCount, "%s takes a value and at least one bound", what).
			WithHint("%s", operationDoc("clamp"))
		return result{}
	}
	r, re := a.vals[0], a.exprs[0]
	if bounds[0] != nil {
		r = l.builtinOf(f, x, dsl.Builtins["max"], []dsl.Expr{re, bounds[0]}, []result{r, vals[0]})
	}
	if bounds[1] != nil && r.ok() {
		r = l.builtinOf(f, x, dsl.Builtins["min"], []dsl.Expr{re, bounds[1]}, []result{r, vals[1]})
	}
	return r
}

// div lowers torch.div(x, y, rounding_mode=...): true division without a
// mode, Python's // for "floor", and truncation toward zero for "trunc".
func (l *lowering) div(f *frame, x *dsl.CallExpr, a callArgs) result {
	ea, eb, p, q := a.exprs[0], a.exprs[1], a.vals[0], a.vals[1]
	kw := a.kw["rounding_mode"]
	mode := ""
	if kw != nil {
		switch v := dsl.Unparen(kw.Value).(type) {
		case *dsl.StringLit:
			mode = v.Value
		case *dsl.Ident:
			if v.Name == "None" {
				mode = "none"
			}
		}
		if mode != "floor" && mode != "trunc" && mode != "none" {
			l.errorf(f, kw.Value.Span(), CodeKeywordArg, "rounding_mode must be \"floor\", \"trunc\" or None, got %s", sourceText(f, kw.Value)).
				WithHint("write rounding_mode=\"floor\" (as //) or rounding_mode=\"trunc\" (toward zero)")
			return result{}
		}
	}
	switch mode {
	case "", "none":
		return l.binop(f, x, dsl.OpDiv, ea, eb, p, q)
	case "floor":
		return l.binop(f, x, dsl.OpFloorDiv, ea, eb, p, q)
	}
	if p.typ == dsl.TypeFloat || q.typ == dsl.TypeFloat {
		// trunc(p / q) in floats, as torch computes it.
		d := l.binop(f, x, dsl.OpDiv, ea, eb, p, q)
		if !d.ok() {
			return d
		}
		neg := l.cmp(f, x, dsl.OpLT, x, x, d, l.constAt(f, dsl.TypeFloat, 0, x.Sp))
		up := l.builtinOf(f, x, dsl.Builtins["ceil"], []dsl.Expr{x}, []result{d})
		down := l.builtinOf(f, x, dsl.Builtins["floor"], []dsl.Expr{x}, []result{d})
		return l.where(f, x, neg, up, down)
	}
	// Integers: p // q, plus one where the signs differ and q does not
	// divide p (floor and truncation then differ by one).
	fl := l.binop(f, x, dsl.OpFloorDiv, ea, eb, p, q)
	rem := l.binop(f, x, dsl.OpMod, ea, eb, p, q)
	if !fl.ok() || !rem.ok() {
		return result{}
	}
	zero := l.constAt(f, dsl.TypeInt, 0, x.Sp)
	inexact := l.cmp(f, x, dsl.OpNE, x, x, rem, zero)
	signs := l.cmp(f, x, dsl.OpNE, x, x, l.cmp(f, x, dsl.OpLT, ea, x, p, zero), l.cmp(f, x, dsl.OpLT, eb, x, q, zero))
	fix := l.binop(f, x, dsl.OpAnd, x, x, inexact, signs)
	up := l.binop(f, x, dsl.OpAdd, x, x, fl, l.constAt(f, dsl.TypeInt, 1, x.Sp))
	return l.where(f, x, fix, up, fl)
}

// fmod lowers torch.fmod(x, y) and x.fmod(y) of ints: the remainder of
// the division truncated toward zero, which has x's sign where Python's %
// (torch.remainder) has y's. The two differ by y exactly where y does not
// divide x and the signs differ. Of floats it is refused: C's fmod is
// exact, and x % y then a correction by y rounds.
func (l *lowering) fmod(f *frame, x *dsl.CallExpr, a callArgs) result {
	ea, eb, p, q := a.exprs[0], a.exprs[1], a.vals[0], a.vals[1]
	if !p.ok() || !q.ok() {
		return result{}
	}
	for i, r := range []result{p, q} {
		if r.typ == dsl.TypeFloat {
			l.errorf(f, a.exprs[i].Span(), CodeArgType, "torch.fmod of a float: maskc computes fmod of ints only, where it is exact").
				WithHint("for operands of the same sign fmod is x %% y (torch.remainder); else compute it from ints, e.g. fmod of (q_idx - kv_idx).abs()")
			return result{}
		}
	}
	rem := l.binop(f, x, dsl.OpMod, ea, eb, p, q)
	if !rem.ok() {
		return rem
	}
	zero := l.constAt(f, dsl.TypeInt, 0, x.Sp)
	inexact := l.cmp(f, x, dsl.OpNE, x, x, rem, zero)
	signs := l.cmp(f, x, dsl.OpNE, x, x, l.cmp(f, x, dsl.OpLT, ea, x, p, zero), l.cmp(f, x, dsl.OpLT, eb, x, q, zero))
	fix := l.binop(f, x, dsl.OpAnd, x, x, inexact, signs)
	back := l.binop(f, x, dsl.OpSub, x, eb, rem, q)
	return l.where(f, x, fix, back, rem)
}

// fullLike lowers torch.full_like(x, v), zeros_like(x) and ones_like(x):
// the constant v (0, 1) in x's dtype, which broadcasts like x. An int x
// truncates a float fill value toward zero, as torch casts it.
func (l *lowering) fullLike(f *frame, x *dsl.CallExpr, name string, a callArgs) result {
	like := a.vals[0]
	var fill dsl.Value
	switch name {
	case "zeros_like":
		fill = dsl.Int(0)
	case "ones_like":
		fill = dsl.Int(1)
	default:
		if !a.vals[1].isConst() {
			l.errorf(f, a.exprs[1].Span(), CodeConversion, "the fill value of torch.full_like must be a constant, got a run-time %s", a.vals[1].typ).
				WithHint("write the value itself: where the fill varies, the tensor is the value, e.g. torch.minimum(x, y)")
			return result{}
		}
		fill = a.vals[1].val
	}
	return l.constant(f, castFill(like.typ, fill), x.Sp)
}

// castFill is a tensor factory's fill value in dtype typ, as torch casts
// it: a float into an int truncates toward zero.
func castFill(typ dsl.Type, fill dsl.Value) dsl.Value {
	switch typ {
	case dsl.TypeFloat:
		return dsl.Float(fill.AsFloat())
	case dsl.TypeBool:
		return dsl.Bool(fill.Truth())
	}
	if fill.Type == dsl.TypeFloat {
		return dsl.Int(dsl.TruncInt(fill.F))
	}
	return dsl.Int(fill.I)
}

// mathRound lowers math.floor(x) and math.ceil(x). Of a Python number they
// give a Python int (and raise on infinity and NaN); of a tensor, torch's
// __floor__ / __ceil__ give a tensor of its dtype, as floor and ceil do.
func (l *lowering) mathRound(f *frame, x *dsl.CallExpr, fun *dsl.Ident) result {
	name := strings.TrimPrefix(fun.Name, "math.")
	v := l.value(f, x.Args[0])
	r := l.builtinOf(f, x, dsl.Builtins[name], x.Args, []result{v})
	if !r.isConst() || r.typ != dsl.TypeFloat {
		return r
	}
	if math.IsInf(r.val.F, 0) || math.IsNaN(r.val.F) {
		l.errorf(f, x.Sp, CodeFoldError, "constant %s: Python cannot convert %s to an int", sourceText(f, x), r.val).
			WithHint("math.%s of a Python number is an int; use a finite value", name)
		return result{}
	}
	return l.constant(f, dsl.Int(dsl.TruncInt(r.val.F)), x.Sp)
}

// where builds where(c, a, b) from lowered operands.
func (l *lowering) where(f *frame, x *dsl.CallExpr, c, a, b result) result {
	return l.builtinOf(f, x, dsl.Builtins["where"], []dsl.Expr{x, x, x}, []result{c, a, b})
}

// floatString lowers float("inf"), float("-inf"), float("nan") and float of
// a number written as a string, as Python reads them.
func (l *lowering) floatString(f *frame, s *dsl.StringLit) result {
	text := strings.TrimSpace(s.Value)
	v, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
	if err != nil && !strings.Contains(err.Error(), "range") || strings.HasPrefix(strings.ToLower(text), "0x") {
		l.errorf(f, s.Sp, CodeConversion, "float(%s) is not a number", s.Raw).
			WithHint("write float(\"inf\"), float(\"-inf\") or a number such as float(\"1e-4\")")
		return result{}
	}
	switch {
	case math.IsNaN(v):
		// issue 31: accepted silently; every comparison with it is false.
		l.errorf(f, s.Sp, CodeConversion, "float(%s) is NaN, which no mask or score can mean: every comparison with it is false", s.Raw).
			WithHint("write the value meant; for infinity, float(\"inf\")")
		return result{}
	case dsl.FloatUnderflows(strings.ReplaceAll(text, "_", ""), v):
		// issue 31: silently 0, while the literal 1e-400 is refused (E003).
		l.errorf(f, s.Sp, CodeConversion, "float(%s) is too small for 64 bits: it would be 0", s.Raw).
			WithHint("write 0.0 if zero is meant")
		return result{}
	}
	return l.constant(f, dsl.Float(v), s.Sp)
}

// newScalarMethods are the tensor factories a mod writes as a receiver's
// method for a scalar of the receiver's (or a given) dtype, with what each
// fills it with: transformers' and torch's and_masks start from
// q_idx.new_ones((), dtype=torch.bool).
var newScalarMethods = map[string]string{"new_ones": "1", "new_zeros": "0", "new_full": "the fill value"}

// newScalar lowers recv.new_ones(()), recv.new_zeros(()) and
// recv.new_full((), v), each with an optional dtype=: a 0-d tensor, the
// constant 1, 0 or v in the dtype given, else in recv's.
func (l *lowering) newScalar(f *frame, x *dsl.CallExpr, sel *dsl.SelectorExpr, recv result) result {
	name := sel.Sel.Name
	var pos []dsl.Expr
	var dtype dsl.Expr
	for _, e := range x.Args {
		if k, ok := e.(*dsl.KeywordArg); ok {
			if k.Name.Name != "dtype" {
				l.errorf(f, k.Name.Sp, CodeKeywordArg, ".%s takes no keyword argument %s= here", name, k.Name.Name).
					WithHint("maskc reads .%s(()) with dtype= only: a scalar of that dtype", name)
				return result{}
			}
			dtype = k.Value
			continue
		}
		pos = append(pos, e)
	}
	want, fillArg := 1, "" // positional arguments; new_full's fill in the hints
	if name == "new_full" {
		want, fillArg = 2, ", v"
	}
	if !recv.ok() {
		return result{}
	}
	if len(pos) != want {
		l.errorf(f, x.Sp, CodeArgCount, ".%s takes %d positional %s, got %d", name, want, plural(want, "argument", "arguments"), len(pos)).
			WithHint("write .%s(()%s, dtype=...): a scalar filled with %s", name, fillArg, newScalarMethods[name])
		return result{}
	}
	if t, ok := dsl.Unparen(pos[0]).(*dsl.TupleExpr); !ok || len(t.Elems) != 0 {
		l.errorf(f, pos[0].Span(), CodeNotAValue, ".%s(%s) makes a tensor of that shape; a mod computes one value per (q, kv) pair", name, sourceText(f, pos[0])).
			WithHint("pass the shape () for a scalar, as and_masks does: .%s(()%s)", name, fillArg)
		return result{}
	}
	typ := recv.typ
	if dtype != nil {
		var ok bool
		if typ, ok = torchDType(dtype); !ok {
			l.errorf(f, dtype.Span(), CodeConversion, "dtype=%s is not a dtype maskc makes exactly", sourceText(f, dtype)).
				WithHint("use torch.bool, torch.int64, torch.int32, torch.float32 or torch.float64; half-precision rounding is not modelled")
			return result{}
		}
	}
	var v dsl.Value
	switch name {
	case "new_ones":
		v = dsl.Int(1)
	case "new_zeros":
		v = dsl.Int(0)
	default:
		fill := l.value(f, pos[1])
		if !fill.ok() {
			return result{}
		}
		if !fill.isConst() {
			l.errorf(f, pos[1].Span(), CodeConversion, "the fill value of .new_full must be a constant, got a run-time %s", fill.typ).
				WithHint("write the value itself: .new_full((), v) of a run-time v is v")
			return result{}
		}
		v = fill.val
	}
	if typ == dsl.TypeBool || typ == dsl.TypeFloat || typ == dsl.TypeInt {
		return l.constant(f, castFill(typ, v), x.Sp)
	}
	l.errorf(f, sel.X.Span(), CodeConversion, ".%s on %s, which has no dtype maskc models", name, sourceText(f, sel.X)).
		WithHint("call it on an index (q_idx), the score, or a comparison")
	return result{}
}
