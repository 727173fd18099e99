package check

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// codesOf lists the codes of diags in order.
func codesOf(diags dsl.Diagnostics) []dsl.Code {
	var out []dsl.Code
	for _, d := range diags {
		out = append(out, d.Code)
	}
	return out
}

// TestIssue28Warnings pins the warnings issue 28 found wrong on real
// FlexAttention code: W030 only where torch raises, W005 quiet on the
// `factory(buffer)` idiom, each with a case that must still warn.
func TestIssue28Warnings(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []dsl.Code
	}{
		{"W030 quiet on a bool factory argument", `
def generate(causal: bool):
    def m(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) if causal else (q_idx >= 0)
    return m
attention a {
    mask = generate(True)
}
`, nil},
		{"W030 quiet on a param", `
param CAUSAL = True
def m(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) if CAUSAL else (q_idx >= 0)
attention a {
    mask = m
}
`, nil},
		{"W030 on a tensor condition in a factory", `
def generate(w: int):
    def m(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx <= w) if q_idx > kv_idx else (kv_idx - q_idx <= w)
    return m
attention a {
    mask = generate(4)
}
`, []dsl.Code{CodeTorchBool}},
		{"W030 on a buffer condition", `
buffer doc: i32[KV]
def generate(w: int):
    def m(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) if doc[q_idx] > w else (q_idx >= 0)
    return m
attention a {
    mask = generate(4)
}
`, []dsl.Code{CodeTorchBool}},
		{"W005 quiet on factory(buffer)", `
buffer document_id: i32[KV]
def generate_doc_mask_mod(document_id):
    def doc_mask_mod(b, h, q_idx, kv_idx):
        return document_id[q_idx] == document_id[kv_idx]
    return doc_mask_mod
attention a {
    mask = generate_doc_mask_mod(document_id)
}
`, nil},
		{"W005 on a factory parameter named after a param", `
param W = 4
def generate(W):
    def m(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= W
    return m
attention a {
    mask = generate(W)
}
`, []dsl.Code{CodeShadow}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := checkSource(t, tc.src, nil)
			assert.Equal(t, tc.want, codesOf(diags), diags.Render())
		})
	}
}

// TestFactoryCallsAsPython pins how a factory call binds its arguments:
// by position, by keyword (attention-gym calls its factories that way) and
// from the def's default values, with Python's errors for the rest.
func TestFactoryCallsAsPython(t *testing.T) {
	const gen = `
param W = 8
def generate(window: int, causal: bool = True, offset=W // 2):
    def m(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx <= window + offset) & ((q_idx >= kv_idx) | (not causal))
    return m
`
	cases := []struct {
		call string
		want string // the lowered mask, or the error
	}{
		{"generate(4)", "(q - kv <= 8) & ((q >= kv) | False)"},
		{"generate(4, False)", "(q - kv <= 8) & ((q >= kv) | True)"},
		{"generate(window=4, offset=0)", "(q - kv <= 4) & ((q >= kv) | False)"},
		{"generate(4, causal=False, offset=1)", "(q - kv <= 5) & ((q >= kv) | True)"},
		{"generate(causal=False)", "E023 factory generate takes 3 arguments, got 1"},
		{"generate(4, windows=2)", "E075 factory generate has no parameter windows"},
		{"generate(4, window=2)", "E075 factory generate gets window twice"},
	}
	for _, tc := range cases {
		t.Run(tc.call, func(t *testing.T) {
			p, diags := checkSource(t, gen+"attention a {\n    mask = "+tc.call+"\n}\n", nil)
			if diags.HasErrors() {
				var got []string
				for _, d := range diags {
					if d.Severity == dsl.SeverityError {
						got = append(got, string(d.Code)+" "+d.Message)
					}
				}
				assert.Equal(t, []string{tc.want}, got)
				return
			}
			if assert.NotNil(t, p.Attention("a")) {
				assert.Equal(t, tc.want, fmtExpr(p.Attention("a").Mask.Expr))
			}
		})
	}
}

