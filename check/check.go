package check

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// checker holds the state of one Check.
type checker struct {
	// f32Warned are the float literals already reported by float32Range.
	f32Warned map[dsl.Span]bool

	prog  *Program
	src   *dsl.Source
	lib   *library
	info  *Info
	diags dsl.Diagnostics
	// decls maps each user name to its first declaration.
	decls map[string]dsl.Decl
	// modSize is the lowered size of each checked mod's body, -1 when it
	// is too large.
	modSize map[*Mod]int
	// markUses records uses in the Program's Used flags; off when a
	// checked Program lowers more expressions, so that Lower is read-only.
	markUses bool
	// work counts the nodes built by all lowerings; exhausted is set once
	// it passes maxCheckNodes.
	work      int
	exhausted bool
	// setupReported are the factories whose set-up's tensor work has been
	// reported (setupWork): their later calls fail silently.
	setupReported map[*Mod]bool
	// lowered caches the lowering of plain (non-factory) mods named by
	// attention settings.
	lowered map[*Mod]*dsl.Lowered
	// bodies keeps the bodies of plain mods as their own check lowered
	// them, for inlining them again without building anything.
	bodies map[*Mod]*loweredBody
	// modParamDocs interns the hover texts of mod parameters.
	modParamDocs map[modParamKey]string
}

// Check resolves, types, folds and lowers a parsed file. It never stops at
// the first error: it returns all diagnostics, sorted. The Program is
// non-nil even with errors (partially filled), so editors can still hover.
func Check(f *dsl.File, opts Options) (*Program, dsl.Diagnostics) {
	return checkFile(f, opts, true)
}

// checkFile is Check; reuseBodies says whether plain mods' bodies are
// lowered once and shared (see reuseBody), which tests turn off to compare.
func checkFile(f *dsl.File, opts Options, reuseBodies bool) (*Program, dsl.Diagnostics) {
	c := newChecker(f, stdlib())
	if !reuseBodies {
		c.bodies = nil
	}
	c.declare()
	c.checkParams(opts.Defines)
	c.checkBuffers()
	c.checkMods()
	c.checkAttentions()
	c.uncalledSetups()
	c.gradientWarnings()
	c.warnUnused()
	c.prog.modSize = c.modSize
	c.diags.Sort()
	return c.prog, c.diags
}

func newChecker(f *dsl.File, lib *library) *checker {
	if f == nil {
		f = &dsl.File{Source: dsl.NewSource("", nil)}
	}
	if f.Source == nil {
		f.Source = dsl.NewSource("", nil)
	}
	// Size the side tables for a typical file (a few entries of each per
	// declaration), so that a large file does not rehash them as it grows.
	n := len(f.Decls)
	info := &Info{
		Types:  make(map[dsl.Expr]dsl.Type, 4*n),
		Consts: make(map[dsl.Expr]dsl.Value, n),
		Uses:   make(map[*dsl.Ident]Symbol, 3*n),
		Defs:   make(map[*dsl.Ident]Symbol, 3*n),
	}
	p := &Program{File: f, Info: info, params: map[string]*Param{}, buffers: map[string]*Buffer{},
		mods: map[string]*Mod{}, attentions: map[string]*Attention{}, stdlib: lib, imports: pythonImports(f)}
	return &checker{prog: p, src: f.Source, lib: lib, info: info, decls: map[string]dsl.Decl{}, modSize: make(map[*Mod]int, len(f.Decls)), markUses: true,
		lowered: map[*Mod]*dsl.Lowered{}, bodies: map[*Mod]*loweredBody{}}
}

// userFrame is a frame for the user's own top-level text.
func (c *checker) userFrame() *frame {
	return &frame{src: c.src, names: map[string]*binding{}, record: true}
}

// reserved are the names a declaration may not take.
func reservedName(name string) string {
	if _, ok := dsl.SizeVar(name); ok {
		return "the size symbol " + name
	}
	switch name {
	case "and_masks", "or_masks":
		return "the combinator " + name
	case "inf":
		return "the constant inf"
	}
	return ""
}

