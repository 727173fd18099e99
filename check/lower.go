package check

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// maxLoweredNodes bounds the size of one lowered expression (counting
// shared subtrees once per use) and the work spent building it.
const maxLoweredNodes = 100_000

// maxCheckNodes bounds the nodes built by one whole Check, so that no file,
// however large or hostile, takes more than about a second to check.
const maxCheckNodes = 1_000_000

// result is what lowering an expression gives: the lowered node and its
// type, its value when it is a constant, or what else the expression
// denotes (a mod value, a buffer, a function name).
type result struct {
	node dsl.Expr  // the lowered node; nil unless typ is bool, int or float
	typ  dsl.Type  // dsl.TypeInvalid after an error (already reported)
	val  dsl.Value // valid when the expression is a compile-time constant
	size int       // node count of node's tree
	mod  *modValue // when typ is TypeMask or TypeScore
	buf  *Buffer   // when typ is TypeBuffer
	// rows are the leading indices already taken when typ is TypeBuffer and
	// the buffer was indexed with fewer indices than it has dimensions
	// (`modalities[b]`, a row that a loop iterates or a later index reads).
	rows []result
	fn   string // a built-in's canonical name, "and_masks" or "or_masks"
	// word is the text of a string when typ is TypeWord and it is known
	// (a factory's string argument, `mode = "causal"`): what a
	// compile-time `==` compares.
	word    string
	hasWord bool
	// elems are a tuple's elements when typ is TypeTuple: a Python tuple
	// used at compile time (a factory argument, `a, b = pair`, pair[0]).
	elems []result
}

func (r result) ok() bool      { return r.typ != dsl.TypeInvalid }
func (r result) isConst() bool { return r.val.IsValid() }
func (r result) scalar() bool {
	return r.typ == dsl.TypeBool || r.typ == dsl.TypeInt || r.typ == dsl.TypeFloat
}

// modValue is a mask or score mod as a value: a declared mod, a factory
// instantiation, or a combination by and_masks/or_masks.
type modValue struct {
	kind      dsl.ModKind
	name      string      // for messages and dsl.Lowered.Name
	mod       *Mod        // nil for a combination
	unapplied bool        // a factory named without its arguments
	args      []*binding  // factory arguments, one per factory parameter
	locals    []*binding  // names a factory's statements before its inner def bind
	comb      dsl.Op      // dsl.OpAnd or dsl.OpOr for a combination
	parts     []*modValue // the combined mods
	partial   *partialApp // a functools.partial of a helper def (mod and parts unset)
}

// bindKind says what a local name is bound to.
type bindKind int

const (
	bindValue   bindKind = iota // a lowered value: an argument, a let, a factory constant
	bindBuffer                  // a factory parameter bound to a buffer
	bindUnknown                 // a factory parameter while its declaration is checked
	bindUnbound                 // a def's local before its first assignment (Python's UnboundLocalError)
)

// binding is a local name of a mod body.
type binding struct {
	kind  bindKind
	res   result
	buf   *Buffer
	sym   Symbol
	ident *dsl.Ident // the declaring identifier
	uses  int
	// fresh is set where the binding's value is a run-time tensor that
	// this def made (an operator's or a built-in's result) and no other
	// name holds: the only tensor an augmented assignment, which torch
	// runs in place, may change without changing another name's value.
	fresh bool
}

// frame is the context of one body being lowered: its source, its local
// names, and whether it is the user's own text (recorded in Info) or an
// inlined body.
type frame struct {
	src    *dsl.Source
	names  map[string]*binding
	std    bool      // a standard-library body: resolves only stdlib names
	record bool      // record types, constants and uses in Info
	site   *dsl.Span // inside a stdlib body: the user text that led there
	// stdName names the outermost stdlib mod for messages.
	stdName string
	// paramPass is set while params are folded: later params are not ready.
	paramPass bool
	// python is set in the body of a mod written as a Python def, which
	// must also run under torch (see torchWarning).
	python bool
}

// child is a copy of f whose new bindings stay its own (a branch run for
// its diagnostics, a generator's variable).
func (f *frame) child() *frame {
	g := *f
	g.names = make(map[string]*binding, len(f.names)+1)
	for k, v := range f.names {
		g.names[k] = v
	}
	return &g
}

// lowering is the state of one lowering: the types of the nodes built, the
// buffers read, the mods being inlined, and the node budget.
type lowering struct {
	c *checker
	// types records the type of each node built; nil (nothing recorded)
	// unless the nodes are kept, as the Expr of a dsl.Lowered.
	types   map[dsl.Expr]dsl.Type
	buffers []*dsl.BufferDecl
	stack   []*Mod
	work    int
	aborted bool
	// root names what is being lowered, for the too-large error: the
	// kind and name of a mod, "the " before them for an attention's mod
	// value; rootSpan is where that error points.
	rootThe  bool
	rootKind dsl.ModKind
	rootName string
	rootSpan dsl.Span
	// partial is set when a def's statements could not all run (a
	// condition or loop bound on a factory argument, unknown while its
	// declaration is checked): uses were not all counted.
	partial bool
	// exploring counts the branches of unknown conditions being run for
	// their diagnostics (run): a raise there is not reached.
	exploring int
	// instances are the mod values being applied, innermost last: a
	// factory's instance on it again is a cycle, another instance of the
	// same factory is not.
	instances []*modValue
	// stackBuf holds the first entries of stack, saving an allocation.
	stackBuf [4]*Mod
	// declPass is set while a mod's own declaration is checked.
	declPass bool
	// preReturn, while the statements of a factory with
	// dsl.ModDecl.DefStmts run (factoryPre), receives the value of a
	// `return` they reach; nil elsewhere, where they hold none.
	preReturn *result
	// defChoice is set while the condition of an `if` whose blocks hold a
	// factory's inner defs is decided, for decide's hint.
	defChoice bool
	// applies counts the mod applications met (inlined or not).
	applies int
}

