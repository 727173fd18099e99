package check

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/parser"
)

// loweredInvariants returns the ways low breaks the invariants documented
// in dsl/lowered.go (nil when it keeps them all).
func loweredInvariants(p *Program, low *dsl.Lowered) []string {
	var bad []string
	if low == nil || low.Expr == nil {
		return []string{"nil lowered expression"}
	}
	want := dsl.TypeBool
	if low.Kind == dsl.ScoreMod {
		want = dsl.TypeFloat
	}
	if got := low.TypeOf(low.Expr); got != want {
		bad = append(bad, fmt.Sprintf("root type %s, want %s", got, want))
	}
	read := map[*dsl.BufferDecl]bool{}
	dsl.Inspect(low.Expr, func(e dsl.Expr) bool {
		switch t := low.TypeOf(e); {
		case t != dsl.TypeBool && t != dsl.TypeInt && t != dsl.TypeFloat:
			if _, isFun := e.(*dsl.Ident); !isFun {
				bad = append(bad, fmt.Sprintf("%T %s has type %s", e, format.Expr(e), t))
			}
		}
		switch x := e.(type) {
		case *dsl.ParenExpr, *dsl.TupleExpr:
			bad = append(bad, fmt.Sprintf("%T left in lowered form", e))
		case *dsl.CompareExpr:
			if len(x.Operands) != 2 || len(x.Ops) != 1 {
				bad = append(bad, "comparison chain not expanded: "+format.Expr(x))
			}
		case *dsl.CallExpr:
			id, ok := x.Fun.(*dsl.Ident)
			if !ok || dsl.Builtins[id.Name] == nil {
				bad = append(bad, "call of a non-canonical built-in: "+format.Expr(x))
			}
			return ok && func() bool {
				for _, a := range x.Args {
					dsl.Inspect(a, func(dsl.Expr) bool { return true })
				}
				return true
			}()
		case *dsl.IndexExpr:
			id, ok := x.X.(*dsl.Ident)
			if !ok || p.Buffer(id.Name) == nil {
				bad = append(bad, "index of a non-buffer: "+format.Expr(x))
			} else {
				read[p.Buffer(id.Name).Decl] = true
			}
		case *dsl.Ident:
			// Only a call's Fun or an index's X may be an Ident; both are
			// handled by their parents above and never reached here as
			// operands, except through Inspect's walk of those parents.
		case *dsl.VarRef:
			if low.Kind == dsl.MaskMod && x.Var == dsl.VarScore {
				bad = append(bad, "score variable in a mask")
			}
		}
		return true
	})
	if len(read) != len(low.Buffers) {
		bad = append(bad, fmt.Sprintf("Buffers lists %d buffers, the expression reads %d", len(low.Buffers), len(read)))
	}
	for _, d := range low.Buffers {
		if !read[d] {
			bad = append(bad, "Buffers lists unread buffer "+d.Name.Name)
		}
	}
	return bad
}

func TestLowerGolden(t *testing.T) {
	src, err := os.ReadFile("testdata/lower.flex")
	require.NoError(t, err)
	p, diags := checkSource(t, string(src), nil)
	require.False(t, diags.HasErrors(), diags.Render())
	var out strings.Builder
	for _, a := range p.Attentions {
		for _, low := range []*dsl.Lowered{a.Mask, a.Score} {
			if low == nil {
				continue
			}
			assert.Empty(t, loweredInvariants(p, low), "attention %s", a.Name)
			var bufs []string
			for _, b := range low.Buffers {
				bufs = append(bufs, b.Name.Name)
			}
			fmt.Fprintf(&out, "%s %s %s\n    %s\n    buffers: [%s]\n", a.Name, low.Kind, low.Name,
				format.Expr(low.Expr), strings.Join(bufs, ", "))
		}
	}
	checkGolden(t, "lower.golden", out.String())
}

