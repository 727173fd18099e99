package check

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
)

func TestThreeIndependentErrors(t *testing.T) {
	src := "mask a(b, h, q, kv) = q >= kvv\n" +
		"mask c(b, h, q, kv) = q // 0 == 1\n" +
		"attention x {\n    layout = bsdh\n}\n"
	_, diags := checkSource(t, src, nil)
	var got []string
	for _, d := range diags.Errors() {
		got = append(got, d.Error())
	}
	assert.Equal(t, []string{
		"test.flex:1:28: error[E020]: unknown name kvv",
		"test.flex:2:28: error[E037]: division by constant zero",
		"test.flex:4:14: error[E052]: unknown layout bsdh",
	}, got)
}

func TestInfoTables(t *testing.T) {
	src := "# Window in tokens.\nparam W = 8\nbuffer doc: i32[KV]\n" +
		"# Same document, within W.\nmask near(b, h, q, kv) {\n    let d = q - kv\n    doc[q] == doc[kv] and d <= W\n}\n" +
		"attention a {\n    mask = and_masks(near, causal)\n    layout = thd\n}\n"
	p, diags := checkSource(t, src, nil)
	require.Empty(t, diags, diags.Render())
	uses := map[string][]Symbol{}
	for id, s := range p.Info.Uses {
		uses[id.Name] = append(uses[id.Name], s)
	}
	require.Len(t, uses["W"], 1)
	assert.Equal(t, SymParam, uses["W"][0].Kind)
	assert.Equal(t, "param W = 8", uses["W"][0].Doc)
	assert.Equal(t, SymLet, uses["d"][0].Kind)
	assert.Equal(t, dsl.TypeInt, uses["d"][0].Type)
	assert.Equal(t, SymModParam, uses["kv"][0].Kind)
	assert.Equal(t, SymBuffer, uses["doc"][0].Kind)
	assert.Equal(t, "buffer doc: i32[KV]", uses["doc"][0].Doc)
	assert.Equal(t, SymMod, uses["near"][0].Kind)
	assert.Equal(t, "mask near(b, h, q, kv)\nSame document, within W.", uses["near"][0].Doc)
	assert.Equal(t, SymStdMod, uses["causal"][0].Kind)
	assert.Contains(t, uses["causal"][0].Doc, "Causal mask (top-left aligned)")
	assert.Equal(t, SymCombinator, uses["and_masks"][0].Kind)
	assert.Equal(t, SymSetting, uses["layout"][0].Kind)
	assert.Equal(t, SymWord, uses["thd"][0].Kind)
	assert.Equal(t, SymSize, uses["KV"][0].Kind, "dims are resolved too")

	defs := map[string]Symbol{}
	for id, s := range p.Info.Defs {
		defs[id.Name] = s
	}
	assert.Equal(t, SymParam, defs["W"].Kind)
	assert.Equal(t, "Window in tokens.", p.Mod("near").doc[:0]+strings.Split(docComment(p.File, p.Param("W").Decl), "\n")[0])
	assert.Equal(t, SymLet, defs["d"].Kind)
	assert.Equal(t, SymModParam, defs["q"].Kind)

	// Types and constants of source expressions.
	body := p.Mod("near").Decl.Body
	assert.Equal(t, dsl.TypeBool, p.Info.Types[body.Result])
	assert.Equal(t, dsl.TypeInt, p.Info.Types[body.Lets[0].Value])
	assert.Equal(t, dsl.Int(8), p.Info.Consts[p.Param("W").Decl.Value])
	assert.True(t, p.Mod("near").Used)
	assert.Equal(t, "thd", p.Attention("a").Layout)
	assert.Equal(t, "bf16", p.Attention("a").DType, "default dtype")
}