func (c *checker) newLowering() *lowering {
	return &lowering{c: c}
}

// setType records the type of a node built.
func (l *lowering) setType(node dsl.Expr, typ dsl.Type) {
	if l.types != nil {
		l.types[node] = typ
	}
}

// errorf reports an error at sp; inside a standard-library body it points
// at the user text that used the library mod instead.
func (l *lowering) errorf(f *frame, sp dsl.Span, code dsl.Code, format string, args ...any) *dsl.Diagnostic {
	return l.report(f, sp, code, false, format, args...)
}

func (l *lowering) warnf(f *frame, sp dsl.Span, code dsl.Code, format string, args ...any) *dsl.Diagnostic {
	return l.report(f, sp, code, true, format, args...)
}

func (l *lowering) report(f *frame, sp dsl.Span, code dsl.Code, warn bool, format string, args ...any) *dsl.Diagnostic {
	src := f.src
	msg := fmt.Sprintf(format, args...)
	if f.site != nil {
		src, sp = l.c.src, *f.site
		msg = "in standard mod " + f.stdName + ": " + msg
	}
	if warn {
		return l.c.diags.Warn(src, sp, code, "%s", msg)
	}
	return l.c.diags.Add(src, sp, code, "%s", msg)
}

// span is the span a new node built from source span sp gets.
func (l *lowering) span(f *frame, sp dsl.Span) dsl.Span {
	if f.site != nil {
		return *f.site
	}
	return sp
}

// add records a newly built node.
func (l *lowering) add(f *frame, node dsl.Expr, typ dsl.Type, size int) result {
	l.work++
	l.c.work++
	if l.c.work > maxCheckNodes {
		if !l.c.exhausted {
			l.c.diags.Add(l.c.src, l.rootSpan, CodeTooLarge, "the file is too large to check: inlining its mods makes more than %d nodes in all", maxCheckNodes).
				WithHint("split the file, or use fewer and smaller mods; checking stopped here")
		}
		l.c.exhausted, l.aborted = true, true
		return result{}
	}
	if size > maxLoweredNodes || l.work > maxLoweredNodes {
		l.tooLarge()
		return result{}
	}
	l.setType(node, typ)
	return result{node: node, typ: typ, size: size}
}

// root names what is being lowered, e.g. "mask causal" or "the mask w".
func (l *lowering) root() string {
	s := l.rootKind.String() + " " + l.rootName
	if l.rootThe {
		s = "the " + s
	}
	return s
}

// tooLarge reports that the lowering ran over its budget, once.
func (l *lowering) tooLarge() {
	if !l.aborted {
		l.c.diags.Add(l.c.src, l.rootSpan, CodeTooLarge, "%s is too large once mods are inlined: more than %d nodes", l.root(), maxLoweredNodes).
			WithHint("mods and lets are inlined at every use, so each use copies the whole expression (a chain of lets that each use the previous one twice doubles at every step); use them fewer times, or simplify")
	}
	l.aborted = true
}

// constant builds a literal for v at sp.
func (l *lowering) constant(f *frame, v dsl.Value, sp dsl.Span) result {
	sp = l.span(f, sp)
	var node dsl.Expr
	switch v.Type {
	case dsl.TypeBool:
		node = &dsl.BoolLit{Sp: sp, Raw: v.String(), Value: v.I != 0}
	case dsl.TypeInt:
		node = &dsl.IntLit{Sp: sp, Raw: strconv.FormatInt(v.I, 10), Value: v.I}
	case dsl.TypeFloat:
		node = &dsl.FloatLit{Sp: sp, Raw: v.String(), Value: v.F}
	default:
		return result{}
	}
	r := l.add(f, node, v.Type, 1)
	if r.ok() {
		r.val = v
	}
	return r
}

// varRef builds a reference to v at sp.
func (l *lowering) varRef(f *frame, v dsl.Var, typ dsl.Type, sp dsl.Span) result {
	return l.add(f, &dsl.VarRef{Sp: l.span(f, sp), Var: v}, typ, 1)
}

// expr lowers e, which may denote a scalar, a mod, a buffer or a function.
func (l *lowering) expr(f *frame, e dsl.Expr) result {
	if l.aborted || l.c.exhausted {
		return result{}
	}
	r := l.exprNoRecord(f, e)
	if f.record && r.typ != dsl.TypeInvalid {
		l.c.info.Types[e] = r.typ
		if r.isConst() {
			l.c.info.Consts[e] = r.val
		}
	}
	return r
}

