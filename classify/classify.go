package classify

import (
	"fmt"
	"math"
	"strings"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/normal"
)

// Options configure Classify.
type Options struct {
	// Target is the Turbo build to plan for; nil means DefaultTarget.
	Target *Profile
}

// Classify decides every attention block of a checked program: a Turbo
// entry with exact keyword arguments, or a generated kernel with a reason.
// The diagnostics are the configuration rule errors (E200-E299),
// never-true masks (E100) and empty-row warnings (W1xx), sorted. The
// decision is symbolic: Classify never evaluates a mask on sample points.
func Classify(p *check.Program, opts Options) (*Plan, dsl.Diagnostics) {
	target := opts.Target
	if target == nil {
		target = DefaultTarget
	}
	plan := &Plan{Version: PlanVersion, Target: target.Name, Attentions: []*Decision{}}
	var diags dsl.Diagnostics
	if p == nil {
		return plan, diags
	}
	var src *dsl.Source
	if p.File != nil {
		src = p.File.Source
	}
	// Blocks that name the same plain mod share its *dsl.Lowered (the
	// checker lowers such a mod once), so its form is computed once.
	forms := map[*dsl.Lowered]*Form{}
	plan.Forms = forms
	for _, a := range p.Attentions {
		b := &block{prog: p, att: a, target: target, src: src, diags: &diags, forms: forms}
		plan.Attentions = append(plan.Attentions, b.decide())
	}
	diags.Sort()
	return plan, diags
}

// block classifies one attention block.
type block struct {
	prog   *check.Program
	att    *check.Attention
	target *Profile
	src    *dsl.Source
	diags  *dsl.Diagnostics
	// forms memoizes Canon for the whole Classify call.
	forms map[*dsl.Lowered]*Form
}

// canon is Canon(l), computed once per lowered mask of the program.
func (b *block) canon(l *dsl.Lowered) *Form {
	if f, ok := b.forms[l]; ok {
		return f
	}
	f := Canon(l)
	if b.forms != nil {
		b.forms[l] = f
	}
	return f
}

// band is a window on d = q - kv (top-left) or on q - kv + KV - Q
// (bottom-right, the kernels' own alignment).
type band struct {
	lo, hi       int64
	hasLo, hasHi bool
	bottomRight  bool
}

// maskMatch is what the mask alone maps to.
type maskMatch struct {
	pattern  string // contract pattern, or "" for generated
	band     band
	segments *Atom
	reason   string
}

// Directions of the two band alignments.
var (
	dirTopLeft     = distance
	dirBottomRight = func() Linear { l := dirTopLeft; l.Coef[dsl.SizeQ] = -1; l.Coef[dsl.SizeKV] = 1; return l }()
)

// span returns the span of setting key's value, or of the block's name.
func (b *block) span(key string) dsl.Span {
	if s := b.att.Setting(key); s != nil && s.Value != nil {
		return s.Value.Span()
	}
	if s := b.att.Setting(key); s != nil {
		return s.Span()
	}
	if b.att.Decl != nil && b.att.Decl.Name != nil {
		return b.att.Decl.Name.Sp
	}
	return dsl.NoSpan
}

func (b *block) settingSpan(key string) dsl.Span {
	if s := b.att.Setting(key); s != nil {
		return s.Span()
	}
	return b.span(key)
}

func (b *block) errorf(key string, code dsl.Code, format string, args ...any) *dsl.Diagnostic {
	return b.diags.Add(b.src, b.settingSpan(key), code, format, args...)
}

// form is the canonical form of the block's mask (check.Attention.Mask:
// the mask setting, or what the trainer-style causal/window settings mean,
// which check lowered), or always true; fromMod says whether a mask mod
// was written.
func (b *block) form() (f *Form, fromMod bool) {
	a := b.att
	if a.Mask == nil {
		return &Form{Terms: []*Term{{}}}, false
	}
	return b.canon(a.Mask), a.MaskOrigin == check.OriginMod
}

