package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// call lowers a call: a built-in, a mod applied to index arguments, a
// factory instantiation or a combination.
func (l *lowering) call(f *frame, x *dsl.CallExpr) result {
	if id, ok := x.Fun.(*dsl.Ident); ok {
		if q, ok := l.c.imported(f, id.Name); ok {
			// `from math import floor`: floor(x) is math.floor(x).
			qx := *x
			qx.Fun = &dsl.Ident{Sp: id.Sp, Name: q}
			x = &qx
		}
	}
	if name, ok := l.partialOf(f, x); ok {
		return l.partialCall(f, x, name)
	}
	if r, handled := l.torchCall(f, x); handled {
		return r
	}
	if r, handled := l.pythonCall(f, x); handled {
		return r
	}
	callee := l.expr(f, x.Fun)
	switch {
	case callee.fn == "and_masks" || callee.fn == "or_masks":
		return l.combine(f, x, callee.fn)
	case callee.fn == "create_block_mask":
		return l.blockMask(f, x)
	case callee.fn != "":
		return l.builtin(f, x, dsl.Builtins[callee.fn])
	case callee.mod != nil && callee.mod.unapplied:
		return l.instantiate(f, x, callee.mod.mod)
	case callee.mod != nil:
		return l.applyCall(f, x, callee.mod)
	case !callee.ok():
		for _, a := range x.Args {
			l.expr(f, a)
		}
		return result{}
	}
	what := article(callee.typ) + " " + callee.typ.String()
	if id, ok := dsl.Unparen(x.Fun).(*dsl.Ident); ok {
		what = l.c.describe(f, id.Name, callee)
	}
	l.errorf(f, x.Fun.Span(), CodeNotCallable, "%s is %s, not a function or mod; it cannot be called", sourceText(f, x.Fun), what).
		WithHint("only built-in functions, mods and factories can be called")
	return result{}
}

// blockMaskDoc is create_block_mask's hover text.
const blockMaskDoc = "create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device, BLOCK_SIZE, _compile): " +
	"FlexAttention's BlockMask of mask_mod, which keeps the pairs mask_mod keeps; maskc reads it as mask_mod " +
	"(its tiles come from the mask itself, and the sizes from each call)"

// blockMaskArgs are create_block_mask's parameters after mask_mod, in
// order: none changes which pairs the mask keeps.
var blockMaskArgs = []string{"B", "H", "Q_LEN", "KV_LEN", "device", "BLOCK_SIZE", "_compile"}

// blockMask lowers create_block_mask(mask_mod, ...), FlexAttention's
// BlockMask of a mask mod, which pasted factories return
// (`return create_block_mask(inner, B=None, H=None, Q_LEN=n, KV_LEN=n)`), to
// mask_mod itself: the block mask keeps exactly the pairs it keeps, and its
// other arguments (batch and head broadcasting, the sizes, the device, the
// block size) are each call's concern here, so they are not read.
func (l *lowering) blockMask(f *frame, x *dsl.CallExpr) result {
	var mod dsl.Expr
	positional := 0
	for _, a := range x.Args {
		kw, ok := a.(*dsl.KeywordArg)
		switch {
		case !ok:
			if positional == 0 {
				mod = a
			} else if positional > len(blockMaskArgs) {
				l.errorf(f, a.Span(), CodeArgCount, "create_block_mask takes at most %d arguments, got %d", len(blockMaskArgs)+1, positional+1).
					WithHint("%s", blockMaskDoc)
				return result{}
			}
			positional++
		case kw.Name.Name == "mask_mod":
			mod = kw.Value
		case !slices.Contains(blockMaskArgs, kw.Name.Name):
			l.errorf(f, kw.Name.Sp, CodeKeywordArg, "create_block_mask takes no keyword argument %s=", kw.Name.Name).
				WithHint("%s", blockMaskDoc)
			return result{}
		}
	}
	if mod == nil {
		l.errorf(f, x.Sp, CodeArgCount, "create_block_mask needs its mask mod").WithHint("%s", blockMaskDoc)
		return result{}
	}
	mv := l.modValue(f, mod, dsl.MaskMod, "create_block_mask")
	if mv == nil {
		return result{}
	}
	return result{typ: dsl.TypeMask, mod: mv}
}

// combine lowers and_masks(...)/or_masks(...) to a mod value.
func (l *lowering) combine(f *frame, x *dsl.CallExpr, name string) result {
	if len(x.Args) == 0 {
		l.errorf(f, x.Sp, CodeArgCount, "%s needs at least one mask mod", name).
			WithHint("e.g. %s(causal, same_doc)", name)
		return result{}
	}
	op := dsl.OpAnd
	if name == "or_masks" {
		op = dsl.OpOr
	}
	mv := &modValue{kind: dsl.MaskMod, comb: op}
	names := make([]string, 0, len(x.Args))
	okAll := true
	for _, a := range x.Args {
		part := l.modValue(f, a, dsl.MaskMod, name)
		if part == nil {
			okAll = false
			continue
		}
		mv.parts = append(mv.parts, part)
		names = append(names, part.name)
	}
	if !okAll {
		return result{}
	}
	mv.name = name + "(" + strings.Join(names, ", ") + ")"
	return result{typ: dsl.TypeMask, mod: mv}
}