func (l *lowering) exprNoRecord(f *frame, e dsl.Expr) result {
	switch x := e.(type) {
	case *dsl.IntLit:
		return l.constant(f, dsl.Int(x.Value), x.Sp)
	case *dsl.FloatLit:
		return l.constant(f, dsl.Float(x.Value), x.Sp)
	case *dsl.BoolLit:
		return l.constant(f, dsl.Bool(x.Value), x.Sp)
	case *dsl.Ident:
		return l.ident(f, x)
	case *dsl.ParenExpr:
		return l.expr(f, x.X)
	case *dsl.TupleExpr:
		// Every element is lowered, also after one that is not known (a
		// helper's parameter while its declaration is checked): each
		// counts its names' uses.
		t, ok := result{typ: dsl.TypeTuple}, true
		for _, el := range x.Elems {
			r := l.expr(f, el)
			ok = ok && (r.ok() || r.fn != "")
			t.elems = append(t.elems, r)
		}
		if !ok {
			return result{}
		}
		return t
	case *dsl.UnaryExpr:
		return l.unary(f, x)
	case *dsl.BinaryExpr:
		return l.binary(f, x)
	case *dsl.CompareExpr:
		return l.compare(f, x)
	case *dsl.CondExpr:
		return l.cond(f, x)
	case *dsl.CallExpr:
		return l.call(f, x)
	case *dsl.IndexExpr:
		return l.index(f, x)
	case *dsl.StringLit:
		l.errorf(f, x.Sp, CodeStringValue, "a string is not a value").
			WithHint("strings are written only in float(\"inf\") and keyword values such as rounding_mode=\"floor\"")
		return result{}
	case *dsl.KeywordArg:
		l.expr(f, x.Value)
		l.errorf(f, x.Name.Sp, CodeKeywordArg, "unexpected keyword argument %s=", x.Name.Name).
			WithHint("keyword arguments are understood only where torch takes them: x.clamp(min=..., max=...), torch.div(..., rounding_mode=...)")
		return result{}
	case *dsl.SelectorExpr:
		recv := l.expr(f, x.X)
		switch {
		case recv.typ == dsl.TypeBuffer:
			return l.bufferAttr(f, x, recv.buf)
		case !recv.ok() && recv.fn == "":
			return result{} // reported, or unknown until a factory is applied
		}
		l.errorf(f, x.Sp, CodeMethod, "method .%s is used without calling it", x.Sel.Name).
			WithHint("call it: %s()", sourceText(f, x))
		return result{}
	case *dsl.GeneratorExpr:
		l.errorf(f, x.Sp, CodeNotAValue, "a generator is read only by all() and any()").
			WithHint("all(c for x in xs) or any(c for x in xs), with xs a tuple or range(...) of constants")
		return result{}
	case *dsl.VarRef:
		// Already lowered (Program.Lower of a lowered expression).
		typ := dsl.TypeInt
		if x.Var == dsl.VarScore {
			typ = dsl.TypeFloat
		}
		return l.varRef(f, x.Var, typ, x.Sp)
	case nil:
		return result{}
	}
	l.errorf(f, e.Span(), CodeNotAValue, "unsupported expression %T", e)
	return result{}
}

// value lowers e where a scalar (bool, int or float) is needed.
func (l *lowering) value(f *frame, e dsl.Expr) result {
	return l.valueOf(f, e, l.expr(f, e))
}

// valueOf is value for e already lowered to r.
func (l *lowering) valueOf(f *frame, e dsl.Expr, r result) result {
	if r.scalar() || (!r.ok() && r.fn == "") {
		return r
	}
	if r.typ == dsl.TypeBuffer && len(r.rows) == 0 && len(r.buf.Dims) == 0 {
		// A 0-d buffer (a captured scalar tensor, `offset = torch.tensor(5)`)
		// read as a value is its one element, as torch broadcasts it.
		return l.readRow(f, r.buf, nil, e.Span(), e.Span())
	}
	name := sourceText(f, e)
	switch {
	case r.fn != "":
		if r.fn == "and_masks" || r.fn == "or_masks" {
			l.errorf(f, e.Span(), CodeNotAValue, "%s combines mask mods; it is not a value", r.fn).
				WithHint("use it where a mask is expected: mask = %s(causal, other)", r.fn)
		} else {
			l.errorf(f, e.Span(), CodeNotAValue, "%s is a built-in function, not a value", name).
				WithHint("call it: %s", dsl.Builtins[r.fn].Doc)
		}
	case r.typ == dsl.TypeBuffer && len(r.rows) > 0:
		// A row read as a value: the index has too few indices.
		l.errorf(f, e.Span(), CodeIndexCount, "buffer %s has %d %s %s, got %d %s", r.buf.Name, len(r.buf.Dims),
			plural(len(r.buf.Dims), "dimension", "dimensions"), r.buf.dimsText(), len(r.rows),
			plural(len(r.rows), "index", "indices")).
			WithHint("write %s[%s]", r.buf.Name, strings.Join(indexNames(len(r.buf.Dims)), ", "))
	case r.typ == dsl.TypeBuffer:
		l.errorf(f, e.Span(), CodeNotAValue, "buffer %s is used without an index", r.buf.Name).
			WithHint("read an element: %s[%s]", r.buf.Name, strings.Join(indexNames(len(r.buf.Dims)), ", "))
	case r.typ == dsl.TypeTuple:
		d := l.errorf(f, e.Span(), CodeNotAValue, "%s is a tuple, not a value", name)
		if _, ok := dsl.Unparen(e).(*dsl.Ident); ok {
			d.WithHint("read an element, e.g. %s[0], or unpack it: a, b = %s", name, name)
		} else {
			d.WithHint("a mod gives one value; tuples are compile-time values of factories and helper functions")
		}
	case r.typ == dsl.TypeFunc:
		l.errorf(f, e.Span(), CodeNotAValue, "%s is a helper function, not a value", name).
			WithHint("call it: %s(%s)", name, strings.Join(paramNames(r.mod.mod.Decl.Params), ", "))
	case r.mod != nil && r.mod.unapplied:
		l.errorf(f, e.Span(), CodeFactoryNoArgs, "factory %s is used without its arguments", r.mod.name).
			WithHint("instantiate it: %s", factorySignature(r.mod.mod))
	case r.mod != nil:
		l.errorf(f, e.Span(), CodeNotAValue, "%s %s is a mod, not a value", r.mod.kind, name).
			WithHint("call it with index arguments: %s(%s)", name, strings.Join(kindParams(r.mod.kind), ", "))
	case r.typ == dsl.TypeWord:
		what := "a string"
		if r.hasWord {
			what = fmt.Sprintf("the string %q", r.word)
		}
		l.errorf(f, e.Span(), CodeNotAValue, "%s is %s, not a value a mod computes with", name, what).
			WithHint("choose with it at compile time in the factory (`if %s == \"...\":`), or pass a number", name)
	default:
		l.errorf(f, e.Span(), CodeNotAValue, "%s is not a value", name)
	}
	return result{}
}

