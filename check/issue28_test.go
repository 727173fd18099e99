package check

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/maskc/maskc/dsl"
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