// castOf is e without the whole-tensor dtype casts and copies that keep
// the values (`ids.long()`, `mask.clone().contiguous()`, bufferCasts), or e.
func castOf(e dsl.Expr) dsl.Expr {
	e = dsl.Unparen(e)
	for {
		call, ok := e.(*dsl.CallExpr)
		if !ok || len(call.Args) != 0 {
			return e
		}
		sel, ok := call.Fun.(*dsl.SelectorExpr)
		if !ok {
			return e
		}
		if _, cast := bufferCasts[sel.Sel.Name]; !cast {
			return e
		}
		e = dsl.Unparen(sel.X)
	}
}

// pythonCombinator reports whether d is a def factory named and_masks or
// or_masks: pasted Python (torch's and transformers' own definitions) that
// shadows the built-in combinator, as the def does in Python.
func pythonCombinator(d dsl.Decl) bool {
	m, ok := d.(*dsl.ModDecl)
	return ok && m.Def && m.Inner != nil && (m.Name.Name == "and_masks" || m.Name.Name == "or_masks")
}

// rebind takes d, a Python module constant assigned again (`WINDOW = 256`
// then `WINDOW = 512`, as notebooks leave them), as the value of the param
// first declared: Python's mods read a global when they run, after the
// whole module, so they see its last value. It reports whether d was such
// an assignment (a warning then); any other second declaration is E021.
// An assignment that reads the name it rebinds (`W = W * 2`) would need
// the value before it, which one param does not keep: it is E021.
func (c *checker) rebind(first, d dsl.Decl) bool {
	fp, ok1 := first.(*dsl.ParamDecl)
	np, ok2 := d.(*dsl.ParamDecl)
	if !ok1 || !ok2 || !fp.Python || !np.Python {
		return false
	}
	if readsName(np.Value, np.Name.Name) {
		c.diags.Add(c.src, np.Name.Sp, CodeDuplicate, "%s is assigned again from its own value: a param holds one value", np.Name.Name).
			WithHint("write the value out (`%s = ...` once), or give the new value a name of its own", np.Name.Name)
		return true
	}
	p := c.prog.params[np.Name.Name]
	if p == nil {
		return false
	}
	p.Decl = np
	c.decls[np.Name.Name] = np
	c.diags.Warn(c.src, fp.Name.Sp, CodeRebound, "%s is assigned again on line %d: the mods read that value, as Python's do when they run",
		np.Name.Name, c.src.LineOf(np.Name.Sp.Start)).
		WithHint("delete this assignment, or rename one of them if both values are meant")
	return true
}

// checkAlias makes p, a Python module constant whose value is a mod, an
// alias of that mod. Python evaluates the value once, where the line
// runs: a partial's or factory's argument that reads a module constant
// assigned after it (`mask_mod = partial(f, n=N)`, then `N = 16`) has
// N's earlier value, which a param does not keep, so that is E042.
func (c *checker) checkAlias(p *Param) {
	at := p.Decl.Sp.Start
	var late *Param
	dsl.Any(p.Decl.Value, func(x dsl.Expr) bool {
		if id, ok := x.(*dsl.Ident); ok && late == nil {
			if q := c.prog.params[id.Name]; q != nil && q != p && q.Decl.Sp.Start > at {
				late = q
			}
		}
		return false
	})
	if late != nil {
		c.diags.Add(c.src, p.Decl.Value.Span(), CodeParamType, "%s binds a mod when its line runs, reading %s, which is assigned on line %d after it",
			p.Name, late.Name, c.src.LineOf(late.Decl.Name.Sp.Start)).
			WithHint("Python's %s keeps the value %s had on this line: move the line below the last assignment of %s, or write that value in it", p.Name, late.Name, late.Name)
		return
	}
	p.alias = true
}

// readsName reports whether e refers to name.
func readsName(e dsl.Expr, name string) bool {
	return dsl.Any(e, func(x dsl.Expr) bool {
		id, ok := x.(*dsl.Ident)
		return ok && id.Name == name
	})
}

