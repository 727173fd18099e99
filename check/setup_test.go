package check

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
)

// TestSetupTensor: a factory's set-up (or a module constant) that builds
// or changes a tensor is one E082 at its first such statement, naming the
// tensor, with the buffer declaration to write; no use of the tensor adds
// an error of its own.
func TestSetupTensor(t *testing.T) {
	attn := func(call string) string { return "\nattention a {\n    mask = " + call + "\n    head_dim = 128\n}\n" }
	tests := []struct {
		name, src string
		pos       string // line:col of the one error
		msg, hint []string
	}{
		{"rand compared", "import torch\n\ndef make_random_blocks(num_blocks, k):\n    sel = torch.rand(num_blocks, num_blocks) < 0.1\n" +
			"    def mask_mod(b, h, q_idx, kv_idx):\n        return sel[q_idx // 128, kv_idx // 128] & sel[kv_idx // 128, q_idx // 128]\n    return mask_mod\n" +
			attn("make_random_blocks(64, 4)"),
			"4:11", []string{"`sel` is built by torch.rand when the factory runs: maskc compiles the mask, not the set-up; compute sel in Python and pass it as a buffer"},
			[]string{"`buffer sel: bool[64, 64]`", "`def make_random_blocks(sel)`", "`make_random_blocks(sel)`"}},
		{"zeros int32 then slice and fill_", "def docs(n, w):\n    ids = torch.zeros(n, dtype=torch.int32)\n    ids[0:64] = 3\n    ids.fill_(1)\n" +
			"    def mask_mod(b, h, q_idx, kv_idx):\n        return (ids[q_idx] == ids[kv_idx]) & (q_idx - kv_idx <= w)\n    return mask_mod\n" +
			attn("docs(1024, 8)"),
			"2:11", []string{"`ids` is built by torch.zeros when the factory runs"},
			[]string{"`buffer ids: i32[1024]`", "`def docs(ids, w)`"}},
		{"zeros default float", "def f(n):\n    x = torch.zeros((n, 4))\n    def m(b, h, q_idx, kv_idx):\n        return x[q_idx, 0] > 0\n    return m\n" + attn("f(32)"),
			"2:9", []string{"`x` is built by torch.zeros"}, []string{"`buffer x: f32[32, 4]`"}},
		{"arange floor-divided", "def f(n):\n    x = torch.arange(n) // 64\n    def m(b, h, q_idx, kv_idx):\n        return x[q_idx] == x[kv_idx]\n    return m\n" + attn("f(1024)"),
			"2:9", []string{"`x` is built by torch.arange"}, []string{"`buffer x: i32[1024]` (pass x.int()"}},
		{"arange cast", "def f(n):\n    x = (torch.arange(n) // 64).to(torch.int32)\n    def m(b, h, q_idx, kv_idx):\n        return x[q_idx] == x[kv_idx]\n    return m\n" + attn("f(256)"),
			"2:10", []string{"`x` is built by torch.arange"}, []string{"`buffer x: i32[256]`"}},
		{"randint size tuple", "def f(n):\n    y = torch.randint(0, 4, (n,))\n    def m(b, h, q_idx, kv_idx):\n        return y[q_idx] >= y[kv_idx]\n    return m\n" + attn("f(128)"),
			"2:9", []string{"`y` is built by torch.randint"}, []string{"`buffer y: i32[128]` (pass y.int()"}},
		{"full bool", "def f(n):\n    keep = torch.full((n, n), True)\n    def m(b, h, q_idx, kv_idx):\n        return keep[q_idx, kv_idx]\n    return m\n" + attn("f(16)"),
			"2:12", []string{"`keep` is built by torch.full"}, []string{"`buffer keep: bool[16, 16]`"}},
		{"randperm", "def f(n):\n    perm = torch.randperm(n)\n    def m(b, h, q_idx, kv_idx):\n        return perm[q_idx] >= perm[kv_idx]\n    return m\n" + attn("f(64)"),
			"2:12", []string{"`perm` is built by torch.randperm"}, []string{"`buffer perm: i32[64]` (pass perm.int()"}},
		{"cumsum of an unknown size", "def f(lengths, n):\n    offsets = torch.cumsum(lengths, 0)\n    def m(b, h, q_idx, kv_idx):\n        return offsets[0] <= kv_idx\n    return m\n" + attn("f(3, 8)"),
			"2:15", []string{"`offsets` is built by torch.cumsum"}, []string{"`buffer offsets: i32[...]` (with the element type and the extents offsets has"}},
		{"imported name", "from torch import rand\n\ndef f(n):\n    sel = rand(n) < 0.5\n    def m(b, h, q_idx, kv_idx):\n        return sel[q_idx]\n    return m\n" + attn("f(64)"),
			"4:11", []string{"`sel` is built by torch.rand"}, []string{"`buffer sel: bool[64]`"}},
		{"in an if taken", "def f(n):\n    if n > 4:\n        sel = torch.ones(n, n, dtype=torch.bool)\n    else:\n        sel = torch.zeros(n, n, dtype=torch.bool)\n" +
			"    def m(b, h, q_idx, kv_idx):\n        return sel[q_idx, kv_idx]\n    return m\n" + attn("f(8)"),
			"3:15", []string{"`sel` is built by torch.ones"}, []string{"`buffer sel: bool[8, 8]`"}},
		{"fill_ on an argument", "buffer doc: i32[KV]\ndef f(ids, w):\n    ids.fill_(0)\n    def m(b, h, q_idx, kv_idx):\n        return (ids[q_idx] == ids[kv_idx]) & (q_idx - kv_idx < w)\n    return m\n" + attn("f(doc, 4)"),
			"3:5", []string{"`ids` is changed in place by .fill_() when the factory runs"}, []string{"`def f(ids, w)`"}},
		{"index_fill_ in a block", "buffer doc: i32[KV]\ndef f(ids, n):\n    if n > 2:\n        ids.index_fill_(\n            0, n, 1,\n        )\n" +
			"    def m(b, h, q_idx, kv_idx):\n        return ids[q_idx] == ids[kv_idx]\n    return m\n" + attn("f(doc, 4)"),
			"4:9", []string{"`ids` is changed in place by .index_fill_()"}, nil},
		{"slice assignment on an argument", "buffer doc: i32[KV]\ndef f(ids):\n    ids[:, -1] = 0\n    def m(b, h, q_idx, kv_idx):\n        return ids[q_idx] == ids[kv_idx]\n    return m\n" + attn("f(doc)"),
			"3:5", []string{"`ids` is assigned into (`ids[:, -1] = 0`) when the factory runs"}, nil},
		{"loop filling a tensor", "buffer doc: i32[KV]\ndef f(ids, n):\n    for i in range(n):\n        ids[i * 64:(i + 1) * 64] |= i\n" +
			"    def m(b, h, q_idx, kv_idx):\n        return ids[q_idx] == ids[kv_idx]\n    return m\n" + attn("f(doc, 4)"),
			"3:5", []string{"`ids` is filled by the loop `for ... in range(n)` when the factory runs"}, nil},
		{"loop over a built tensor", "def f(n):\n    for v in torch.arange(n):\n        pass\n    def m(b, h, q_idx, kv_idx):\n        return q_idx >= kv_idx\n    return m\n" + attn("f(4)"),
			"2:5", []string{"`v` loops over a tensor built by torch.arange"}, nil},
		{"scatter_ before a cumsum", "buffer doc: i32[KV]\ndef f(sel, n):\n    sel.scatter_(0, n, 1)\n    offs = torch.cumsum(sel, 0)\n" +
			"    def m(b, h, q_idx, kv_idx):\n        return sel[q_idx] == offs[kv_idx]\n    return m\n" + attn("f(doc, 4)"),
			"3:5", []string{"`sel` is changed in place by .scatter_()"}, nil},
		{"module constant", "import torch\n\nsel = torch.rand(64, 64) < 0.1\nkeep = sel.float()\n\ndef mask_mod(b, h, q_idx, kv_idx):\n" +
			"    return sel[q_idx // 128, kv_idx // 128] & sel[kv_idx // 128, q_idx // 128]\n" + attn("mask_mod"),
			"3:7", []string{"`sel` is built by torch.rand when the module is imported"}, []string{"`buffer sel: bool[64, 64]`"}},
		{"factory never called", "def f(n):\n    sel = torch.rand(n) < 0.5\n    def m(b, h, q_idx, kv_idx):\n        return sel[q_idx]\n    return m\n",
			"2:11", []string{"`sel` is built by torch.rand"}, []string{"`buffer sel: bool[...]`", "`def f(sel)`"}},
		// Tensor methods on a factory's tensor argument (a run's lengths),
		// and set-up built with a list or a slice, which no mod expression
		// has (they were E079 and E011 from the parser, and E045 at the
		// call for an argument used only there).
		{"method on a buffer argument", "buffer sizes: i32[8]\ndef f(sizes):\n    firsts = sizes.cumsum(0) - sizes\n" +
			"    def m(b, h, q_idx, kv_idx):\n        return kv_idx >= firsts[0]\n    return m\n" + attn("f(sizes)"),
			"3:14", []string{"`firsts` is built by .cumsum() when the factory runs"}, []string{"`buffer firsts: i32[...]`", "`def f(firsts)`"}},
		{"method then a read of another", "buffer sizes: i32[8]\ndef f(sizes, w):\n    total = sizes.sum()\n    last = total - 1\n" +
			"    def m(b, h, q_idx, kv_idx):\n        return (q_idx <= last) & (q_idx - kv_idx < w)\n    return m\n" + attn("f(sizes, 4)"),
			"3:13", []string{"`total` is built by .sum()"}, []string{"the inner def reads last, built from it", "`buffer last: i32[...]`", "`def f(last, w)`"}},
		{"torch.tensor of a list", "def f(n):\n    marks = torch.tensor([0, n, 2 * n], dtype=torch.int32)\n" +
			"    def m(b, h, q_idx, kv_idx):\n        return kv_idx == marks[1]\n    return m\n" + attn("f(16)"),
			"2:5", []string{"`marks` is built with a list `[...]` when the factory runs"}, []string{"`buffer marks: i32[...]`", "`def f(marks)`"}},
		{"slices unpacked", "buffer edges: i32[9]\ndef f(edges):\n    lo, hi = edges[:-1], edges[1:]\n" +
			"    def m(b, h, q_idx, kv_idx):\n        return (kv_idx >= lo[0]) & (kv_idx < hi[0])\n    return m\n" + attn("f(edges)"),
			"3:5", []string{"`lo` is built with a slice `[...:...]` when the factory runs"}, []string{"`def f(lo, hi)`"}},
		{"unpacked builder", "buffer ids: i32[KV]\ndef f(ids):\n    _, runs = torch.unique_consecutive(ids, return_counts=True)\n    starts = torch.cumsum(runs, 0)\n" +
			"    def m(b, h, q_idx, kv_idx):\n        return kv_idx >= starts[ids[q_idx]]\n    return m\n" + attn("f(ids)"),
			"3:15", []string{"`runs` is built by torch.unique_consecutive"}, []string{"the inner def reads starts", "`def f(starts, ids)`"}},
		{"called twice", "def f(n):\n    sel = torch.rand(n) < 0.5\n    def m(b, h, q_idx, kv_idx):\n        return sel[q_idx]\n    return m\n" +
			attn("f(64)") + "attention c {\n    mask = f(32)\n    head_dim = 128\n}\n",
			"2:11", []string{"`sel` is built by torch.rand"}, []string{"`buffer sel: bool[64]`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := checkSource(t, tt.src, nil)
			var errs dsl.Diagnostics
			for _, d := range diags {
				if d.Severity == dsl.SeverityError {
					errs = append(errs, d)
				}
			}
			require.Len(t, errs, 1, "want exactly one error:\n%s", diags.Render())
			d := errs[0]
			assert.Equal(t, CodeSetupTensor, d.Code)
			p := d.Position()
			assert.Equal(t, tt.pos, fmt.Sprintf("%d:%d", p.Line, p.Column))
			for _, m := range tt.msg {
				assert.Contains(t, d.Message, m)
			}
			for _, h := range tt.hint {
				assert.Contains(t, d.Hint, h)
			}
		})
	}
}