func TestSettingsTyped(t *testing.T) {
	src := "param HD = 64\nbuffer sinks: f32[H]\nbuffer slopes: f32[B, H]\nbuffer tb: f32[H, KV]\n" +
		"attention a {\n    causal = True\n    window = (HD * 2 - 1, 0)\n    sink = sinks\n    alibi = slopes\n    bias = tb\n" +
		"    layout = bhsd\n    dtype = fp16\n    head_dim = HD * 2\n    scale = 0.125\n    dropout = 0.1\n" +
		"    deterministic = true\n    fp8 = false\n    context_parallel = false\n    return_lse = true\n" +
		"    return_attn_probs = false\n    kv_heads = 2\n}\nattention empty {\n}\n"
	p, diags := checkSource(t, src, nil)
	require.Empty(t, diags, diags.Render())
	a := p.Attention("a")
	require.NotNil(t, a.Causal)
	assert.True(t, *a.Causal)
	assert.Equal(t, &[2]int64{127, 0}, a.Window)
	assert.Equal(t, "sinks", a.Sink.Name)
	assert.Equal(t, "slopes", a.Alibi.Name)
	assert.Equal(t, "tb", a.Bias.Name)
	assert.Equal(t, "bhsd", a.Layout)
	assert.Equal(t, "fp16", a.DType)
	assert.Equal(t, 128, a.HeadDim)
	assert.Equal(t, 0.125, *a.Scale)
	assert.Equal(t, 0.1, a.Dropout)
	assert.True(t, a.Deterministic)
	assert.True(t, a.ReturnLSE)
	assert.False(t, a.FP8)
	assert.Equal(t, 2, a.KVHeads)
	assert.NotNil(t, a.Setting("window"))
	assert.Nil(t, a.Setting("mask"))
	e := p.Attention("empty")
	assert.Nil(t, e.Mask)
	assert.Nil(t, e.Causal)
	assert.Equal(t, "bshd", e.Layout)
	assert.Equal(t, 0, e.HeadDim)
}

func TestSettingErrors(t *testing.T) {
	tests := []struct{ setting, want string }{
		{"window = 5", "E050: window must be a pair (left, right), got 5"},
		{"window = (1, 2, 3)", "E050: window must be a pair (left, right), got (1, 2, 3)"},
		{"window = (1.5, 0)", "E050: window bounds must be constant ints, got float 1.5"},
		{"window = (-2, 0)", "E051: window bounds must be >= -1, got -2"},
		{"window = (Q, 0)", "E050: window bounds must be constant ints, got an int"},
		{"sink = 3", "E050: sink must be a buffer name, got int 3"},
		{"sink = ids", "E057: sink buffer ids must hold floats, got i32"},
		{"alibi = tb", "E057: alibi buffer tb must have shape [H] or [B, H], got f32[H, KV]"},
		{"layout = 3", "E050: layout must be one of bshd, bhsd, thd, got 3"},
		{"dtype = fp32", "E052: unknown dtype fp32"},
		{"head_dim = 0", "E051: head_dim must be a positive multiple of 8 and at most 256, got 0"},
		{"head_dim = 264", "E051: head_dim must be a positive multiple of 8 and at most 256, got 264"},
		{"head_dim = 64.0", "E050: head_dim must be a constant int, got float 64.0"},
		{"scale = 0", "E051: scale must be a positive finite number, got 0"},
		{"scale = -inf", "E051: scale must be a positive finite number, got -inf"},
		{"scale = True", "E050: scale must be a constant number, got bool True"},
		{"dropout = 1", "E051: dropout must be in [0, 1), got 1"},
		{"kv_heads = -1", "E051: kv_heads must be a positive int, got -1"},
		{"causal = Q > 1", "E050: causal must be a constant true or false, got a run-time bool"},
		{"mask = 1", "E054: the mask setting needs a mask mod, got an int"},
		{"mask = abs", "E054: the mask setting needs a mask mod, got the function abs"},
		{"mask = and_masks()", "E023: and_masks needs at least one mask mod"},
		{"mask = and_masks(causal, softcap(2))", "E040: softcap(2) is a score mod, but and_masks needs a mask mod"},
		{"score = causal", "E040: causal is a mask mod, but the score setting needs a score mod"},
		{"mask = document(3)", "E045: argument doc of document must be a buffer name, got int 3"},
		{"mask = sliding_window(ids)", "E045: argument W of sliding_window must be a constant, got buffer ids"},
		{"mask = sliding_window(1, 2)", "E023: factory sliding_window takes 1 argument, got 2"},
		{"mask = causal(1)", "E023: mask causal takes 4 arguments (b, h, q, kv), got 1"},
		{"mask = sliding_window(1 // 0)", "E037: division by constant zero"},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			src := "buffer ids: i32[KV]\nbuffer tb: f32[H, KV]\nmask use(b, h, q, kv) = ids[q] == 0 and tb[h, kv] > 0\n" +
				"attention a {\n    " + tt.setting + "\n}\n"
			_, diags := checkSource(t, src, nil)
			var errs []string
			for _, d := range diags.Errors() {
				errs = append(errs, string(d.Code)+": "+d.Message)
			}
			require.NotEmpty(t, errs)
			assert.Equal(t, tt.want, errs[0], strings.Join(errs, "\n"))
		})
	}
}

