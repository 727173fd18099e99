package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPythonGuards pins the Python that combinators pasted from torch and
// transformers are written in: a variadic factory guarded by `if not
// all(callable(arg) for arg in mask_mods): raise ...`, all() and any()
// over generators and tuples, callable(), raise, f-strings, and a file's
// own and_masks shadowing the built-in one.
func TestPythonGuards(t *testing.T) {
	const src = `
buffer doc: i32[KV]

def and_masks(*mask_mods):
    if not all(callable(arg) for arg in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b, h, q_idx, kv_idx):
        result = b.new_ones((), dtype=torch.bool)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result

    return and_mask

def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx

def near(b, h, q_idx, kv_idx):
    return q_idx - kv_idx < 64

def special(b, h, q_idx, kv_idx):
    return any(doc[kv_idx] == t for t in (3, 5)) | all((True, 1, 2.5))

def capped(score, b, h, q_idx, kv_idx):
    if any(w > 8 for w in range(4)):
        raise ValueError("too wide")
    return score
`
	for _, tc := range []struct{ setting, want string }{
		{"mask = and_masks(causal, near)", "True & (q >= kv) & (q - kv < 64)"},
		{"mask = and_masks(and_masks(causal, near), causal)", "True & (True & (q >= kv) & (q - kv < 64)) & (q >= kv)"},
		{"mask = and_masks()", "True"},
		{"mask = and_masks(causal, 3)", "E078 `raise RuntimeError(f\"All inputs should be callable mask_mods: {mask_mods}\")` in factory and_masks is reached for and_masks(causal, 3)"},
		{"mask = special", "(doc[kv] == 3 or doc[kv] == 5) | True"},
		{"score = capped", "score"},
	} {
		t.Run(tc.setting, func(t *testing.T) { checkSetting(t, src, tc.setting, tc.want) })
	}
	for _, tc := range []struct{ body, want string }{
		{"return all(q_idx for q in (1, 2)) == 0", ""},
		{"return (q_idx for q in (1, 2))", "E028 a generator is read only by all() and any()"},
		{"return any(q_idx > w for w in range(q_idx))", "E078 a generator over range(q_idx): the bound depends on a run-time value; maskc unrolls loops at compile time"},
		{"return all(q_idx)", "E028 all of q_idx, which is not a tuple or a generator"},
		{"return callable(q_idx, kv_idx)", "E023 callable takes 1 argument, got 2"},
		{"raise NotImplementedError", "E078 `raise NotImplementedError` in def m (line 2) is reached for the mask m"},
	} {
		src := "def m(b, h, q_idx, kv_idx):\n    " + tc.body + "\nattention a {\n    mask = m\n}\n"
		_, diags := checkSource(t, src, nil)
		errs := errorLines(diags)
		if tc.want == "" {
			assert.Empty(t, errs, tc.body)
			continue
		}
		assert.Equal(t, []string{tc.want}, errs, tc.body)
	}
	// A helper's raise, decided by its arguments where it is called.
	_, diags := checkSource(t, "def pick(w):\n    if w > 4:\n        raise ValueError(\"wide\")\n    return w\n"+
		"def m(b, h, q_idx, kv_idx):\n    return q_idx - kv_idx < pick(8)\nattention a {\n    mask = m\n}\n", nil)
	assert.Equal(t, []string{"E078 `raise ValueError(\"wide\")` in def pick (line 3) is reached for the mask m"}, errorLines(diags))
	// A file's and_masks shadows the built-in only as a def factory.
	_, diags = checkSource(t, "mask and_masks(b, h, q, kv) = q >= kv\n", nil)
	assert.Equal(t, []string{"E053 and_masks cannot be declared: it is the combinator and_masks"}, errorLines(diags))
}