// TestFactoriesOfMods pins factories that combine their inner function
// with and_masks/or_masks after the inner def (attention-gym's
// generate_sliding_window, generate_prefix_lm_mask) and factories that take
// a mod as an argument.
func TestFactoriesOfMods(t *testing.T) {
	const src = `
def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def generate_sliding_window(window_size: int):
    def sliding_window(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= window_size

    sliding_window_mask = and_masks(sliding_window, causal_mask)
    sliding_window_mask.__name__ = f"sliding_window_{window_size}"
    return sliding_window_mask

def generate_prefix_lm_mask(prefix_length):
    def prefix_mask(b, h, q_idx, kv_idx):
        return kv_idx < prefix_length
    return or_masks(prefix_mask, causal_mask)

def generate_offset(mask_mod, offset):
    def offset_mask(b, h, q_idx, kv_idx):
        return mask_mod(b, h, q_idx + offset, kv_idx)
    return offset_mask

def generate_bad(w):
    def m(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= w
    return w
`
	cases := []struct{ mask, want string }{
		{"generate_sliding_window(128)", "q - kv <= 128 and q >= kv"},
		{"generate_prefix_lm_mask(prefix_length=64)", "kv < 64 or q >= kv"},
		{"generate_offset(generate_sliding_window(16), 4)", "q + 4 - kv <= 16 and q + 4 >= kv"},
		{"generate_offset(causal, 2)", "q + 2 >= kv"},
		{"generate_bad(3)", "E054 factory generate_bad returns int 3, not a mask or score mod"},
	}
	for _, tc := range cases {
		t.Run(tc.mask, func(t *testing.T) {
			p, diags := checkSource(t, src+"attention a {\n    mask = "+tc.mask+"\n}\n", nil)
			errs := errorLines(diags)
			if errs != nil {
				assert.Equal(t, []string{tc.want}, errs)
				return
			}
			assert.Equal(t, tc.want, fmtExpr(p.Attention("a").Mask.Expr))
		})
	}
}

// TestToDTypeOf pins x.to(y.dtype): the element type of y, exact or refused.
func TestToDTypeOf(t *testing.T) {
	cases := []struct{ body, want string }{
		{"score + (q_idx - kv_idx).to(score.dtype)", "score + float(q - kv)"},
		{"score + (score * 2).to(q_idx.dtype)", "score + int(score * 2)"},
		{"score + bias[h].to(score.dtype)", "score + bias[h]"},
		{"score + (q_idx - kv_idx).to(bias.dtype)", "score + float(q - kv)"},
		{"score + (q_idx - kv_idx).to(idx[kv_idx].dtype)", "score + (q - kv)"},
		{"score + (q_idx - kv_idx).to(half.dtype)", "E076 .to(half.dtype) converts to half's f16, whose rounding maskc does not model"},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			src := "buffer bias: f32[H]\nbuffer idx: i64[KV]\nbuffer half: f16[H]\ndef s(score, b, h, q_idx, kv_idx):\n    return " + tc.body + "\nattention a {\n    score = s\n}\n"
			p, diags := checkSource(t, src, nil)
			errs := errorLines(diags)
			if errs != nil {
				assert.Equal(t, []string{tc.want}, errs)
				return
			}
			assert.Equal(t, tc.want, fmtExpr(p.Attention("a").Score.Expr))
		})
	}
}

