package check

import "github.com/maskc/maskc/dsl"

// Origin says where an attention block's mask or score came from.
type Origin int

const (
	// OriginNone: the block has none (every pair is kept; the scaled logit
	// is used as is).
	OriginNone Origin = iota
	// OriginMod: the `mask` or `score` setting, a mod.
	OriginMod
	// OriginSettings: the trainer-style `causal` and `window` settings,
	// lowered by settingsMask.
	OriginSettings
	// OriginAlibi: the `alibi = slopes` setting, lowered by settingsScore.
	OriginAlibi
)

// String returns "none", "mod", "settings" or "alibi".
func (o Origin) String() string {
	return [...]string{"none", "mod", "settings", "alibi"}[o]
}

// Defaults of the settings that a block may leave out.
const (
	// DefaultHeadDim is the head dimension of a block without head_dim.
	DefaultHeadDim = 128
	// DefaultDType is the element type of a block without dtype.
	DefaultDType = "bf16"
	// DefaultLayout is the layout of a block without layout.
	DefaultLayout = "bshd"
)

// lowerSettings makes the block's trainer-style settings its mask and score
// (once, here, for every consumer: classifier, generator, evaluator) and
// records where each came from. A mask or score mod takes precedence; the
// classifier and the generator refuse a block that has both.
func lowerSettings(a *Attention) {
	switch {
	case a.Mask != nil:
		a.MaskOrigin = OriginMod
	default:
		if a.Mask = settingsMask(a); a.Mask != nil {
			a.MaskOrigin = OriginSettings
		}
	}
	switch {
	case a.Score != nil:
		a.ScoreOrigin = OriginMod
	default:
		if a.Score = settingsScore(a); a.Score != nil {
			a.ScoreOrigin = OriginAlibi
		}
	}
}

// SettingConflict is a trainer-style setting given next to the mod that
// defines the same quantity: two sources for one mask or score.
type SettingConflict struct {
	// Key is the setting: "window", "causal" or "alibi".
	Key string
	// Mod is what it repeats: "mask" or "score".
	Mod string
}

// Conflicts lists a's settings that repeat its mask or score mod, in this
// order: window next to a mask mod, causal = true next to a mask mod, alibi
// next to a score mod. lowerSettings lowers a setting only where no mod
// defines the quantity, so such a block has two sources for one quantity;
// the classifier and the code generator both refuse it, each with its own
// code and hint, from this one statement of the rule.
func (a *Attention) Conflicts() []SettingConflict {
	var out []SettingConflict
	if a.MaskOrigin == OriginMod && a.Window != nil {
		out = append(out, SettingConflict{"window", "mask"})
	}
	if a.MaskOrigin == OriginMod && a.Causal != nil && *a.Causal {
		out = append(out, SettingConflict{"causal", "mask"})
	}
	if a.ScoreOrigin == OriginMod && a.Alibi != nil {
		out = append(out, SettingConflict{"alibi", "score"})
	}
	return out
}

// ResolvedHeadDim is the block's head_dim, else DefaultHeadDim.
func (a *Attention) ResolvedHeadDim() int {
	if a.HeadDim > 0 {
		return a.HeadDim
	}
	return DefaultHeadDim
}

// ResolvedDType is the block's dtype, else DefaultDType.
func (a *Attention) ResolvedDType() string {
	if a.DType != "" {
		return a.DType
	}
	return DefaultDType
}

// ResolvedLayout is the block's layout, else DefaultLayout.
func (a *Attention) ResolvedLayout() string {
	if a.Layout != "" {
		return a.Layout
	}
	return DefaultLayout
}

// ScaleFor is the softmax scale of the block at head dimension headDim:
// its scale setting, else dsl.DefaultScale(headDim).
func (a *Attention) ScaleFor(headDim int) float64 {
	if a.Scale != nil {
		return *a.Scale
	}
	return dsl.DefaultScale(headDim)
}