// modValue lowers e where a mod of kind want is expected (context names the
// place, e.g. "and_masks" or "the mask setting"). It returns nil after
// reporting an error.
func (l *lowering) modValue(f *frame, e dsl.Expr, want dsl.ModKind, context string) *modValue {
	// `mask = m(b, h, q_idx, kv_idx)`: a call of a mod (not of a factory)
	// with index arguments, which are not names here. One diagnostic that
	// says to pass the mod (issue 31: an unknown-name error per argument,
	// with "did you mean B?").
	if call, ok := dsl.Unparen(e).(*dsl.CallExpr); ok {
		if id, ok := dsl.Unparen(call.Fun).(*dsl.Ident); ok {
			if g, ok := l.c.lookup(f, id.Name); ok && (g.kind == SymMod || g.kind == SymStdMod) && !g.mod.Factory && len(call.Args) == len(kindParams(g.mod.Kind)) {
				l.expr(f, call.Fun) // marks it used
				l.errorf(f, e.Span(), CodeNotAMod, "%s takes the %s mod %s itself, not a call of it", context, g.mod.Kind, id.Name).
					WithHint("write %s = %s: maskc calls it with (%s) for every pair", want, id.Name, strings.Join(kindParams(g.mod.Kind), ", "))
				return nil
			}
		}
	}
	// `mask = causal + local`: mods joined by an operator. One diagnostic
	// naming the combinators (issue 31: E028 "call it with index
	// arguments" once per operand, and_masks never mentioned).
	if bin, ok := dsl.Unparen(e).(*dsl.BinaryExpr); ok && want == dsl.MaskMod && (l.isMod(f, bin.X) || l.isMod(f, bin.Y)) {
		for _, x := range []dsl.Expr{bin.X, bin.Y} {
			if l.isMod(f, x) {
				l.expr(f, x) // marks it used: one diagnostic, not a W003 too
			}
		}
		a, b := sourceText(f, bin.X), sourceText(f, bin.Y)
		hint := fmt.Sprintf("write and_masks(%s, %s) (kept where both masks keep the pair) or or_masks(%s, %s) (where either does)", a, b, a, b)
		switch bin.Op {
		case dsl.OpAnd, dsl.OpBitAnd:
			hint = fmt.Sprintf("write and_masks(%s, %s): the pair is kept where both masks keep it", a, b)
		case dsl.OpOr, dsl.OpBitOr:
			hint = fmt.Sprintf("write or_masks(%s, %s): the pair is kept where either mask keeps it", a, b)
		}
		l.errorf(f, e.Span(), CodeNotAValue, "%s joins mask mods with `%s`; mods are combined by and_masks and or_masks, not by operators", context, bin.Op).
			WithHint("%s", hint)
		return nil
	}
	r := l.expr(f, e)
	if !r.ok() && r.fn == "" {
		return nil
	}
	text := sourceText(f, e)
	switch {
	case r.mod == nil && r.fn != "":
		l.errorf(f, e.Span(), CodeNotAMod, "%s needs a %s mod, got the function %s", context, want, text).
			WithHint("declare a mod: %s", exampleDecl(want))
		return nil
	case r.mod == nil:
		d := l.errorf(f, e.Span(), CodeNotAMod, "%s needs a %s mod, got %s %s", context, want, article(r.typ), r.typ)
		if call, ok := dsl.Unparen(e).(*dsl.CallExpr); ok && (r.typ == dsl.TypeBool || r.typ == dsl.TypeFloat) {
			d.WithHint("pass the mod itself, without index arguments: %s", sourceText(f, call.Fun))
		} else {
			d.WithHint("declare a mod: %s", exampleDecl(want))
		}
		return nil
	case r.typ == dsl.TypeFunc && (r.mod.mod.partialTarget || r.mod.mod.Decl.KwOnly > 0) &&
		len(r.mod.mod.Decl.Params)-r.mod.mod.Decl.KwOnly == want.Arity():
		// A def that a partial(...) binds elsewhere, or whose parameters
		// after a bare `*` have defaults, used here as it is: a function of
		// the mod's parameters, as in Python.
		mv := l.bindPartial(f, e.Span(), context, r.mod, nil)
		if mv != nil {
			mv.name = r.mod.name
		}
		return mv
	case r.typ == dsl.TypeFunc:
		n := len(r.mod.mod.Decl.Params)
		l.errorf(f, e.Span(), CodeNotAMod, "%s needs a %s mod, got the helper function %s, which takes %d %s", context, want, text, n, plural(n, "parameter", "parameters")).
			WithHint("a %s mod is a def of %d parameters: %s", want, want.Arity(), exampleDef(want))
		return nil
	case r.mod.unapplied:
		l.errorf(f, e.Span(), CodeFactoryNoArgs, "factory %s is used without its arguments", r.mod.name).
			WithHint("instantiate it: %s", factorySignature(r.mod.mod))
		return nil
	case r.mod.kind != want:
		d := l.errorf(f, e.Span(), CodeModKindMismatch, "%s is a %s mod, but %s needs a %s mod", r.mod.name, r.mod.kind, context, want)
		if want == dsl.ScoreMod {
			d.WithHint("a mask goes in the mask setting; as a score write where(cond, score, -inf), e.g. causal_score")
		} else {
			d.WithHint("a score goes in the score setting; a mask returns a bool for each (q, kv) pair")
		}
		return nil
	}
	return r.mod
}

// exampleDef is a def of kind k, for hints.
func exampleDef(k dsl.ModKind) string {
	if k == dsl.ScoreMod {
		return "def s(score, b, h, q_idx, kv_idx): ..."
	}
	return "def m(b, h, q_idx, kv_idx): ..."
}

func article(t dsl.Type) string {
	if t == dsl.TypeInt {
		return "an"
	}
	return "a"
}

func exampleDecl(k dsl.ModKind) string {
	if k == dsl.ScoreMod {
		return "score s(score, b, h, q, kv) = ..."
	}
	return "mask m(b, h, q, kv) = ..."
}

// factorySignature shows how a factory is instantiated, e.g. sliding(W).
func factorySignature(m *Mod) string {
	return m.Name + "(" + strings.Join(m.Decl.FactoryParamNames(), ", ") + ")"
}

// modSignature shows a mod's declared parameters, e.g.
// mask causal(b, h, q_idx, kv_idx).
func modSignature(m *Mod) string {
	names := make([]string, len(m.Decl.Params))
	for i, p := range m.Decl.Params {
		names[i] = p.Name
	}
	head := m.Name
	if m.Factory {
		head = factorySignature(m)
	}
	return m.Kind.String() + " " + head + "(" + strings.Join(names, ", ") + ")"
}