// maskMod is the block's mask mod, nil when its mask comes from settings.
func (b *block) maskMod() *dsl.Lowered {
	if b.att.MaskOrigin == check.OriginMod {
		return b.att.Mask
	}
	return nil
}

// scoreMod is the block's score mod, nil when its score comes from the
// alibi setting (the Turbo call's alibi_slopes).
func (b *block) scoreMod() *dsl.Lowered {
	if b.att.ScoreOrigin == check.OriginMod {
		return b.att.Score
	}
	return nil
}

func (b *block) decide() *Decision {
	a := b.att
	b.rules()
	form, fromMask := b.form()
	d := &Decision{Name: a.Name, Kwargs: map[string]any{}, Preconditions: []string{}, Form: form}
	d.Canonical = form.String()
	mm := matchMask(form)
	if fromMask {
		b.maskDiagnostics(form, mm)
	}
	shape := shapeOfScore(b.scoreMod(), b.prog.Buffer)
	d.ScoreShape = shape
	d.Score = shape.Kind
	if a.Alibi != nil && shape.Kind == ScoreNone {
		d.Score = ScoreAlibi
	}
	b.scoreRules(shape)
	if b.layout() == "thd" {
		if fromMask && mm.segments == nil && mm.pattern != PatternFull {
			b.errorf("layout", CodePackedMask, "layout = thd with mask %s, which is not a document pattern", b.maskMod().Name).
				WithHint("packed sequences take only cu_seqlens: write the mask as a document mask, e.g. `mask = and_masks(causal, same_doc)` with `buffer doc: i32[KV] segments`, or use layout = bshd")
		}
		if shape.Kind == ScoreGeneratedMod {
			b.errorf("layout", CodePackedMask, "layout = thd with score mod %s: the varlen entry takes no score mod", b.scoreMod().Name).
				WithHint("use layout = bshd with a document mask for packed sequences")
		}
	}

	if reason := b.turboReason(mm, shape); reason != "" {
		return b.generated(d, reason)
	}
	b.turbo(d, mm, shape, fromMask)
	return d
}

func (b *block) layout() string {
	if b.att.Layout == "" {
		return "bshd"
	}
	return b.att.Layout
}

func (b *block) fp8() bool { return b.att.FP8 || b.att.DType == "fp8" }

// turboReason says why the block cannot map onto a Turbo entry, or "".
func (b *block) turboReason(mm maskMatch, shape ScoreShape) string {
	a := b.att
	switch {
	case mm.pattern == "":
		return mm.reason
	case shape.Kind == ScoreGeneratedMod:
		return shape.Reason
	case shape.Kind == ScoreSoftcap && !b.target.Softcap:
		return fmt.Sprintf("softcap is not available on target %s: its dense and varlen kernels take no softcap (select --target turbo-2026.10-softcap if your build has it)", b.target.Name)
	case (shape.Kind == ScoreAlibi || a.Alibi != nil) && !b.target.Alibi:
		return fmt.Sprintf("target %s takes no alibi_slopes", b.target.Name)
	case shape.Kind == ScoreAlibi && !shape.Symmetric && !alibiSafe(mm):
		return "ALiBi sign differs above the diagonal without a causal mask: the kernel adds -slope*|q - kv|; add a causal mask or write the score as `score - " + shape.Slopes + "[h] * abs(q - kv)`"
	case shape.Kind == ScoreScale && a.Scale == nil && a.HeadDim <= 0:
		return fmt.Sprintf("score * %g rescales the logits: set head_dim (or scale) so that maskc can fold it into softmax_scale", shape.Factor)
	case shape.Kind == ScoreSoftcap && (a.Alibi != nil):
		return "softcap together with alibi slopes has no Turbo kernel"
	}
	return ""
}

// alibiSafe reports whether every visible pair of the mask has kv <= q, so
// that slope*(kv - q) equals the kernel's -slope*|q - kv|.
func alibiSafe(mm maskMatch) bool {
	return mm.band.hasLo && mm.band.lo >= 0 && !mm.band.bottomRight
}