func indexNames(n int) []string {
	names := []string{"i", "j", "k", "l", "m", "n"}
	out := make([]string, 0, n)
	for i := range n {
		if i < len(names) {
			out = append(out, names[i])
		} else {
			out = append(out, "i"+strconv.Itoa(i))
		}
	}
	return out
}

// kindParams is the canonical parameter list of a mod kind.
func kindParams(k dsl.ModKind) []string {
	if k == dsl.ScoreMod {
		return []string{"score", "b", "h", "q", "kv"}
	}
	return []string{"b", "h", "q", "kv"}
}

func sourceText(f *frame, e dsl.Expr) string {
	if f.site != nil || e == nil || !e.Span().IsValid() {
		if id, ok := e.(*dsl.Ident); ok {
			return id.Name
		}
		return "expression"
	}
	return f.src.Slice(e.Span())
}

// ident resolves a name: local bindings first, then declarations.
func (l *lowering) ident(f *frame, x *dsl.Ident) result {
	if b := f.names[x.Name]; b != nil {
		b.uses++
		l.c.recordUse(f, x, b.sym)
		switch b.kind {
		case bindUnknown:
			return result{}
		case bindUnbound:
			l.errorf(f, x.Sp, CodeUnboundLocal, "%s is read before it is assigned in this def: Python makes a name assigned anywhere in a function local to all of it, and raises UnboundLocalError here", x.Name).
				WithHint("assign to a new name, e.g. %s_local = %s ..., and use that below", x.Name, x.Name)
			return result{}
		case bindBuffer:
			return result{typ: dsl.TypeBuffer, buf: b.buf}
		}
		r := b.res
		switch {
		case !r.ok():
			return r
		case r.isConst():
			return l.constant(f, r.val, x.Sp)
		}
		if v, ok := r.node.(*dsl.VarRef); ok {
			return l.varRef(f, v.Var, r.typ, x.Sp)
		}
		return r
	}
	g, ok := l.c.lookup(f, x.Name)
	if !ok && x.Name == "None" {
		return result{typ: dsl.TypeNone}
	}
	if !ok {
		l.unknownName(f, x)
		return result{}
	}
	if f.record {
		l.c.recordUse(f, x, g.symbol())
	}
	switch g.kind {
	case SymParam:
		p := g.param
		if l.c.markUses {
			p.used = true
		}
		if f.paramPass && !p.ready {
			l.errorf(f, x.Sp, CodeParamNotConst, "param %s is used before its declaration", p.Name).
				WithHint("a param may only use params declared above it; move %s up", p.Name)
			return result{}
		}
		if p.alias {
			// A module constant bound to a mod: its expression, lowered
			// where the file's top level would read its names.
			return l.expr(l.c.userFrame(), p.Decl.Value)
		}
		if !p.Value.IsValid() {
			if !l.c.markUses { // Check itself reports the declaration
				l.errorf(f, x.Sp, CodeParamNotConst, "param %s has no value: its declaration has errors", p.Name).
					WithHint("fix the declaration of %s", p.Name)
			}
			return result{}
		}
		return l.constant(f, p.Value, x.Sp)
	case SymBuffer:
		if l.c.markUses {
			g.buf.used = true
		}
		return result{typ: dsl.TypeBuffer, buf: g.buf}
	case SymMod, SymStdMod:
		m := g.mod
		if l.c.markUses && !m.std {
			m.Used = true
		}
		mv := &modValue{kind: m.Kind, name: m.Name, mod: m, unapplied: m.Factory}
		if m.Helper {
			return result{typ: dsl.TypeFunc, mod: mv}
		}
		return result{typ: kindType(m.Kind), mod: mv}
	case SymSize:
		return l.varRef(f, g.size, dsl.TypeInt, x.Sp)
	case SymConstant:
		return l.constant(f, g.val, x.Sp)
	case SymBuiltin:
		return result{fn: g.builtin.Name}
	case SymCombinator:
		return result{fn: g.name}
	}
	return result{}
}

