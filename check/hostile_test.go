package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// TestHostileInputs checks that large or adversarial files end with a
// result or a positioned diagnostic, within a few seconds even on a loaded
// machine.
func TestHostileInputs(t *testing.T) {
	chain := func(n, attns int) string {
		var b strings.Builder
		b.WriteString("mask m0(b, h, q, kv) = q >= kv\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "mask m%d(b, h, q, kv) = m%d(b, h, q, kv) and kv >= %d\n", i, i-1, i)
		}
		for i := range attns {
			fmt.Fprintf(&b, "attention a%d {\n    mask = m%d\n}\n", i, n-1)
		}
		return b.String()
	}
	long := "mask m(b, h, q, kv) = q" + strings.Repeat(" + q", 10000) + " >= kv\n"
	tests := []struct {
		name string
		src  string
		code dsl.Code // expected error, "" for none
	}{
		{"deep chain of mods used by many blocks", chain(2000, 2000), ""},
		{"exponential mods", blowUp(60), CodeTooLarge},
		{"long sum", long, ""},
		{"many attentions combining", chain(1000, 0) + manyAttentions(200, "and_masks(m999, m998)"), CodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, pd := parser.ParseFile("big.flex", []byte(tt.src))
			require.False(t, pd.HasErrors(), "%.300s", pd.Render())
			start := time.Now()
			_, diags := Check(f, Options{})
			elapsed := time.Since(start)
			t.Logf("%s: %v, %d diagnostics", tt.name, elapsed, len(diags))
			assert.Less(t, elapsed, 20*time.Second)
			if tt.code == "" {
				assert.False(t, diags.HasErrors(), "%.2000s", diags.Render())
				return
			}
			require.True(t, diags.HasErrors())
			for _, d := range diags.Errors() {
				assert.Equal(t, tt.code, d.Code, d.Error())
				assert.True(t, d.Span.IsValid(), "positioned: %s", d.Error())
			}
		})
	}
}

func manyAttentions(n int, mask string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "attention x%d {\n    mask = %s\n}\n", i, mask)
	}
	return b.String()
}
