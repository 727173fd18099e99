package classify

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/normal/normaltest"
)

// soundnessHeader declares what the soundness cases use.
const soundnessHeader = `
param W = 1023
buffer doc: i32[KV] segments
buffer ids: i32[KV]
buffer slopes: f32[H]
buffer bslopes: f32[B, H]
buffer sinks: f32[H]
`

// soundnessCase is one attention block with the decision it must get.
type soundnessCase struct {
	name    string
	body    string // settings of the attention block
	pattern string
	kwargs  map[string]any // a subset that must match exactly
	pre     []string
}

// block writes the case's attention block; a `mask = EXPR` setting whose
// EXPR is not a mod reference becomes a mask mod m_NAME declared before it.
func (c soundnessCase) block() string {
	var mods strings.Builder
	settings := strings.Split(c.body, "; ")
	for i, s := range settings {
		expr, ok := strings.CutPrefix(s, "mask = ")
		if !ok || strings.HasPrefix(expr, "and_masks") || !strings.ContainsAny(expr, " ([") {
			continue
		}
		fmt.Fprintf(&mods, "mask m_%s(b, h, q, kv) = %s\n", c.name, expr)
		settings[i] = "mask = m_" + c.name
	}
	return fmt.Sprintf("%sattention %s {\n    %s\n}\n", mods.String(), c.name, strings.Join(settings, "\n    "))
}

var causalKw = map[string]any{"causal": true, "window_size": []int64{-1, -1}}

func windowKw(causal bool, l, r int64) map[string]any {
	return map[string]any{"causal": causal, "window_size": []int64{l, r}}
}

var sqEqSkv = []string{"sq == skv"}

