package check

import (
	"math"

	"github.com/maskc/maskc/dsl"
)

// lowerTop lowers mod value mv to a closed expression over the canonical
// index variables; its diagnostics go to the checker.
func (c *checker) lowerTop(mv *modValue, name string, site dsl.Span) (*dsl.Lowered, bool) {
	if name == "" {
		name = mv.name
	}
	// A user mod lowers the same everywhere; a library mod takes the span of
	// each use, so it is not shared.
	plain := mv.mod != nil && !mv.mod.Factory && !mv.mod.std && name == mv.name
	if low := c.lowered[mv.mod]; plain && low != nil {
		return low, true
	}
	vars := []dsl.Var{dsl.VarB, dsl.VarH, dsl.VarQ, dsl.VarKV}
	if mv.kind == dsl.ScoreMod {
		vars = append([]dsl.Var{dsl.VarScore}, vars...)
	}
	l := c.newLowering()
	// Size the types for the kept bodies it will likely reuse, and a few
	// nodes more.
	l.types = make(map[dsl.Expr]dsl.Type, c.keptTypes(mv)+len(vars)+8)
	l.rootThe, l.rootKind, l.rootName, l.rootSpan = true, mv.kind, name, site
	f := &frame{src: c.src, names: map[string]*binding{}}
	args := make([]result, len(vars))
	for i, v := range vars {
		typ := dsl.TypeInt
		if v == dsl.VarScore {
			typ = dsl.TypeFloat
		}
		args[i] = l.varRef(f, v, typ, dsl.NoSpan)
	}
	r := l.apply(f, mv, args, site)
	if !r.ok() {
		if !c.diags.HasErrors() && !l.aborted && !c.exhausted {
			// Never drop a mod silently: a value left unknown in a file
			// without errors is maskc's defect, not the file's.
			c.diags.Add(c.src, site, CodeNotAMod, "internal error: %s could not be lowered, and no error says why", name).
				WithHint("report this with the file; meanwhile simplify the mod")
		}
		return nil, false
	}
	low := &dsl.Lowered{Kind: mv.kind, Name: name, Expr: r.node, Types: l.types, Buffers: l.buffers}
	if mv.kind == dsl.ScoreMod {
		c.float32Range(low)
	}
	if plain && c.lowered != nil {
		c.lowered[mv.mod] = low
	}
	return low, true
}

// Lower lowers a mod-valued expression (a mod name, a factory
// instantiation, and_masks(...)/or_masks(...)) in the context of the
// program, to the dsl.Lowered form documented in dsl/lowered.go. The spans
// of e are taken to be offsets into p.File.Source, which diagnostics use;
// LowerIn lowers an expression parsed from other text.
func (p *Program) Lower(e dsl.Expr) (*dsl.Lowered, dsl.Diagnostics) {
	return p.LowerIn(nil, e)
}

// LowerIn is Lower for an expression whose spans point into src (e.g. text
// given to parser.ParseExpr); a nil src means p.File.Source.
func (p *Program) LowerIn(src *dsl.Source, e dsl.Expr) (*dsl.Lowered, dsl.Diagnostics) {
	c := p.reopen()
	if src != nil {
		c.src = src
	}
	if e == nil {
		c.diags.Add(c.src, dsl.NoSpan, CodeNotAMod, "nothing to lower: no expression")
		return nil, c.diags
	}
	f := &frame{src: c.src, names: map[string]*binding{}}
	l := c.newLowering()
	r := l.expr(f, e)
	var low *dsl.Lowered
	switch {
	case r.mod != nil && !r.mod.unapplied && r.typ != dsl.TypeFunc:
		name := r.mod.name
		low, _ = c.lowerTop(r.mod, name, e.Span())
	case r.typ == dsl.TypeFunc:
		// A helper function: a mod only where functools.partial binds it and
		// it takes exactly a mask's parameters (modValue); else reported.
		if mv := l.modValue(f, e, dsl.MaskMod, "Lower"); mv != nil {
			low, _ = c.lowerTop(mv, mv.name, e.Span())
		}
	case r.ok() || r.fn != "":
		l.modValue(f, e, dsl.MaskMod, "Lower") // reports what e is instead
	}
	c.diags.Sort()
	return low, c.diags
}

// LowerMod lowers a declared mod by name (user or standard library), e.g.
// for `maskc eval --mask NAME`. A factory must be instantiated with Lower.
func (p *Program) LowerMod(name string) (*dsl.Lowered, dsl.Diagnostics) {
	return p.Lower(&dsl.Ident{Sp: dsl.NoSpan, Name: name})
}

// reopen makes a checker over an already checked program, for lowering
// more expressions; it records nothing in Info.
func (p *Program) reopen() *checker {
	src := dsl.NewSource("", nil)
	if p.File != nil && p.File.Source != nil {
		src = p.File.Source
	}
	info := &Info{Types: map[dsl.Expr]dsl.Type{}, Consts: map[dsl.Expr]dsl.Value{},
		Uses: map[*dsl.Ident]Symbol{}, Defs: map[*dsl.Ident]Symbol{}}
	c := &checker{prog: p, src: src, lib: p.stdlib, info: info, decls: map[string]dsl.Decl{}, modSize: p.modSize}
	if c.modSize == nil {
		c.modSize = map[*Mod]int{}
	}
	for _, x := range p.Params {
		c.decls[x.Name] = x.Decl
	}
	for _, x := range p.Buffers {
		c.decls[x.Name] = x.Decl
	}
	for _, x := range p.Mods {
		c.decls[x.Name] = x.Decl
	}
	return c
}

// keptTypes counts the recorded types of the kept bodies of the plain mods
// that mod value mv names directly or combines.
func (c *checker) keptTypes(mv *modValue) int {
	n := 0
	if body := c.bodies[mv.mod]; mv.mod != nil && body != nil {
		n += len(body.types)
	}
	for _, part := range mv.parts {
		n += c.keptTypes(part)
	}
	return n
}

// float32Range refuses (E091) the float constants of a lowered score that
// float32 cannot hold: generated kernels compute scores in float32, where
// such a constant is inf (or 0), unlike in the float64 reference, so the
// kernel would compute something else (issue 31: -D C=1e39 on a soft-cap
// gave inf * tanh(0) = NaN, -D C=1e-46 a division by 0.0f; this was the
// warning W020). Each literal is reported once.
func (c *checker) float32Range(low *dsl.Lowered) {
	dsl.Inspect(low.Expr, func(e dsl.Expr) bool {
		lit, ok := e.(*dsl.FloatLit)
		if !ok || math.IsInf(lit.Value, 0) || math.IsNaN(lit.Value) || !lit.Sp.IsValid() {
			return true
		}
		f32 := float32(lit.Value)
		var what string
		switch {
		case math.IsInf(float64(f32), 0):
			what = "inf"
		case f32 == 0 && lit.Value != 0:
			what = "0"
		default:
			return true
		}
		if c.f32Warned == nil {
			c.f32Warned = map[dsl.Span]bool{}
		}
		if c.f32Warned[lit.Sp] {
			return true
		}
		c.f32Warned[lit.Sp] = true
		c.diags.Add(c.src, lit.Sp, CodeFloat32Range, "the score constant %v is %s in float32, in which generated kernels compute scores: the kernel would not compute this score", lit.Value, what).
			WithHint("use a value float32 holds (magnitude from about 1.4e-45 to 3.4e38), or write inf or 0 if that is meant")
		return true
	})
}
