package codegen

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// cType is a C type that a generated expression can have.
type cType string

const (
	cBool   cType = "bool"
	cInt    cType = "long long"
	cInt32  cType = "int" // an int whose every operation is exact in 32 bits (intrange.go)
	cFloat  cType = "float"
	cDouble cType = "double"
)

// cExpr is a C expression and its type.
type cExpr struct {
	code string
	typ  cType
}

// funcWriter emits the body of one generated device function: statements,
// one per line, each preceded by a #line directive naming the .flex line it
// came from; shared subexpressions and buffer reads become named constants.
type funcWriter struct {
	src     *dsl.Source
	l       *dsl.Lowered
	float   cType // the C type of .flex floats in this function
	bufs    []BufferABI
	buffers map[string]*BufferABI // bufs by name
	diags   *dsl.Diagnostics

	body     strings.Builder
	indent   string
	keys     map[dsl.Expr]string // structural key of each node
	ids      map[string]int      // a number per distinct key, for ref
	uses     map[string]int      // occurrences of each structural key
	temps    map[string]cExpr    // structural key -> named constant
	ranges   *rangeAnalysis
	ntemp    int
	lastLine int
	failed   bool
}

func newFuncWriter(src *dsl.Source, l *dsl.Lowered, float cType, bufs []BufferABI, diags *dsl.Diagnostics) *funcWriter {
	w := &funcWriter{
		src: src, l: l, float: float, bufs: bufs, buffers: map[string]*BufferABI{}, diags: diags,
		indent: "  ", keys: map[dsl.Expr]string{}, ids: map[string]int{}, uses: map[string]int{}, temps: map[string]cExpr{},
	}
	for i := range bufs {
		w.buffers[bufs[i].Name] = &bufs[i]
	}
	w.ranges = newRangeAnalysis(l, w.buffers)
	return w
}

// count records the structural keys of e's subtree so that repeated
// subexpressions can be shared.
func (w *funcWriter) count(e dsl.Expr) {
	dsl.Inspect(e, func(x dsl.Expr) bool {
		if _, ok := x.(*dsl.Ident); ok {
			return false
		}
		w.uses[w.key(x)]++
		return true
	})
}

// key is a structural fingerprint of e: equal keys mean equal values. An
// operand appears in it by the number its own key was given (ref), so a
// key is short however large the tree below it (a score's derivative
// shares big subtrees many times).
func (w *funcWriter) key(e dsl.Expr) string {
	if k, ok := w.keys[e]; ok {
		return k
	}
	var k string
	switch x := e.(type) {
	case *dsl.VarRef:
		k = x.Var.String()
	case *dsl.IntLit:
		k = strconv.FormatInt(x.Value, 10)
	case *dsl.FloatLit:
		k = "f" + strconv.FormatFloat(x.Value, 'g', -1, 64)
	case *dsl.BoolLit:
		k = strconv.FormatBool(x.Value)
	case *dsl.Ident:
		k = "$" + x.Name
	case *dsl.UnaryExpr:
		k = "(" + x.Op.String() + " " + w.ref(x.X) + ")"
	case *dsl.BinaryExpr:
		k = "(" + w.ref(x.X) + " " + x.Op.String() + " " + w.ref(x.Y) + ")"
	case *dsl.CompareExpr:
		parts := []string{}
		for i, o := range x.Operands {
			if i > 0 {
				parts = append(parts, x.Ops[i-1].String())
			}
			parts = append(parts, w.ref(o))
		}
		k = "(" + strings.Join(parts, " ") + ")"
	case *dsl.CondExpr:
		k = "(" + w.ref(x.Then) + " if " + w.ref(x.Cond) + " else " + w.ref(x.Else) + ")"
	case *dsl.CallExpr:
		parts := []string{}
		for _, a := range x.Args {
			parts = append(parts, w.ref(a))
		}
		k = w.ref(x.Fun) + "(" + strings.Join(parts, ", ") + ")"
	case *dsl.IndexExpr:
		parts := []string{}
		for _, a := range x.Indices {
			parts = append(parts, w.ref(a))
		}
		k = w.ref(x.X) + "[" + strings.Join(parts, ", ") + "]"
	case *dsl.ParenExpr:
		k = w.ref(x.X)
	default:
		k = fmt.Sprintf("%T@%p", e, e)
	}
	k += ":" + w.l.TypeOf(e).String()
	w.keys[e] = k
	return k
}