// instantiate binds a factory's constant (or buffer) arguments.
func (l *lowering) instantiate(f *frame, x *dsl.CallExpr, m *Mod) result {
	params := m.Decl.FactoryParams
	args, frames, ok := l.factoryArgs(f, x, m)
	if !ok {
		return result{}
	}
	if args == nil {
		l.lowerArgs(f, x)
		d := l.errorf(f, x.Sp, CodeArgCount, "factory %s takes %d %s, got %d", m.Name, len(params),
			plural(len(params), "argument", "arguments"), len(x.Args))
		if len(x.Args) == m.Kind.Arity() {
			d.WithHint("instantiate it first, then call the mod: %s(%s)", factorySignature(m), strings.Join(kindParams(m.Kind), ", "))
		} else {
			d.WithHint("instantiate it as %s", factorySignature(m))
		}
		return result{}
	}
	mv := &modValue{kind: m.Kind, mod: m}
	names := make([]string, len(params))
	okAll := true
	for i, a := range args {
		p := params[i]
		sym := Symbol{Kind: SymFactoryParam, Name: p.Name, Decl: p}
		if stringValue(a) {
			// A string argument (`device="cuda"`, a mode name): a word the
			// factory may pass along or compare; the mask itself never
			// computes with it (a read as a value is refused there).
			mv.args = append(mv.args, &binding{kind: bindValue, res: l.wordValue(frames[i], a), sym: withType(sym, dsl.TypeWord), ident: p})
			names[i] = sourceText(frames[i], a)
			continue
		}
		r := l.expr(frames[i], a)
		switch {
		case !r.ok() && r.fn == "":
			// Unknown while a factory's own declaration is checked (or
			// already reported): keep going, so recursion is still found.
			mv.args = append(mv.args, &binding{kind: bindUnknown, sym: sym, ident: p})
			names[i] = "?"
		case m.bufParams[p.Name] && r.typ == dsl.TypeNone:
			// An Optional tensor left None (`extra=None`): Python indexes it
			// only on a path its `if extra is not None` takes, so the
			// None is refused where it is indexed (index), not here.
			mv.args = append(mv.args, &binding{kind: bindValue, res: r, sym: withType(sym, r.typ), ident: p})
			names[i] = sourceText(frames[i], a)
		case m.bufParams[p.Name]:
			if r.typ != dsl.TypeBuffer {
				l.errorf(f, a.Span(), CodeFactoryArg, "argument %s of %s must be a buffer name, got %s", p.Name, m.Name, describeResult(r)).
					WithHint("%s indexes %s, so pass a declared buffer, e.g. buffer doc: i32[KV]", m.Name, p.Name)
				okAll = false
				continue
			}
			mv.args = append(mv.args, &binding{kind: bindBuffer, buf: r.buf, sym: withType(sym, dsl.TypeBuffer), ident: p})
			names[i] = r.buf.Name
		case r.typ == dsl.TypeBuffer:
			use, stmt := wholeBufferUse(m.Decl, p.Name)
			pf := l.setupFrame(m)
			work := l.firstSetupWork(pf, m.Decl.FactoryPre)
			if use != nil && stmt != nil && work != nil && work.Span().Start < stmt.Span().Start || use == nil && work != nil {
				use = nil // an earlier statement of the set-up builds a tensor
			}
			if (use != nil || work != nil) && !m.std && f.site == nil {
				// torchtitan's document mask: `eos_mask = batch == eos_id`,
				// a cumsum, then the inner def reads the result; lingua's
				// `lengths.cumsum(0)`; attention-gym's counts and offsets.
				if use != nil {
					if let := letOf(m.Decl.FactoryPre, stmt); let != nil {
						var also []string
						if let.Unpack > 0 {
							also = unpackedNames(pf, let)
						}
						l.setupError(pf, m, use.Span(), setupName(pf, let), also,
							fmt.Sprintf("is computed from the whole tensor %s (buffer %s here)", p.Name, r.buf.Name), "", false)
					} else {
						l.errorf(f, use.Span(), parser.CodeTensorWork, "%s computes with the whole tensor %s (`%s`), which is buffer %s here: a mod reads a buffer one element at a time",
							m.Name, p.Name, f.src.Slice(stmt.Span()), r.buf.Name).
							WithHint("prepare the tensor the inner def reads in Python before the call, pass it as a buffer (declare it, e.g. buffer ids: i32[B, KV]) and index it in the inner def")
						l.c.markSetup(m) // its set-up's tensor work, reported here
					}
				} else {
					l.setupWork(pf, m, work)
				}
			} else if ix, in := preIndexUse(m.Decl, p.Name); ix != nil && !m.std {
				// `if ids[0] > 0:` before (or around) the inner def: run at
				// the call, where a buffer's values are unknown.
				l.errorf(f, ix.Span(), CodeFactoryArg, "factory %s reads %s, buffer %s here, in `%s`, which runs when the factory is called: a buffer's values are known only at run time",
					m.Name, p.Name, r.buf.Name, f.src.Slice(in.Span())).
					WithHint("decide the factory's statements on compile-time arguments (`x is None`, a flag, a param); read the buffer inside the inner def, choosing with torch.where there")
			} else {
				l.errorf(f, a.Span(), CodeFactoryArg, "argument %s of %s must be a constant, got buffer %s", p.Name, m.Name, r.buf.Name).
					WithHint("%s uses %s as a number; pass a literal or a param", m.Name, p.Name)
			}
			okAll = false
		case r.typ == dsl.TypeNone || r.typ == dsl.TypeTuple:
			mv.args = append(mv.args, &binding{kind: bindValue, res: r, sym: withType(sym, r.typ), ident: p})
			names[i] = sourceText(frames[i], a)
		case r.mod != nil && !r.mod.unapplied:
			// A factory taking a mod (attention-gym's generate_doc_mask_mod
			// wraps any mask_mod): the mod, inlined where it is called.
			mv.args = append(mv.args, &binding{kind: bindValue, res: r, sym: withType(sym, r.typ), ident: p})
			names[i] = r.mod.name
		case !r.scalar():
			l.value(f, a) // reports what a is
			okAll = false
		case !r.isConst() && len(l.stack) == 0:
			l.errorf(f, a.Span(), CodeFactoryArg, "argument %s of %s must be a compile-time constant, got a run-time %s", p.Name, m.Name, r.typ).
				WithHint("factory arguments are literals or params; index variables and sizes change at run time")
			okAll = false
		case !r.isConst():
			// A run-time value, inside a mod (Transfusion's
			// modality(offset, length)(b, h, q_idx, kv_idx) with offsets read
			// from a buffer): the inner mod is inlined with it, as Python's
			// closure computes it; a factory statement that needs a constant
			// (an if, a range) reports it there.
			mv.args = append(mv.args, &binding{kind: bindValue, res: r, sym: withType(sym, r.typ), ident: p})
			names[i] = sourceText(frames[i], a)
		default:
			mv.args = append(mv.args, &binding{kind: bindValue, res: r, sym: withType(sym, r.typ), ident: p})
			names[i] = r.val.String()
		}
	}
	if !okAll {
		return result{}
	}
	mv.name = m.Name + "(" + strings.Join(names, ", ") + ")"
	if m.Decl.DefStmts {
		return l.defStmtsFactory(f, x, m, mv)
	}
	if m.Decl.FactoryPre != nil && !l.factoryPre(f, m, mv, nil) {
		return result{}
	}
	if len(m.locals) > 0 {
		// The inner defs see each other (and themselves: recursion is
		// caught where one is inlined).
		var lvs []*modValue
		for _, lm := range m.locals {
			b, lv := localBinding(lm, mv)
			mv.locals = append(mv.locals, b)
			lvs = append(lvs, lv)
		}
		for _, lv := range lvs {
			lv.locals = mv.locals
		}
	}
	if m.Decl.FactoryResult != nil {
		return l.factoryResult(f, x, m, mv)
	}
	return result{typ: kindType(m.Kind), mod: mv}
}