// soundnessCases are the spellings the brief lists, every pattern, and the
// score patterns.
var soundnessCases = []soundnessCase{
	{"full_none", "head_dim = 64", PatternFull, windowKw(false, -1, -1), nil},
	{"full_true", "mask = (q >= 0) or (kv > q)", PatternFull, windowKw(false, -1, -1), nil},
	{"causal_ge", "mask = q >= kv", PatternCausal, causalKw, sqEqSkv},
	{"causal_le", "mask = kv <= q", PatternCausal, causalKw, sqEqSkv},
	{"causal_not", "mask = not (kv > q)", PatternCausal, causalKw, sqEqSkv},
	{"causal_sub", "mask = q - kv >= 0", PatternCausal, causalKw, sqEqSkv},
	{"causal_invert", "mask = ~(q < kv)", PatternCausal, causalKw, sqEqSkv},
	{"causal_where", "mask = where(q >= kv, True, False)", PatternCausal, causalKw, sqEqSkv},
	{"causal_ifelse", "mask = True if q >= kv else False", PatternCausal, causalKw, sqEqSkv},
	{"causal_min", "mask = min(q, kv) == kv", PatternCausal, causalKw, sqEqSkv},
	{"causal_br", "mask = kv <= q + KV - Q", PatternCausal, causalKw, nil},
	{"causal_setting", "causal = true", PatternCausal, causalKw, nil},
	{"swc_and", "mask = and_masks(cm, lt_w)", PatternSWCausal, windowKw(true, 1022, 0), sqEqSkv},
	{"swc_lt", "mask = q >= kv and q - kv < 1024", PatternSWCausal, windowKw(true, 1023, 0), sqEqSkv},
	{"swc_chain", "mask = 0 <= q - kv <= W", PatternSWCausal, windowKw(true, 1023, 0), sqEqSkv},
	{"swc_small", "mask = q >= kv and q - kv <= 3", PatternSWCausal, windowKw(true, 3, 0), sqEqSkv},
	{"swc_diag", "mask = q == kv", PatternSWCausal, windowKw(true, 0, 0), sqEqSkv},
	{"swc_setting", "causal = true; window = (5, 0)", PatternSWCausal, windowKw(true, 5, 0), nil},
	{"band_abs", "mask = abs(q - kv) <= 4", PatternSW, windowKw(false, 4, 4), sqEqSkv},
	{"band_chain", "mask = -2 <= q - kv <= 7", PatternSW, windowKw(false, 7, 2), sqEqSkv},
	{"band_left_open", "mask = q - kv <= 3", PatternSW, windowKw(false, 3, -1), sqEqSkv},
	{"band_or", "mask = (q - kv <= 3 and q >= kv) or (kv - q <= 2 and kv > q)", PatternSW, windowKw(false, 3, 2), sqEqSkv},
	{"doc_plain", "mask = doc[q] == doc[kv]", PatternDoc, windowKw(false, -1, -1), sqEqSkv},
	{"doc_causal", "mask = and_masks(cm, same)", PatternDocCausal, causalKw, sqEqSkv},
	{"doc_causal_rev", "mask = doc[kv] == doc[q] and kv <= q", PatternDocCausal, causalKw, sqEqSkv},
	{"doc_window", "mask = doc[q] == doc[kv] and 0 <= q - kv <= 2", PatternDocWindow, windowKw(true, 2, 0), sqEqSkv},
	{"doc_band", "mask = doc[q] == doc[kv] and abs(q - kv) <= 1", PatternDocWindow, windowKw(false, 1, 1), sqEqSkv},
	{"alibi", "mask = cm; score = alibi", PatternCausal, map[string]any{"alibi_slopes": "slopes"}, sqEqSkv},
	{"alibi_sub", "mask = cm; score = alibi_sub", PatternCausal, map[string]any{"alibi_slopes": "slopes"}, sqEqSkv},
	{"alibi_batch", "mask = cm; score = alibi_b", PatternCausal, map[string]any{"alibi_slopes": "bslopes"}, sqEqSkv},
	{"alibi_abs", "score = alibi_abs", PatternFull, map[string]any{"alibi_slopes": "slopes"}, sqEqSkv},
	{"alibi_swc", "mask = and_masks(cm, lt_w); score = alibi", PatternSWCausal, map[string]any{"alibi_slopes": "slopes"}, sqEqSkv},
	{"alibi_doc", "mask = and_masks(cm, same); score = alibi", PatternDocCausal, map[string]any{"alibi_slopes": "slopes"}, sqEqSkv},
	{"alibi_setting", "causal = true; alibi = slopes", PatternCausal, map[string]any{"alibi_slopes": "slopes"}, nil},
	{"scale", "mask = cm; score = twice; head_dim = 64", PatternCausal, map[string]any{"softmax_scale": 0.25}, sqEqSkv},
	{"sink", "mask = cm; sink = sinks", PatternCausal, map[string]any{"sink": "sinks"}, sqEqSkv},
	// Spellings with // and % by a constant, whose quotient or remainder the
	// normal form reduces to bounds on q - kv.
	{"swc_floordiv", "mask = (q - kv) // 4 == 0", PatternSWCausal, windowKw(true, 3, 0), sqEqSkv},
	{"swc_floordiv_w", "mask = (q - kv) // (W + 1) == 0", PatternSWCausal, windowKw(true, 1023, 0), sqEqSkv},
	{"swc_floordiv_lt", "mask = q >= kv and (q - kv) // 3 < 1", PatternSWCausal, windowKw(true, 2, 0), sqEqSkv},
	{"swc_mod_eq", "mask = (q - kv) % 5 == q - kv", PatternSWCausal, windowKw(true, 4, 0), sqEqSkv},
	{"swc_mod_big", "mask = (q - kv) % 1024 == q - kv", PatternSWCausal, windowKw(true, 1023, 0), sqEqSkv},
	{"causal_floordiv", "mask = (q - kv) // 7 >= 0", PatternCausal, causalKw, sqEqSkv},
	{"causal_scaled_div", "mask = (2 * q - 2 * kv) // 2 >= 0", PatternCausal, causalKw, sqEqSkv},
	{"causal_div_br", "mask = (q - kv + KV - Q) // 64 >= 0", PatternCausal, causalKw, nil},
	{"band_floordiv", "mask = (q - kv + 2) // 5 == 0", PatternSW, windowKw(false, 2, 2), sqEqSkv},
	{"band_abs_div", "mask = abs(q - kv) // 3 == 0", PatternSW, windowKw(false, 2, 2), sqEqSkv},
	{"band_neg_div", "mask = (kv - q) // -4 == 0", PatternSWCausal, windowKw(true, 3, 0), sqEqSkv},
	{"doc_floordiv", "mask = doc[q] == doc[kv] and (q - kv) // 2 == 0", PatternDocWindow, windowKw(true, 1, 0), sqEqSkv},
	{"gen_block_causal", "mask = kv // 4 <= q // 4", PatternGenerated, nil, nil},
	{"gen_block_diag", "mask = q // 3 == kv // 3", PatternGenerated, nil, nil},
	{"gen_stride", "mask = q >= kv and (q - kv) % 3 == 0", PatternGenerated, nil, nil},
	{"gen_prefix", "mask = kv < 5 or q >= kv", PatternGenerated, nil, nil},
	{"gen_head", "mask = q >= kv and h < 1", PatternGenerated, nil, nil},
	{"gen_ids", "mask = ids[q] == ids[kv]", PatternGenerated, nil, nil},
	{"gen_dilated", "mask = abs(q - kv) <= 8 and (q - kv) % 2 == 0", PatternGenerated, nil, nil},
	{"gen_alibi_sign", "score = alibi", PatternGenerated, nil, nil},
	{"gen_softcap", "mask = cm; score = cap", PatternGenerated, nil, nil},
	{"never", "mask = q > kv and kv > q", PatternGenerated, nil, nil},
	{"skip_first", "mask = q - kv >= 3", PatternGenerated, nil, nil},
	{"skip_last", "mask = kv - q >= 2", PatternGenerated, nil, nil},
}