// TestCompileTimeStatements pins `if`/`elif`/`else`, `assert`, `pass` and
// `is None` in defs, decided at compile time as Python decides them, and
// the errors where maskc cannot (a condition on a tensor) or Python would
// fail (a failing assert, falling off the end).
func TestCompileTimeStatements(t *testing.T) {
	const src = `
def causal_mask(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def generate_window(window=None, causal: bool = True):
    def window_mask(b, h, q_idx, kv_idx):
        if window is None:
            return causal_mask(b, h, q_idx, kv_idx)
        assert window > 0, "window must be positive"
        m = q_idx - kv_idx <= window
        if causal:
            m = m & (q_idx >= kv_idx)
        elif window > 100:
            m = m & (kv_idx - q_idx <= window)
        else:
            pass
        return m
    return window_mask

def softcap(cap):
    def s(score, b, h, q_idx, kv_idx):
        if cap is not None and cap > 0: return cap * torch.tanh(score / cap)
        return score
    return s

def falls_off(w):
    def m(b, h, q_idx, kv_idx):
        if w > 10:
            return q_idx >= kv_idx
    return m
`
	cases := []struct{ setting, want string }{
		{"mask = generate_window()", "q >= kv"},
		{"mask = generate_window(64)", "(q - kv <= 64) & (q >= kv)"},
		{"mask = generate_window(window=200, causal=False)", "(q - kv <= 200) & (kv - q <= 200)"},
		{"mask = generate_window(8, False)", "q - kv <= 8"},
		{"mask = generate_window(0)", "E078 assertion window > 0 in def window_mask (line 9) fails for the mask generate_window(0, True)"},
		{"score = softcap(None)", "score"},
		{"score = softcap(0.0)", "score"},
		{"score = softcap(30.0)", "30.0 * tanh(score / 30.0)"},
		{"mask = falls_off(3)", "E078 def m ends without `return` here: Python returns None, which is not a mask"},
		{"mask = falls_off(30)", "q >= kv"},
		{"mask = runtime\n}\ndef runtime(b, h, q_idx, kv_idx):\n    if q_idx > kv_idx:\n        return True\n    return False\nattention z {\n    mask = causal", "E078 `if q_idx > kv_idx` depends on a run-time value: maskc decides `if` at compile time"},
	}
	for _, tc := range cases {
		t.Run(tc.setting, func(t *testing.T) {
			p, diags := checkSource(t, src+"attention a {\n    "+tc.setting+"\n}\n", nil)
			errs := errorLines(diags)
			if errs != nil {
				assert.Equal(t, []string{tc.want}, errs)
				return
			}
			a := p.Attention("a")
			if a.Mask != nil {
				assert.Equal(t, tc.want, fmtExpr(a.Mask.Expr))
			} else {
				assert.Equal(t, tc.want, fmtExpr(a.Score.Expr))
			}
		})
	}
}

// TestFactoryStatements pins a factory's statements before its inner def:
// compile-time assignments, `if` over its arguments (`if window is None:`)
// and `assert`, run at each call; the inner function sees what they bind.
func TestFactoryStatements(t *testing.T) {
	const src = `
buffer doc: i32[KV]

def generate_window(window=None):
    if window is None:
        window = 128
    assert window > 0, "positive"
    half = window // 2
    def window_mask(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx <= half) & (q_idx >= kv_idx)
    return window_mask

def generate_doc(document_ids):
    ids = document_ids
    def doc_mask(b, h, q_idx, kv_idx):
        return ids[q_idx] == ids[kv_idx]
    return doc_mask

def generate_read(w):
    x = doc[w]
    def m(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= x
    return m
`
	cases := []struct{ mask, want string }{
		{"generate_window()", "(q - kv <= 64) & (q >= kv)"},
		{"generate_window(window=10)", "(q - kv <= 5) & (q >= kv)"},
		{"generate_window(-4)", "E078 assertion window > 0 in factory generate_window fails for generate_window(-4)"},
		{"generate_doc(doc)", "doc[q] == doc[kv]"},
		{"generate_read(0)", "E045 x = doc[w] in factory generate_read is a run-time value"},
	}
	for _, tc := range cases {
		t.Run(tc.mask, func(t *testing.T) {
			p, diags := checkSource(t, src+"attention a {\n    mask = "+tc.mask+"\n}\n", nil)
			errs := errorLines(diags)
			if errs != nil {
				assert.Equal(t, []string{tc.want}, errs)
				return
			}
			assert.Equal(t, tc.want, fmtExpr(p.Attention("a").Mask.Expr))
		})
	}
}