// localBinding binds local def lm of a factory called with mv's arguments:
// its instance (a helper function or a mod) and the binding of its name.
func localBinding(lm *Mod, mv *modValue) (*binding, *modValue) {
	lv := &modValue{kind: lm.Kind, mod: lm, args: mv.args, name: lm.Name}
	typ := kindType(lm.Kind)
	if lm.Helper {
		typ = dsl.TypeFunc
	}
	return &binding{kind: bindValue, res: result{typ: typ, mod: lv}, ident: lm.Decl.Name,
		sym: Symbol{Kind: SymMod, Name: lm.Name, Decl: lm.Decl, Type: typ}}, lv
}

// defStmtsFactory runs the statements of factory m, whose inner defs stand
// in its `if` blocks (dsl.ModDecl.DefStmts), at a call whose arguments mv
// binds: each def reached binds its name to its mod (mv itself for the
// inner def, an instance of a local one), then the `return` reached, else
// the last one, gives the factory's result. A def in a branch not taken is
// never bound, so never lowered: its body reports nothing there, as Python
// never runs it.
func (l *lowering) defStmtsFactory(f *frame, x *dsl.CallExpr, m *Mod, mv *modValue) result {
	d := m.Decl
	keys := map[string]*binding{dsl.DefKey(0): {kind: bindValue, res: result{typ: kindType(m.Kind), mod: mv}, ident: d.Inner,
		sym: Symbol{Kind: SymMod, Name: d.Inner.Name, Decl: d, Type: kindType(m.Kind)}}}
	var lvs []*modValue
	for i, lm := range m.locals {
		b, lv := localBinding(lm, mv)
		keys[dsl.DefKey(i+1)] = b
		lvs = append(lvs, lv)
	}
	var ret result
	saved := l.preReturn
	l.preReturn = &ret
	ok := l.factoryPre(f, m, mv, keys)
	l.preReturn = saved
	if !ok {
		return result{}
	}
	for _, lv := range lvs {
		lv.locals = mv.locals // the inner defs see the names the statements bound
	}
	if ret.typ == dsl.TypeInvalid {
		return l.factoryResult(f, x, m, mv)
	}
	if ret.mod == nil || ret.mod.unapplied {
		l.errorf(f, x.Sp, CodeNotAMod, "factory %s returns %s for %s, not a mask or score mod", m.Name, describeResult(ret), mv.name).
			WithHint("return one of its inner functions, or a mod such as causal")
		return result{}
	}
	return ret
}

// factoryResult evaluates what a factory def returns when that is not its
// inner function itself: its assignments after the inner def and its
// return expression, in a frame where the factory's parameters have their
// arguments and the inner function's name is the instantiated mod mv.
func (l *lowering) factoryResult(f *frame, x *dsl.CallExpr, m *Mod, mv *modValue) result {
	d := m.Decl
	fr := bodyFrame(f, mv) // mv.mod is m
	// With DefStmts, the statements bound the inner def's name where they ran.
	if !d.DefStmts {
		inner := result{typ: kindType(m.Kind), mod: mv}
		fr.names[d.Inner.Name] = &binding{kind: bindValue, res: inner, ident: d.Inner,
			sym: Symbol{Kind: SymMod, Name: d.Inner.Name, Decl: d, Type: inner.typ}}
	}
	for _, let := range d.FactoryLets {
		if stringValue(let.Value) {
			// `prefix = "a" if approx else "b"` for a __name__: no meaning.
			fr.names[let.Name.Name] = &binding{kind: bindValue, res: result{typ: dsl.TypeWord}, ident: let.Name}
			continue
		}
		r := l.expr(fr, let.Value)
		if !r.ok() {
			return result{}
		}
		fr.names[let.Name.Name] = &binding{kind: bindValue, res: r, ident: let.Name,
			sym: Symbol{Kind: SymLet, Name: let.Name.Name, Decl: let, Type: r.typ}}
	}
	r := l.expr(fr, d.FactoryResult)
	if !r.ok() {
		return result{}
	}
	if r.mod == nil || r.mod.unapplied {
		l.errorf(fr, d.FactoryResult.Span(), CodeNotAMod, "factory %s returns %s, not a mask or score mod", m.Name, describeResult(r)).
			WithHint("return the inner function, or a combination such as and_masks(%s, causal)", d.Inner.Name)
		return result{}
	}
	return r
}

// factoryArgs binds the arguments of a factory call to its parameters as
// Python does: positional ones in order, then keyword ones by name, then
// the def's default values (read in a frame of their own: Python
// evaluates a default where the def is written). It returns one argument
// and its frame per parameter, or nil args when their number is wrong
// (reported by the caller); a keyword argument that names no parameter, or
// one already given, is an error (ok false).
func (l *lowering) factoryArgs(f *frame, x *dsl.CallExpr, m *Mod) (args []dsl.Expr, frames []*frame, ok bool) {
	params, kwOnly := m.Decl.FactoryParams, m.Decl.FactoryKwOnly
	if m.Helper {
		params, kwOnly = m.Decl.Params, m.Decl.KwOnly
	}
	args, frames = make([]dsl.Expr, len(params)), make([]*frame, len(params))
	// A variadic factory's last parameter (`*mask_mods`) takes the
	// positional arguments after the others, as a tuple (empty when none).
	variadic := !m.Helper && m.Decl.Variadic && len(params) > 0
	var rest *dsl.TupleExpr
	if variadic {
		rest = &dsl.TupleExpr{Sp: x.Sp}
		args[len(params)-1], frames[len(params)-1] = rest, f
	}
	n := 0
	for _, a := range x.Args {
		kw, isKw := a.(*dsl.KeywordArg)
		if !isKw {
			if variadic && n >= len(params)-1 {
				if len(rest.Elems) == 0 {
					rest.Sp = a.Span()
				}
				rest.Elems = append(rest.Elems, a)
				rest.Sp = rest.Sp.Join(a.Span())
				continue
			}
			if n >= len(params)-kwOnly { // past a bare `*` only names reach
				if kwOnly == 0 || n >= len(params) {
					return nil, nil, true // too many: the caller reports the count
				}
				l.errorf(f, a.Span(), CodeArgCount, "%s takes %s only by name (it follows a bare `*`), got an argument by position",
					m.Name, params[n].Name).
					WithHint("pass it as %s=...", params[n].Name)
				return nil, nil, false
			}
			args[n], frames[n] = a, f
			n++
			continue
		}
		i := slices.IndexFunc(params, func(p *dsl.Ident) bool { return p.Name == kw.Name.Name })
		if variadic && i == len(params)-1 {
			i = -1 // Python takes no keyword for *args
		}
		switch {
		case i < 0:
			l.noParameter(f, kw, m, params)
			return nil, nil, false
		case args[i] != nil:
			l.errorf(f, kw.Name.Sp, CodeKeywordArg, "%s gets %s twice", callableName(m), kw.Name.Name).
				WithHint("pass %s once, by position or as %s=", kw.Name.Name, kw.Name.Name)
			return nil, nil, false
		}
		args[i], frames[i] = kw.Value, f
	}
	for i := range params {
		if args[i] != nil {
			continue
		}
		if i >= len(m.Decl.Defaults) || m.Decl.Defaults[i] == nil {
			return nil, nil, true
		}
		args[i], frames[i] = m.Decl.Defaults[i], defaultFrame(f, m)
	}
	return args, frames, true
}

