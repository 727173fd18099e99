package check

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/maskc/maskc/dsl"
)

// diagLines renders each diagnostic as "CODE line:col message".
func diagLines(src string, diags dsl.Diagnostics) []string {
	s := dsl.NewSource("test.flex", []byte(src))
	var out []string
	for _, d := range diags {
		p := s.Position(d.Span.Start)
		out = append(out, string(d.Code)+" "+itoa(p.Line)+":"+itoa(p.Column)+" "+d.Message)
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// TestOptionalBufferArgument pins a factory's Optional tensor argument
// left None (`extra=None`): Python indexes it only on a path its `if extra
// is not None` guard takes, so the None is refused only where a path that
// runs indexes it (E045 at the use that passed it), not at the call.
func TestOptionalBufferArgument(t *testing.T) {
	const src = `
buffer keep: bool[B, KV]

def make_mask(window, extra=None):
    def mask_mod(b, h, q_idx, kv_idx):
        ok = (kv_idx <= q_idx) & (q_idx - kv_idx < window)
        if extra is not None:
            ok = ok | extra[b, kv_idx]
        return ok
    return mask_mod

def unguarded(window, extra=None):
    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx < window) | extra[b, kv_idx]
    return mask_mod
`
	cases := []struct{ mask, want string }{
		{"make_mask(256)", "(kv <= q) & (q - kv < 256)"},
		{"make_mask(256, None)", "(kv <= q) & (q - kv < 256)"},
		{"make_mask(window=8, extra=None)", "(kv <= q) & (q - kv < 8)"},
		{"make_mask(256, keep)", "(kv <= q) & (q - kv < 256) | keep[b, kv]"},
		{"unguarded(16, keep)", "(q - kv < 16) | keep[b, kv]"},
		// Indexed on a live path: still E045, at the use, naming the read.
		{"unguarded(16)", "E045 argument extra is None for the mask unguarded(16, None), and def mask_mod indexes it (line 14: extra[b, kv_idx])"},
		{"unguarded(16, extra=None)", "E045 argument extra is None for the mask unguarded(16, None), and def mask_mod indexes it (line 14: extra[b, kv_idx])"},
		// Not a buffer and not None: the argument itself is refused, as before.
		{"make_mask(256, 3)", "E045 argument extra of make_mask must be a buffer name, got int 3"},
	}
	for _, tc := range cases {
		t.Run(tc.mask, func(t *testing.T) {
			checkSetting(t, src, "mask = "+tc.mask, tc.want)
		})
	}
	// Where the None is reported: the use that passed it.
	full := src + "attention a {\n    mask = unguarded(16)\n}\n"
	_, diags := checkSource(t, full, nil)
	assert.Equal(t, []string{"E045 17:12 argument extra is None for the mask unguarded(16, None), and def mask_mod indexes it (line 14: extra[b, kv_idx])"},
		diagLines(full, diags.Errors()))
}

// TestOptionalBufferSameAsWindow: a factory whose Optional tensor is left
// None lowers to its window alone (classify's TestPastedDefsClassify pins
// that it is the hand-written causal window).
func TestOptionalBufferSameAsWindow(t *testing.T) {
	const src = `
def make_mask(window, extra=None):
    def mask_mod(b, h, q_idx, kv_idx):
        ok = kv_idx <= q_idx and q_idx - kv_idx < window
        if extra is not None:
            ok = ok or extra[b, kv_idx]
        return ok
    return mask_mod

attention pasted {
    mask = make_mask(256)
}
attention written {
    mask = sliding_window(255)
}
`
	p, diags := checkSource(t, src, nil)
	assert.Empty(t, diags.Errors(), diags.Render())
	assert.Equal(t, "kv <= q and q - kv < 256", fmtExpr(p.Attention("pasted").Mask.Expr))
}

// TestDefUsedAsFunction pins a top-level def of a mod's arity that nothing
// uses as a mod: it is a function (Python calls it), so its value may be
// an int (no E024), a call passes it any values, and an unused one gets a
// neutral W003. Used as a mask it must still give a bool.
func TestDefUsedAsFunction(t *testing.T) {
	const plain = `
def distance_bucket(rel, num_buckets, max_distance, bidirectional):
    return rel // 2

def mask_mod(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx
`
	const bucket = `
def distance_bucket(rel, num_buckets, max_distance, bidirectional):
    if bidirectional:
        rel = abs(rel)
    return min(rel // 2, num_buckets - 1) + max_distance * 0

def mask_mod(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx
`
	cases := []struct {
		name, src string
		want      []string // every diagnostic
	}{
		{"unused", bucket + "attention a {\n    mask = mask_mod\n}\n",
			[]string{"W003 2:5 def distance_bucket is never used"}},
		{"unused, plain", plain + "attention a {\n    mask = mask_mod\n}\n",
			[]string{"W003 2:5 def distance_bucket is never used"}},
		{"called from a score", bucket + `
def bias(score, b, h, q_idx, kv_idx):
    return score + distance_bucket(q_idx - kv_idx, 32, 128, True)

attention a {
    mask = mask_mod
    score = bias
}
`, nil},
		{"called by keyword", bucket + `
def bias(score, b, h, q_idx, kv_idx):
    return score + distance_bucket(q_idx - kv_idx, 32, max_distance=128, bidirectional=False)

attention a {
    score = bias
}
`, []string{"W003 7:5 def mask_mod is never used"}},
		{"used as a mask", plain + "attention a {\n    mask = distance_bucket\n}\n",
			[]string{"E024 3:12 mask distance_bucket must give a bool, got int", "W003 5:5 def mask_mod is never used"}},
		{"used in and_masks", plain + "attention a {\n    mask = and_masks(mask_mod, distance_bucket)\n}\n",
			[]string{"E024 3:12 mask distance_bucket must give a bool, got int"}},
		{"returned by a factory", plain + "def f():\n    return distance_bucket\nattention a {\n    mask = f()\n}\n",
			[]string{"E024 3:12 mask distance_bucket must give a bool, got int", "W003 5:5 def mask_mod is never used"}},
		{"library, called", bucket + `
def bias(score, b, h, q_idx, kv_idx):
    return score + distance_bucket(q_idx - kv_idx, 32, 128, False)
`, nil},
		{"library, not called", "def bucket(b, h, q_idx, kv_idx):\n    return q_idx // 2\n",
			[]string{"E024 2:12 mask bucket must give a bool, got int"}},
		{"mask syntax", "mask unused(b, h, q, kv) = q >= kv\nattention a {\n    mask = causal\n}\n",
			[]string{"W003 1:6 mask unused is never used"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, diags := checkSource(t, tc.src, nil)
			assert.Equal(t, tc.want, diagLines(tc.src, diags))
			if tc.name == "called from a score" {
				assert.Equal(t, "score + (min(abs(q - kv) // 2, 31) + 0)", fmtExpr(p.Attention("a").Score.Expr))
			}
		})
	}
}

// TestDefInFactoryBranch pins a factory that chooses its mask_mod by a
// compile-time `if` (transformers' shape): a def inside an `if`/`else`
// block, placed first in it or after other statements, binds its name only
// where the branch runs; a def in a branch not taken is never lowered (its
// read of a None argument reports nothing). A condition on a run-time
// value is E078 at the `if`, saying the factory decides it at compile time.
func TestDefInFactoryBranch(t *testing.T) {
	const src = `
buffer offsets: i32[B]
buffer doc: i32[KV]

def causal(b, h, q_idx, kv_idx):
    return kv_idx <= q_idx

def make_mask(offsets):
    if offsets is not None:
        def mask_mod(b, h, q_idx, kv_idx):
            return kv_idx <= q_idx + offsets[b]
    else:
        mask_mod = causal
    return mask_mod

def after_statements(window, doc_ids=None):
    """Docstring."""
    if doc_ids is None:
        half = window // 2
        def mask_mod(b, h, q_idx, kv_idx):
            return q_idx - kv_idx <= half
    elif window > 0:
        lo = 0
        def same_doc(b, h, q_idx, kv_idx):
            return doc_ids[q_idx] == doc_ids[kv_idx]
        def mask_mod(b, h, q_idx, kv_idx):
            return same_doc(b, h, q_idx, kv_idx) & (q_idx - kv_idx <= window) & (kv_idx >= lo)
    else:
        def mask_mod(b, h, q_idx, kv_idx):
            return doc_ids[q_idx] == doc_ids[kv_idx]
    return mask_mod

def early_return(sliding):
    if sliding is None:
        return causal
    if sliding > 0:
        def window_mask(b, h, q_idx, kv_idx):
            return (q_idx - kv_idx < sliding) & causal(b, h, q_idx, kv_idx)
        return window_mask
    def none(b, h, q_idx, kv_idx):
        return q_idx < 0
    return and_masks(none, causal)

def unbound(flag):
    if flag:
        def mask_mod(b, h, q_idx, kv_idx):
            return q_idx >= kv_idx
    return mask_mod

def runtime_window(w):
    if w > 0:
        def mask_mod(b, h, q_idx, kv_idx):
            return q_idx - kv_idx < w
    else:
        mask_mod = causal
    return mask_mod

def runtime_choice(ids):
    if ids[0] > 0:
        def mask_mod(b, h, q_idx, kv_idx):
            return q_idx >= kv_idx
    else:
        mask_mod = causal
    return mask_mod
`
	cases := []struct{ mask, want string }{
		{"make_mask(offsets)", "kv <= q + offsets[b]"},
		{"make_mask(None)", "kv <= q"},
		{"make_mask(offsets=None)", "kv <= q"},
		{"and_masks(make_mask(None), make_mask(offsets))", "kv <= q and kv <= q + offsets[b]"},
		{"after_statements(64)", "q - kv <= 32"},
		{"after_statements(16, doc)", "(doc[q] == doc[kv]) & (q - kv <= 16) & (kv >= 0)"},
		{"after_statements(0, doc)", "doc[q] == doc[kv]"},
		{"after_statements(window=-1, doc_ids=doc)", "doc[q] == doc[kv]"},
		{"early_return(None)", "kv <= q"},
		{"early_return(8)", "(q - kv < 8) & (kv <= q)"},
		{"early_return(0)", "q < 0 and kv <= q"},
		{"unbound(True)", "q >= kv"},
		{"unbound(False)", "E077 mask_mod is read before it is assigned in this def: Python makes a name assigned anywhere in a function local to all of it, and raises UnboundLocalError here"},
		{"runtime_choice(doc)", "E045 factory runtime_choice reads ids, buffer doc here, in `ids[0] > 0`, which runs when the factory is called: a buffer's values are known only at run time"},
		{"inside\n}\ndef inside(b, h, q_idx, kv_idx):\n    return runtime_window(doc[q_idx])(b, h, q_idx, kv_idx)\nattention z {\n    mask = causal",
			"E078 `if w > 0` depends on a run-time value: maskc decides `if` at compile time"},
	}
	for _, tc := range cases {
		t.Run(tc.mask, func(t *testing.T) {
			checkSetting(t, src, "mask = "+tc.mask, tc.want)
		})
	}
	full := src + "attention a {\n    mask = runtime_choice(doc)\n}\n"
	_, diags := checkSource(t, full, nil)
	assert.Equal(t, []string{"E045 59:8 factory runtime_choice reads ids, buffer doc here, in `ids[0] > 0`, which runs when the factory is called: a buffer's values are known only at run time"},
		diagLines(full, diags.Errors()))
	full = src + "def inside(b, h, q_idx, kv_idx):\n    return runtime_window(doc[q_idx])(b, h, q_idx, kv_idx)\nattention a {\n    mask = inside\n}\n"
	_, diags = checkSource(t, full, nil)
	assert.Equal(t, []string{"E078 51:8 `if w > 0` depends on a run-time value: maskc decides `if` at compile time"}, diagLines(full, diags.Errors()))
	assert.Contains(t, diags.Render(), "the factory chooses its mask_mod by this `if` when it is called")
	// The mod a not-taken branch binds is still used by the factory.
	full = src + "attention a {\n    mask = make_mask(offsets)\n}\n"
	_, diags = checkSource(t, full, nil)
	assert.NotContains(t, diags.Render(), "causal is never used")
}

// TestFactoryStringArguments: a factory's string arguments, as pasted code
// passes them (`device="cuda"` for its set-up, a mode name its `if`
// chooses by): a word the mask never computes with, compared at compile
// time with == and !=.
func TestFactoryStringArguments(t *testing.T) {
	const src = `
buffer ends: i32[Q]

def block_causal(ends, device="cuda"):
    def mask_mod(b, h, q_idx, kv_idx):
        return (kv_idx < ends[q_idx]) | (q_idx == kv_idx)
    return mask_mod

def by_mode(kind="causal"):
    if kind == "causal":
        def mask_mod(b, h, q_idx, kv_idx):
            return q_idx >= kv_idx
    elif kind != "full":
        def mask_mod(b, h, q_idx, kv_idx):
            return q_idx - kv_idx < 4
    else:
        def mask_mod(b, h, q_idx, kv_idx):
            return q_idx >= 0
    return mask_mod

def computes(kind):
    def mask_mod(b, h, q_idx, kv_idx):
        return q_idx + kind >= kv_idx
    return mask_mod
`
	cases := []struct{ mask, want string }{
		{`block_causal(ends, device="cuda")`, "(kv < ends[q]) | (q == kv)"},
		{`block_causal(ends, "cpu")`, "(kv < ends[q]) | (q == kv)"},
		{`by_mode("causal")`, "q >= kv"},
		{`by_mode()`, "q >= kv"},
		{`by_mode("full")`, "q >= 0"},
		{`by_mode("local")`, "q - kv < 4"},
		{`by_mode(kind="ca" + "usal")`, "q >= kv"},
		{`computes("causal")`, `E028 kind is the string "causal", not a value a mod computes with`},
	}
	for _, tc := range cases {
		t.Run(tc.mask, func(t *testing.T) {
			checkSetting(t, src, "mask = "+tc.mask, tc.want)
		})
	}
}