// TestChainedIndexing pins x[a][b]: the element x[a, b], one buffer read,
// for buffers of any rank (the code generator refuses only buffers of more
// than hipsrc.MaxBufferRank = 8 dimensions, E304).
func TestChainedIndexing(t *testing.T) {
	cases := []struct{ body, want string }{
		{"score + table[h][(q_idx - kv_idx).clamp(0, 31)]", "score + table[h, min(max(q - kv, 0), 31)]"},
		{"score + t3[b][h][kv_idx % 8]", "score + t3[b, h, kv % 8]"},
		{"score + t3[b, h][kv_idx % 8]", "score + t3[b, h, kv % 8]"},
		{"score + table[h][q_idx][kv_idx]", "E030 buffer table has 2 dimensions [H, 32], got 3 indices"},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			src := "buffer table: f32[H, 32]\nbuffer t3: f32[B, H, 8]\ndef s(score, b, h, q_idx, kv_idx):\n    return " + tc.body + "\nattention a {\n    score = s\n}\n"
			p, diags := checkSource(t, src, nil)
			errs := errorLines(diags)
			if errs != nil {
				assert.Equal(t, []string{tc.want}, errs)
				return
			}
			assert.Equal(t, tc.want, fmtExpr(p.Attention("a").Score.Expr))
		})
	}
}

// TestHelperFunctions pins helper defs (neither a mod nor a factory),
// inlined where a mod calls them with Python's argument binding.
func TestHelperFunctions(t *testing.T) {
	const src = `
buffer table: f32[H, 16]
buffer doc: i32[KV]

def _bucket(rel, num_buckets: int = 16):
    return rel.abs().clamp(max=num_buckets - 1)

def relative(q_idx, kv_idx):
    return q_idx - kv_idx

def same(ids, i, j):
    return ids[i] == ids[j]

def not_a_mask(b, h, q):
    return q >= 0
`
	cases := []struct{ setting, want string }{
		{"score = bias", "score + table[h, min(abs(q - kv), 15)]"},
		{"score = bias8", "score + table[h, min(abs(q - kv), 7)]"},
		{"mask = docs", "doc[q] == doc[kv]"},
		{"mask = not_a_mask", "E054 the mask setting needs a mask mod, got the helper function not_a_mask, which takes 3 parameters"},
		{"mask = recursive\n}\ndef loop(x):\n    return loop(x) + 1\ndef recursive(b, h, q_idx, kv_idx):\n    return loop(q_idx) > kv_idx\nattention z {\n    mask = causal", "E039 function loop calls itself"},
		{"mask = arity\n}\ndef arity(b, h, q_idx, kv_idx):\n    return relative(q_idx, kv_idx, 1) > 0\nattention z {\n    mask = causal", "E023 function relative takes 2 arguments, got 3"},
	}
	const mods = `
def bias(score, b, h, q_idx, kv_idx):
    return score + table[h, _bucket(relative(q_idx, kv_idx))]

def bias8(score, b, h, q_idx, kv_idx):
    return score + table[h, _bucket(relative(kv_idx=kv_idx, q_idx=q_idx), num_buckets=8)]

def docs(b, h, q_idx, kv_idx):
    return same(doc, q_idx, kv_idx)
`
	for _, tc := range cases {
		t.Run(tc.setting, func(t *testing.T) {
			p, diags := checkSource(t, src+mods+"attention a {\n    "+tc.setting+"\n}\n", nil)
			errs := errorLines(diags)
			if errs != nil {
				assert.Equal(t, []string{tc.want}, errs)
				return
			}
			a := p.Attention("a")
			if a.Mask != nil {
				assert.Equal(t, tc.want, fmtExpr(a.Mask.Expr))
			} else {
				assert.Equal(t, tc.want, fmtExpr(a.Score.Expr))
			}
		})
	}
	_, diags := checkSource(t, "def unused(x):\n    return x\ndef m(b, h, q_idx, kv_idx):\n    return q_idx >= kv_idx\nattention a {\n    mask = m\n}\n", nil)
	assert.Equal(t, []dsl.Code{CodeUnusedMod}, codesOf(diags))
	assert.Contains(t, diags.Render(), "function unused is never used")
}