// noParameter reports keyword argument kw of a call of m, whose
// parameters (params) have none of its name.
func (l *lowering) noParameter(f *frame, kw *dsl.KeywordArg, m *Mod, params []*dsl.Ident) {
	l.errorf(f, kw.Name.Sp, CodeKeywordArg, "%s has no parameter %s", callableName(m), kw.Name.Name).
		WithHint("its parameters are %s(%s)", m.Name, strings.Join(paramNames(params), ", "))
}

// defaultFrame is the frame in which a default value of m's parameters is
// evaluated from a call in f: the def's own text, where its module's names
// (params, buffers, mods) are seen, not the caller's locals.
func defaultFrame(f *frame, m *Mod) *frame {
	return &frame{src: m.src, names: map[string]*binding{}, record: f.record && !m.std, std: m.std}
}

// applyCost is what inlining one mod body counts against the node budgets.
const applyCost = 4

// resultType is the type a mod of kind k gives: bool for a mask, float for
// a score.
func resultType(k dsl.ModKind) dsl.Type {
	if k == dsl.ScoreMod {
		return dsl.TypeFloat
	}
	return dsl.TypeBool
}

func withType(s Symbol, t dsl.Type) Symbol {
	s.Type = t
	return s
}

func describeResult(r result) string {
	switch {
	case r.fn != "":
		return "the function " + r.fn
	case r.mod != nil:
		return r.mod.kind.String() + " " + r.mod.name
	case r.isConst():
		return r.typ.String() + " " + r.val.String()
	}
	return article(r.typ) + " " + r.typ.String()
}

// applyCall lowers a mod applied to index arguments: causal(b, h, q, kv).
func (l *lowering) applyCall(f *frame, x *dsl.CallExpr, mv *modValue) result {
	if mv.mod != nil && mv.mod.Helper {
		return l.applyHelper(f, x, mv)
	}
	if mv.mod != nil && mv.mod.asFn != nil {
		// A def called, and never used as a mod: Python's call, whose value
		// may be of any type (a bucket index of four ints).
		fn := *mv
		fn.mod = mv.mod.asFn
		return l.applyHelper(f, x, &fn)
	}
	want := kindParams(mv.kind)
	args := make([]result, len(x.Args))
	okAll := true
	for i, a := range x.Args {
		args[i] = l.value(f, a)
		okAll = okAll && args[i].ok()
	}
	if len(args) != len(want) {
		d := l.errorf(f, x.Sp, CodeArgCount, "%s %s takes %d arguments (%s), got %d", mv.kind, mv.name, len(want),
			strings.Join(want, ", "), len(args))
		if mv.mod != nil {
			d.WithHint("signature: %s", modSignature(mv.mod))
		} else {
			d.WithHint("call it as %s(%s)", mv.name, strings.Join(want, ", "))
		}
		return result{}
	}
	if !okAll {
		return result{}
	}
	for i, a := range args {
		isScore := mv.kind == dsl.ScoreMod && i == 0
		if !isScore && a.typ == dsl.TypeFloat {
			l.errorf(f, x.Args[i].Span(), CodeArgType, "argument %s of %s must be an int index, got float", want[i], mv.name).
				WithHint("index arguments are ints such as b, h, q, kv or q - 1")
			okAll = false
		}
	}
	if !okAll {
		return result{}
	}
	return l.apply(f, mv, args, x.Sp)
}

