package parser_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/parser"
)

// TestInPlaceSetup: a statement that changes a tensor in place in a
// factory's set-up (an assignment into it, an in-place method) parses as a
// dsl.InPlaceStmt, which the checker refuses (E082) where the factory is
// called; the same line in an inner def, or in a def that is no factory,
// stays a syntax error; fmt prints the factory as written.
func TestInPlaceSetup(t *testing.T) {
	src := "def f(ids, n):\n    ids[:, -1] = 0\n    if n > 2:\n        ids.index_fill_(\n            0, n, 1,\n        )\n" +
		"    for i in range(n):\n        ids[i][0] += i  # filled\n" +
		"    def m(b, h, q_idx, kv_idx):\n        return ids[b, q_idx] == ids[b, kv_idx]\n    return m\n"
	f, diags := parser.ParseFile("t.flex", []byte(src))
	require.Empty(t, diags, diags.Render())
	d := f.Decls[0].(*dsl.ModDecl)
	require.Len(t, d.FactoryPre, 3)
	var got []string
	var walk func([]dsl.Stmt)
	walk = func(stmts []dsl.Stmt) {
		for _, st := range stmts {
			switch st := st.(type) {
			case *dsl.InPlaceStmt:
				got = append(got, st.Target.Name+" "+st.Method+" | "+f.Source.Slice(st.Sp))
			case *dsl.IfStmt:
				walk(st.Then)
			case *dsl.ForStmt:
				walk(st.Body)
			}
		}
	}
	walk(d.FactoryPre)
	assert.Equal(t, []string{
		"ids  | ids[:, -1] = 0",
		"ids index_fill_ | ids.index_fill_(\n            0, n, 1,\n        )",
		"ids  | ids[i][0] += i",
	}, got)
	assert.Equal(t, src, string(format.Source(f)))

	assertSyntaxErrors(t,
		// in the inner def
		"def f(ids):\n    def m(b, h, q_idx, kv_idx):\n        ids.fill_(0)\n        return q_idx >= kv_idx\n    return m\n",
		// a def that is no factory
		"def m(b, h, q_idx, kv_idx):\n    kv_idx[0] = 1\n    return q_idx >= kv_idx\n",
		// not an in-place method
		"def f(ids):\n    ids.fill(0)\n    def m(b, h, q_idx, kv_idx):\n        return q_idx >= kv_idx\n    return m\n",
	)
}

// TestSetupBuildLine: an assignment in a factory's set-up whose value holds
// a list display or a slice (Python building a tensor: torch.tensor([...]),
// torch.cat of pieces, x[:-1]) parses as a dsl.InPlaceStmt whose Built
// names the construct and whose Target and Also are the names assigned, so
// that the checker refuses it with E082; a subscript without a slice, a
// list or slice in an inner def or outside a factory, and a comparison
// `==` are not such lines; fmt prints the factory as written.
func TestSetupBuildLine(t *testing.T) {
	src := "def f(sizes, n):\n    firsts = torch.tensor([0, n])  # starts\n    lo, hi = sizes[:-1], sizes[1:]\n" +
		"    both = torch.cat(\n        [lo, hi],\n    )\n    one = sizes[0]\n" +
		"    def m(b, h, q_idx, kv_idx):\n        return kv_idx >= firsts[one]\n    return m\n"
	f, diags := parser.ParseFile("t.flex", []byte(src))
	require.Empty(t, diags, diags.Render())
	d := f.Decls[0].(*dsl.ModDecl)
	var got []string
	for _, st := range d.FactoryPre {
		if st, ok := st.(*dsl.InPlaceStmt); ok {
			names := st.Target.Name
			for _, id := range st.Also {
				names += "," + id.Name
			}
			got = append(got, names+" | "+st.Built+" | "+f.Source.Slice(st.Sp))
		}
	}
	assert.Equal(t, []string{
		"firsts | a list `[...]` | firsts = torch.tensor([0, n])",
		"lo,hi | a slice `[...:...]` | lo, hi = sizes[:-1], sizes[1:]",
		"both | a list `[...]` | both = torch.cat(\n        [lo, hi],\n    )",
	}, got)
	_, isLet := d.FactoryPre[len(d.FactoryPre)-1].(*dsl.LetStmt)
	assert.True(t, isLet, "one = sizes[0] is an ordinary assignment")
	assert.Equal(t, src, string(format.Source(f)))

	assertSyntaxErrors(t,
		// in the inner def
		"def f(ids):\n    def m(b, h, q_idx, kv_idx):\n        x = ids[1:]\n        return q_idx >= kv_idx\n    return m\n",
		// a def that is no factory
		"def g(ids):\n    x = [1, 2]\n    return x\n",
		// at the top of the file
		"marks = [0, 4]\n",
	)
}

// assertSyntaxErrors asserts that each source is refused by the parser.
func assertSyntaxErrors(t *testing.T, srcs ...string) {
	t.Helper()
	for _, src := range srcs {
		_, diags := parser.ParseFile("t.flex", []byte(src))
		assert.True(t, diags.HasErrors(), "no syntax error for:\n%s", src)
	}
}