func TestExpressionTyping(t *testing.T) {
	tests := []struct{ body, want string }{
		// Python promotion and folding.
		{"q + 1.5 > 2", ""},
		{"q / 2 > 1", ""},
		{"-7 // 2 == q", ""},
		{"q ** -1 > 0", ""},
		{"(q & 3) == 1", ""},
		{"(q >= kv) | (q < 4)", ""},
		{"~(q >= kv)", ""},
		{"not q >= kv", ""},
		{"q >= kv if h == 0 else True", ""},
		{"where(h > 0, q >= kv, False)", ""},
		{"min(q, 2.5) > clamp(kv, 0, 4)", ""},
		{"floor(q / 2) == ceil(kv / 2)", ""},
		{"q < inf and -inf < kv", ""},
		{"math.exp(q) > torch.log2(kv + 1)", ""},
		{"q < B + H + HKV + Q + KV", ""},
		// Errors.
		{"q + causal > 0", "E028: mask causal is a mod, not a value"},
		{"q > abs", "E028: abs is a built-in function, not a value"},
		{"and_masks > 1", "E028: and_masks combines mask mods; it is not a value"},
		{"(q, kv) == 1", "E028: (q, kv) is a tuple, not a value"},
		{"~1.5 == q", "E027: `~` needs a bool or an int, got float"},
		{"(q & 1.5) == 0", "E027: `&` needs bool or int operands, got float"},
		{"not q", "E026: `not` needs a bool, got int"},
		{"q if kv else True", "E029: the condition of `if else` must be bool, got int"},
		{"q % 0.0 == 1", "E037: modulo by constant zero"},
		{"q / (2 - 2) == 1", "E037: division by constant zero"},
		{"q > 9223372036854775807 + 1", "E038: constant 9223372036854775807 + 1: integer overflow"},
		{"(-1) ** 0.5 > q", "E038: constant (-1) ** 0.5: negative number raised to a fractional power"},
		{"abs(-9223372036854775807 - 1) > q", "E038: constant abs(-9223372036854775807 - 1): integer overflow"},
		{"sliding_window(2)(b, h, q, kv) and sliding_window(3)(b, h, 1.5, kv)", "E056: argument q of sliding_window(3) must be an int index, got float"},
		{"causal(b, h, q, kv, 1)", "E023: mask causal takes 4 arguments (b, h, q, kv), got 5"},
		{"softcap(2)(1.0, b, h, q, kv) > 0", ""},
		{"kv(1)", "E047: kv is a mod parameter, not a function or mod; it cannot be called"},
		{"(q)(1)", "E047: (q) is a mod parameter, not a function or mod; it cannot be called"},
		{"torch.nope(q)", "E020: unknown name torch.nope"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			src := "mask m(b, h, q, kv) = " + tt.body + "\n"
			_, diags := checkSource(t, src, nil)
			if tt.want == "" {
				assert.Empty(t, diags, diags.Render())
				return
			}
			require.NotEmpty(t, diags)
			assert.Equal(t, tt.want, string(diags[0].Code)+": "+diags[0].Message, diags.Render())
		})
	}
}