// apply inlines mod value mv applied to lowered arguments; site is the
// span of the use, where recursion is reported.
func (l *lowering) apply(f *frame, mv *modValue, args []result, site dsl.Span) result {
	l.applies++
	if l.aborted {
		return result{}
	}
	if mv.partial != nil {
		return l.applyPartial(f, mv, args, site)
	}
	if mv.mod == nil {
		var acc result
		for i, part := range mv.parts {
			r := l.apply(f, part, args, site)
			if !r.ok() {
				return result{}
			}
			if i == 0 {
				acc = r
				continue
			}
			if acc.isConst() && r.isConst() {
				v, _ := dsl.BinaryOp(mv.comb, acc.val, r.val)
				acc = l.constant(f, v, site)
			} else {
				sp := l.span(f, site)
				node := &dsl.BinaryExpr{Sp: sp, Op: mv.comb, OpSp: sp, X: acc.node, Y: r.node}
				acc = l.add(f, node, dsl.TypeBool, acc.size+r.size+1)
			}
			if !acc.ok() {
				return result{}
			}
		}
		return acc
	}
	m := mv.mod
	if !m.paramCount {
		l.errorf(f, site, CodeModParamCount, "%s %s is declared with %d parameters instead of %d, so it cannot be used",
			m.Kind, m.Name, len(m.Decl.Params), m.Kind.Arity()).
			WithHint("declare it as %s %s(%s)", m.Kind, m.Name, strings.Join(kindParams(m.Kind), ", "))
		return result{}
	}
	nested := 0 // instances of factory m being applied
	for i, s := range l.stack {
		if s == m {
			if m.Factory && !slices.Contains(l.instances, mv) {
				// Another instance of the factory, built from compile-time
				// arguments (and_masks(and_masks(a, b), c) of a pasted
				// and_masks): an application, not a cycle, unless they nest
				// without end.
				if nested++; nested < maxFactoryNesting {
					continue
				}
				l.errorf(f, site, CodeRecursion, "instances of factory %s nested more than %d deep", m.Name, maxFactoryNesting).
					WithHint("a factory whose mod builds another instance of it never ends; write the condition without recursion")
				return result{}
			}
			cycle := make([]string, 0, len(l.stack)-i+1)
			for _, t := range l.stack[i:] {
				cycle = append(cycle, t.Name)
			}
			cycle = append(cycle, m.Name)
			l.errorf(f, site, CodeRecursion, "recursive mod: %s", strings.Join(cycle, " -> ")).
				WithHint("mods are inlined at every use, so they cannot call themselves; write the condition without recursion")
			return result{}
		}
	}
	if size, known := l.c.modSize[m]; known && (size < 0 || l.work+size > maxLoweredNodes) {
		if size < 0 && l.declPass {
			l.aborted = true // the callee's own declaration already reports it
		} else {
			l.tooLarge()
		}
		return result{}
	}
	if size, known := l.c.modSize[m]; known && l.declPass && !m.Factory {
		// While a declaration is checked only types and diagnostics matter,
		// and m's own check is done: stand in for its body.
		return result{typ: resultType(m.Kind), size: size}
	}
	// Inlining a body costs about as much as building a few nodes.
	l.work += applyCost
	l.c.work += applyCost
	l.stack = append(l.stack, m)
	l.instances = append(l.instances, mv)
	defer func() {
		l.stack = l.stack[:len(l.stack)-1]
		l.instances = l.instances[:len(l.instances)-1]
	}()
	if r, ok := l.reuseBody(f, m, args); ok {
		return r
	}
	inner := &frame{src: m.src, names: map[string]*binding{}, std: m.std, site: f.site, stdName: f.stdName}
	if m.std && inner.site == nil {
		sp := site
		inner.site, inner.stdName = &sp, m.Name
	}
	for i, p := range m.Decl.FactoryParams {
		if i < len(mv.args) {
			b := *mv.args[i]
			inner.names[p.Name] = &b
		}
	}
	for _, lb := range mv.locals {
		b := *lb
		inner.names[lb.ident.Name] = &b
	}
	for i, p := range m.Decl.Params {
		typ := dsl.TypeInt
		if m.Kind == dsl.ScoreMod && i == 0 {
			typ = dsl.TypeFloat
		}
		inner.names[p.Name] = &binding{kind: bindValue, res: args[i], ident: p,
			sym: Symbol{Kind: SymModParam, Name: p.Name, Decl: p, Type: typ}}
	}
	return l.body(inner, m)
}

// loweredBody is the lowering of a plain user mod's body with its
// parameters bound to the index variables (b, h, q, kv, and score for a
// score mod), as the mod's own check built it.
type loweredBody struct {
	res     result
	types   map[dsl.Expr]dsl.Type
	buffers []*dsl.BufferDecl
	work    int // what building it counted against the node budgets
}

// reuseBody returns the kept lowering of m's body when inlining it here
// would build the very same nodes: m is a plain user mod, the use is not
// inside a standard-library body (whose uses take the span of the user's
// text), and the arguments are the index variables themselves (as for an
// attention's mask = m, or and_masks(m, ...)). Lowered expressions may share
// subtrees, as they already do for a let used twice.
func (l *lowering) reuseBody(f *frame, m *Mod, args []result) (result, bool) {
	body, ok := l.c.bodies[m]
	if !ok || f.site != nil || l.declPass || l.aborted || l.c.exhausted {
		return result{}, false
	}
	for i, a := range args {
		v, typ, ok := paramVar(m.Kind, i)
		ref, isRef := a.node.(*dsl.VarRef)
		if !ok || !isRef || ref.Var != v || a.typ != typ || a.isConst() {
			return result{}, false
		}
	}
	// Where building the nodes again would run out of budget, build them,
	// so that the error is reported exactly as before.
	if l.work+body.work > maxLoweredNodes || l.c.work+body.work > maxCheckNodes {
		return result{}, false
	}
	l.work += body.work
	l.c.work += body.work
	if l.types != nil {
		for n, t := range body.types {
			l.types[n] = t
		}
	}
	for _, b := range body.buffers {
		l.useBufferDecl(b)
	}
	return body.res, true
}

// body lowers a mod's lets and result in frame f, whose parameters are
// bound, and checks the result's type against the mod's kind.
func (l *lowering) body(f *frame, m *Mod) result {
	b := m.Decl.Body
	if b == nil {
		return result{}
	}
	var lets []*binding
	f.python = b.Def
	if b.Def {
		// Python: a name assigned anywhere in the function is local to all
		// of it; reading it before its first assignment raises
		// UnboundLocalError, even where an outer name (a factory parameter,
		// a param or buffer) has that name. Parameters are locals already.
		params := map[string]bool{}
		for _, p := range m.Decl.Params {
			params[p.Name] = true
		}
		for _, let := range b.Lets {
			if let.Name != nil && !params[let.Name.Name] {
				f.names[let.Name.Name] = &binding{kind: bindUnbound, ident: let.Name,
					sym: Symbol{Kind: SymLet, Name: let.Name.Name, Decl: let}}
				params[let.Name.Name] = true // only the first assignment matters
			}
		}
	}
	resultExpr := b.Result
	var r result
	if b.Stmts != nil {
		var returned bool
		r, resultExpr, returned = l.run(f, m, b.Stmts, &lets)
		if !returned {
			l.errorf(f, m.Decl.Body.Sp, CodeStatement, "def %s ends without `return` here: Python returns None, which is not a %s", defName(m), m.Kind).
				WithHint("end every branch with `return ...`")
			return result{}
		}
	} else {
		for _, let := range b.Lets {
			l.assign(f, m, let, &lets)
		}
		r = l.result(f, m, b.Result)
	}
	if f.record && !l.aborted && !l.partial { // after an abort (E055) or a partial run uses were not all counted
		for _, bd := range lets {
			if bd.uses == 0 && !throwaway(bd) {
				what := "let"
				if b.Def {
					what = "assignment to"
				}
				l.warnf(f, bd.ident.Sp, CodeUnusedLet, "%s %s is never used", what, bd.ident.Name).
					WithHint("remove it, or use it in the result")
			}
		}
	}
	if m.Helper {
		return r // a helper gives a value of any type
	}
	return l.checkResult(f, m, r, resultExpr)
}

// throwaway reports whether an unused binding is one Python code leaves
// unused on purpose, which W004 does not report: a name starting with `_`,
// or a target of an unpacking (`q_col, q_row = decode(q_idx)` using only
// q_row), as Python's linters treat them.
func throwaway(bd *binding) bool {
	if strings.HasPrefix(bd.ident.Name, "_") {
		return true
	}
	let, ok := bd.sym.Decl.(*dsl.LetStmt)
	return ok && let.UnpackTarget()
}