// declare creates the Program's declarations and reports duplicates.
func (c *checker) declare() {
	comments := newCommentIndex(c.prog.File)
	partials := partialTargets(c.prog.File)
	fns := functionDefs(c.prog.File)
	for _, d := range c.prog.File.Decls {
		id := d.DeclName()
		if id == nil || id.Name == "" {
			continue
		}
		if what := reservedName(id.Name); what != "" && !pythonCombinator(d) {
			hint := "choose another name"
			if p, ok := d.(*dsl.ParamDecl); ok && p.Python {
				if _, size := dsl.SizeVar(id.Name); size {
					// `H = 128` pasted above a def that reads H: the call's size is that value.
					hint = fmt.Sprintf("in a mod %s is the call's size, known at run time: delete this line if the constant is that size, or rename it and the uses that mean it", id.Name)
				}
			}
			c.diags.Add(c.src, id.Sp, CodeReservedName, "%s cannot be declared: it is %s", id.Name, what).
				WithHint("%s", hint)
			continue
		}
		if _, isAttn := d.(*dsl.AttentionDecl); !isAttn {
			if first, dup := c.decls[id.Name]; dup {
				if c.rebind(first, d) {
					continue
				}
				c.diags.Add(c.src, id.Sp, CodeDuplicate, "%s is already declared", id.Name).
					WithHint("%s", c.firstDeclared(c.src, first.DeclName()))
				continue
			}
			c.decls[id.Name] = d
		}
		switch d := d.(type) {
		case *dsl.ParamDecl:
			p := &Param{Decl: d, Name: id.Name}
			c.prog.Params = append(c.prog.Params, p)
			c.prog.params[p.Name] = p
		case *dsl.BufferDecl:
			b := &Buffer{Decl: d, Name: id.Name, src: c.src}
			c.prog.Buffers = append(c.prog.Buffers, b)
			c.prog.buffers[b.Name] = b
		case *dsl.ModDecl:
			m := newMod(d, c.src, false, comments.docComment(d))
			if partialHelper(d, partials) {
				m.Helper, m.paramCount, m.partialTarget = true, true, true // bound by functools.partial where it is used
			} else if fns[m.Name] && !m.Helper {
				fn := *m
				fn.Helper, fn.paramCount = true, true
				m.asFn = &fn
			}
			c.prog.Mods = append(c.prog.Mods, m)
			c.prog.mods[m.Name] = m
		case *dsl.AttentionDecl:
			if prev := c.prog.attentions[id.Name]; prev != nil {
				c.diags.Add(c.src, id.Sp, CodeDuplicate, "attention %s is already declared", id.Name).
					WithHint("%s", c.firstDeclared(c.src, prev.Decl.Name))
				continue
			}
			a := &Attention{Decl: d, Name: id.Name, Layout: "bshd", DType: "bf16", settings: map[string]*dsl.Setting{}}
			c.prog.Attentions = append(c.prog.Attentions, a)
			c.prog.attentions[a.Name] = a
		}
	}
}

// firstDeclared is the hint of a duplicate: where the first one is.
func (c *checker) firstDeclared(src *dsl.Source, first *dsl.Ident) string {
	if first == nil || src == nil || !first.Sp.IsValid() {
		return "the first declaration is elsewhere; rename one of them"
	}
	return fmt.Sprintf("the first declaration is on line %d; rename one of them", src.Position(first.Sp.Start).Line)
}

func newMod(d *dsl.ModDecl, src *dsl.Source, std bool, doc string) *Mod {
	m := &Mod{Decl: d, Name: d.Name.Name, Kind: d.Kind, Factory: d.FactoryParams != nil, src: src, std: std,
		doc: doc, bufParams: map[string]bool{}, paramCount: len(d.Params) == d.Kind.Arity() || d.Helper, Helper: d.Helper}
	for _, ld := range d.Locals {
		// An inner def sees the factory's parameters: a factory of them.
		cp := *ld
		cp.FactoryParams, cp.Inner = d.FactoryParams, ld.Name
		lm := newMod(&cp, src, std, "")
		m.locals = append(m.locals, lm)
		for p := range lm.bufParams {
			m.bufParams[p] = true
		}
	}
	m.hover = modSignature(m)
	if doc != "" {
		m.hover += "\n" + doc
	}
	factory := map[string]bool{}
	for _, p := range d.FactoryParams {
		factory[p.Name] = true
	}
	// `ids = document_ids` before the inner def: indexing ids indexes the
	// parameter.
	alias := map[string]string{}
	for _, st := range d.FactoryPre {
		if let, ok := st.(*dsl.LetStmt); ok && let.Name != nil {
			if id, ok := castOf(let.Value).(*dsl.Ident); ok && factory[id.Name] {
				alias[let.Name.Name] = id.Name
				factory[let.Name.Name] = true
			}
		}
	}
	if d.Body != nil && len(factory) > 0 { // only factory parameters can be buffers
		for _, e := range d.Body.Exprs() {
			dsl.Inspect(e, func(e dsl.Expr) bool {
				if ix, ok := e.(*dsl.IndexExpr); ok {
					if id, ok := dsl.Unparen(ix.X).(*dsl.Ident); ok && factory[id.Name] {
						m.bufParams[id.Name] = true
						if p, ok := alias[id.Name]; ok {
							m.bufParams[p] = true
						}
					}
				}
				return true
			})
		}
	}
	return m
}