// generated fills d as a generated kernel.
func (b *block) generated(d *Decision, reason string) *Decision {
	a := b.att
	d.Pattern = PatternGenerated
	d.Entry = EntryGenerated
	d.Reason = reason
	d.Kwargs = map[string]any{"kernel": "maskc_" + a.Name}
	var bufs []string
	seen := map[string]bool{}
	for _, l := range []*dsl.Lowered{b.maskMod(), b.scoreMod()} {
		if l == nil {
			continue
		}
		for _, bd := range l.Buffers {
			if bd.Name != nil && !seen[bd.Name.Name] {
				seen[bd.Name.Name] = true
				bufs = append(bufs, bd.Name.Name)
			}
		}
	}
	if len(bufs) > 0 {
		d.Kwargs["buffers"] = bufs
	}
	b.commonKwargs(d)
	if a.Alibi != nil {
		d.Kwargs["alibi_slopes"] = a.Alibi.Name
	}
	return d
}

// commonKwargs adds the settings every entry takes.
func (b *block) commonKwargs(d *Decision) {
	a := b.att
	if a.Scale != nil {
		d.Kwargs["softmax_scale"] = *a.Scale
	}
	if a.Sink != nil {
		d.Kwargs["sink"] = a.Sink.Name
	}
	if a.Deterministic {
		d.Kwargs["deterministic"] = true
	}
	if a.Dropout > 0 {
		d.Kwargs["dropout_p"] = a.Dropout
	}
	if a.ReturnLSE {
		d.Kwargs["return_lse"] = true
	}
}

// turbo fills d for a Turbo entry, or falls back to generated when the
// target lacks a capability the block needs.
func (b *block) turbo(d *Decision, mm maskMatch, shape ScoreShape, fromMask bool) {
	a := b.att
	d.Pattern = mm.pattern
	causal := mm.band.hasLo && mm.band.lo == 0
	left, right := int64(-1), int64(-1)
	if mm.band.hasHi {
		left = mm.band.hi
	}
	if causal {
		right = 0
		if !mm.band.hasHi {
			left = -1
		}
	} else if mm.band.hasLo {
		right = -mm.band.lo
	}
	if causal && left == -1 {
		right = -1 // causal=True, window_size=(-1, -1)
	}
	d.Kwargs["causal"] = causal
	d.Kwargs["window_size"] = []int64{left, right}

	entry := EntryDense
	switch {
	case mm.segments != nil:
		entry = EntryVarlen
		name := mm.segments.Buffer.Name.Name
		d.Segments = name
		for _, k := range []string{"cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q", "max_seqlen_k"} {
			d.Kwargs[k] = name
		}
	case b.layout() == "thd":
		entry = EntryVarlen // cu_seqlens come from the trainer's packing
	case b.fp8():
		entry = EntryFP8
	}
	d.Entry = entry
	if mm.pattern != PatternFull && !mm.band.bottomRight {
		d.Preconditions = append(d.Preconditions, "sq == skv")
	}
	if shape.Kind == ScoreAlibi && !contains(d.Preconditions, "sq == skv") {
		// The kernel's bias is relative to the bottom-right diagonal, the
		// score mod's to the top-left one. (An `alibi` setting means the
		// kernel's own bias and needs no precondition.)
		d.Preconditions = append(d.Preconditions, "sq == skv")
	}
	switch shape.Kind {
	case ScoreAlibi:
		d.Kwargs["alibi_slopes"] = shape.Slopes
	case ScoreSoftcap:
		d.Kwargs["softcap"] = shape.Cap
	}
	if a.Alibi != nil {
		d.Kwargs["alibi_slopes"] = a.Alibi.Name
	}
	b.commonKwargs(d)
	if shape.Kind == ScoreScale {
		d.Kwargs["softmax_scale"] = a.ScaleFor(a.HeadDim) * shape.Factor
	}
	if len(d.Preconditions) > 0 {
		d.Fallback = PatternGenerated
	}
	d.Reason = b.explain(mm, shape)

	// Capabilities of the target for this entry.
	if reason := b.capability(entry, left, right, causal, fromMask); reason != "" {
		pre := d.Canonical
		*d = Decision{Name: d.Name, Kwargs: map[string]any{}, Preconditions: []string{}, Canonical: pre,
			Form: d.Form, ScoreShape: d.ScoreShape, Score: d.Score}
		b.generated(d, reason)
	}
}

