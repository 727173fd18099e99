package classify

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/parser"
)

// exampleDecisions pins the decision of every attention block of every
// file in examples/: pattern, and score pattern where there is a score.
var exampleDecisions = map[string]map[string]string{
	"alibi.flex":               {"alibi_layer": "causal+alibi"},
	"causal.flex":              {"decoder": "causal"},
	"dilated_window.flex":      {"dilated_layer": "generated"},
	"document_causal.flex":     {"packed_layer": "document_causal"},
	"full.flex":                {"encoder": "full"},
	"gpt_oss.flex":             {"layer_0": "sliding_window_causal", "layer_1": "causal", "layer_2": "sliding_window_causal", "layer_3": "causal"},
	"prefix_lm.flex":           {"prefix_layer": "generated"},
	"prefix_lm_per_batch.flex": {"prefix_layer": "generated"},
	"relative_bias.flex":       {"biased_layer": "generated+generated"},
	"sliding_window.flex":      {"local_layer": "sliding_window_causal", "local_1024_layer": "sliding_window_causal", "local_512_layer": "sliding_window_causal"},
	"softcap.flex":             {"capped_layer": "generated+softcap"},
	"swa_trainer.flex":         {"swa_layer": "sliding_window_causal"},
	"t5_bias.flex":             {"t5_encoder": "generated+generated"},
}

// TestExamples classifies every example and pins each block's pattern; the
// full explanation is in testdata/examples/NAME.golden.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.flex"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			want, ok := exampleDecisions[name]
			if !ok {
				t.Fatalf("example %s has no pinned decision: add it to exampleDecisions", name)
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, plan, diags := compileSrc(t, name, string(src), nil)
			if diags.HasErrors() {
				t.Fatalf("classify errors:\n%s", diags.Render())
			}
			if len(plan.Attentions) != len(want) {
				t.Fatalf("%d attention blocks, %d pinned", len(plan.Attentions), len(want))
			}
			for _, d := range plan.Attentions {
				got := d.Pattern
				if d.Score != ScoreNone {
					got += "+" + d.Score
				}
				if got != want[d.Name] {
					t.Errorf("%s: %s, want %s (%s)", d.Name, got, want[d.Name], d.Reason)
				}
			}
			checkGolden(t, filepath.Join("examples", name+".golden"), plan.Explain())
		})
	}
}

// TestExampleWindows pins the exact window arithmetic of the examples:
// q - kv <= 1024 is (1024, 0), q - kv < 1024 is (1023, 0), WINDOW = 128
// with `<` is (127, 0).
func TestExampleWindows(t *testing.T) {
	for _, c := range []struct {
		file, block string
		left        int64
	}{
		{"sliding_window.flex", "local_layer", 1024},
		{"sliding_window.flex", "local_1024_layer", 1023},
		{"sliding_window.flex", "local_512_layer", 512},
		{"gpt_oss.flex", "layer_0", 127},
		{"swa_trainer.flex", "swa_layer", 1023},
	} {
		src, err := os.ReadFile(filepath.Join("..", "examples", c.file))
		if err != nil {
			t.Fatal(err)
		}
		f, _ := parser.ParseFile(c.file, src)
		p, _ := check.Check(f, check.Options{})
		plan, _ := Classify(p, Options{})
		for _, d := range plan.Attentions {
			if d.Name != c.block {
				continue
			}
			w := d.Kwargs["window_size"].([]int64)
			if w[0] != c.left || w[1] != 0 || d.Kwargs["causal"] != true {
				t.Errorf("%s/%s: causal=%v window_size=%v, want causal=True (%d, 0)", c.file, c.block, d.Kwargs["causal"], w, c.left)
			}
		}
	}
}