// TestLowerStructure pins details the printed form does not show: shared
// spans, canonical variables, promotion and the absence of parentheses.
func TestLowerStructure(t *testing.T) {
	src := "mask shifted(batch, head, i, j) = (j <= i)\nattention a {\n    mask = shifted\n}\n"
	p, diags := checkSource(t, src, nil)
	require.Empty(t, diags)
	low := p.Attention("a").Mask
	require.NotNil(t, low)
	cmp, ok := low.Expr.(*dsl.CompareExpr)
	require.True(t, ok, "parentheses are dropped: %T", low.Expr)
	kv, q := cmp.Operands[0].(*dsl.VarRef), cmp.Operands[1].(*dsl.VarRef)
	assert.Equal(t, dsl.VarKV, kv.Var)
	assert.Equal(t, dsl.VarQ, q.Var)
	assert.Equal(t, "j", p.File.Source.Slice(kv.Sp), "a VarRef keeps the span of the name it replaced")
	assert.Equal(t, dsl.TypeBool, low.TypeOf(cmp))
	assert.Equal(t, "shifted", low.Name)

	// An int score is promoted explicitly.
	p, diags = checkSource(t, "score s(score, b, h, q, kv) = q - kv\nattention a {\n    score = s\n}\n", nil)
	require.Empty(t, diags)
	low = p.Attention("a").Score
	assert.Equal(t, dsl.TypeFloat, low.TypeOf(low.Expr))
	assert.Equal(t, "q - kv + 0.0", format.Expr(low.Expr))
}

func TestLowerAPI(t *testing.T) {
	src := "param W = 64\nbuffer doc: i32[KV]\nmask same(b, h, q, kv) = doc[q] == doc[kv] and q - kv < W\n"
	p, diags := checkSource(t, src, nil)
	require.Empty(t, diags)
	tests := []struct {
		expr, want, diag string
	}{
		{"same", "doc[q] == doc[kv] and q - kv < 64", ""},
		{"and_masks(causal, sliding_window(W))", "q >= kv and (q >= kv and q - kv <= 64)", ""},
		{"softcap(2)", "2 * tanh(score / 2)", ""},
		{"sliding_window", "", "E046"},
		{"nope", "", "E020"},
		{"1 + 2", "", "E054"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			e, pd := parseExprIn(t, p, tt.expr)
			require.Empty(t, pd)
			low, diags := p.LowerIn(dsl.NewSource("expr", []byte(tt.expr)), e)
			if tt.diag != "" {
				require.Len(t, diags, 1)
				assert.Equal(t, tt.diag, string(diags[0].Code), diags.Render())
				assert.Nil(t, low)
				return
			}
			require.Empty(t, diags, diags.Render())
			assert.Equal(t, tt.want, format.Expr(low.Expr))
			assert.Empty(t, loweredInvariants(p, low))
		})
	}
	low, diags := p.LowerMod("same")
	require.Empty(t, diags)
	assert.Equal(t, "doc[q] == doc[kv] and q - kv < 64", format.Expr(low.Expr))
	low, diags = p.LowerMod("causal")
	require.Empty(t, diags)
	assert.Equal(t, "q >= kv", format.Expr(low.Expr))
	_, diags = p.LowerMod("missing")
	require.Len(t, diags, 1)
	assert.Equal(t, CodeUnknownName, diags[0].Code)
}

// parseExprIn parses text as an expression to lower in p.
func parseExprIn(t *testing.T, p *Program, text string) (dsl.Expr, dsl.Diagnostics) {
	t.Helper()
	return parser.ParseExpr("expr", text)
}

func fmtExpr(e dsl.Expr) string { return format.Expr(e) }

// TestLowerConcurrent lowers from several goroutines: Lower must not write
// to the Program (run with -race).
func TestLowerConcurrent(t *testing.T) {
	src, err := os.ReadFile("testdata/lower.flex")
	require.NoError(t, err)
	p, diags := checkSource(t, string(src), nil)
	require.False(t, diags.HasErrors())
	done := make(chan string)
	for range 4 {
		go func() {
			var out strings.Builder
			for _, m := range p.Mods {
				if low, _ := p.LowerMod(m.Name); low != nil {
					out.WriteString(format.Expr(low.Expr) + "\n")
				}
			}
			done <- out.String()
		}()
	}
	first := <-done
	for range 3 {
		assert.Equal(t, first, <-done)
	}
	assert.NotEmpty(t, first)
}