// capability checks the entry and its arguments against the target. For a
// trainer-style block (no mask) a missing capability is a rule error, for a
// mask it is a reason to generate.
func (b *block) capability(entry string, left, right int64, causal, fromMask bool) string {
	a := b.att
	t := b.target
	var reason string
	var code dsl.Code
	var key string
	switch {
	case left > math.MaxInt32 || right > math.MaxInt32:
		reason = fmt.Sprintf("window_size=(%d, %d) does not fit the 32-bit int Turbo's window_size takes", left, right)
		code, key = CodeWindowRange, "window"
	case !t.Has(entry):
		reason = fmt.Sprintf("target %s has no %s", t.Name, entry)
	case right > 0 && !t.RightWindow || (!causal && right == -1 && left >= 0 && !t.RightWindow):
		reason = fmt.Sprintf("target %s takes only a left window bound: window_size=(%d, %d) needs a right bound", t.Name, left, right)
		code, key = CodeRightWindow, "window"
	case a.Sink != nil && !t.AcceptsSink(entry):
		reason = fmt.Sprintf("%s takes no sink on target %s", entry, t.Name)
		code, key = CodeSinkEntry, "sink"
	case a.Sink != nil && (right > 0 || (!causal && right == -1 && left >= 0)):
		reason = "a sink with a bidirectional window is refused by Turbo"
		code, key = CodeSinkBand, "sink"
	case a.Sink != nil && a.Deterministic && entry == EntryDense:
		reason = "sink together with deterministic is refused on the dense route"
		code, key = CodeSinkDeterminism, "sink"
	}
	if reason == "" {
		return ""
	}
	if fromMask || code == "" {
		return reason
	}
	if code == CodeRightWindow && b.att.Window == nil {
		return reason
	}
	diag := b.errorf(key, code, "%s", reason)
	switch code {
	case CodeRightWindow:
		diag.WithHint("use window = (%d, 0), or select a target with bidirectional windows (--target %s)", left, DefaultTarget.Name)
	case CodeSinkEntry:
		diag.WithHint("use a target whose %s takes sink (--target %s), or drop the sink setting", entry, DefaultTarget.Name)
	case CodeSinkBand:
		diag.WithHint("use a causal window: causal = true and window = (%d, 0)", left)
	case CodeSinkDeterminism:
		diag.WithHint("drop `deterministic = true`, or drop the sink")
	case CodeWindowRange:
		diag.WithHint("a window of %d or more keeps every key of any sequence Turbo takes: drop the window", int64(math.MaxInt32))
	}
	return reason
}

// explain says why a Turbo mapping was chosen.
func (b *block) explain(mm maskMatch, shape ScoreShape) string {
	var s string
	switch mm.pattern {
	case PatternFull:
		s = "every pair is visible"
	case PatternCausal:
		s = "the mask is " + boundText(mm.band)
	case PatternSWCausal:
		s = fmt.Sprintf("the mask is %s: window_size=(%d, 0) keeps %d keys including the diagonal", boundText(mm.band), mm.band.hi, uint64(mm.band.hi)+1)
	case PatternSW:
		s = "the mask is the band " + boundText(mm.band)
	case PatternDoc, PatternDocCausal, PatternDocWindow:
		s = fmt.Sprintf("the mask keeps pairs in the same document of %s (declared segments, so documents are contiguous)", mm.segments.Buffer.Name.Name)
		if mm.band.hasLo || mm.band.hasHi {
			s += " and " + boundText(mm.band)
		}
	}
	if mm.band.bottomRight {
		s += ", aligned bottom-right like the kernel, so exact for every Sq and Skv"
	} else if mm.pattern != PatternFull {
		s += "; the kernel aligns bottom-right, exact when Sq == Skv"
	}
	switch shape.Kind {
	case ScoreAlibi:
		s += "; the score is ALiBi with slopes " + shape.Slopes
	case ScoreSoftcap:
		s += fmt.Sprintf("; the score is softcap %g", shape.Cap)
	case ScoreScale:
		s += fmt.Sprintf("; the score scales logits by %g, folded into softmax_scale", shape.Factor)
	}
	return s
}

