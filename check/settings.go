package check

import (
	"math"
	"sort"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// settingSpec describes one attention setting: its hover text and how its
// value is checked and stored.
type settingSpec struct {
	doc   string
	apply func(s *settingCheck)
}

// settingCheck is one setting being checked.
type settingCheck struct {
	c   *checker
	l   *lowering
	f   *frame
	a   *Attention
	key string
	e   dsl.Expr
}

func boolSetting(set func(a *Attention, v bool)) func(s *settingCheck) {
	return func(s *settingCheck) {
		if v, ok := s.constant(dsl.TypeBool, "true or false"); ok {
			set(s.a, v.I != 0)
		}
	}
}

var settings = map[string]settingSpec{
	"mask": {"mask = MOD: the mask mod (a mask, a factory instantiation, and_masks/or_masks)",
		func(s *settingCheck) { s.a.Mask = s.mod(dsl.MaskMod) }},
	"score": {"score = MOD: the score mod applied to the scaled logits",
		func(s *settingCheck) { s.a.Score = s.mod(dsl.ScoreMod) }},
	"causal": {"causal = true|false: trainer-style causal flag (bottom-right aligned in Turbo kernels)",
		boolSetting(func(a *Attention, v bool) { a.Causal = &v })},
	"deterministic": {"deterministic = true|false: request deterministic backward kernels",
		boolSetting(func(a *Attention, v bool) { a.Deterministic = v })},
	"fp8": {"fp8 = true|false: fp8 attention",
		boolSetting(func(a *Attention, v bool) { a.FP8 = v })},
	"context_parallel": {"context_parallel = true|false: context parallelism (Ulysses / ring)",
		boolSetting(func(a *Attention, v bool) { a.ContextParallel = v })},
	"return_lse": {"return_lse = true|false: also return the natural-log log-sum-exp",
		boolSetting(func(a *Attention, v bool) { a.ReturnLSE = v })},
	"return_attn_probs": {"return_attn_probs = true|false: also return the attention probabilities",
		boolSetting(func(a *Attention, v bool) { a.ReturnAttnProbs = v })},
	"window": {"window = (left, right): trainer-style sliding window; -1 = unbounded", (*settingCheck).window},
	"sink": {"sink = BUFFER: per-head attention sink logits, f32[H]", func(s *settingCheck) {
		s.a.Sink = s.buffer(func(b *Buffer) bool { return len(b.Dims) == 1 && b.Dims[0].IsSize(dsl.SizeH) }, "[H]")
	}},
	"alibi": {"alibi = BUFFER: ALiBi slopes, f32[H] or f32[B, H]", func(s *settingCheck) {
		s.a.Alibi = s.buffer(func(b *Buffer) bool {
			return len(b.Dims) == 1 && b.Dims[0].IsSize(dsl.SizeH) ||
				len(b.Dims) == 2 && b.Dims[0].IsSize(dsl.SizeB) && b.Dims[1].IsSize(dsl.SizeH)
		}, "[H] or [B, H]")
	}},
	"bias": {"bias = BUFFER: trainer-style additive attention bias (refused by the classifier)", func(s *settingCheck) {
		s.a.Bias = s.buffer(func(*Buffer) bool { return true }, "")
	}},
	"layout": {"layout = bshd|bhsd|thd: tensor layout (default bshd)", func(s *settingCheck) {
		if w, ok := s.word("layout", "bshd", "bhsd", "thd"); ok {
			s.a.Layout = w
		}
	}},
	"dtype": {"dtype = bf16|fp16|fp8: element type of q, k, v (default bf16)", func(s *settingCheck) {
		if w, ok := s.word("dtype", "bf16", "fp16", "fp8"); ok {
			s.a.DType = w
		}
	}},
	"head_dim": {"head_dim = N: head dimension, a multiple of 8, at most 256", func(s *settingCheck) {
		v, ok := s.constant(dsl.TypeInt, "an int")
		switch {
		case !ok:
		case v.I <= 0 || v.I%8 != 0 || v.I > 256:
			s.rangeError("head_dim must be a positive multiple of 8 and at most 256, got %d", v.I).
				WithHint("Turbo kernels take head dims 8, 16, ..., 256")
		default:
			s.a.HeadDim = int(v.I)
		}
	}},
	"scale": {"scale = X: softmax scale (default 1/sqrt(head_dim))", func(s *settingCheck) {
		v, ok := s.constant(dsl.TypeFloat, "a number")
		switch {
		case !ok:
		case !(v.AsFloat() > 0) || math.IsInf(v.AsFloat(), 0):
			s.rangeError("scale must be a positive finite number, got %s", v.String()).
				WithHint("omit scale to use 1/sqrt(head_dim)")
		default:
			f := v.AsFloat()
			s.a.Scale = &f
		}
	}},
	"dropout": {"dropout = P: dropout probability, 0 <= P < 1", func(s *settingCheck) {
		v, ok := s.constant(dsl.TypeFloat, "a number")
		switch {
		case !ok:
		case !(v.AsFloat() >= 0 && v.AsFloat() < 1):
			s.rangeError("dropout must be in [0, 1), got %s", v.String()).
				WithHint("dropout is a probability, e.g. 0.1")
		default:
			s.a.Dropout = v.AsFloat()
		}
	}},
	"kv_heads": {"kv_heads = N: number of key/value heads for GQA (H must be a multiple)", func(s *settingCheck) {
		v, ok := s.constant(dsl.TypeInt, "an int")
		switch {
		case !ok:
		case v.I <= 0 || v.I > math.MaxInt32:
			s.rangeError("kv_heads must be a positive int, got %d", v.I).
				WithHint("omit kv_heads when every query head has its own key/value head")
		default:
			s.a.KVHeads = int(v.I)
		}
	}},
}

// SettingKeys lists the attention setting keys, sorted.
func SettingKeys() []string {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// SettingDoc is the one-line description of an attention setting, or "".
func SettingDoc(key string) string { return settings[key].doc }

// checkAttentions checks every attention block's settings.
func (c *checker) checkAttentions() {
	for _, a := range c.prog.Attentions {
		c.info.Defs[a.Decl.Name] = Symbol{Kind: SymAttention, Name: a.Name, Decl: a.Decl, Doc: "attention " + a.Name}
		for _, st := range a.Decl.Settings {
			if st == nil || st.Key == nil {
				continue
			}
			key := st.Key.Name
			spec, ok := settings[key]
			if !ok {
				d := c.diags.Add(c.src, st.Key.Sp, CodeUnknownSetting, "unknown attention setting %s", key)
				if h := didYouMean(key, SettingKeys()); h != "" {
					d.WithHint("%s", h)
				} else {
					d.WithHint("settings: %s", strings.Join(SettingKeys(), ", "))
				}
				continue
			}
			c.info.Uses[st.Key] = Symbol{Kind: SymSetting, Name: key, Doc: spec.doc}
			if prev := a.settings[key]; prev != nil {
				c.diags.Add(c.src, st.Key.Sp, CodeDuplicateSetting, "setting %s is given twice in attention %s", key, a.Name).
					WithHint("the first is on line %d; keep one", c.src.Position(prev.Key.Sp.Start).Line)
				continue
			}
			a.settings[key] = st
			if st.Value == nil {
				continue
			}
			spec.apply(&settingCheck{c: c, l: c.newLowering(), f: c.userFrame(), a: a, key: key, e: st.Value})
		}
		lowerSettings(a)
	}
}

func (s *settingCheck) typeError(format string, args ...any) *dsl.Diagnostic {
	return s.c.diags.Add(s.c.src, s.e.Span(), CodeSettingType, format, args...)
}

func (s *settingCheck) rangeError(format string, args ...any) *dsl.Diagnostic {
	return s.c.diags.Add(s.c.src, s.e.Span(), CodeSettingRange, format, args...)
}

// constant checks a constant of type want (TypeFloat accepts ints too).
func (s *settingCheck) constant(want dsl.Type, what string) (dsl.Value, bool) {
	r := s.l.value(s.f, s.e)
	if !r.ok() {
		return dsl.Value{}, false
	}
	fits := r.typ == want || want == dsl.TypeFloat && r.typ == dsl.TypeInt
	if !fits || !r.isConst() {
		got := describeResult(r)
		if fits {
			got = "a run-time " + r.typ.String()
		}
		s.typeError("%s must be a constant %s, got %s", s.key, strings.TrimPrefix(strings.TrimPrefix(what, "an "), "a "), got).
			WithHint("e.g. %s", s.example())
		return dsl.Value{}, false
	}
	return r.val, true
}

func (s *settingCheck) example() string {
	switch s.key {
	case "head_dim":
		return "head_dim = 128"
	case "scale":
		return "scale = 0.125"
	case "dropout":
		return "dropout = 0.1"
	case "kv_heads":
		return "kv_heads = 2"
	case "window":
		return "window = (1023, 0)"
	}
	return s.key + " = true"
}

func (s *settingCheck) window() {
	t, ok := dsl.Unparen(s.e).(*dsl.TupleExpr)
	if !ok || len(t.Elems) != 2 {
		if !ok {
			s.l.expr(s.f, s.e)
		}
		s.typeError("window must be a pair (left, right), got %s", s.c.src.Slice(s.e.Span())).
			WithHint("e.g. window = (1023, 0): 1023 keys to the left, none to the right; -1 = unbounded")
		return
	}
	var w [2]int64
	for i, el := range t.Elems {
		r := s.l.value(s.f, el)
		if !r.ok() {
			return
		}
		if r.typ != dsl.TypeInt || !r.isConst() {
			s.c.diags.Add(s.c.src, el.Span(), CodeSettingType, "window bounds must be constant ints, got %s", describeResult(r)).
				WithHint("e.g. window = (1023, 0)")
			return
		}
		if r.val.I < -1 {
			s.c.diags.Add(s.c.src, el.Span(), CodeSettingRange, "window bounds must be >= -1, got %d", r.val.I).
				WithHint("-1 means unbounded on that side")
			return
		}
		w[i] = r.val.I
	}
	s.c.info.Types[s.e] = dsl.TypeTuple
	s.a.Window = &w
}

// buffer checks a buffer name with a float element type and, when shape
// is not "", a shape accepted by okShape.
func (s *settingCheck) buffer(okShape func(*Buffer) bool, shape string) *Buffer {
	r := s.l.expr(s.f, s.e)
	if !r.ok() {
		return nil
	}
	if r.typ != dsl.TypeBuffer {
		s.typeError("%s must be a buffer name, got %s", s.key, describeResult(r)).
			WithHint("declare a buffer, e.g. buffer %ss: f32[H], and write %s = %ss", s.key, s.key, s.key)
		return nil
	}
	b := r.buf
	if b.ElemType() != dsl.TypeFloat && b.DType != "" {
		s.c.diags.Add(s.c.src, s.e.Span(), CodeSettingBuffer, "%s buffer %s must hold floats, got %s", s.key, b.Name, b.DType).
			WithHint("declare it as f32")
		return nil
	}
	if shape != "" && !okShape(b) {
		s.c.diags.Add(s.c.src, s.e.Span(), CodeSettingBuffer, "%s buffer %s must have shape %s, got %s", s.key, b.Name, shape, b.shape()).
			WithHint("declare it as buffer %s: f32%s", b.Name, strings.SplitN(shape, " or ", 2)[0])
		return nil
	}
	return b
}

// word checks a bare word among choices.
func (s *settingCheck) word(what string, choices ...string) (string, bool) {
	id, ok := dsl.Unparen(s.e).(*dsl.Ident)
	if !ok {
		s.typeError("%s must be one of %s, got %s", what, strings.Join(choices, ", "), s.c.src.Slice(s.e.Span())).
			WithHint("write the word without quotes, e.g. %s = %s", what, choices[0])
		return "", false
	}
	for _, c := range choices {
		if id.Name == c {
			s.c.info.Uses[id] = Symbol{Kind: SymWord, Name: c, Doc: what + " = " + c}
			s.c.info.Types[s.e] = dsl.TypeWord
			return c, true
		}
	}
	d := s.c.diags.Add(s.c.src, id.Sp, CodeUnknownWord, "unknown %s %s", what, id.Name)
	if h := didYouMean(id.Name, choices); h != "" {
		d.WithHint("%s (choices: %s)", h, strings.Join(choices, ", "))
	} else {
		d.WithHint("choices: %s", strings.Join(choices, ", "))
	}
	return "", false
}

// mod lowers a mask or score setting.
func (s *settingCheck) mod(kind dsl.ModKind) *dsl.Lowered {
	mv := s.l.modValue(s.f, s.e, kind, "the "+s.key+" setting")
	if mv == nil {
		return nil
	}
	low, _ := s.c.lowerTop(mv, "", s.e.Span())
	return low
}