// TestInnerDefs pins factories with several inner defs: mods and helper
// functions that see the factory's arguments and each other.
func TestInnerDefs(t *testing.T) {
	const src = `
buffer doc: i32[KV]

def generate(window: int, ids):
    def window_mask(b, h, q_idx, kv_idx):
        return distance(q_idx, kv_idx) <= window
    def same_doc(b, h, q_idx, kv_idx):
        return ids[q_idx] == ids[kv_idx]
    def distance(q_idx, kv_idx):
        return (q_idx - kv_idx).abs()
    both = and_masks(window_mask, same_doc)
    return both

attention a {
    mask = generate(16, doc)
}
`
	p, diags := checkSource(t, src, nil)
	assert.False(t, diags.HasErrors(), diags.Render())
	assert.Equal(t, "abs(q - kv) <= 16 and doc[q] == doc[kv]", fmtExpr(p.Attention("a").Mask.Expr))
}

// TestFunctionAliases pins `tanh = torch.tanh if exact else approx_tanh`:
// a function picked at compile time, in a factory's statements or in the
// mod's body, then called.
func TestFunctionAliases(t *testing.T) {
	const src = `
def approx_tanh(x):
    return x / (1 + x.abs())

def generate_softcap(cap: float, exact: bool = True):
    tanh = torch.tanh if exact else approx_tanh
    def softcap(score, b, h, q_idx, kv_idx):
        act = torch.sigmoid if cap < 0 else tanh
        return cap * act(score / cap)
    return softcap
`
	cases := []struct{ score, want string }{
		{"generate_softcap(30.0)", "30.0 * tanh(score / 30.0)"},
		{"generate_softcap(20.0, exact=False)", "20.0 * (score / 20.0 / (1 + abs(score / 20.0)))"},
		{"generate_softcap(-2.0)", "-2.0 * sigmoid(score / -2.0)"},
	}
	for _, tc := range cases {
		t.Run(tc.score, func(t *testing.T) {
			p, diags := checkSource(t, src+"attention a {\n    score = "+tc.score+"\n}\n", nil)
			if assert.False(t, diags.HasErrors(), diags.Render()) {
				assert.Equal(t, tc.want, fmtExpr(p.Attention("a").Score.Expr))
			}
		})
	}
}

// TestLoops pins `for i in range(...)` over compile-time bounds and `for x
// in` a tuple (of mods, constants or expressions), unrolled, and the loops
// maskc refuses.
func TestLoops(t *testing.T) {
	const src = `
def generate_multi_window(windows: int = 3, base: int = 8):
    def multi(b, h, q_idx, kv_idx):
        keep = q_idx < 0
        for i in range(windows):
            keep = keep | ((q_idx - kv_idx >= i * 2 * base) & (q_idx - kv_idx < i * 2 * base + base))
        return keep
    return multi

def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def _near(b, h, q_idx, kv_idx):
    return q_idx - kv_idx < 64

def any_of(mods):
    def either(b, h, q_idx, kv_idx):
        return any(mod(b, h, q_idx, kv_idx) for mod in mods)
    return either

def every(*mods):
    def both(b, h, q_idx, kv_idx):
        keep = q_idx >= 0
        for mod in mods:
            keep = keep & mod(b, h, q_idx, kv_idx)
        return keep
    return both

def spread(score, b, h, q_idx, kv_idx):
    total = score
    for x in (q_idx, kv_idx, 2):
        total = total + x
    return total

def poly(score, b, h, q_idx, kv_idx):
    acc = score * 0
    for k in range(3, 0, -1):
        acc += score ** k / k
    return acc
`
	cases := []struct{ setting, want string }{
		{"mask = generate_multi_window(2, base=4)", "(q < 0) | (q - kv >= 0) & (q - kv < 4) | (q - kv >= 8) & (q - kv < 12)"},
		{"score = poly", "score * 0 + score ** 3 / 3 + score ** 2 / 2 + score ** 1 / 1"},
		{"mask = generate_multi_window(0)", "q < 0"},
		{"score = spread", "score + q + kv + 2"},
		{"mask = any_of((_causal, _near))", "q >= kv or q - kv < 64"},
		{"mask = every(_causal, _near)", "(q >= 0) & (q >= kv) & (q - kv < 64)"},
		{"mask = every()", "q >= 0"},
		{"mask = every(mods=_causal)", "E075 factory every has no parameter mods"},
		{"mask = generate_multi_window(5000)", "E055 `for` over range(windows) runs more than 4096 times; maskc unrolls loops"},
	}
	for _, tc := range cases {
		t.Run(tc.setting, func(t *testing.T) { checkSetting(t, src, tc.setting, tc.want) })
	}
	for _, tc := range []struct{ body, want string }{
		{"for i in range(q_idx):\n        pass\n    return q_idx >= kv_idx", "E078 `for` over range(q_idx): the bound depends on a run-time value; maskc unrolls loops at compile time"},
		{"for i in [1, 2]:\n        pass\n    return q_idx >= kv_idx", ""},
		{"for i in enumerate(3):\n        pass\n    return q_idx >= kv_idx", "E078 `for` over enumerate(3): maskc unrolls loops over range(...) of constants, tuples and buffer rows only"},
	} {
		src := "def m(b, h, q_idx, kv_idx):\n    " + tc.body + "\nattention a {\n    mask = m\n}\n"
		f, pd := parser.ParseFile("test.flex", []byte(src))
		if pd.HasErrors() {
			assert.Equal(t, "", tc.want, "parse error expected only where want is empty: %s", pd.Render())
			continue
		}
		_, diags := Check(f, Options{})
		errs := errorLines(diags)
		assert.Equal(t, []string{tc.want}, errs)
	}
}