func boundText(bd band) string {
	d := dirTopLeft.String()
	if bd.bottomRight {
		d = dirBottomRight.String()
	}
	return Bound{Dir: dirTopLeft, Lo: bd.lo, Hi: bd.hi, HasLo: bd.hasLo, HasHi: bd.hasHi}.Format(d)
}

// runTimeExtra returns the text of the first extra variable of dir that is
// a symbol (a buffer value free of q and kv, `offset`, `prefix_len[b]`)
// rather than a floor quotient, or "".
func runTimeExtra(f *Form, dir normal.Linear) string {
	for i, c := range dir.X {
		if c != 0 && i < len(f.Extras) && f.Extras[i].Kind == normal.ExtraSymbol {
			return f.Extras[i].Text
		}
	}
	return ""
}

// matchMask maps a canonical form onto a mask pattern, or gives the reason
// it has none.
func matchMask(f *Form) maskMatch {
	switch {
	case f.TooComplex:
		return maskMatch{reason: fmt.Sprintf("the mask is too complex to decide symbolically (its normal form exceeds %d terms)", normal.MaxTerms)}
	case f.IsFalse():
		return maskMatch{reason: "the mask is never true"}
	case f.IsTrue():
		return maskMatch{pattern: PatternFull}
	}
	if what := firstUse(f, dsl.VarH, false); what != "" {
		return maskMatch{reason: "the mask depends on the head index h (`" + what + "`): a Turbo kernel applies one mask to every head"}
	}
	if what := firstUse(f, dsl.VarB, true); what != "" {
		return maskMatch{reason: "the mask depends on the batch index b (`" + what + "`): a Turbo kernel applies one mask to every batch"}
	}
	if len(f.Terms) > 1 {
		if isPrefixLM(f) {
			return maskMatch{reason: "prefix LM (`" + f.String() + "`) has no Turbo kernel"}
		}
		return maskMatch{reason: fmt.Sprintf("the mask is a union of %d regions (`%s`): a Turbo kernel takes one window", len(f.Terms), f.String())}
	}
	t := f.Terms[0]
	var m maskMatch
	for _, a := range t.Atoms {
		switch {
		case a.Kind == AtomOpaque:
			return maskMatch{reason: "`" + a.Text + "` " + a.Why + ": no Turbo kernel computes it"}
		case a.Neg:
			return maskMatch{reason: "`" + a.Text + "` pairs tokens of different documents: no Turbo kernel computes it"}
		case !a.Segments():
			n := a.Buffer.Name.Name
			return maskMatch{reason: fmt.Sprintf("%s is not declared `segments`: documents may be non-contiguous (declare `buffer %s: %s%s segments` if its ids never decrease)", n, n, a.Buffer.DType.Name, dimsText(a.Buffer))}
		case m.segments != nil:
			return maskMatch{reason: "the mask intersects two document buffers (`" + t.String() + "`): varlen takes one packing"}
		}
		m.segments = a
	}
	for _, bd := range t.Bounds {
		switch bd.Dir {
		case dirTopLeft, dirBottomRight:
			if m.band.hasLo || m.band.hasHi {
				return maskMatch{reason: "the mask mixes top-left (q - kv) and bottom-right (q - kv + KV - Q) alignment"}
			}
			m.band = band{lo: bd.Lo, hi: bd.Hi, hasLo: bd.HasLo, hasHi: bd.HasHi, bottomRight: bd.Dir == dirBottomRight}
		default:
			if sym := runTimeExtra(f, bd.Dir); sym != "" {
				return maskMatch{reason: "`" + bd.String() + "` moves with " + sym + ", a value read at run time: a Turbo window is a constant"}
			}
			if bd.Dir.UsesExtras() {
				return maskMatch{reason: "`" + bd.String() + "` is a block or strided condition (from // or %): no Turbo kernel computes it"}
			}
			return maskMatch{reason: "`" + bd.String() + "` does not bound q - kv: Turbo windows bound only the distance q - kv"}
		}
	}
	bd := m.band
	if (bd.hasLo && bd.lo > 0) || (bd.hasHi && bd.hi < 0) {
		return maskMatch{reason: "the band " + boundText(bd) + " excludes the diagonal: a kernel window always contains it"}
	}
	if m.segments != nil {
		if bd.bottomRight {
			return maskMatch{reason: "a document mask with a bottom-right (KV - Q) offset has no varlen form"}
		}
		switch {
		case !bd.hasLo && !bd.hasHi:
			m.pattern = PatternDoc
		case bd.hasLo && bd.lo == 0 && !bd.hasHi:
			m.pattern = PatternDocCausal
		default:
			m.pattern = PatternDocWindow
		}
		return m
	}
	switch {
	case bd.hasLo && bd.lo == 0 && !bd.hasHi:
		m.pattern = PatternCausal
	case bd.hasLo && bd.lo == 0:
		m.pattern = PatternSWCausal
	default:
		m.pattern = PatternSW
	}
	return m
}

