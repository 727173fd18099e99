package classify

import (
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/internal/golden"
)

// checkGolden compares got with testdata/name, or rewrites it under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.CheckString(t, filepath.Join("testdata", name), got)
}

const rulesHeader = `buffer sinks: f32[H]
buffer sinks16: bf16[H]
buffer slopes: f32[H]
buffer biasbuf: f32[H, Q, KV]
buffer doc: i32[KV] segments
mask cm(b, h, q, kv) = q >= kv
mask sw(b, h, q, kv) = q >= kv and q - kv < 128
mask skip(b, h, q, kv) = q - kv >= 5
mask above(b, h, q, kv) = kv > q
mask never(b, h, q, kv) = q > kv and kv > q
score cap(s, b, h, q, kv) = 30.0 * tanh(s / 30.0)
`

// ruleCases pins one example of every classifier and rule diagnostic; the
// rendered output (message, position, snippet, hint) is in
// testdata/rules/NAME.golden.
var ruleCases = []struct {
	code   dsl.Code
	name   string
	target string
	block  string
}{
	{CodeNeverTrue, "never_true", "", "mask = never"},
	{CodeEmptyFirstRows, "empty_first_rows", "", "mask = skip"},
	{CodeEmptyLastRows, "empty_last_rows", "", "mask = above"},
	{CodeSinkCast, "sink_cast", "", "mask = cm\n    sink = sinks16"},
	{CodeMaskAndWindow, "mask_and_window", "", "mask = cm\n    window = (1023, 0)"},
	{CodeMaskAndCausal, "mask_and_causal", "", "mask = sw\n    causal = true"},
	{CodeWindowNoCausal, "window_no_causal", "", "window = (128, 0)"},
	{CodeRightWindow, "right_window", "turbo-2025.q4", "window = (64, 64)"},
	{CodeBias, "bias", "", "mask = cm\n    bias = biasbuf"},
	{CodePackedMask, "packed_mask", "", "mask = sw\n    layout = thd"},
	{CodeSinkEntry, "sink_entry", "turbo-2025.q4", "causal = true\n    layout = thd\n    sink = sinks"},
	{CodeSinkBand, "sink_band", "", "window = (64, 64)\n    sink = sinks"},
	{CodeSinkDeterminism, "sink_deterministic", "", "causal = true\n    sink = sinks\n    deterministic = true"},
	{CodeDeterministic, "deterministic", "turbo-2025.q4", "causal = true\n    deterministic = true"},
	{CodeFP8Combination, "fp8_combination", "", "causal = true\n    window = (128, 0)\n    fp8 = true\n    dropout = 0.1"},
	{CodeContextParallel, "context_parallel", "", "mask = cm\n    context_parallel = true"},
	{CodeAttnProbs, "attn_probs", "", "mask = cm\n    return_attn_probs = true"},
	{CodeAlibiAndScore, "alibi_and_score", "", "mask = cm\n    alibi = slopes\n    score = cap"},
	{CodeFP8Entry, "fp8_entry", "", "mask = sw\n    fp8 = true"},
	{CodeCausalRight, "causal_right", "", "causal = true\n    window = (128, 4)"},
	{CodeWindowRange, "window_range", "", "causal = true\n    window = (3000000000, 0)"},
}

func TestRuleDiagnostics(t *testing.T) {
	covered := map[dsl.Code]bool{}
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			target, err := Target(c.target)
			if err != nil {
				t.Fatal(err)
			}
			src := rulesHeader + "attention " + c.name + " {\n    " + c.block + "\n}\n"
			_, plan, diags := compileSrc(t, c.name+".flex", src, target)
			found := false
			for _, d := range diags {
				if d.Code == c.code {
					found = true
					if !d.Span.IsValid() || d.Hint == "" {
						t.Errorf("%s has no position or no hint: %s", d.Code, d.Render())
					}
				}
			}
			if !found {
				t.Fatalf("no %s among:\n%s", c.code, diags.Render())
			}
			covered[c.code] = true
			checkGolden(t, filepath.Join("rules", c.name+".golden"), diags.Render()+"\n"+plan.Explain())
		})
	}
	var missing []string
	for code := range Codes {
		if !covered[code] {
			missing = append(missing, string(code))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("codes without a pinned example: %s", strings.Join(missing, ", "))
	}
	for _, c := range ruleCases {
		if _, ok := Codes[c.code]; !ok {
			t.Errorf("case %s uses %s, which is not in Codes", c.name, c.code)
		}
	}
}

// TestCodeRanges checks every code is in the classifier's ranges.
func TestCodeRanges(t *testing.T) {
	for code, desc := range Codes {
		s := string(code)
		ok := (s >= "E100" && s <= "E199") || (s >= "W100" && s <= "W149") || (s >= "E200" && s <= "E299")
		if !ok || len(s) != 4 || desc == "" {
			t.Errorf("code %s (%q) is outside E100-E199, W100-W149, E200-E299 or undescribed", s, desc)
		}
	}
}