func kindType(k dsl.ModKind) dsl.Type {
	if k == dsl.ScoreMod {
		return dsl.TypeScore
	}
	return dsl.TypeMask
}

func (l *lowering) unknownName(f *frame, x *dsl.Ident) {
	cands := l.c.visibleNames(f)
	for n := range f.names {
		cands = append(cands, n)
	}
	d := l.errorf(f, x.Sp, CodeUnknownName, "unknown name %s", x.Name)
	if isPartial(x.Name) {
		d.WithHint("functools.partial is called with the def it binds: partial(f, offset=16)")
	} else if h := didYouMean(x.Name, cands); h != "" {
		d.WithHint("%s", h)
	} else if prefix, _, ok := strings.Cut(x.Name, "."); ok {
		// issue 31: torch.erf said "unknown name" without what exists.
		d.WithHint("%s", prefixedBuiltins(prefix))
	} else {
		d.WithHint("declare it (param, buffer, mask or score), or use a mod parameter")
	}
}

func (l *lowering) unary(f *frame, x *dsl.UnaryExpr) result {
	a := l.value(f, x.X)
	if x.Op == dsl.OpNot && a.ok() && !a.isConst() {
		l.torchWarning(f, x.Sp, "`not`", "~", "")
	}
	return l.unaryOf(f, x, a)
}

// unaryOf lowers x with its operand already lowered to a.
func (l *lowering) unaryOf(f *frame, x *dsl.UnaryExpr, a result) result {
	if !a.ok() {
		return result{}
	}
	typ := a.typ
	switch x.Op {
	case dsl.OpNeg, dsl.OpPos:
		if typ == dsl.TypeBool {
			typ = dsl.TypeInt
		}
	case dsl.OpNot:
		if a.typ != dsl.TypeBool {
			l.errorf(f, x.X.Span(), CodeLogicalNotBool, "`not` needs a bool, got %s", a.typ).
				WithHint("compare it to get a bool, e.g. not (%s != 0)", sourceText(f, x.X))
			return result{}
		}
	case dsl.OpInvert:
		if a.typ == dsl.TypeFloat {
			l.errorf(f, x.X.Span(), CodeBitwiseOperand, "`~` needs a bool or an int, got float").
				WithHint("use `not` on a comparison, or `-` to negate a number")
			return result{}
		}
	}
	if a.isConst() {
		v, err := dsl.UnaryOp(x.Op, a.val)
		if err != nil {
			l.errorf(f, x.Sp, CodeFoldError, "constant %s: %v", sourceText(f, x), err)
			return result{}
		}
		return l.constant(f, v, x.Sp)
	}
	return l.add(f, &dsl.UnaryExpr{Sp: l.span(f, x.Sp), Op: x.Op, X: a.node}, typ, a.size+1)
}

func (l *lowering) binary(f *frame, x *dsl.BinaryExpr) result {
	a := l.expr(f, x.X)
	if (x.Op == dsl.OpAnd || x.Op == dsl.OpOr) && (a.typ == dsl.TypeNone || a.typ == dsl.TypeBool && a.isConst()) {
		// Python short-circuits: `w is not None and w > 0` never reads
		// w > 0 when w is None.
		truth := a.typ == dsl.TypeBool && a.val.I != 0
		if truth == (x.Op == dsl.OpOr) {
			return l.constant(f, dsl.Bool(truth), x.Sp)
		}
	}
	if !a.scalar() && (a.ok() || a.fn != "") {
		a = l.value(f, x.X) // reports what x.X is
	}
	b := l.value(f, x.Y)
	if (x.Op == dsl.OpAnd || x.Op == dsl.OpOr) && a.ok() && b.ok() && (!a.isConst() || !b.isConst()) {
		l.torchWarning(f, x.OpSp, "`"+x.Op.String()+"`", "&", "|")
	}
	return l.binaryOf(f, x, a, b)
}