// firstUse returns the text of the first bound or atom reading v, skipping
// batch-indexed segment atoms when skipSegments.
func firstUse(f *Form, v dsl.Var, skipSegments bool) string {
	for _, t := range f.Terms {
		for _, bd := range t.Bounds {
			if bd.Uses(v) {
				return bd.String()
			}
		}
		for _, a := range t.Atoms {
			if skipSegments && a.Kind == AtomSegment {
				continue
			}
			for _, w := range a.Vars {
				if w == v {
					return a.Text
				}
			}
		}
	}
	return ""
}

// isPrefixLM recognises `kv < P or q >= kv` in any spelling: a causal term
// and a term bounding kv alone.
func isPrefixLM(f *Form) bool {
	var causal, prefix bool
	kvOnly := normal.Var(dsl.VarKV)
	for _, t := range f.Terms {
		if len(t.Atoms) == 0 && len(t.Bounds) == 1 {
			bd := t.Bounds[0]
			causal = causal || (bd.Dir == dirTopLeft && bd.HasLo && bd.Lo == 0 && !bd.HasHi)
			prefix = prefix || (bd.Dir == kvOnly && bd.HasHi && !bd.HasLo)
		}
	}
	return causal && prefix && len(f.Terms) == 2
}

// maskDiagnostics reports never-true masks and empty rows.
func (b *block) maskDiagnostics(f *Form, mm maskMatch) {
	sp := b.span("mask")
	if f.IsFalse() {
		b.diags.Add(b.src, sp, CodeNeverTrue, "the mask is never true: every query row is fully masked for every length").
			WithHint("check the comparison directions; a window is written `q - kv <= W`, causal `q >= kv`")
		return
	}
	if len(f.Terms) != 1 || len(f.Terms[0].Atoms) != 0 || len(f.Terms[0].Bounds) != 1 {
		return
	}
	bd := f.Terms[0].Bounds[0]
	if bd.Dir != dirTopLeft {
		return
	}
	if bd.HasLo && bd.Lo > 0 {
		rows := "row 0 of every sequence sees"
		if bd.Lo > 1 {
			rows = fmt.Sprintf("rows 0..%d of every sequence see", bd.Lo-1)
		}
		b.diags.Warn(b.src, sp, CodeEmptyFirstRows, "%s no key: the mask requires q - kv >= %d", rows, bd.Lo).
			WithHint("fully masked rows output zeros; use q - kv >= 0 if the diagonal should be visible")
	}
	if bd.HasHi && bd.Hi < 0 {
		rows := "the last row sees"
		if bd.Hi < -1 {
			rows = fmt.Sprintf("the last %d rows see", -bd.Hi)
		}
		b.diags.Warn(b.src, sp, CodeEmptyLastRows, "%s no key when Q == KV: the mask requires kv - q >= %d", rows, -bd.Hi).
			WithHint("fully masked rows output zeros; use kv >= q if the diagonal should be visible")
	}
}