// TestTuples pins tuples of compile-time values: factory arguments and
// defaults, indexing, unpacking (a, b = ...), a helper returning a, b.
func TestTuples(t *testing.T) {
	const src = `
def bounds(window, ratio=(1, 3)):
    left = window * ratio[0] // (ratio[0] + ratio[1])
    return left, window - left

def generate_band(window: int, ratio: tuple[int, int] = (1, 3)):
    left, right = bounds(window, ratio)
    def band(b, h, q_idx, kv_idx):
        d = q_idx - kv_idx
        lo, hi = -right, left
        return (d >= lo) & (d <= hi)
    return band

def generate_bad(pair):
    a, b, c = pair
    def m(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx
    return m
`
	cases := []struct{ mask, want string }{
		{"generate_band(64)", "(q - kv >= -48) & (q - kv <= 16)"},
		{"generate_band(64, ratio=(1, 1))", "(q - kv >= -32) & (q - kv <= 32)"},
		{"generate_band(8, (-1, 2))[0]", "E032 generate_band(8, (-1, 2)) is a mask, not a buffer; only buffers can be indexed"},
		{"generate_bad((1, 2))", "E028 cannot unpack a tuple of 2 into 3 names"},
		{"generate_bad(4)", "E028 cannot unpack pair into 3 names: it is an int, not a tuple"},
	}
	for _, tc := range cases {
		t.Run(tc.mask, func(t *testing.T) {
			p, diags := checkSource(t, src+"attention a {\n    mask = "+tc.mask+"\n}\n", nil)
			errs := errorLines(diags)
			if errs != nil {
				assert.Equal(t, []string{tc.want}, errs)
				return
			}
			assert.Equal(t, tc.want, fmtExpr(p.Attention("a").Mask.Expr))
		})
	}
}

// TestConstantConditionalArm pins that `x if c else y` with c a constant
// evaluates only the chosen arm, as Python does: the other may name what
// maskc cannot read (attention-gym's `_tanh_approx if approx else
// torch.tanh`).
func TestConstantConditionalArm(t *testing.T) {
	src := "def generate_tanh_softcap(soft_cap: int, approx: bool = False):\n    tanh = _tanh_approx if approx else torch.tanh\n    def tanh_softcap(score, b, h, q_idx, kv_idx):\n        return soft_cap * tanh(score / soft_cap)\n    return tanh_softcap\nattention a {\n    score = generate_tanh_softcap(30)\n}\n"
	p, diags := checkSource(t, src, nil)
	if assert.False(t, diags.HasErrors(), diags.Render()) {
		assert.Equal(t, "30 * tanh(score / 30)", fmtExpr(p.Attention("a").Score.Expr))
	}
	_, diags = checkSource(t, strings.Replace(src, "generate_tanh_softcap(30)", "generate_tanh_softcap(30, approx=True)", 1), nil)
	assert.Contains(t, diags.Render(), "unknown name _tanh_approx")
}