const soundnessMods = `
mask cm(b, h, q, kv) = q >= kv
mask lt_w(b, h, q, kv) = q - kv < W
mask same(b, h, q, kv) = doc[q] == doc[kv]
score alibi(s, b, h, q, kv) = s + slopes[h] * (kv - q)
score alibi_sub(s, b, h, q, kv) = s - slopes[h] * (q - kv)
score alibi_b(s, b, h, q, kv) = s + bslopes[b, h] * (kv - q)
score alibi_abs(s, b, h, q, kv) = s - slopes[h] * abs(q - kv)
score twice(s, b, h, q, kv) = s * 2.0
score cap(s, b, h, q, kv) = 20.0 * tanh(s / 20.0)
`

// soundnessSource is one file holding every soundness case.
func soundnessSource() string {
	var b strings.Builder
	b.WriteString(soundnessHeader)
	// lt_w is q - kv < W with W = 1023: window (1022, 0).
	b.WriteString(soundnessMods)
	for _, c := range soundnessCases {
		b.WriteString(c.block())
	}
	return b.String()
}

func TestSoundnessDecisions(t *testing.T) {
	_, plan, _ := compileSrc(t, "soundness.flex", soundnessSource(), nil)
	for i, c := range soundnessCases {
		d := plan.Attentions[i]
		if d.Name != c.name {
			t.Fatalf("decision %d is %s, want %s", i, d.Name, c.name)
		}
		if d.Pattern != c.pattern {
			t.Errorf("%s: pattern %s, want %s (%s; canonical %s)", c.name, d.Pattern, c.pattern, d.Reason, d.Canonical)
			continue
		}
		for k, v := range c.kwargs {
			if !reflect.DeepEqual(d.Kwargs[k], v) {
				t.Errorf("%s: kwargs[%s] = %#v, want %#v", c.name, k, d.Kwargs[k], v)
			}
		}
		pre := c.pre
		if pre == nil {
			pre = []string{}
		}
		if d.Pattern != PatternGenerated && !reflect.DeepEqual(d.Preconditions, pre) {
			t.Errorf("%s: preconditions %q, want %q", c.name, d.Preconditions, pre)
		}
		if d.Pattern == PatternGenerated && (d.Reason == "" || d.Entry != EntryGenerated) {
			t.Errorf("%s: generated with entry %q reason %q", c.name, d.Entry, d.Reason)
		}
	}
}