// ref names e's structural key by a number: equal numbers mean equal keys.
func (w *funcWriter) ref(e dsl.Expr) string {
	k := w.key(e)
	id, ok := w.ids[k]
	if !ok {
		id = len(w.ids)
		w.ids[k] = id
	}
	return "#" + strconv.Itoa(id)
}

// fail reports a construct that cannot be generated.
func (w *funcWriter) fail(e dsl.Node, code dsl.Code, hint, format string, args ...any) cExpr {
	sp := dsl.NoSpan
	if e != nil {
		sp = e.Span()
	}
	d := w.diags.Add(w.src, sp, code, format, args...)
	if hint != "" {
		d.Hint = hint
	}
	w.failed = true
	return cExpr{"0", cInt}
}

// wideRead returns the i64 buffer read directly by an operand of the
// arithmetic e (not inside an index), or nil.
func (w *funcWriter) wideRead(e dsl.Expr) *BufferABI {
	be, ok := e.(*dsl.BinaryExpr)
	if !ok {
		return nil
	}
	for _, x := range []dsl.Expr{be.X, be.Y} {
		var found *BufferABI
		dsl.Inspect(x, func(n dsl.Expr) bool {
			if ix, ok := n.(*dsl.IndexExpr); ok {
				if id, ok := ix.X.(*dsl.Ident); ok && found == nil {
					if b := w.buffers[id.Name]; b != nil && b.DType == "i64" {
						found = b
					}
				}
				return false // an index's own arithmetic is another node
			}
			return found == nil
		})
		if found != nil {
			return found
		}
	}
	return nil
}

// line emits a #line directive for the .flex line of sp when it differs
// from the last one emitted.
func (w *funcWriter) line(sp dsl.Span) {
	if w.src == nil || !sp.IsValid() {
		return
	}
	n := w.src.LineOf(sp.Start)
	if n == w.lastLine {
		return
	}
	w.lastLine = n
	fmt.Fprintf(&w.body, "#line %d %s\n", n, cString(w.src.Name))
}

// stmt emits one statement that came from the .flex text at sp.
func (w *funcWriter) stmt(sp dsl.Span, format string, args ...any) {
	w.line(sp)
	w.body.WriteString(w.indent)
	fmt.Fprintf(&w.body, format, args...)
	w.body.WriteByte('\n')
}

// bind emits `const T name = value;` and returns the name.
func (w *funcWriter) bind(sp dsl.Span, prefix string, v cExpr) cExpr {
	name := fmt.Sprintf("%s%d", prefix, w.ntemp)
	w.ntemp++
	w.stmt(sp, "const %s %s = %s;", v.typ, name, v.code)
	return cExpr{name, v.typ}
}

// typeOf maps the recorded .flex type of e to its C type.
func (w *funcWriter) typeOf(e dsl.Expr) (cType, bool) {
	switch w.l.TypeOf(e) {
	case dsl.TypeBool:
		return cBool, true
	case dsl.TypeInt:
		if w.ranges.narrow(e) {
			return cInt32, true
		}
		return cInt, true
	case dsl.TypeFloat:
		return w.float, true
	}
	return "", false
}

// conv converts v to type t following Python's promotion (bool -> int -> float).
func conv(v cExpr, t cType) cExpr {
	if v.typ == t {
		return v
	}
	if t == cBool {
		return cExpr{"(" + v.code + " != 0)", cBool}
	}
	return cExpr{"(" + string(t) + ")" + v.code, t}
}

// truth is Python truthiness of v as a C bool.
func truth(v cExpr) cExpr { return conv(v, cBool) }