// scoreRules checks the score against the alibi setting (rule 12).
func (b *block) scoreRules(shape ScoreShape) {
	a := b.att
	if a.Alibi != nil && b.scoreMod() != nil && shape.Kind != ScoreNone {
		b.errorf("alibi", CodeAlibiAndScore, "alibi slopes together with score mod %s: which bias applies is ambiguous", b.scoreMod().Name).
			WithHint("drop `alibi = %s` and add the bias in the score mod: `score + %s[h] * (kv - q)` under a causal mask", a.Alibi.Name, a.Alibi.Name)
	}
}

// rules checks the configuration rules that do not depend on the pattern.
func (b *block) rules() {
	a := b.att
	causal := a.Causal != nil && *a.Causal
	maskName := ""
	if b.maskMod() != nil {
		maskName = b.maskMod().Name
		if s := b.att.Setting("mask"); s != nil && s.Value != nil && b.src != nil {
			maskName = b.src.Slice(s.Value.Span())
		}
	}
	for _, c := range a.Conflicts() { // alibi next to a score mod: turboReason decides
		switch c.Key {
		case "window":
			b.errorf("window", CodeMaskAndWindow, "window setting together with a mask: two sources for one window").
				WithHint("fold the window into the mask and drop `window`: `mask = and_masks(%s, sliding_window(%d))`, where sliding_window(W) keeps q - kv <= W", maskName, a.Window[0])
		case "causal":
			b.errorf("causal", CodeMaskAndCausal, "causal = true together with a mask: two sources for one mask").
				WithHint("fold it into the mask and drop `causal`: `mask = and_masks(causal, %s)`", maskName)
		}
	}
	if b.maskMod() == nil && a.Window != nil && !causal {
		hint := "add `causal = true` for a causal window"
		if w := a.Window; w[0] >= 0 && w[1] >= 0 {
			hint += fmt.Sprintf(", or write the band as a mask: `mask = band(%d, %d)`", w[0], w[1])
		}
		b.errorf("window", CodeWindowNoCausal, "window without causal = true: the dense flex path has no non-causal window").WithHint("%s", hint)
	}
	if b.maskMod() == nil && a.Window != nil && causal && a.Window[1] > 0 {
		b.errorf("window", CodeCausalRight, "window right bound %d with causal = true: causal already hides every key right of the diagonal", a.Window[1]).
			WithHint("write window = (%d, 0)", a.Window[0])
	}
	if a.Bias != nil {
		b.errorf("bias", CodeBias, "bias setting: the trainer accepts an attention bias and ignores it").
			WithHint("add the bias in a score mod instead: `score biased(s, b, h, q, kv) = s + %s`", biasRead(a.Bias))
	}
	if a.Deterministic && !b.target.Deterministic {
		b.errorf("deterministic", CodeDeterministic, "deterministic = true: target %s has no deterministic parameter", b.target.Name).
			WithHint("drop `deterministic`, or select a target that has it (--target %s)", DefaultTarget.Name)
	}
	if a.ContextParallel {
		b.errorf("context_parallel", CodeContextParallel, "context_parallel on the flex path: maskc has no context-parallel route").
			WithHint("drop `context_parallel`; shard the sequence outside the attention call")
	}
	if a.ReturnAttnProbs {
		b.errorf("return_attn_probs", CodeAttnProbs, "return_attn_probs on the flex path: maskc kernels do not materialise probabilities").
			WithHint("drop `return_attn_probs`; use `return_lse = true` if you need the normaliser")
	}
	if a.Sink != nil && a.Sink.DType != "f32" {
		d := b.diags.Add(b.src, b.settingSpan("sink"), CodeSinkCast, "sink buffer %s is %s: it is cast to f32 (differentiably) before the call", a.Sink.Name, a.Sink.DType)
		d.Severity = dsl.SeverityNote
		d.WithHint("declare it f32 to avoid the cast")
	}
	if b.fp8() {
		b.fp8Rules()
	}
	if b.layout() == "thd" && a.Bias != nil {
		b.errorf("layout", CodePackedMask, "layout = thd with a bias: the varlen entry takes only cu_seqlens").
			WithHint("use a document mask for packing and add the bias in a score mod")
	}
}