// docComment returns the `#` comment lines directly above decl, without
// the '#'.
func docComment(f *dsl.File, d dsl.Decl) string {
	return newCommentIndex(f).docComment(d)
}

// commentIndex finds declarations' doc comments. It is built once per file,
// so that finding the comments above each declaration is a binary search
// rather than a walk over every comment of the file.
type commentIndex struct {
	file *dsl.File
	// sorted is true when file.Comments are in source order, as the
	// parser makes them; otherwise docComment walks them all.
	sorted bool
}

func newCommentIndex(f *dsl.File) commentIndex {
	ix := commentIndex{file: f, sorted: true}
	if f == nil {
		return ix
	}
	for i := 1; i < len(f.Comments); i++ {
		if f.Comments[i].Sp.Start < f.Comments[i-1].Sp.Start {
			ix.sorted = false
			break
		}
	}
	return ix
}

// docComment returns the `#` comment lines directly above decl, without
// the '#'.
func (ix commentIndex) docComment(d dsl.Decl) string {
	f := ix.file
	if f == nil || f.Source == nil {
		return ""
	}
	line := f.Source.LineOf(d.Span().Start)
	// The comments that start on an earlier line than d are, in source
	// order, a prefix of f.Comments; walk it backwards from its end.
	below := len(f.Comments)
	if ix.sorted {
		lineStart := f.Source.LineStart(line)
		below = sort.Search(len(f.Comments), func(i int) bool {
			return clampOffset(f.Source, f.Comments[i].Sp.Start) >= lineStart
		})
	}
	var lines []string
	for i := below - 1; i >= 0; i-- {
		cm := f.Comments[i]
		cl := f.Source.LineOf(cm.Sp.Start)
		if cl >= line {
			continue
		}
		if cl != line-1-len(lines) || strings.TrimSpace(f.Source.Line(cl)) != strings.TrimSpace(cm.Text) {
			break
		}
		lines = append(lines, strings.TrimSpace(strings.TrimPrefix(cm.Text, "#")))
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return strings.Join(lines, "\n")
}

// clampOffset clamps a byte offset to src's text, as Source.Position does.
func clampOffset(src *dsl.Source, off int) int {
	return max(0, min(off, len(src.Text)))
}

// global is what a top-level name resolves to.
type global struct {
	kind    SymbolKind
	name    string
	param   *Param
	buf     *Buffer
	mod     *Mod
	size    dsl.Var
	builtin *dsl.Builtin
	val     dsl.Value
}

var sizeDocs = map[dsl.Var]string{
	dsl.SizeB: "B: batch size (run-time int)", dsl.SizeH: "H: number of query heads (run-time int)",
	dsl.SizeHKV: "HKV: number of key/value heads (run-time int)", dsl.SizeQ: "Q: query length (run-time int)",
	dsl.SizeKV: "KV: key/value length (run-time int)",
}

func (g global) symbol() Symbol {
	s := Symbol{Kind: g.kind, Name: g.name}
	switch g.kind {
	case SymParam:
		s.Decl, s.Type, s.Doc = g.param.Decl, g.param.Value.Type, g.param.hover
		if !g.param.ready {
			s.Doc = paramDoc(g.param)
		}
	case SymBuffer:
		s.Decl, s.Type, s.Doc = g.buf.Decl, dsl.TypeBuffer, g.buf.String()
	case SymMod, SymStdMod:
		s.Decl, s.Type, s.Doc = g.mod.Decl, kindType(g.mod.Kind), g.mod.hover
	case SymSize:
		s.Type, s.Doc = dsl.TypeInt, sizeDocs[g.size]
	case SymBuiltin:
		s.Doc = g.builtin.Doc
	case SymCombinator:
		s.Type = dsl.TypeMask
		s.Doc = g.name + "(m1, m2, ...): the mask that keeps a pair when all (and_masks) or any (or_masks) of the masks keep it"
		if g.name == "create_block_mask" {
			s.Doc = blockMaskDoc
		}
	case SymConstant:
		s.Type, s.Doc = dsl.TypeFloat, "inf: positive infinity (float)"
	}
	return s
}

// paramDoc is the hover text of a param, e.g. "param W = 1024".
func paramDoc(p *Param) string {
	if p.Value.IsValid() {
		return "param " + p.Name + " = " + p.Value.String()
	}
	return "param " + p.Name
}

// lookup resolves a top-level name in f's world: the user's declarations
// (unless f is a standard-library body), the standard library, the size
// symbols, constants, built-ins and combinators.
func (c *checker) lookup(f *frame, name string) (global, bool) {
	if !f.std {
		if p := c.prog.params[name]; p != nil {
			return global{kind: SymParam, name: name, param: p}, true
		}
		if b := c.prog.buffers[name]; b != nil {
			return global{kind: SymBuffer, name: name, buf: b}, true
		}
		if m := c.prog.mods[name]; m != nil {
			return global{kind: SymMod, name: name, mod: m}, true
		}
	}
	if c.lib != nil {
		if m := c.lib.mods[name]; m != nil {
			return global{kind: SymStdMod, name: name, mod: m}, true
		}
	}
	if v, ok := dsl.SizeVar(name); ok {
		return global{kind: SymSize, name: name, size: v}, true
	}
	if q, ok := c.imported(f, name); ok && q != name {
		return c.lookup(f, q) // `from math import pi`
	}
	switch name {
	case "inf", "math.inf", "torch.inf":
		return global{kind: SymConstant, name: name, val: dsl.Float(inf)}, true
	case "math.pi", "torch.pi":
		return global{kind: SymConstant, name: name, val: dsl.Float(math.Pi)}, true
	case "math.e", "torch.e":
		return global{kind: SymConstant, name: name, val: dsl.Float(math.E)}, true
	case "and_masks", "or_masks", "create_block_mask":
		return global{kind: SymCombinator, name: name}, true
	}
	if b := dsl.LookupBuiltin(name); b != nil {
		return global{kind: SymBuiltin, name: name, builtin: b}, true
	}
	return global{}, false
}

// visibleNames lists the top-level names f can see, for did-you-mean hints.
func (c *checker) visibleNames(f *frame) []string {
	var out []string
	if !f.std {
		for n := range c.decls {
			out = append(out, n)
		}
	}
	if c.lib != nil {
		for n := range c.lib.mods {
			out = append(out, n)
		}
	}
	out = append(out, "B", "H", "HKV", "Q", "KV", "inf", "and_masks", "or_masks")
	for n := range dsl.Builtins {
		out = append(out, n)
	}
	return out
}

// describe says what name is, for "q is a mod parameter, not a buffer".
func (c *checker) describe(f *frame, name string, r result) string {
	if b := f.names[name]; b != nil {
		return "a " + b.sym.Kind.String()
	}
	if g, ok := c.lookup(f, name); ok {
		switch g.kind {
		case SymSize:
			return "a size"
		case SymMod, SymStdMod:
			return "a " + g.mod.Kind.String() + " mod"
		case SymBuiltin:
			return "a built-in function"
		}
		return article(dsl.TypeBool) + " " + g.kind.String()
	}
	return article(r.typ) + " " + r.typ.String()
}

func (c *checker) recordUse(f *frame, id *dsl.Ident, s Symbol) {
	if f.record {
		c.info.Uses[id] = s
	}
}

// checkShadow warns when a mod parameter or let named id hides a param,
// buffer, mod or built-in.
func (c *checker) checkShadow(f *frame, id *dsl.Ident, what string) {
	var hidden string
	switch {
	case c.prog.params[id.Name] != nil:
		hidden = "param " + id.Name
	case c.prog.buffers[id.Name] != nil:
		hidden = "buffer " + id.Name
	case c.prog.mods[id.Name] != nil:
		hidden = c.prog.mods[id.Name].Kind.String() + " " + id.Name
		if c.prog.mods[id.Name].Helper {
			hidden = "function " + id.Name // a helper, or a def functools.partial binds
		}
	case dsl.Builtins[id.Name] != nil:
		hidden = "built-in " + id.Name
	default:
		return
	}
	c.diags.Warn(f.src, id.Sp, CodeShadow, "%s %s shadows the %s", what, id.Name, hidden).
		WithHint("rename the %s; inside this mod %s now means the %s", what, id.Name, what)
}

// checkParams folds every param in order and applies -D overrides.
func (c *checker) checkParams(defines map[string]string) {
	for _, p := range c.prog.Params {
		f := c.userFrame()
		f.paramPass = true
		c.info.Defs[p.Decl.Name] = Symbol{Kind: SymParam, Name: p.Name, Decl: p.Decl}
		l := c.newLowering()
		var r result
		if !l.setupWork(f, nil, &dsl.LetStmt{Sp: p.Decl.Sp, Name: p.Decl.Name, Value: p.Decl.Value}) {
			r = l.expr(f, p.Decl.Value)
		}
		switch {
		case !r.ok() && r.fn == "":
		case p.Decl.Python && r.mod != nil:
			// `mask_mod = partial(...)` at the top of a pasted script: the
			// mod it names, wherever the name is used.
			c.checkAlias(p)
		case !r.scalar():
			what := describeResult(r)
			if r.typ == dsl.TypeBuffer {
				what = "buffer " + r.buf.Name
			}
			hint := "params are constants such as 1024, 30.0 or True; declare mods with mask or score"
			if p.Decl.Python {
				// `both = or_masks(a, b)` at the top of a pasted file
				hint = "a Python module constant (NAME = ... at the start of a line) is a param: 1024, 30.0 or True; name a combination of mods in an attention block instead (mask = ...)"
			}
			c.diags.Add(c.src, p.Decl.Value.Span(), CodeParamType, "param %s must be an int, float or bool, got %s", p.Name, what).
				WithHint("%s", hint)
		case !r.isConst():
			c.diags.Add(c.src, p.Decl.Value.Span(), CodeParamNotConst, "param %s is not a compile-time constant", p.Name).
				WithHint("params may use literals, params declared above and built-in functions; sizes (B H HKV Q KV) are run-time values")
		default:
			p.Value = r.val
		}
		if text, ok := defines[p.Name]; ok && p.Value.IsValid() {
			v, err := parseDefineValue(text, p.Value.Type)
			if err != nil {
				c.diags.Add(c.src, p.Decl.Name.Sp, CodeDefineValue, "-D %s=%s does not fit %s param %s: %v", p.Name, text,
					p.Value.Type, p.Name, err).WithHint("%s is declared as %s", p.Name, p.Value.String())
			} else {
				p.Value, p.Overridden = v, true
			}
		}
		p.ready, p.hover = true, paramDoc(p)
		c.info.Defs[p.Decl.Name] = global{kind: SymParam, name: p.Name, param: p}.symbol()
	}
	var unknown []string
	for name := range defines {
		if c.prog.params[name] == nil {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	names := make([]string, 0, len(c.prog.Params))
	for _, p := range c.prog.Params {
		names = append(names, p.Name)
	}
	for _, name := range unknown {
		d := c.diags.Add(c.src, dsl.NoSpan, CodeDefineUnknown, "-D %s: no param %s is declared", name, name)
		switch {
		case didYouMean(name, names) != "":
			d.WithHint("%s", didYouMean(name, names))
		case len(names) == 0:
			d.WithHint("the file declares no params")
		default:
			d.WithHint("declared params: %s", strings.Join(names, ", "))
		}
	}
}