func TestBitwisePrecedenceOnlyWhenUnparenthesised(t *testing.T) {
	for _, body := range []string{"(q >= kv) & (q < 5)", "(q & 1) == 0", "q >= kv and q < 5", "q & 1 == 0", "kv == q | 1"} {
		_, diags := checkSource(t, "mask m(b, h, q, kv) = "+body+"\n", nil)
		assert.Empty(t, diags, body)
	}
	_, diags := checkSource(t, "mask m(b, h, q, kv) = q - kv < 4 | kv == 0\n", nil)
	require.Len(t, diags, 1)
	assert.Equal(t, "`|` binds tighter than comparisons: this reads q - kv < (4 | kv) == 0", diags[0].Message)
	assert.Equal(t, "parenthesise each comparison: (q - kv < 4) | (kv == 0)", diags[0].Hint)
}

func TestStdlib(t *testing.T) {
	lib, diags := loadLibrary("stdlib.flex", stdlibText)
	require.Empty(t, diags, diags.Render())
	mods := StdlibMods()
	require.Len(t, mods, len(lib.names))
	want := []string{"causal", "full", "noop_mask", "sliding_window", "band", "prefix_lm", "document", "document_causal", "alibi", "softcap", "causal_score"}
	var names []string
	for _, s := range mods {
		names = append(names, s.Name)
		assert.Equal(t, SymStdMod, s.Kind)
		assert.Contains(t, s.Doc, "\n", "%s has a doc comment", s.Name)
	}
	assert.Equal(t, want, names)
	assert.Equal(t, "mask sliding_window(W)(b, h, q, kv)\nCausal sliding window of W + 1 keys including the diagonal: q - W <= kv <= q.", mods[3].Doc)

	// A user declaration shadows the library.
	p, diags := checkSource(t, "mask causal(b, h, q, kv) = q > kv\nattention a {\n    mask = causal\n}\n", nil)
	require.Empty(t, diags)
	assert.Equal(t, "q > kv", fmtExpr(p.Attention("a").Mask.Expr))

	// Errors inside a library body point at the user's text.
	_, diags = checkSource(t, "attention a {\n    score = softcap(0)\n}\n", nil)
	require.Len(t, diags, 1)
	assert.Equal(t, "test.flex:2:13: error[E037]: in standard mod softcap: division by constant zero", diags[0].Error())

	// Library bodies do not see user names.
	p, diags = checkSource(t, "param W = 3\nattention a {\n    mask = and_masks(sliding_window(5), m)\n}\nmask m(b, h, q, kv) = q < W\n", nil)
	require.Empty(t, diags)
	assert.Equal(t, "q >= kv and q - kv <= 5 and q < 3", fmtExpr(p.Attention("a").Mask.Expr))
}

func TestLibraryLoadErrors(t *testing.T) {
	_, diags := loadLibrary("bad.flex", []byte("param X = 1\nmask m(b, h, q, kv) = undefined_thing\n"))
	var codes []dsl.Code
	for _, d := range diags {
		codes = append(codes, d.Code)
	}
	assert.Equal(t, []dsl.Code{CodeNotAMod, CodeUnknownName}, codes)
}

func TestCheckDegenerateInputs(t *testing.T) {
	p, diags := Check(nil, Options{})
	require.NotNil(t, p)
	assert.Empty(t, diags)
	p, diags = Check(&dsl.File{}, Options{Defines: map[string]string{"X": "1"}})
	require.NotNil(t, p)
	require.Len(t, diags, 1)
	assert.Equal(t, CodeDefineUnknown, diags[0].Code)
	assert.Equal(t, "the file declares no params", diags[0].Hint)
	low, diags := p.Lower(nil)
	assert.Nil(t, low)
	require.Len(t, diags, 1)
}