// assign lowers one let or assignment of m's body in frame f, appending
// its binding to lets.
func (l *lowering) assign(f *frame, m *Mod, let *dsl.LetStmt, lets *[]*binding) {
	b := m.Decl.Body
	{
		r := l.expr(f, let.Value)
		if !r.scalar() && !callable(r) && r.typ != dsl.TypeTuple && r.typ != dsl.TypeNone && r.typ != dsl.TypeBuffer && (r.ok() || r.fn != "") {
			r = l.value(f, let.Value) // reports what it is
		}
		if let.Unpack > 0 && r.ok() && (r.typ != dsl.TypeTuple || len(r.elems) != let.Unpack) {
			l.unpackError(f, let, r)
			r = result{}
		}
		if let.Name == nil {
			return
		}
		prev := f.names[let.Name.Name]
		if prev != nil && prev.kind == bindUnbound {
			prev = nil // the first assignment of a def's local
			delete(f.names, let.Name.Name)
		}
		var fresh, refused bool
		if let.AugOp != dsl.OpInvalid && prev != nil && b.Def && runtimeTensor(prev.res) {
			// In place: the same tensor, changed (a Python number is
			// rebound instead, to the new value r).
			fresh = prev.fresh
			if !fresh {
				l.errorf(f, let.Name.Sp, CodeInPlaceShared, "`%s %s= ...` changes the tensor %s holds in place under torch, and that tensor may be another name's too (%s): torch would change it there as well", let.Name.Name, let.AugOp, let.Name.Name, sharedWhy(prev)).
					WithHint("write %s = %s %s ..., which makes a new tensor and leaves the other names as they are", let.Name.Name, let.Name.Name, let.AugOp)
				r, refused = result{}, true
			}
		} else {
			fresh = freshValue(f, r)
		}
		switch {
		case prev != nil && b.Def:
			// A def body rebinds: each assignment is a new value that the
			// statements after it see (single static assignment).
		case prev != nil:
			l.errorf(f, let.Name.Sp, CodeDuplicate, "%s is already declared in %s", let.Name.Name, m.Name).
				WithHint("%s", l.c.firstDeclared(f.src, prev.ident))
		case f.record:
			l.c.checkShadow(f, let.Name, "let")
		}
		doc := "let " + strings.TrimPrefix(f.src.Slice(let.Sp), "let ")
		if let.Assign {
			doc = f.src.Slice(let.Sp)
		}
		bd := &binding{kind: bindValue, res: r, ident: let.Name, fresh: fresh,
			sym: Symbol{Kind: SymLet, Name: let.Name.Name, Decl: let, Type: r.typ, Doc: doc}}
		if r.typ == dsl.TypeInvalid && r.fn == "" {
			bd.kind = bindUnknown
		}
		f.names[let.Name.Name] = bd
		if !refused { // after E083, no W004 as well
			*lets = append(*lets, bd)
		}
		if f.record {
			l.c.info.Defs[let.Name] = bd.sym
		}
	}
}

// runtimeTensor reports whether r is a value that torch holds as a tensor
// at run time (not a Python number decided at compile time).
func runtimeTensor(r result) bool {
	return r.ok() && r.scalar() && !r.isConst()
}

// freshValue reports whether r, a value being bound to a name, is a tensor
// that no other name of f holds: the result of an operator or a built-in
// (a new tensor under torch), not an input (q_idx and the other index
// tensors read as VarRefs) nor the very node another binding holds (`y =
// x`, a helper that returns its argument, a tuple's element). A binding
// that shares r's node stops being fresh too.
func freshValue(f *frame, r result) bool {
	if !runtimeTensor(r) {
		return false
	}
	if _, input := r.node.(*dsl.VarRef); input {
		return false
	}
	fresh := true
	for _, o := range f.names {
		if o.kind == bindValue && o.res.node == r.node {
			o.fresh, fresh = false, false
		}
	}
	return fresh
}

// sharedWhy says why b's tensor may be shared, for E083.
func sharedWhy(b *binding) string {
	if _, input := b.res.node.(*dsl.VarRef); input {
		return "it is an index tensor FlexAttention passes, or one of its names"
	}
	if b.sym.Kind != SymLet {
		return "it is a parameter: the caller's tensor"
	}
	return "another name was bound to the same tensor"
}

// checkResult checks a mod's result r, computed from the expression e,
// against the mod's kind.
func (l *lowering) checkResult(f *frame, m *Mod, r result, e dsl.Expr) result {
	if !r.ok() {
		return result{}
	}
	switch m.Kind {
	case dsl.MaskMod:
		if r.typ != dsl.TypeBool {
			l.errorf(f, e.Span(), CodeMaskNotBool, "mask %s must give a bool, got %s", m.Name, r.typ).
				WithHint("a mask keeps a (q, kv) pair when it gives True; compare, e.g. %s != 0", sourceText(f, e))
			return result{}
		}
	case dsl.ScoreMod:
		switch r.typ {
		case dsl.TypeBool:
			d := l.errorf(f, e.Span(), CodeScoreNotFloat, "score %s must give a number, got bool", m.Name)
			if ps := m.Decl.Params; m.Decl.Def && len(ps) == 5 && strings.HasPrefix(ps[2].Name, "q") && strings.HasPrefix(ps[3].Name, "k") {
				// def f(b, h, q_idx, kv_idx, offset), bound later by functools.partial
				d.WithHint("a def of five parameters is a score_mod (score, b, h, q_idx, kv_idx); bind a mask's own parameter where it is used, partial(%s, %s=...), or write a factory: def make(%s): def mask(b, h, q_idx, kv_idx): ...; return mask",
					m.Name, m.Decl.Params[4].Name, m.Decl.Params[4].Name)
			} else {
				d.WithHint("to drop pairs from a score, write where(cond, score, -inf); or make it a mask")
			}
			return result{}
		case dsl.TypeInt:
			// Python promotes an int score to float: make that explicit.
			if r.isConst() {
				return l.constant(f, dsl.Float(float64(r.val.I)), e.Span())
			}
			zero := l.constant(f, dsl.Float(0), e.Span())
			sp := l.span(f, e.Span())
			return l.add(f, &dsl.BinaryExpr{Sp: sp, Op: dsl.OpAdd, OpSp: sp, X: r.node, Y: zero.node}, dsl.TypeFloat, r.size+2)
		}
	}
	return r
}