// TestSetupTensorKeepsUnknownNames: a misspelt torch function, or one that
// builds no tensor, in a factory's set-up is still E020.
func TestSetupTensorKeepsUnknownNames(t *testing.T) {
	for _, tt := range []struct{ src, msg string }{
		{"def f(n):\n    sel = torch.rnad(n) < 0.5\n    def m(b, h, q_idx, kv_idx):\n        return sel[q_idx]\n    return m\n" +
			"attention a {\n    mask = f(4)\n}\n", "unknown name torch.rnad"},
		{"def f(n):\n    w = torch.frobnicate(n)\n    def m(b, h, q_idx, kv_idx):\n        return q_idx - kv_idx < w\n    return m\n" +
			"attention a {\n    mask = f(4)\n}\n", "unknown name torch.frobnicate"},
		{"def f(n):\n    w = mth.floor(n)\n    def m(b, h, q_idx, kv_idx):\n        return q_idx - kv_idx < w\n    return m\n" +
			"attention a {\n    mask = f(4)\n}\n", "unknown name mth"},
	} {
		_, diags := checkSource(t, tt.src, nil)
		require.Len(t, diags, 1, diags.Render())
		assert.Equal(t, CodeUnknownName, diags[0].Code)
		assert.Equal(t, tt.msg, diags[0].Message)
		assert.Equal(t, 2, diags[0].Position().Line)
	}
}