// expr returns the C expression for e, emitting any statements it needs.
func (w *funcWriter) expr(e dsl.Expr) cExpr {
	k := w.key(e)
	if v, ok := w.temps[k]; ok {
		return v
	}
	if w.ranges.overflows(e) {
		if b := w.wideRead(e); b != nil {
			// An i64 buffer's elements may be any int64: the sum has no
			// bound maskc can prove, where torch would wrap around.
			return w.fail(e, CodeIntOverflow, fmt.Sprintf("declare %s as i32 if its values fit in 32 bits (token offsets and document ids do; FlexAttention's index tensors are int32), or bound the read with min/max", b.Name),
				"int arithmetic %s may overflow int64: buffer %s is i64, so its elements may be any int64 (torch wraps around there; maskc computes ints exactly or refuses)", w.src.Slice(e.Span()), b.Name)
		}
		return w.fail(e, CodeIntOverflow, "bound the operands (min, max, a smaller constant), or compute in float",
			"int arithmetic %s may overflow int64 (undefined in C, exact in Python)", w.src.Slice(e.Span()))
	}
	v := w.node(e)
	if w.failed {
		return v
	}
	if _, isRead := e.(*dsl.IndexExpr); isRead || (w.uses[k] > 1 && !trivial(e)) {
		prefix := "t"
		if x, ok := e.(*dsl.IndexExpr); ok {
			prefix = cName(x.X.(*dsl.Ident).Name) + "_"
		}
		v = w.bind(e.Span(), prefix, v)
		w.temps[k] = v
	}
	return v
}

// part returns an operand of a logical connective as a named constant, so
// that each condition is one statement on its own .flex line.
func (w *funcWriter) part(e dsl.Expr) cExpr {
	v := w.expr(e)
	if w.failed || trivial(e) || isIdent(v.code) {
		return v
	}
	prefix := "t"
	if v.typ == cBool {
		prefix = "c"
	}
	v = w.bind(e.Span(), prefix, v)
	w.temps[w.key(e)] = v
	return v
}

