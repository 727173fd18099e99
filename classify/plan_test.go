package classify

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestTargets(t *testing.T) {
	if p, err := Target(""); err != nil || p != DefaultTarget {
		t.Fatalf("Target(\"\") = %v, %v; want the default", p, err)
	}
	names := map[string]bool{}
	for _, p := range Targets() {
		got, err := Target(p.Name)
		if err != nil || got != p {
			t.Errorf("Target(%q) = %v, %v", p.Name, got, err)
		}
		if p.Description == "" || !p.Has(EntryDense) {
			t.Errorf("%s: no description or no dense entry", p.Name)
		}
		for _, e := range p.SinkEntries {
			if !p.Has(e) {
				t.Errorf("%s: sink on missing entry %s", p.Name, e)
			}
		}
		names[p.Name] = true
	}
	for _, n := range []string{"turbo-2026.10", "turbo-2026.10-softcap", "turbo-2025.q4"} {
		if !names[n] {
			t.Errorf("target %s missing", n)
		}
	}
	_, err := Target("turbo-1999")
	if err == nil || !strings.Contains(err.Error(), "turbo-2026.10") {
		t.Errorf("unknown target error %v should list the known ones", err)
	}
}

// TestTargetDecides shows a capability changing the decision: softcap maps
// onto the kernel only on a target that has it, and a band needs a right
// window bound.
func TestTargetDecides(t *testing.T) {
	src := `mask cm(b, h, q, kv) = q >= kv
mask near(b, h, q, kv) = abs(q - kv) <= 16
score cap(s, b, h, q, kv) = 30.0 * tanh(s / 30.0)
attention capped {
    mask = cm
    score = cap
}
attention banded {
    mask = near
}
`
	cases := []struct {
		target, block, pattern, score string
		kwargs                        map[string]any
	}{
		{"turbo-2026.10", "capped", PatternGenerated, ScoreSoftcap, nil},
		{"turbo-2026.10-softcap", "capped", PatternCausal, ScoreSoftcap, map[string]any{"softcap": 30.0}},
		{"turbo-2026.10", "banded", PatternSW, ScoreNone, map[string]any{"window_size": []int64{16, 16}}},
		{"turbo-2025.q4", "banded", PatternGenerated, ScoreNone, nil},
	}
	for _, c := range cases {
		target, err := Target(c.target)
		if err != nil {
			t.Fatal(err)
		}
		_, plan, _ := compileSrc(t, "t.flex", src, target)
		for _, d := range plan.Attentions {
			if d.Name != c.block {
				continue
			}
			if d.Pattern != c.pattern || d.Score != c.score {
				t.Errorf("%s on %s: %s/%s, want %s/%s (%s)", c.block, c.target, d.Pattern, d.Score, c.pattern, c.score, d.Reason)
			}
			for k, v := range c.kwargs {
				b1, _ := json.Marshal(d.Kwargs[k])
				b2, _ := json.Marshal(v)
				if string(b1) != string(b2) {
					t.Errorf("%s on %s: %s = %s, want %s", c.block, c.target, k, b1, b2)
				}
			}
			if d.Pattern == PatternGenerated && !strings.Contains(d.Reason, c.target) {
				t.Errorf("%s on %s: reason %q does not name the target", c.block, c.target, d.Reason)
			}
		}
	}
}

// TestPlanJSON pins plan.json for the gpt-oss and document examples and
// checks the required shape of the schema.
func TestPlanJSON(t *testing.T) {
	for _, name := range []string{"gpt_oss.flex", "document_causal.flex", "prefix_lm.flex"} {
		src, err := os.ReadFile(filepath.Join("..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		_, plan, _ := compileSrc(t, name, string(src), nil)
		out, err := plan.JSON()
		if err != nil {
			t.Fatal(err)
		}
		checkGolden(t, filepath.Join("plans", strings.TrimSuffix(name, ".flex")+".json"), string(out))
		var doc struct {
			Version    int    `json:"version"`
			Target     string `json:"target"`
			Attentions []map[string]json.RawMessage
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Version != PlanVersion || doc.Target != DefaultTarget.Name || len(doc.Attentions) == 0 {
			t.Fatalf("%s: header %+v", name, doc)
		}
		for _, a := range doc.Attentions {
			for _, key := range []string{"name", "pattern", "entry", "kwargs", "preconditions", "reason"} {
				if _, ok := a[key]; !ok {
					t.Errorf("%s: attention without %q: %v", name, key, a)
				}
			}
			if string(a["preconditions"]) == "null" || string(a["kwargs"]) == "null" {
				t.Errorf("%s: null preconditions or kwargs", name)
			}
		}
	}
}

// TestNoEvaluatorDependency checks that the classifier decides without the
// reference evaluator: eval is imported only by the tests.
func TestNoEvaluatorDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasSuffix(dep, "/maskc/eval") {
			t.Fatalf("classify depends on %s: pattern decisions must not evaluate masks", dep)
		}
	}
}

// TestDecisionCall checks the Python call text of a decision, for every
// kind of keyword value and for blocks classified from source.
func TestDecisionCall(t *testing.T) {
	cases := []struct {
		name string
		d    *Decision
		want string
	}{
		{"no kwargs", &Decision{Entry: EntryDense, Kwargs: map[string]any{}}, "flash_attn_func()"},
		{"bool and pair, sorted", &Decision{Entry: EntryDense, Kwargs: map[string]any{
			"window_size": []int64{1023, 0}, "causal": true}},
			"flash_attn_func(causal=True, window_size=(1023, 0))"},
		{"false, float, name", &Decision{Entry: EntryVarlen, Kwargs: map[string]any{
			"deterministic": false, "softmax_scale": 0.125, "sink": "sinks"}},
			"flash_attn_varlen_func(deterministic=False, sink=sinks, softmax_scale=0.125)"},
		{"buffer list", &Decision{Entry: EntryGenerated, Kwargs: map[string]any{
			"kernel": "maskc_l0", "buffers": []string{"doc", "bias"}}},
			"maskc_generated(buffers=[doc, bias], kernel=maskc_l0)"},
		{"other values", &Decision{Entry: EntryDense, Kwargs: map[string]any{"n": 3}}, "flash_attn_func(n=3)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.d.Call(); got != c.want {
				t.Errorf("Call() = %q, want %q", got, c.want)
			}
		})
	}

	src := `mask causal_m(b, h, q, kv) = q >= kv
mask win(b, h, q, kv) = q - kv < 1024
mask odd(b, h, q, kv) = (q + kv) % 2 == 0
attention sw {
    mask = and_masks(causal_m, win)
}
attention gen {
    mask = odd
}
`
	_, plan, diags := compileSrc(t, "call.flex", src, nil)
	if diags.HasErrors() {
		t.Fatal(diags.Render())
	}
	want := map[string]string{
		"sw":  "flash_attn_func(causal=True, window_size=(1023, 0))",
		"gen": "maskc_generated(kernel=maskc_gen)",
	}
	for _, d := range plan.Attentions {
		if got := d.Call(); got != want[d.Name] {
			t.Errorf("%s: Call() = %q, want %q", d.Name, got, want[d.Name])
		}
		if !strings.Contains(plan.Explain(), "  call:      "+want[d.Name]+"\n") {
			t.Errorf("%s: Explain does not print the call %q", d.Name, want[d.Name])
		}
	}
}
