package hipsrc

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestEvalDims pins the extent evaluator to Python's integer semantics
// (maskc.checks.eval_dims): floor division and modulo, precedence, unary
// minus, and refuses what it cannot read.
func TestEvalDims(t *testing.T) {
	for _, tc := range dimCases {
		got, err := EvalDims([]string{tc.text}, dimSizes)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%s: %v, %v; want an error with %q", tc.text, got, err, tc.err)
			}
			continue
		}
		if err != nil || got[0] != tc.want {
			t.Errorf("%s = %v, %v; want %d", tc.text, got, err, tc.want)
		}
	}
	if got, err := EvalDims([]string{"-9223372036854775807 - 1"}, dimSizes); err != nil || got[0] != math.MinInt64 {
		t.Errorf("min int64: %v, %v", got, err)
	}
}

// TestEvalDimsAgreesWithPython runs the Python package's evaluator
// (maskc.checks.eval_dims, what the Python launcher passes) on the cases
// both read: the two give every extent the same value.
func TestEvalDimsAgreesWithPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("python3 not found")
	}
	var texts []string
	for _, tc := range dimCases {
		if tc.err == "" {
			texts = append(texts, tc.text)
		}
	}
	in, _ := json.Marshal(map[string]any{"sizes": dimSizes, "dims": texts})
	const script = `
import json, sys
sys.path.insert(0, sys.argv[1])
from maskc.checks import eval_dims
d = json.loads(sys.stdin.read())
class S:
    def symbols(self):
        return d["sizes"]
print(json.dumps(eval_dims(d["dims"], S())))
`
	cmd := exec.Command(python, "-c", script, "../python")
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var py []int64
	if err := json.Unmarshal(out, &py); err != nil {
		t.Fatalf("python printed %s: %v", out, err)
	}
	gov, err := EvalDims(texts, dimSizes)
	if err != nil || len(py) != len(gov) {
		t.Fatalf("Go %v, %v; Python %v", gov, err, py)
	}
	for i := range texts {
		if py[i] != gov[i] {
			t.Errorf("%s: Go %d, Python %d", texts[i], gov[i], py[i])
		}
	}
}

var dimSizes = map[string]int64{"B": 2, "H": 8, "HKV": 2, "Q": 100, "KV": 300}

var dimCases = []struct {
	text string
	want int64
	err  string
}{
	{"KV", 300, ""},
	{"H", 8, ""},
	{"8191", 8191, ""},
	{"2 * KV - 1", 599, ""},
	{"(Q + KV) - 1", 399, ""},
	{"Q // 64 + 1", 2, ""},
	{"-7 // 2", -4, ""},
	{"-7 % 3", 2, ""},
	{"7 % -3", -2, ""},
	{"Q + KV * 2", 700, ""},
	{"-(Q - KV)", 200, ""},
	{"B * H * HKV", 32, ""},
	{"1_000", 1000, ""},
	// the checker's canonical floor-divided extents (check.Dim.Text)
	{"(Q + 127) // 128", 1, ""},
	{"(-Q + KV) // 64", 3, ""},
	{"(3 * KV - 2 * Q) // 7", 100, ""},
	{"(B + H - 1) // 3", 3, ""},
	{"Q // 0", 0, "divides by zero"},
	{"D", 0, "D is not one of the sizes"},
	{"Q +", 0, "expected a number"},
	{"(Q", 0, "missing )"},
	{"Q KV", 0, "unexpected"},
	{"9223372036854775807 + 1", 0, "overflows"},
	{"4611686018427387904 * 2", 0, "overflows"},
	{"99999999999999999999", 0, "overflows"},
}