func isIdent(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// trivial reports whether e is a variable or literal, never worth a name.
func trivial(e dsl.Expr) bool {
	switch e.(type) {
	case *dsl.VarRef, *dsl.IntLit, *dsl.FloatLit, *dsl.BoolLit:
		return true
	}
	return false
}

// floatLit formats f as a literal of type t. A float literal is f's real
// float32 value: inf where f overflows float32, 0 where it underflows (check
// refuses such score constants, E091), never a spelling C++ does not have
// (`+Inff`).
func floatLit(f float64, t cType) string {
	suffix, bits := "", 64
	if t == cFloat {
		suffix, bits = "f", 32
		f = float64(float32(f))
	}
	switch {
	case math.IsInf(f, 1):
		return "maskc_inf_f" + strconv.Itoa(bits) + "()"
	case math.IsInf(f, -1):
		return "(-maskc_inf_f" + strconv.Itoa(bits) + "())"
	case math.IsNaN(f):
		return "maskc_nan_f" + strconv.Itoa(bits) + "()"
	}
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !strings.ContainsAny(s, ".en") {
		s += ".0"
	}
	if f < 0 {
		return "(" + s + suffix + ")"
	}
	return s + suffix
}

// int32Lit formats an int32 value i as an int literal.
func int32Lit(i int64) string {
	switch {
	case i == math.MinInt32:
		return "(-2147483647 - 1)"
	case i < 0:
		return "(" + strconv.FormatInt(i, 10) + ")"
	}
	return strconv.FormatInt(i, 10)
}

// intLit formats i as a long long literal.
func intLit(i int64) string {
	if i == math.MinInt64 {
		return "(-9223372036854775807LL - 1)"
	}
	if i < 0 {
		return "(" + strconv.FormatInt(i, 10) + "LL)"
	}
	return strconv.FormatInt(i, 10) + "LL"
}

// mathName is the C spelling of built-in name (dsl.Builtin.C) in the
// function's float precision.
func (w *funcWriter) mathName(name string) string {
	if w.float == cFloat {
		return dsl.Builtins[name].C[0]
	}
	return dsl.Builtins[name].C[1]
}

// node translates one node; its operands go through expr.
func (w *funcWriter) node(e dsl.Expr) cExpr {
	t, ok := w.typeOf(e)
	if !ok {
		return w.fail(e, CodeUnsupported, "", "internal error: expression has no recorded type")
	}
	switch x := e.(type) {
	case *dsl.VarRef:
		if x.Var == dsl.VarScore {
			if w.l.Kind != dsl.ScoreMod {
				return w.fail(e, CodeUnsupported, "", "a mask cannot read the score")
			}
			return conv(cExpr{"score", cFloat}, t)
		}
		return conv(cExpr{x.Var.String(), cInt}, t)
	case *dsl.IntLit:
		if t == cInt32 {
			return cExpr{int32Lit(x.Value), cInt32}
		}
		return conv(cExpr{intLit(x.Value), cInt}, t)
	case *dsl.FloatLit:
		return cExpr{floatLit(x.Value, t), t}
	case *dsl.BoolLit:
		return conv(cExpr{strconv.FormatBool(x.Value), cBool}, t)
	case *dsl.ParenExpr:
		return w.expr(x.X)
	case *dsl.UnaryExpr:
		return w.unary(x, t)
	case *dsl.BinaryExpr:
		return w.binary(x, t)
	case *dsl.CompareExpr:
		return w.compare(x)
	case *dsl.CondExpr:
		return w.cond(x.Cond, x.Then, x.Else, t)
	case *dsl.CallExpr:
		return w.call(x, t)
	case *dsl.IndexExpr:
		return w.read(x, t)
	}
	return w.fail(e, CodeUnsupported, "", "cannot generate code for %s", describe(e))
}

func describe(e dsl.Expr) string {
	switch x := e.(type) {
	case *dsl.Ident:
		return "the name " + x.Name + " here"
	case *dsl.TupleExpr:
		return "a tuple"
	}
	return fmt.Sprintf("%T", e)
}

func (w *funcWriter) unary(x *dsl.UnaryExpr, t cType) cExpr {
	v := w.expr(x.X)
	switch x.Op {
	case dsl.OpNeg:
		return cExpr{"(-" + conv(v, t).code + ")", t}
	case dsl.OpPos:
		return conv(v, t)
	case dsl.OpNot:
		return conv(cExpr{"(!" + truth(v).code + ")", cBool}, t)
	case dsl.OpInvert:
		if v.typ == cBool {
			return conv(cExpr{"(!" + v.code + ")", cBool}, t)
		}
		if v.typ == cInt || v.typ == cInt32 {
			return conv(cExpr{"(~" + v.code + ")", v.typ}, t)
		}
	}
	return w.fail(x, CodeUnsupported, "", "cannot generate %s on a %s", x.Op, v.typ)
}

func (w *funcWriter) binary(x *dsl.BinaryExpr, t cType) cExpr {
	switch x.Op {
	case dsl.OpAnd, dsl.OpOr, dsl.OpBitAnd, dsl.OpBitOr, dsl.OpBitXor:
		a, b := w.part(x.X), w.part(x.Y)
		if t == cBool && a.typ == cBool && b.typ == cBool {
			op := " && "
			switch x.Op {
			case dsl.OpOr, dsl.OpBitOr:
				op = " || "
			case dsl.OpBitXor:
				op = " != "
			}
			return cExpr{"(" + a.code + op + b.code + ")", cBool}
		}
		switch x.Op {
		case dsl.OpAnd: // Python: a if not a else b
			return cExpr{"(" + truth(a).code + " ? " + conv(b, t).code + " : " + conv(a, t).code + ")", t}
		case dsl.OpOr: // Python: a if a else b
			return cExpr{"(" + truth(a).code + " ? " + conv(a, t).code + " : " + conv(b, t).code + ")", t}
		}
		if t == cInt || t == cInt32 {
			return cExpr{"(" + conv(a, t).code + " " + x.Op.String() + " " + conv(b, t).code + ")", t}
		}
		return w.fail(x, CodeUnsupported, "", "cannot generate %s on %s and %s", x.Op, a.typ, b.typ)
	}
	if x.Op == dsl.OpShl || x.Op == dsl.OpShr {
		return w.shift(x, t)
	}
	a, b := w.expr(x.X), w.expr(x.Y)
	switch x.Op {
	case dsl.OpAdd, dsl.OpSub, dsl.OpMul:
		return cExpr{"(" + conv(a, t).code + " " + x.Op.String() + " " + conv(b, t).code + ")", t}
	case dsl.OpDiv:
		return cExpr{"(" + conv(a, w.float).code + " / " + conv(b, w.float).code + ")", w.float}
	case dsl.OpFloorDiv, dsl.OpMod:
		if t == cInt32 || t == cInt {
			if c, ok := dsl.Unparen(x.Y).(*dsl.IntLit); ok && c.Value > 0 {
				return w.divByConst(x.Op, conv(a, t), c.Value, w.ranges.of(x.X), t)
			}
		}
		fn := "maskc_py_floordiv"
		if x.Op == dsl.OpMod {
			fn = "maskc_py_floormod"
		}
		return cExpr{fn + "(" + conv(a, t).code + ", " + conv(b, t).code + ")", t}
	case dsl.OpPow:
		if t == cInt {
			if n, ok := dsl.Unparen(x.Y).(*dsl.IntLit); ok && n.Value >= 0 && n.Value <= dsl.MaxIntPowExponent {
				return conv(cExpr{fmt.Sprintf("maskc_py_ipow(%s, %d)", conv(a, cInt).code, n.Value), cInt}, t)
			}
			if _, _, ok := w.ranges.powExponent(x.Y); ok {
				// An exponent known to lie in [0, MaxIntPowExponent]
				// (kv % 3): an int in C, as maskc_py_ipow takes it.
				return conv(cExpr{fmt.Sprintf("maskc_py_ipow(%s, (int)(%s))", conv(a, cInt).code, b.code), cInt}, t)
			}
			// check refuses these (E090)
			return w.fail(x.Y, CodePowExponent, "write the power as a float (x ** 2.0) or as repeated multiplication",
				"int power needs a non-negative constant exponent")
		}
		if lit, ok := constValue(x.X); ok && lit == 2 {
			return cExpr{w.mathName("exp2") + "(" + conv(b, t).code + ")", t}
		}
		pow := "pow"
		if t == cFloat {
			pow = "powf"
		}
		return cExpr{pow + "(" + conv(a, t).code + ", " + conv(b, t).code + ")", t}
	}
	return w.fail(x, CodeUnsupported, "", "cannot generate the operator %s", x.Op)
}

// constValue returns the value of a numeric literal.
func constValue(e dsl.Expr) (float64, bool) {
	switch x := dsl.Unparen(e).(type) {
	case *dsl.IntLit:
		return float64(x.Value), true
	case *dsl.FloatLit:
		return x.Value, true
	}
	return 0, false
}

func (w *funcWriter) compare(x *dsl.CompareExpr) cExpr {
	if len(x.Operands) != 2 || len(x.Ops) != 1 {
		return w.fail(x, CodeUnsupported, "", "internal error: unexpanded comparison chain")
	}
	a, b := w.expr(x.Operands[0]), w.expr(x.Operands[1])
	var ct cType
	switch {
	case a.typ == cBool && b.typ == cBool:
		ct = cBool
	case a.typ == cFloat || a.typ == cDouble || b.typ == cFloat || b.typ == cDouble:
		ct = w.float
	case (a.typ == cInt32 || a.typ == cBool) && (b.typ == cInt32 || b.typ == cBool):
		ct = cInt32
	default:
		ct = cInt
	}
	return cExpr{"(" + conv(a, ct).code + " " + x.Ops[0].String() + " " + conv(b, ct).code + ")", cBool}
}

// cond is `then if c else els` and where(c, then, els): both branches are
// evaluated (they have no side effects and every read is guarded).
func (w *funcWriter) cond(c, then, els dsl.Expr, t cType) cExpr {
	cv := truth(w.part(c))
	a, b := w.expr(then), w.expr(els)
	return cExpr{"(" + cv.code + " ? " + conv(a, t).code + " : " + conv(b, t).code + ")", t}
}

func (w *funcWriter) call(x *dsl.CallExpr, t cType) cExpr {
	id, ok := x.Fun.(*dsl.Ident)
	if !ok {
		return w.fail(x, CodeUnsupported, "", "cannot generate a call of a computed function")
	}
	bi := dsl.LookupBuiltin(id.Name)
	if bi == nil || len(x.Args) < bi.MinArgs || len(x.Args) > bi.MaxArgs {
		return w.fail(x, CodeUnsupported, "", "cannot generate a call of %s with %d arguments", id.Name, len(x.Args))
	}
	if bi.Name == "where" {
		return w.cond(x.Args[0], x.Args[1], x.Args[2], t)
	}
	args := make([]cExpr, len(x.Args))
	for i, a := range x.Args {
		args[i] = w.expr(a)
	}
	switch bi.Name {
	case "min", "max":
		return cExpr{"maskc_py_" + bi.Name + "(" + conv(args[0], t).code + ", " + conv(args[1], t).code + ")", t}
	case "clamp":
		return cExpr{"maskc_py_min(maskc_py_max(" + conv(args[0], t).code + ", " + conv(args[1], t).code + "), " + conv(args[2], t).code + ")", t}
	case "abs":
		return cExpr{"maskc_py_abs(" + conv(args[0], t).code + ")", t}
	case "int":
		if a := args[0]; a.typ == cFloat || a.typ == cDouble {
			return conv(cExpr{"maskc_py_int(" + a.code + ")", cInt}, t)
		}
		return conv(args[0], t)
	case "float":
		return conv(args[0], t)
	case "floor", "ceil":
		if t == cInt || t == cInt32 {
			return conv(args[0], t)
		}
	}
	if bi.C[0] != "" && len(args) == 1 { // floor, ceil and the float functions (exp, sin, ...)
		return cExpr{w.mathName(bi.Name) + "(" + conv(args[0], t).code + ")", t}
	}
	return w.fail(x, CodeUnsupported, "", "cannot generate the built-in %s", bi.Name)
}

func (w *funcWriter) read(x *dsl.IndexExpr, t cType) cExpr {
	id, ok := x.X.(*dsl.Ident)
	var b *BufferABI
	if ok {
		b = w.buffers[id.Name]
	}
	if b == nil {
		return w.fail(x, CodeBufferIndex, "", "internal error: read of a buffer that is not in the kernel's buffer table")
	}
	if len(x.Indices) != len(b.Dims) {
		return w.fail(x, CodeBufferIndex, "", "buffer %s has %d dimensions but is read with %d indices", b.Name, len(b.Dims), len(x.Indices))
	}
	// Indices that are all int32 call the accessor's int overload, whose
	// bound check is one unsigned 32-bit compare per index.
	it := cInt32
	for _, i := range x.Indices {
		if !w.ranges.of(i).Fits32() {
			it = cInt
		}
	}
	args := []string{"buf"}
	for _, i := range x.Indices {
		args = append(args, conv(w.expr(i), it).code)
	}
	name := readerName(b)
	if indexReadsBuffers(x, w.buffers) {
		name = flaggedReaderName(b)
	}
	v := cExpr{name + "(" + strings.Join(args, ", ") + ")", elemType(b.DType).value}
	return conv(v, t)
}

// sourceLines returns the distinct .flex lines that e's nodes came from, in
// order, formatted as a comment block.
func sourceLines(src *dsl.Source, es ...dsl.Expr) string {
	if src == nil {
		return ""
	}
	set := map[int]bool{}
	for _, e := range es {
		dsl.Inspect(e, func(x dsl.Expr) bool {
			if sp := x.Span(); sp.IsValid() {
				set[src.LineOf(sp.Start)] = true
				set[src.LineOf(sp.End)] = true
			}
			return true
		})
	}
	var lines []int
	for n := range set {
		lines = append(lines, n)
	}
	sort.Ints(lines)
	var b strings.Builder
	for _, n := range lines {
		fmt.Fprintf(&b, "//   %s:%d | %s\n", cComment(src.Name), n, cComment(strings.TrimRight(src.Line(n), " \t")))
	}
	return b.String()
}

// divByConst is Python's a // c or a % c for a constant c > 0, on an int or
// long long operand a whose range is ar.
//
// For c = 2^k the floor forms are a >> k and a & (c - 1). Proof: in two's
// complement a = sum of its bits, where bits k and up weigh multiples of 2^k
// and the low k bits weigh r = a & (2^k - 1) in [0, 2^k); so a = m*2^k + r
// with 0 <= r < 2^k, which is exactly Python's (a // 2^k, a % 2^k), and m is
// a's arithmetic right shift by k (signed >> is arithmetic in C++20 and in
// every GPU compiler before it). TestPow2FloorForms checks it exhaustively
// on 16-bit values and at the int32/int64 extremes.
//
// For other c: C's truncating / and % are floor for a >= 0; otherwise the
// branch-free maskc_py_floordiv_pos / maskc_py_floormod_pos correct a
// negative remainder.
func (w *funcWriter) divByConst(op dsl.Op, a cExpr, c int64, ar interval, t cType) cExpr {
	lit := intLit(c)
	if t == cInt32 {
		lit = int32Lit(c)
	}
	if k, ok := positivePow2(c); ok {
		if op == dsl.OpFloorDiv {
			if k == 0 {
				return a
			}
			return cExpr{fmt.Sprintf("(%s >> %d)", a.code, k), t}
		}
		mask := intLit(c - 1)
		if t == cInt32 {
			mask = int32Lit(c - 1)
		}
		return cExpr{"(" + a.code + " & " + mask + ")", t}
	}
	if ar.Lo >= 0 {
		sym := " / "
		if op == dsl.OpMod {
			sym = " % "
		}
		return cExpr{"(" + a.code + sym + lit + ")", t}
	}
	fn := "maskc_py_floordiv_pos"
	if op == dsl.OpMod {
		fn = "maskc_py_floormod_pos"
	}
	return cExpr{fn + "(" + a.code + ", " + lit + ")", t}
}

// shift writes x << n or x >> n (Python's: x * 2**n, x // 2**n), where
// the ranges prove n >= 0 (Python raises for a negative count; the kernel
// could not) and, for <<, no overflow (expr refuses that first, E311). It
// computes in int32 where x and the result fit it and n <= 31, else in
// int64. A left shift of a value that may be negative goes through
// unsigned bits (undefined in C++17 otherwise); a right shift of a signed
// value is arithmetic (floor), and a count past the width is clamped to
// width - 1, which gives Python's 0 or -1.
func (w *funcWriter) shift(x *dsl.BinaryExpr, t cType) cExpr {
	n, v, r := w.ranges.of(x.Y), w.ranges.of(x.X), w.ranges.of(x)
	if n.Lo < 0 {
		return w.fail(x.Y, CodeUnsupported, "bound the count, e.g. max("+w.src.Slice(x.Y.Span())+", 0), or shift the other way",
			"the shift count %s may be negative, where Python raises ValueError", w.src.Slice(x.Y.Span()))
	}
	ct, width, unsigned := cInt, int64(63), "unsigned long long"
	if v.Fits32() && r.Fits32() && n.Hi <= 31 {
		ct, width, unsigned = cInt32, 31, "unsigned"
	}
	a, b := conv(w.expr(x.X), ct), conv(w.expr(x.Y), ct)
	if x.Op == dsl.OpShl {
		if v.Lo >= 0 {
			return conv(cExpr{"(" + a.code + " << " + b.code + ")", ct}, t)
		}
		return conv(cExpr{"((" + string(ct) + ")((" + unsigned + ")" + a.code + " << " + b.code + "))", ct}, t)
	}
	if n.Hi > width {
		b = cExpr{fmt.Sprintf("(%s < %d ? %s : %d)", b.code, width, b.code, width), ct}
	}
	return conv(cExpr{"(" + a.code + " >> " + b.code + ")", ct}, t)
}
