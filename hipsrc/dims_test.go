package hipsrc

import (
	"math"
	"strings"
	"testing"
)

// TestEvalDims pins the extent evaluator to Python's integer semantics
// (maskc.checks.eval_dims): floor division and modulo, precedence, unary
// minus, and refuses what it cannot read.
func TestEvalDims(t *testing.T) {
	sizes := map[string]int64{"B": 2, "H": 8, "HKV": 2, "Q": 100, "KV": 300}
	tests := []struct {
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
		{"Q // 0", 0, "divides by zero"},
		{"D", 0, "D is not one of the sizes"},
		{"Q +", 0, "expected a number"},
		{"(Q", 0, "missing )"},
		{"Q KV", 0, "unexpected"},
		{"9223372036854775807 + 1", 0, "overflows"},
		{"4611686018427387904 * 2", 0, "overflows"},
		{"99999999999999999999", 0, "overflows"},
	}
	for _, tc := range tests {
		got, err := EvalDims([]string{tc.text}, sizes)
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
	if got, err := EvalDims([]string{"-9223372036854775807 - 1"}, sizes); err != nil || got[0] != math.MinInt64 {
		t.Errorf("min int64: %v, %v", got, err)
	}
}