// binaryOf lowers x with its operands already lowered to a and b.
func (l *lowering) binaryOf(f *frame, x *dsl.BinaryExpr, a, b result) result {
	if !a.ok() || !b.ok() {
		return result{}
	}
	var typ dsl.Type
	switch x.Op {
	case dsl.OpAnd, dsl.OpOr:
		bad := false
		for _, o := range []struct {
			e dsl.Expr
			r result
		}{{x.X, a}, {x.Y, b}} {
			if o.r.typ != dsl.TypeBool {
				l.errorf(f, o.e.Span(), CodeLogicalNotBool, "`%s` needs bool operands, got %s", x.Op, o.r.typ).
					WithHint("compare it to get a bool, e.g. %s != 0; for bitwise arithmetic on ints use & or |", sourceText(f, o.e))
				bad = true
			}
		}
		if bad {
			return result{}
		}
		typ = dsl.TypeBool
	case dsl.OpShl, dsl.OpShr:
		if e := floatOperand(x, a, b); e != nil {
			l.errorf(f, e.Span(), CodeBitwiseOperand, "`%s` needs int operands, got float", x.Op).
				WithHint("`%s` shifts the bits of an int; for a float write a product with a power of two", x.Op)
			return result{}
		}
		if b.isConst() && b.val.I < 0 && !a.isConst() {
			l.errorf(f, x.Y.Span(), CodeFoldError, "negative shift count %d", b.val.I).
				WithHint("Python raises ValueError for it; shift the other way")
			return result{}
		}
		typ = dsl.TypeInt
	case dsl.OpBitAnd, dsl.OpBitOr, dsl.OpBitXor:
		if e := floatOperand(x, a, b); e != nil {
			l.errorf(f, e.Span(), CodeBitwiseOperand, "`%s` needs bool or int operands, got float", x.Op).
				WithHint("`%s` is logical on bools and bitwise on ints; it has no meaning on floats", x.Op)
			return result{}
		}
		if a.typ != b.typ {
			l.errorf(f, x.OpSp, CodeBitwiseOperand, "`%s` mixes %s and %s", x.Op, a.typ, b.typ).
				WithHint("`%s` is logical on bools and bitwise on ints; parenthesise comparisons, e.g. (q >= kv) %s (q - kv < W)", x.Op, x.Op)
			return result{}
		}
		typ = a.typ
	case dsl.OpDiv:
		typ = dsl.TypeFloat
	case dsl.OpPow:
		typ = dsl.Promote(a.typ, b.typ)
		if typ == dsl.TypeInt && b.isConst() && b.val.I < 0 {
			typ = dsl.TypeFloat
		}
		// An int power's type depends on its exponent's sign (Python makes
		// int ** negative int a float), so it must be known here, where
		// every later stage (evaluator, classifier, generator) takes the
		// type from.
		if typ == dsl.TypeInt && !(a.isConst() && b.isConst()) {
			switch {
			case !b.isConst() && boundedModExponent(x.Y):
				// e % c with 0 < c <= MaxIntPowExponent + 1 lies in
				// [0, c - 1] (Python's floor modulo): an int power whatever
				// e is (issue 31: 2 ** (kv % 3) was refused).
			case !b.isConst():
				l.errorf(f, x.Y.Span(), CodeIntPower, "int power with the exponent %s, which is not a constant: its type would depend on its sign", sourceText(f, x.Y)).
					WithHint("write a float base (2.0 ** e) for a float power, or the power as repeated multiplication")
				return result{}
			case b.val.I > dsl.MaxIntPowExponent:
				l.errorf(f, x.Y.Span(), CodeIntPower, "int power with the exponent %d, more than %d", b.val.I, dsl.MaxIntPowExponent).
					WithHint("an int power that large overflows int64 unless the base is -1, 0 or 1; write it as a float power")
				return result{}
			}
		}
	default:
		typ = dsl.Promote(a.typ, b.typ)
	}
	if (x.Op == dsl.OpDiv || x.Op == dsl.OpFloorDiv || x.Op == dsl.OpMod) && b.isConst() && b.val.AsFloat() == 0 {
		what := "division"
		if x.Op == dsl.OpMod {
			what = "modulo"
		}
		l.errorf(f, x.Y.Span(), CodeDivisionByZero, "%s by constant zero", what).
			WithHint("divide by a non-zero constant or a param")
		return result{}
	}
	if a.isConst() && b.isConst() {
		v, err := dsl.BinaryOp(x.Op, a.val, b.val)
		if err != nil {
			l.errorf(f, x.Sp, CodeFoldError, "constant %s: %v", sourceText(f, x), err).
				WithHint("the value must fit a 64-bit int and be defined in Python")
			return result{}
		}
		return l.constant(f, v, x.Sp)
	}
	node := &dsl.BinaryExpr{Sp: l.span(f, x.Sp), Op: x.Op, OpSp: l.span(f, x.OpSp), X: a.node, Y: b.node}
	return l.add(f, node, typ, a.size+b.size+1)
}

// floatOperand is the first operand of x that is a float (a and b its
// lowered operands), or nil.
func floatOperand(x *dsl.BinaryExpr, a, b result) dsl.Expr {
	switch {
	case a.typ == dsl.TypeFloat:
		return x.X
	case b.typ == dsl.TypeFloat:
		return x.Y
	}
	return nil
}

// branchType is the common type of two branches: bool only when both are.
func branchType(a, b dsl.Type) dsl.Type {
	if a == dsl.TypeBool && b == dsl.TypeBool {
		return dsl.TypeBool
	}
	return dsl.Promote(a, b)
}