// TestSoundnessExhaustive compares every claim with the evaluator at every
// point of every shape Sq, Skv <= 48, for B = 2 and H = 3 when Sq == Skv
// (where most claims apply) and B = 1, H = 2 otherwise. Pattern, score,
// never-true and empty-row claims are checked at every shape; the
// canonical forms (also checked by the property test) up to 20.
func TestSoundnessExhaustive(t *testing.T) {
	n := int64(48)
	if testing.Short() {
		n = 16
	}
	p, plan, diags := compileSrc(t, "soundness.flex", soundnessSource(), nil)
	o := &oracle{t: t, prog: p, plan: plan, diags: diags, rng: rand.New(rand.NewSource(1)), maxRun: 9,
		checked: map[string]int{}, maxBad: 20, formLimit: 20}
	for q := int64(1); q <= n; q++ {
		for kv := int64(1); kv <= n; kv++ {
			if q == kv {
				o.verifyShape(2, 3, q, kv)
			} else {
				o.verifyShape(1, 2, q, kv)
			}
		}
	}
	if o.bad > 0 {
		t.Fatalf("%d disagreements", o.bad)
	}
	for _, want := range []string{"form", PatternFull, PatternCausal, PatternSWCausal, PatternSW, PatternDoc,
		PatternDocCausal, PatternDocWindow, "score-alibi", "score-scale", "never-true", "empty-rows"} {
		if o.checked[want] == 0 {
			t.Errorf("no point checked the %s claims", want)
		}
	}
	t.Logf("points compared: %v", o.checked)
}

// TestSoundnessLong checks the Turbo decisions at random points of long
// sequences, up to 1M tokens, near the band edges and at random.
func TestSoundnessLong(t *testing.T) {
	p, plan, _ := compileSrc(t, "soundness.flex", soundnessSource(), nil)
	rng := rand.New(rand.NewSource(2))
	checked := 0
	for round := 0; round < 6; round++ {
		L := int64(1 + rng.Intn(1<<20))
		if round == 0 {
			L = 1 << 20
		}
		e := &eval.Env{B: 2, H: 2, HKV: 2, Q: L, KV: L}
		normaltest.FillBuffers(p, e, rng, 4096)
		for i, a := range p.Attentions {
			d := plan.Attentions[i]
			if d.Pattern == PatternGenerated || a.Mask == nil {
				continue
			}
			fn, err := eval.Compile(a.Mask)
			if err != nil {
				t.Fatal(err)
			}
			bd, err := fn.Bind(e)
			if err != nil {
				t.Fatal(err)
			}
			k := newKernel(t, d, e)
			for n := 0; n < 400; n++ {
				q := rng.Int63n(L)
				var kv int64
				switch n % 4 {
				case 0:
					kv = rng.Int63n(L)
				case 1:
					kv = q - 1023 + rng.Int63n(5) - 2 // window edge
				case 2:
					kv = q + rng.Int63n(9) - 4 // diagonal
				default:
					kv = q - rng.Int63n(9000)
				}
				if kv < 0 || kv >= L {
					continue
				}
				b, h := rng.Int63n(2), rng.Int63n(2)
				want, err := bd.Mask(b, h, q, kv)
				if err != nil {
					t.Fatalf("%s: %v", a.Name, err)
				}
				checked++
				if got := k.visible(b, q, kv); got != want {
					t.Fatalf("%s: kernel %v, evaluator %v at L=%d q=%d kv=%d", a.Name, got, want, L, q, kv)
				}
			}
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d points checked", checked)
	}
	t.Logf("%d points on sequences up to %d", checked, 1<<20)
}