// settingsMask returns the mask that a block's trainer-style `causal` and
// `window` settings mean, as a lowered expression, or nil when the block
// has neither. The settings follow the Turbo kernels (turbo-contract.md):
// aligned bottom-right, query row q sees keys
//
//	q + KV - Q - left <= kv <= q + KV - Q + right
//
// with -1 leaving a side unbounded and causal meaning right = 0. Written
// over d = q - kv - Q + KV: d <= left (unless -1) and -d <= right (unless
// -1). The generated fallback kernel then computes exactly what Turbo's call
// computes, for every Sq and Skv.
func settingsMask(a *Attention) *dsl.Lowered {
	left, right := int64(-1), int64(-1)
	if a.Window != nil {
		left, right = a.Window[0], a.Window[1]
	}
	causal := a.Causal != nil && *a.Causal
	if causal && (right < 0 || right > 0) {
		right = 0
	}
	if left < 0 && right < 0 {
		return nil
	}
	sp := a.Decl.Name.Sp
	for _, key := range []string{"window", "causal"} {
		if s := a.Setting(key); s != nil {
			sp = s.Sp
		}
	}
	l := &dsl.Lowered{Kind: dsl.MaskMod, Name: "settings of " + a.Name, Types: map[dsl.Expr]dsl.Type{}}
	typed := func(e dsl.Expr, t dsl.Type) dsl.Expr { l.Types[e] = t; return e }
	v := func(x dsl.Var) dsl.Expr { return typed(&dsl.VarRef{Sp: sp, Var: x}, dsl.TypeInt) }
	bin := func(op dsl.Op, x, y dsl.Expr) dsl.Expr {
		return typed(&dsl.BinaryExpr{Sp: sp, OpSp: sp, Op: op, X: x, Y: y}, dsl.TypeInt)
	}
	lit := func(n int64) dsl.Expr {
		return typed(&dsl.IntLit{Sp: sp, Value: n, Raw: dsl.Int(n).String()}, dsl.TypeInt)
	}
	le := func(x, y dsl.Expr) dsl.Expr {
		return typed(&dsl.CompareExpr{Sp: sp, Operands: []dsl.Expr{x, y}, Ops: []dsl.Op{dsl.OpLE}}, dsl.TypeBool)
	}
	// d = q - kv - Q + KV, built fresh for each use (lowered trees are
	// read-only, but each node carries its own type entry).
	d := func() dsl.Expr {
		return bin(dsl.OpAdd, bin(dsl.OpSub, bin(dsl.OpSub, v(dsl.VarQ), v(dsl.VarKV)), v(dsl.SizeQ)), v(dsl.SizeKV))
	}
	var terms []dsl.Expr
	if left >= 0 {
		terms = append(terms, le(d(), lit(left)))
	}
	if right >= 0 {
		terms = append(terms, le(typed(&dsl.UnaryExpr{Sp: sp, Op: dsl.OpNeg, X: d()}, dsl.TypeInt), lit(right)))
	}
	l.Expr = terms[0]
	for _, t := range terms[1:] {
		l.Expr = typed(&dsl.BinaryExpr{Sp: sp, OpSp: sp, Op: dsl.OpAnd, X: l.Expr, Y: t}, dsl.TypeBool)
	}
	return l
}

// settingsScore returns the score that a block's trainer-style `alibi =
// slopes` setting means, or nil without one. The Turbo kernels add
// -slope * |q + KV - Q - kv| (bottom-right aligned, both sides of the
// diagonal), with slopes of shape [H] or [B, H].
func settingsScore(a *Attention) *dsl.Lowered {
	if a.Alibi == nil {
		return nil
	}
	sp := a.Decl.Name.Sp
	if s := a.Setting("alibi"); s != nil {
		sp = s.Sp
	}
	l := &dsl.Lowered{Kind: dsl.ScoreMod, Name: "alibi setting of " + a.Name, Types: map[dsl.Expr]dsl.Type{},
		Buffers: []*dsl.BufferDecl{a.Alibi.Decl}}
	typed := func(e dsl.Expr, t dsl.Type) dsl.Expr { l.Types[e] = t; return e }
	v := func(x dsl.Var, t dsl.Type) dsl.Expr { return typed(&dsl.VarRef{Sp: sp, Var: x}, t) }
	bin := func(op dsl.Op, x, y dsl.Expr, t dsl.Type) dsl.Expr {
		return typed(&dsl.BinaryExpr{Sp: sp, OpSp: sp, Op: op, X: x, Y: y}, t)
	}
	d := bin(dsl.OpAdd, bin(dsl.OpSub, bin(dsl.OpSub, v(dsl.VarQ, dsl.TypeInt), v(dsl.VarKV, dsl.TypeInt), dsl.TypeInt),
		v(dsl.SizeQ, dsl.TypeInt), dsl.TypeInt), v(dsl.SizeKV, dsl.TypeInt), dsl.TypeInt)
	dist := typed(&dsl.CallExpr{Sp: sp, Fun: &dsl.Ident{Sp: sp, Name: "abs"}, Args: []dsl.Expr{d}}, dsl.TypeInt)
	idx := []dsl.Expr{v(dsl.VarH, dsl.TypeInt)}
	if len(a.Alibi.Dims) == 2 {
		idx = []dsl.Expr{v(dsl.VarB, dsl.TypeInt), v(dsl.VarH, dsl.TypeInt)}
	}
	slope := typed(&dsl.IndexExpr{Sp: sp, X: &dsl.Ident{Sp: a.Alibi.Decl.Name.Sp, Name: a.Alibi.Name}, Indices: idx}, dsl.TypeFloat)
	l.Expr = bin(dsl.OpSub, v(dsl.VarScore, dsl.TypeFloat), bin(dsl.OpMul, slope, dist, dsl.TypeFloat), dsl.TypeFloat)
	return l
}