func (l *lowering) cond(f *frame, x *dsl.CondExpr) result {
	c := l.value(f, x.Cond)
	if c.ok() && !c.isConst() || !c.ok() && l.readsRuntime(f, x.Cond) {
		l.torchWarning(f, x.Sp, "`x if c else y`", "torch.where(c, x, y)", "")
	}
	if c.ok() && c.isConst() && c.typ == dsl.TypeBool {
		// Decided at compile time: as in Python, only the chosen arm is
		// evaluated. It may be a function (an alias, `tanh = torch.tanh
		// if exact else approx_tanh`), a tuple or None.
		chosen := x.Else
		if c.val.I != 0 {
			chosen = x.Then
		}
		r := l.expr(f, chosen)
		if !r.scalar() && !callable(r) && r.typ != dsl.TypeTuple && r.typ != dsl.TypeNone && (r.ok() || r.fn != "") {
			return l.value(f, chosen) // reports what it is
		}
		return r
	}
	t, e := l.expr(f, x.Then), l.expr(f, x.Else)
	if !c.ok() && (callable(t) || callable(e)) {
		return result{} // a factory's argument, known where it is called
	}
	if !t.scalar() && (t.ok() || t.fn != "") {
		t = l.value(f, x.Then) // reports what it is
	}
	if !e.scalar() && (e.ok() || e.fn != "") {
		e = l.value(f, x.Else)
	}
	if c.ok() && c.typ != dsl.TypeBool {
		l.errorf(f, x.Cond.Span(), CodeConditionNotBool, "the condition of `if else` must be bool, got %s", c.typ).
			WithHint("compare it to get a bool, e.g. %s != 0", sourceText(f, x.Cond))
		return result{}
	}
	if !c.ok() || !t.ok() || !e.ok() {
		return result{}
	}
	if c.isConst() {
		if c.val.I != 0 {
			return t
		}
		return e
	}
	node := &dsl.CondExpr{Sp: l.span(f, x.Sp), Then: t.node, Cond: c.node, Else: e.node}
	return l.add(f, node, branchType(t.typ, e.typ), c.size+t.size+e.size+1)
}

// callable reports whether r is a function: a built-in, a helper or a mod.
func callable(r result) bool {
	return r.fn != "" || r.typ == dsl.TypeFunc || r.mod != nil
}

// readsRuntime reports whether e reads a value known only at run time: a
// local bound to one (a mod parameter, a let computed from one) or a
// buffer element. While a factory's declaration is checked its parameters
// are unknown, so `x if flag else y` on a factory argument has no value yet
// but is still decided at compile time, as Python decides it.
func (l *lowering) readsRuntime(f *frame, e dsl.Expr) bool {
	runtime := false
	dsl.Inspect(e, func(x dsl.Expr) bool {
		switch x := x.(type) {
		case *dsl.IndexExpr:
			runtime = true
		case *dsl.Ident:
			if b := f.names[x.Name]; b != nil && b.kind == bindValue && b.res.ok() && !b.res.isConst() {
				runtime = true
			}
		}
		return !runtime
	})
	return runtime
}

func (l *lowering) index(f *frame, x *dsl.IndexExpr) result {
	if inner, ok := dsl.Unparen(x.X).(*dsl.IndexExpr); ok {
		// x[a][b] reads the element x[a, b], as torch indexes a tensor's
		// rows: one read of the buffer with all the indices.
		merged := &dsl.IndexExpr{Sp: x.Sp, X: inner.X, Indices: append(append([]dsl.Expr{}, inner.Indices...), x.Indices...)}
		return l.index(f, merged)
	}
	target := l.expr(f, x.X)
	if target.typ == dsl.TypeTuple {
		return l.tupleIndex(f, x, target)
	}
	if len(x.Indices) == 1 && target.typ == dsl.TypeBuffer {
		if t, ok := dsl.Unparen(x.Indices[0]).(*dsl.TupleExpr); ok && len(t.Elems) == 0 {
			// buf[()]: torch's index of no dimensions, the element of a 0-d
			// tensor (a row's, for a further index of nothing).
			x = &dsl.IndexExpr{Sp: x.Sp, X: x.X}
		}
	}
	idx := make([]result, len(x.Indices))
	okAll := true
	for i, e := range x.Indices {
		idx[i] = l.value(f, e)
		if idx[i].ok() && idx[i].typ != dsl.TypeInt {
			l.errorf(f, e.Span(), CodeIndexNotInt, "buffer index must be an int, got %s", idx[i].typ).
				WithHint("index with an int expression such as q, kv or h")
			idx[i] = result{}
		}
		okAll = okAll && idx[i].ok()
	}
	if !target.ok() {
		return result{}
	}
	if target.typ == dsl.TypeNone {
		l.noneIndexed(f, x)
		return result{}
	}
	if target.typ != dsl.TypeBuffer {
		what := "a " + target.typ.String()
		if target.fn != "" {
			what = "a built-in function"
		} else if id, ok := dsl.Unparen(x.X).(*dsl.Ident); ok {
			what = l.c.describe(f, id.Name, target)
		}
		l.errorf(f, x.X.Span(), CodeNotABuffer, "%s is %s, not a buffer; only buffers can be indexed", sourceText(f, x.X), what).
			WithHint("declare a buffer, e.g. buffer doc: i32[KV], and index it: doc[kv]")
		return result{}
	}
	buf := target.buf
	if len(target.rows) > 0 {
		idx = append(append([]result{}, target.rows...), idx...)
	}
	if len(idx) < len(buf.Dims) {
		// A row: its elements are read by a further index, or by a loop
		// over it (Transfusion's `for _, offset, length in modalities[b]`).
		if !okAll {
			return result{}
		}
		return l.readRow(f, buf, idx, x.Sp, x.X.Span())
	}
	if len(idx) != len(buf.Dims) && len(buf.Dims) == 0 {
		l.errorf(f, x.Sp, CodeIndexCount, "buffer %s has 0 dimensions (%s, a scalar tensor), got %d %s", buf.Name, buf.shape(), len(idx),
			plural(len(idx), "index", "indices")).
			WithHint("read its value as %s (or %s.item(), %s[()])", buf.Name, buf.Name, buf.Name)
		return result{}
	}
	if len(idx) != len(buf.Dims) {
		l.errorf(f, x.Sp, CodeIndexCount, "buffer %s has %d %s %s, got %d %s", buf.Name, len(buf.Dims),
			plural(len(buf.Dims), "dimension", "dimensions"), buf.dimsText(), len(idx),
			plural(len(idx), "index", "indices")).
			WithHint("write %s[%s]", buf.Name, strings.Join(indexNames(len(buf.Dims)), ", "))
		return result{}
	}
	if buf.ElemType() == dsl.TypeInvalid {
		if l.c.markUses {
			return result{} // Check reports the declaration itself
		}
		l.errorf(f, x.X.Span(), CodeUnknownDType, "buffer %s cannot be read: its element type %s is unknown", buf.Name, buf.DType).
			WithHint("fix the declaration of %s", buf.Name)
		return result{}
	}
	if !okAll {
		return result{}
	}
	return l.readRow(f, buf, idx, x.Sp, x.X.Span())
}