// TestHelperBeforeInnerMod pins a factory whose first inner def is a
// helper of the mod it returns (NATTEN's coordinate split), and a string
// the factory computes for a __name__.
func TestHelperBeforeInnerMod(t *testing.T) {
	src := `
def generate_grid_window(width: int, k: int) -> Callable:
    def split(idx: IntTensor) -> Tuple[IntTensor, IntTensor]:
        return idx // width, idx % width

    def grid_window(b, h, q_idx, kv_idx) -> BoolTensor:
        q_x, q_y = split(q_idx)
        kv_x, kv_y = split(kv_idx)
        return ((q_x - kv_x).abs() <= k) & ((q_y - kv_y).abs() <= k)

    prefix = "grid" if k > 1 else "cell"
    grid_window.__name__ = f"{prefix}_{width}"
    return grid_window

attention a {
    mask = generate_grid_window(8, k=1)
}
`
	p, diags := checkSource(t, src, nil)
	if assert.False(t, diags.HasErrors(), diags.Render()) {
		assert.Equal(t, "(abs(q // 8 - kv // 8) <= 1) & (abs(q % 8 - kv % 8) <= 1)", fmtExpr(p.Attention("a").Mask.Expr))
	}
	_, diags = checkSource(t, strings.Replace(src, "return ((q_x", "return prefix == 1 and ((q_x", 1), nil)
	assert.Contains(t, diags.Render(), "error[E020]: unknown name prefix") // names bound after the inner def are not seen in it
}

// TestHelperBufferIdiom pins W005 quiet on a helper function's parameter
// named after the buffer it is passed.
func TestHelperBufferIdiom(t *testing.T) {
	src := `
buffer left_padding: i32[B]

def chunked_overlay(chunk_size: int, left_padding):
    def inner_mask(b, h, q_idx, kv_idx):
        return (kv_idx - left_padding[b]) // chunk_size == (q_idx - left_padding[b]) // chunk_size
    return inner_mask

def causal_mask_function(b, h, q_idx, kv_idx):
    return kv_idx <= q_idx

def chunked_causal_mask_function(chunk_size: int, left_padding):
    return and_masks(chunked_overlay(chunk_size, left_padding), causal_mask_function)

attention a {
    mask = chunked_causal_mask_function(32, left_padding)
}
`
	p, diags := checkSource(t, src, nil)
	assert.Empty(t, codesOf(diags), diags.Render())
	assert.Equal(t, "(kv - left_padding[b]) // 32 == (q - left_padding[b]) // 32 and kv <= q", fmtExpr(p.Attention("a").Mask.Expr))
}

// errorLines is each error of diags as "CODE message", in order; nil when
// there is none.
func errorLines(diags dsl.Diagnostics) []string {
	var errs []string
	for _, d := range diags.Errors() {
		errs = append(errs, string(d.Code)+" "+d.Message)
	}
	return errs
}

// checkSetting checks src with an attention block of one setting (mask =
// ... or score = ...) and compares the lowered mod, or the errors, with
// want.
func checkSetting(t *testing.T, src, setting, want string) {
	t.Helper()
	p, diags := checkSource(t, src+"attention a {\n    "+setting+"\n}\n", nil)
	if errs := errorLines(diags); errs != nil {
		assert.Equal(t, []string{want}, errs)
		return
	}
	a := p.Attention("a")
	if a.Mask != nil {
		assert.Equal(t, want, fmtExpr(a.Mask.Expr))
	} else {
		assert.Equal(t, want, fmtExpr(a.Score.Expr))
	}
}
