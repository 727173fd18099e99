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

// TestBufferRows pins rows of a buffer (fewer indices than dimensions),
// loops over them and over several names, a whole-buffer dtype cast that
// keeps the values, and a factory called with run-time values inside a
// mod: Transfusion's mask as written.
func TestBufferRows(t *testing.T) {
	const src = `
buffer spans: i32[B, 2, 3]
buffer wide: i64[B, 2, 3]
buffer ragged: i32[B, KV, 3]

def from_to(lo, n):
    def inner(b, h, q_idx, kv_idx):
        return (q_idx >= lo) & (kv_idx < lo + n)
    return inner

def spans_mask(rows):
    rows = rows.long()
    def m(b, h, q_idx, kv_idx):
        keep = q_idx >= kv_idx
        for _, lo, n in rows[b]:
            keep = keep | from_to(lo, n)(b, h, q_idx, kv_idx)
        return keep
    return m

def firsts(b, h, q_idx, kv_idx):
    row = spans[b]
    return q_idx < row[0][1] + row[1, 2]

def same_doc(batch):
    ids = batch.long()
    def m(b, h, q_idx, kv_idx):
        return ids[b, q_idx, 0] == ids[b, kv_idx, 0]
    return m

def copied(batch):
    ids = batch.clone().contiguous().detach()
    def m(b, h, q_idx, kv_idx):
        return ids[b, q_idx, 0] == ids[b, kv_idx, 0]
    return m

def narrowed(rows):
    rows = rows.int()
    def m(b, h, q_idx, kv_idx):
        return q_idx < rows[b, 0, 0]
    return m

`
	for _, tc := range []struct{ setting, want string }{
		{"mask = spans_mask(spans)", "(q >= kv) | (q >= spans[b, 0, 1]) & (kv < spans[b, 0, 1] + spans[b, 0, 2]) | (q >= spans[b, 1, 1]) & (kv < spans[b, 1, 1] + spans[b, 1, 2])"},
		{"mask = firsts", "q < spans[b, 0, 1] + spans[b, 1, 2]"},
		{"mask = same_doc(ragged)", "ragged[b, q, 0] == ragged[b, kv, 0]"},
		{"mask = copied(ragged)", "ragged[b, q, 0] == ragged[b, kv, 0]"},
		{"mask = narrowed(wide)", "E076 wide.int() changes the values of buffer wide (i64[B, 2, 3])"},
	} {
		t.Run(tc.setting, func(t *testing.T) { checkSetting(t, src, tc.setting, tc.want) })
	}
	for _, tc := range []struct{ loop, want string }{
		{"for r in ragged[b]:\n        keep = keep | (q_idx == r[0])", "E078 a loop over dimension 1 of buffer ragged (i32[B, KV, 3]), whose extent is not a constant"},
		{"for lo, n in spans[b]:\n        keep = keep | (q_idx == lo)", "E028 cannot unpack 3 values into the loop's 2 names"},
	} {
		body := "buffer spans: i32[B, 2, 3]\nbuffer ragged: i32[B, KV, 3]\ndef m(b, h, q_idx, kv_idx):\n    keep = q_idx < 0\n    " + tc.loop + "\n    return keep\n"
		_, diags := checkSource(t, body, nil)
		assert.Equal(t, []string{tc.want}, errorLines(diags), tc.loop)
	}
	// A row read as a value is an index with too few indices, as before.
	_, diags := checkSource(t, "buffer bias: f32[H, 8]\nmask m(b, h, q, kv) = bias[h] > 0\n", nil)
	assert.Equal(t, []string{"E030 buffer bias has 2 dimensions [H, 8], got 1 index"}, errorLines(diags))
}
