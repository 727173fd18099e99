package classify

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGeneratedReasons: the reason a mask has no Turbo call names what
// makes it so: a bound that moves with a buffer value read at run time
// (a 0-d buffer, a per-head table) is not a floor quotient.
func TestGeneratedReasons(t *testing.T) {
	cases := []struct{ name, src, mask, reason string }{
		{"0-d buffer", "buffer offset: i32[]\n", "q - kv + offset >= 0",
			"`q - kv + offset >= 0` moves with offset, a value read at run time: a Turbo window is a constant"},
		{"1-element buffer", "buffer off: i32[1]\n", "q - kv + off[0] >= 0",
			"`q - kv + off[0] >= 0` moves with off[0], a value read at run time: a Turbo window is a constant"},
		{"floor quotient", "", "q // 64 >= kv // 64",
			"is a block or strided condition (from // or %): no Turbo kernel computes it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.src + "mask m(b, h, q, kv) = " + tc.mask + "\nattention layer {\n    mask = m\n    head_dim = 128\n}\n"
			_, plan, diags := compileSrc(t, "reason.flex", src, nil)
			if diags.HasErrors() || plan == nil {
				t.Fatalf("%s", diags.Render())
			}
			assert.Equal(t, "generated", plan.Attentions[0].Pattern)
			assert.Contains(t, plan.Attentions[0].Reason, tc.reason)
		})
	}
}