// fp8Rules checks rule 13 and the fp8 entry.
func (b *block) fp8Rules() {
	a := b.att
	key := "fp8"
	if a.Setting("fp8") == nil {
		key = "dtype"
	}
	conflict := func(setting, what string) {
		b.errorf(setting, CodeFP8Combination, "fp8 attention with %s: the fp8 entry does not support it", what).
			WithHint("drop `%s`, or drop fp8 for this layer", setting)
	}
	if a.Sink != nil {
		conflict("sink", "a sink")
	}
	if a.Bias != nil {
		conflict("bias", "a bias")
	}
	if a.Window != nil {
		conflict("window", "a window")
	}
	if a.Dropout > 0 {
		conflict("dropout", "dropout")
	}
	if a.Deterministic {
		conflict("deterministic", "deterministic")
	}
	if a.ReturnLSE {
		conflict("return_lse", "return_lse")
	}
	if a.DType != "" && a.DType != "bf16" && a.DType != "fp8" {
		conflict("dtype", "dtype "+a.DType)
	}
	if !b.target.FP8 || !b.target.Has(EntryFP8) {
		b.errorf(key, CodeFP8Entry, "fp8 attention: target %s has no %s", b.target.Name, EntryFP8).
			WithHint("drop fp8 for this layer")
		return
	}
	if b.maskMod() != nil {
		mm := matchMask(b.canon(b.maskMod()))
		switch {
		case mm.segments != nil:
			conflict("mask", "documents")
		case mm.pattern != PatternFull && mm.pattern != PatternCausal:
			b.errorf("mask", CodeFP8Entry, "fp8 attention with mask %s: %s runs only full or causal attention", b.maskMod().Name, EntryFP8).
				WithHint("use a causal or no mask for fp8 layers, or drop fp8")
		}
	}
	if b.scoreMod() != nil && shapeOfScore(b.scoreMod(), b.prog.Buffer).Kind != ScoreNone {
		b.errorf("score", CodeFP8Entry, "fp8 attention with score mod %s: %s takes no score mod", b.scoreMod().Name, EntryFP8).
			WithHint("drop the score mod, or drop fp8")
	}
}

// biasRead writes a read of the bias buffer with the index variables its
// dimensions suggest, e.g. `bias[h, q, kv]`.
func biasRead(buf *check.Buffer) string {
	names := map[dsl.Var]string{dsl.SizeB: "b", dsl.SizeH: "h", dsl.SizeQ: "q", dsl.SizeKV: "kv"}
	idx := make([]string, len(buf.Dims))
	for i, d := range buf.Dims {
		idx[i] = "..."
		for v, n := range names {
			if d.IsSize(v) {
				idx[i] = n
			}
		}
	}
	return buf.Name + "[" + strings.Join(idx, ", ") + "]"
}

// dimsText prints a buffer's declared extents, e.g. "[KV]".
func dimsText(b *dsl.BufferDecl) string {
	parts := make([]string, len(b.Dims))
	for i, d := range b.Dims {
		parts[i] = format.Expr(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