// isMod reports whether e names a mod (a plain name, looked up without
// diagnostics).
func (l *lowering) isMod(f *frame, e dsl.Expr) bool {
	id, ok := dsl.Unparen(e).(*dsl.Ident)
	if !ok {
		return false
	}
	g, ok := l.c.lookup(f, id.Name)
	return ok && (g.kind == SymMod || g.kind == SymStdMod)
}

// callableName names a factory or helper for messages: "factory f".
func callableName(m *Mod) string {
	if m.Helper {
		return "function " + m.Name
	}
	return "factory " + m.Name
}

// paramNames lists the names of ids.
func paramNames(ids []*dsl.Ident) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.Name
	}
	return out
}

// lowerArgs lowers every argument of a call that cannot be bound (keyword
// arguments by their value), so the diagnostics inside them are reported
// beside the argument-count error.
func (l *lowering) lowerArgs(f *frame, x *dsl.CallExpr) {
	for _, a := range x.Args {
		if kw, ok := a.(*dsl.KeywordArg); ok {
			a = kw.Value
		}
		l.expr(f, a)
	}
}

// applyHelper inlines a call of helper function m: its arguments, by
// position, keyword or default as Python binds them, are values of any
// scalar type (or None, a buffer, a mod); its body gives a value of any
// type.
func (l *lowering) applyHelper(f *frame, x *dsl.CallExpr, mv *modValue) result {
	m := mv.mod
	args, frames, ok := l.factoryArgs(f, x, m)
	if !ok {
		return result{}
	}
	if args == nil {
		l.lowerArgs(f, x)
		l.errorf(f, x.Sp, CodeArgCount, "function %s takes %d %s, got %d", m.Name, len(m.Decl.Params),
			plural(len(m.Decl.Params), "argument", "arguments"), len(x.Args)).
			WithHint("call it as %s(%s)", m.Name, strings.Join(paramNames(m.Decl.Params), ", "))
		return result{}
	}
	return l.inlineHelper(f, x.Sp, mv, m, func(i int) (result, bool) {
		r := l.expr(frames[i], args[i])
		return r, r.ok() || r.typ == dsl.TypeNone
	})
}

// inlineHelper inlines the body of helper def mv.mod, applied at site, as
// mod as (the helper itself, or the mod a functools.partial makes of it,
// whose result is checked as that mod's): parameter i takes arg(i),
// evaluated once the call is known not to recurse; false stops.
func (l *lowering) inlineHelper(f *frame, site dsl.Span, mv *modValue, as *Mod, arg func(i int) (result, bool)) result {
	m := mv.mod
	if slices.Contains(l.stack, m) {
		l.errorf(f, site, CodeRecursion, "function %s calls itself", m.Name).
			WithHint("maskc inlines every call; write the recursion out")
		return result{}
	}
	inner := bodyFrame(f, mv)
	for i, p := range m.Decl.Params {
		r, ok := arg(i)
		if !ok {
			return result{}
		}
		inner.names[p.Name] = argBinding(p, r)
	}
	l.work += applyCost
	l.c.work += applyCost
	l.stack = append(l.stack, m)
	defer func() { l.stack = l.stack[:len(l.stack)-1] }()
	return l.body(inner, as)
}

// bodyFrame is the frame, inlined from f, in which a body of mod value mv
// sees what its factory's call bound: the factory's arguments and the
// locals its statements before the inner def assigned.
func bodyFrame(f *frame, mv *modValue) *frame {
	m := mv.mod
	inner := &frame{src: m.src, names: map[string]*binding{}, std: m.std, site: f.site, stdName: f.stdName}
	for _, b := range mv.args {
		inner.names[b.ident.Name] = b
	}
	for _, b := range mv.locals {
		inner.names[b.ident.Name] = b
	}
	return inner
}

// argBinding binds a helper's parameter p to the value r of its argument
// (a buffer binds as one).
func argBinding(p *dsl.Ident, r result) *binding {
	b := &binding{kind: bindValue, res: r, buf: r.buf, ident: p, sym: Symbol{Kind: SymModParam, Name: p.Name, Decl: p, Type: r.typ}}
	if r.typ == dsl.TypeBuffer {
		b.kind = bindBuffer
	}
	return b
}

// wholeBufferUse finds, in a factory's statements before its inner def and
// in its body, a use of factory parameter name other than as the buffer an
// index reads (`name[...]`): the identifier, and the statement value or
// expression it is in. nil when every use indexes it.
func wholeBufferUse(d *dsl.ModDecl, name string) (use *dsl.Ident, in dsl.Expr) {
	if d == nil {
		return nil, nil
	}
	var exprs []dsl.Expr
	for _, st := range d.FactoryPre {
		if let, ok := st.(*dsl.LetStmt); ok {
			exprs = append(exprs, let.Value)
		}
	}
	exprs = append(exprs, (&dsl.Body{Stmts: d.FactoryPre}).Exprs()...)
	if d.Body != nil {
		exprs = append(exprs, d.Body.Exprs()...)
	}
	for _, e := range exprs {
		indexed := map[*dsl.Ident]bool{} // read by an index, or cast whole (ids.long())
		dsl.Inspect(e, func(x dsl.Expr) bool {
			if ix, ok := x.(*dsl.IndexExpr); ok {
				if id, ok := dsl.Unparen(ix.X).(*dsl.Ident); ok {
					indexed[id] = true
				}
			}
			if id, ok := castOf(x).(*dsl.Ident); ok && x != dsl.Expr(id) {
				indexed[id] = true
			}
			if id, ok := x.(*dsl.Ident); ok && id.Name == name && !indexed[id] && use == nil {
				use = id
			}
			return use == nil
		})
		if use != nil {
			return use, e
		}
	}
	return nil, nil
}

// maxFactoryNesting bounds how many instances of one factory are applied
// inside each other: far past any real mask (and_masks of and_masks ...),
// and short of the Go stack when a factory's mod builds itself anew.
const maxFactoryNesting = 64

// preIndexUse finds, in the statements of factory d before (or around) its
// inner def, an index of factory parameter name (`ids[0]`), and the
// expression it is in; nil when there is none.
func preIndexUse(d *dsl.ModDecl, name string) (ix *dsl.IndexExpr, in dsl.Expr) {
	for _, e := range stmtExprs(d.FactoryPre) {
		dsl.Inspect(e, func(x dsl.Expr) bool {
			if i, ok := x.(*dsl.IndexExpr); ok && ix == nil {
				if id, ok := dsl.Unparen(i.X).(*dsl.Ident); ok && id.Name == name {
					ix, in = i, e
				}
			}
			return ix == nil
		})
		if ix != nil {
			return ix, in
		}
	}
	return nil, nil
}
