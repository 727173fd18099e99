package dsl

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSourcePosition(t *testing.T) {
	src := NewSource("a.flex", []byte("ab\n# é\nxyz"))
	tests := []struct {
		off       int
		line, col int
	}{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 3}, {7, 2, 4}, {8, 3, 1}, {11, 3, 4}, {-4, 1, 1}, {99, 3, 4},
	}
	for _, tt := range tests {
		p := src.Position(tt.off)
		assert.Equal(t, [2]int{tt.line, tt.col}, [2]int{p.Line, p.Column}, "offset %d", tt.off)
	}
	assert.Equal(t, 3, src.LineCount())
	assert.Equal(t, "# é", src.Line(2))
	assert.Equal(t, "", src.Line(4))
	assert.Equal(t, 8, src.LineStart(3))
}

func TestDiagnosticRender(t *testing.T) {
	src := NewSource("ex.flex", []byte("param W = 4\nmask m(b, h, q, kv) = q // 0 == 1\n"))
	var l Diagnostics
	l.Add(src, Span{35, 36}, "E021", "division by constant zero").WithHint("divide by a non-zero constant")
	l.Warn(src, Span{6, 7}, "W001", "param W is never used")
	l.Sort()
	want := `ex.flex:1:7: warning[W001]: param W is never used
 1 | param W = 4
   |       ^

ex.flex:2:24: error[E021]: division by constant zero
 2 | mask m(b, h, q, kv) = q // 0 == 1
   |                        ^
   = hint: divide by a non-zero constant
`
	assert.Equal(t, want, l.Render())
	assert.True(t, l.HasErrors())
	require.Error(t, l.Err())
	assert.Equal(t, "ex.flex:2:24: error[E021]: division by constant zero", l.Err().Error())
	assert.NoError(t, l[:1].Err())
}

func TestDiagnosticMultiByteCaret(t *testing.T) {
	src := NewSource("u.flex", []byte("# é中\nmask m(b, h, q, kv) = é\n"))
	var l Diagnostics
	off := strings.Index(string(src.Text), "= é") + 2
	l.Add(src, Span{off, off + len("é")}, "E030", "unknown name é")
	assert.Equal(t, "u.flex:2:23: error[E030]: unknown name é\n 2 | mask m(b, h, q, kv) = é\n   |                       ^\n", l.Render())
}

func TestDiagnosticsSortDedup(t *testing.T) {
	a := NewSource("a.flex", []byte("xxxxxxxx"))
	b := NewSource("b.flex", []byte("yyyyyyyy"))
	var l Diagnostics
	l.Add(b, Span{1, 2}, "E001", "b1")
	l.Add(a, Span{5, 6}, "E002", "a5")
	l.Add(a, Span{1, 2}, "E003", "a1")
	l.Add(a, Span{1, 2}, "E003", "a1")
	l.Sort()
	var got []string
	for _, d := range l {
		got = append(got, d.Message)
	}
	assert.Equal(t, []string{"a1", "a5", "b1"}, got)
}

func TestDiagnosticsJSON(t *testing.T) {
	src := NewSource("j.flex", []byte("mask m(b, h, q, kv) = 1\n"))
	var l Diagnostics
	out, err := json.Marshal(l)
	require.NoError(t, err)
	assert.Equal(t, "[]", string(out))
	l.Add(src, Span{22, 23}, "E040", "mask body must be bool, not int").WithHint("compare it")
	out, err = json.Marshal(l)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"file":"j.flex","line":1,"column":23,"end_line":1,"end_column":24,"code":"E040","severity":"error","message":"mask body must be bool, not int","hint":"compare it"}]`, string(out))
}

func TestNoSourceDiagnostic(t *testing.T) {
	d := &Diagnostic{Code: "E400", Message: "no GPU runtime found", Hint: "install ROCm"}
	assert.Equal(t, "error[E400]: no GPU runtime found\n  = hint: install ROCm\n", d.Render())
}

func TestValueString(t *testing.T) {
	for v, want := range map[Value]string{
		Bool(true): "True", Int(-3): "-3", Float(30): "30.0", Float(1e-4): "0.0001", Float(1e21): "1e+21",
	} {
		assert.Equal(t, want, v.String())
	}
}

func TestOpTables(t *testing.T) {
	for op := OpEQ; op <= OpGE; op++ {
		assert.Equal(t, op, op.Negate().Negate())
		assert.Equal(t, op, op.Swap().Swap())
	}
	assert.Greater(t, OpPow.Precedence(), OpMul.Precedence())
	assert.Greater(t, OpBitAnd.Precedence(), OpLT.Precedence(), "Python: & binds tighter than comparisons")
	assert.NotNil(t, LookupBuiltin("torch.tanh"))
	assert.Nil(t, LookupBuiltin("torch."))
}
