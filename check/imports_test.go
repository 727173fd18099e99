package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/format"
)

// TestPortingImports: names a pasted file imports from math and torch are
// the qualified built-ins, as Python binds them (`from math import floor`
// makes floor(x) math.floor(x), an int of a number), unless a let or a
// declaration of the file takes the name.
func TestPortingImports(t *testing.T) {
	tests := []struct{ decls, expr, want string }{
		{"from math import floor\n", "floor(1000 / 128)", "score + 7"},
		{"from math import floor, ceil as up\n", "up(2.5) + floor(2.5)", "score + 3 + 2"},
		{"from math import (\n    pi,\n    sqrt,\n)\n", "pi", "score + 3.141592653589793"},
		{"from torch import where, tanh\n", "where(q_idx >= kv_idx, tanh(score), 0.0)", "score + where(q >= kv, tanh(score), 0.0)"},
		{"import math\n", "math.floor(2.5)", "score + 2"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) { checkScoreLowers(t, tt.decls, tt.expr, tt.want) })
	}

	// The int is a buffer index, where a float is refused (E031), and no
	// NameError warning is given for the bare name.
	src := "from math import floor\nbuffer tbl: i32[64]\n" +
		"def m(b, h, q_idx, kv_idx):\n    blk = floor(1000 / 128)\n    return kv_idx < tbl[blk]\n" +
		"attention a {\n    mask = m\n}\n"
	p, diags := checkSource(t, src, nil)
	require.False(t, diags.HasErrors(), diags.Render())
	assert.Empty(t, diags, "no warning for an imported name")
	assert.Equal(t, "kv < tbl[7]", format.Expr(p.Attentions[0].Mask.Expr))
	// Without the import the bare floor is torch's (a float): refused as an index.
	_, diags = checkSource(t, src[len("from math import floor\n"):], nil)
	assert.Contains(t, codesOf(diags), CodeIndexNotInt, diags.Render())

	// A let, a param or a def of the file named like an import is itself.
	for _, src := range []string{
		"from math import floor\ndef s(score, b, h, q_idx, kv_idx):\n    floor = 3\n    return score + floor\n",
		"from math import floor\nparam floor = 3\ndef s(score, b, h, q_idx, kv_idx):\n    return score + floor\n",
	} {
		p, diags := checkSource(t, src, nil)
		require.False(t, diags.HasErrors(), diags.Render())
		low, diags := p.LowerMod("s")
		require.False(t, diags.HasErrors(), diags.Render())
		assert.Equal(t, "score + 3", format.Expr(low.Expr), src)
	}
}
