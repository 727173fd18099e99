package classify

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// choosingFactory picks its mask_mod by a condition on its argument, as
// transformers' factories do.
const choosingFactory = `
def causal(b, h, q_idx, kv_idx):
    return kv_idx <= q_idx

def make_mask(offsets):
    if offsets is not None:
        def mask_mod(b, h, q_idx, kv_idx):
            return kv_idx <= q_idx + offsets[b]
    else:
        mask_mod = causal
    return mask_mod
`

// TestPastedDefsClassify: defs pasted in the shapes of real model code
// (an Optional tensor left None, a factory choosing its mask_mod by a
// compile-time condition, a numeric helper of four parameters) classify
// exactly as the mask written by hand that they compute.
func TestPastedDefsClassify(t *testing.T) {
	cases := []struct{ name, pasted, setting, written string }{
		{"optional tensor left None", `
def make_mask(window, extra=None):
    def mask_mod(b, h, q_idx, kv_idx):
        ok = kv_idx <= q_idx and q_idx - kv_idx < window
        if extra is not None:
            ok = ok or extra[b, kv_idx]
        return ok
    return mask_mod
`, "make_mask(256)", "sliding_window(255)"},
		{"helper of four parameters", `
def distance_bucket(rel, num_buckets, max_distance, bidirectional):
    return rel // 2

def mask_mod(b, h, q_idx, kv_idx):
    return distance_bucket(q_idx - kv_idx, 32, 128, False) >= 0
`, "mask_mod", "causal"},
		{"factory choosing its mask_mod, else branch", choosingFactory, "make_mask(None)", "causal"},
		{"factory choosing its mask_mod, def branch", "buffer offsets: i32[B]\n" + choosingFactory + `
def by_hand(b, h, q_idx, kv_idx):
    return kv_idx <= q_idx + offsets[b]
`, "make_mask(offsets)", "by_hand"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.pasted + "\nattention pasted {\n    mask = " + tc.setting + "\n    head_dim = 128\n}\n" +
				"attention written {\n    mask = " + tc.written + "\n    head_dim = 128\n}\n"
			_, plan, diags := compileSrc(t, "pasted.flex", src, nil)
			if diags.HasErrors() || plan == nil {
				t.Fatalf("%s", diags.Render())
			}
			pasted, written := plan.Attentions[0], plan.Attentions[1]
			assert.Equal(t, written.Pattern, pasted.Pattern)
			assert.Equal(t, written.Entry, pasted.Entry)
			delete(written.Kwargs, "kernel") // a generated kernel is named after its block
			delete(pasted.Kwargs, "kernel")
			assert.Equal(t, written.Kwargs, pasted.Kwargs)
			assert.Equal(t, written.Canonical, pasted.Canonical)
		})
	}
}