// noneIndexed reports x, an indexing of None on a path Python runs (its
// TypeError): most often an Optional tensor argument of a factory left None
// (`extra=None`) and read without an `if extra is not None` guard. The
// argument is at fault, so the use that passed it is named, as for a
// failing assert.
func (l *lowering) noneIndexed(f *frame, x *dsl.IndexExpr) {
	text := sourceText(f, x.X)
	b := (*binding)(nil)
	if id, ok := dsl.Unparen(x.X).(*dsl.Ident); ok {
		b = f.names[id.Name]
	}
	if b == nil || b.sym.Kind != SymFactoryParam || l.declPass || !l.rootSpan.IsValid() || len(l.stack) == 0 {
		l.errorf(f, x.X.Span(), CodeNotABuffer, "%s is None here, and None cannot be indexed", text).
			WithHint("index a buffer, or read %s only under `if %s is not None:`", text, text)
		return
	}
	line := f.src.Position(x.Sp.Start).Line
	l.c.diags.Add(l.c.src, l.rootSpan, CodeFactoryArg, "argument %s is None for %s, and def %s indexes it (line %d: %s)",
		text, l.root(), defName(l.stack[len(l.stack)-1]), line, sourceText(f, x)).
		WithHint("pass a buffer for %s (declare it, e.g. buffer %s: i32[B, KV]), or read it only under `if %s is not None:`", text, text, text)
}

// readRow indexes buf with idx, its leading indices: a row when they are
// fewer than its dimensions, else a read of one element. sp is where the
// index is written, nameSp where the buffer's name is.
func (l *lowering) readRow(f *frame, buf *Buffer, idx []result, sp, nameSp dsl.Span) result {
	if len(idx) < len(buf.Dims) {
		return result{typ: dsl.TypeBuffer, buf: buf, rows: idx}
	}
	if buf.ElemType() == dsl.TypeInvalid {
		return result{} // its declaration reports it
	}
	l.useBuffer(buf)
	nodes := make([]dsl.Expr, len(idx))
	size := 2
	for i, r := range idx {
		nodes[i] = r.node
		size += r.size
	}
	name := &dsl.Ident{Sp: l.span(f, nameSp), Name: buf.Name}
	return l.add(f, &dsl.IndexExpr{Sp: l.span(f, sp), X: name, Indices: nodes}, buf.ElemType(), size)
}

func (l *lowering) useBuffer(b *Buffer) { l.useBufferDecl(b.Decl) }

func (l *lowering) useBufferDecl(b *dsl.BufferDecl) {
	for _, d := range l.buffers {
		if d == b {
			return
		}
	}
	l.buffers = append(l.buffers, b)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// prefixedBuiltins is the hint for an unknown prefixed name (torch.erf):
// the built-in functions there are, from dsl.Builtins.
func prefixedBuiltins(prefix string) string {
	names := make([]string, 0, len(dsl.Builtins))
	for n := range dsl.Builtins {
		names = append(names, n)
	}
	sort.Strings(names)
	list := strings.Join(names, ", ")
	if prefix == "torch" || prefix == "math" {
		return "the functions maskc knows, with or without `torch.`/`math.`, are " + list
	}
	return "only `torch.` and `math.` prefixes are understood, on the functions " + list
}

// boundedModExponent reports whether y is `e % c` for an int literal c in
// (0, dsl.MaxIntPowExponent + 1]: its value lies in [0, c - 1], as the
// generator's range analysis also finds.
func boundedModExponent(y dsl.Expr) bool {
	bin, ok := dsl.Unparen(y).(*dsl.BinaryExpr)
	if !ok || bin.Op != dsl.OpMod {
		return false
	}
	c, ok := dsl.Unparen(bin.Y).(*dsl.IntLit)
	return ok && c.Value > 0 && c.Value <= dsl.MaxIntPowExponent+1
}
