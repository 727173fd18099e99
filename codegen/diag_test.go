package codegen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// generateDiags runs Generate on every attention of a .flex text and
// returns the rendered diagnostics, checking that Diagnose gives the same.
func generateDiags(t *testing.T, text string) dsl.Diagnostics {
	t.Helper()
	p := checkSource(t, "in.flex", text)
	var all dsl.Diagnostics
	for _, a := range p.Attentions {
		k, diags := Generate(p, a, Options{})
		if diags.HasErrors() != (k == nil) {
			t.Errorf("Generate returned kernel %v with errors %v", k != nil, diags.HasErrors())
		}
		if d := Diagnose(p, a, Options{}); d.Render() != diags.Render() {
			t.Errorf("Diagnose gives\n%s\nGenerate gives\n%s", d.Render(), diags.Render())
		}
		all = append(all, diags...)
	}
	return all
}

// lowered builds a hand-made lowered mask for the codes the checker makes
// unreachable from source text.
func lowered(e dsl.Expr, types map[dsl.Expr]dsl.Type, bufs ...*dsl.BufferDecl) *dsl.Lowered {
	return &dsl.Lowered{Kind: dsl.MaskMod, Name: "test", Expr: e, Types: types, Buffers: bufs}
}

func TestDiagnostics(t *testing.T) {
	nineBuffers := ""
	var reads []string
	for i := 0; i < 9; i++ {
		nineBuffers += fmt.Sprintf("buffer t%d: i32[KV]\n", i)
		reads = append(reads, fmt.Sprintf("t%d[kv]", i))
	}
	// tanh applied 1500 times: its derivative has more than grad.MaxNodes nodes.
	deep := "score s(score, b, h, q, kv) {\n    let t0 = tanh(score)\n"
	for i := 1; i < 1500; i++ {
		deep += fmt.Sprintf("    let t%d = tanh(t%d)\n", i, i-1)
	}
	deep += "    t1499\n}\nattention a {\n    score = s\n}\n"
	tests := []struct {
		code  dsl.Code
		text  string // a .flex file, or "" when lower builds the input
		want  string // the first line of the rendered diagnostic
		lower func() (*dsl.Source, *dsl.Lowered)
	}{
		{code: CodeHeadDim, text: "attention a {\n    mask = causal\n    head_dim = 96\n}\n",
			want: "in.flex:3:16: error[E300]: a generated kernel has no configuration for head_dim 96"},
		{code: CodeDType, text: "attention a {\n    mask = causal\n    dtype = fp8\n}\n",
			want: "in.flex:3:13: error[E301]: a generated kernel has no configuration for dtype fp8"},
		{code: CodeLayout, text: "attention a {\n    mask = causal\n    layout = thd\n}\n",
			want: "in.flex:3:14: error[E302]: a generated kernel takes bshd or bhsd tensors, not thd"},
		{code: CodeTooManyBuffers, text: nineBuffers + "mask m(b, h, q, kv) = " + strings.Join(reads, " + ") + " > 0\nattention a {\n    mask = m\n}\n",
			want: "in.flex:9:8: error[E303]: buffer t8 is captured buffer number 9 of 9; a generated kernel takes at most 8"},
		{code: CodeBufferRank, text: "buffer t: f32[H, 2, 2, 2, 2, 2, 2, 4, 4]\nscore s(score, b, h, q, kv) = score + t[h, 0, 1, 0, 1, 0, 1, 1, 2]\nattention a {\n    score = s\n}\n",
			want: "in.flex:1:1: error[E304]: buffer t has 9 dimensions; a generated kernel reads buffers of 0 to 8 dimensions"},
		// check refuses this from source (E090); the generator keeps its guard.
		{code: CodePowExponent, want: "t.flex:1:6: error[E306]: int power needs a non-negative constant exponent", lower: func() (*dsl.Source, *dsl.Lowered) {
			src := dsl.NewSource("t.flex", []byte("q ** h >= kv"))
			q, h, kv := &dsl.VarRef{Var: dsl.VarQ}, &dsl.VarRef{Sp: dsl.Span{Start: 5, End: 6}, Var: dsl.VarH}, &dsl.VarRef{Var: dsl.VarKV}
			pow := &dsl.BinaryExpr{Sp: dsl.Span{Start: 0, End: 6}, Op: dsl.OpPow, X: q, Y: h}
			cmp := &dsl.CompareExpr{Sp: dsl.Span{Start: 0, End: 12}, Operands: []dsl.Expr{pow, kv}, Ops: []dsl.Op{dsl.OpGE}}
			return src, lowered(cmp, map[dsl.Expr]dsl.Type{cmp: dsl.TypeBool, pow: dsl.TypeInt, q: dsl.TypeInt, h: dsl.TypeInt, kv: dsl.TypeInt})
		}},
		{code: CodeIntOverflow, text: "mask m(b, h, q, kv) = q * 4611686018427387904 // 4611686018427387904 == q\nattention a {\n    mask = m\n}\n",
			want: "in.flex:1:23: error[E311]: int arithmetic q * 4611686018427387904 may overflow int64 (undefined in C, exact in Python)"},
		{code: CodeIntOverflow, text: "mask m(b, h, q, kv) = (q << 40) >> 40 == q\nattention a {\n    mask = m\n}\n",
			want: "in.flex:1:24: error[E311]: int arithmetic q << 40 may overflow int64 (undefined in C, exact in Python)"},
		{code: CodeUnsupported, text: "mask m(b, h, q, kv) = (q >> (kv - 3)) == 0\nattention a {\n    mask = m\n}\n",
			want: "in.flex:1:30: error[E305]: the shift count kv - 3 may be negative, where Python raises ValueError"},
		{code: CodeReadRange, text: "buffer rel: f32[8]\nscore s(score, b, h, q, kv) = score + rel[q - kv + 3]\nattention a {\n    mask = causal\n    score = s\n}\n",
			want: "in.flex:2:39: note[W320]: rel[q - kv + 3] stays inside rel[8] for Q <= 5; a call at larger sizes is refused before launch"},
		{code: CodeReadValues, text: "buffer idx: i32[KV]\nbuffer tab: f32[16]\nscore s(score, b, h, q, kv) = score + tab[idx[kv]]\nattention a {\n    score = s\n}\n",
			want: "in.flex:3:39: warning[W321]: the index of tab[idx[kv]] is computed from the values of idx, which no size bounds: a value that makes it fall outside tab[16] is not read; the kernel gives 0.0 instead and sets MASKC_STATUS_READ_OUT_OF_RANGE in its status word"},
		{code: CodeSetting, text: "attention a {\n    mask = causal\n    window = (16, 0)\n}\n",
			want: "in.flex:3:5: error[E309]: a generated kernel does not implement the window setting"},
		{code: CodeGradient, text: deep,
			want: "in.flex:1501:17: error[E310]: cannot differentiate score s: derivative too large: more than 1048576 nodes"},
		{code: CodeUnsupported, want: "t.flex:1:1: error[E305]: cannot generate code for a tuple", lower: func() (*dsl.Source, *dsl.Lowered) {
			src := dsl.NewSource("t.flex", []byte("(q, kv)"))
			tup := &dsl.TupleExpr{Sp: dsl.Span{Start: 0, End: 7}}
			return src, lowered(tup, map[dsl.Expr]dsl.Type{tup: dsl.TypeBool})
		}},
		{code: CodeBufferIndex, want: "t.flex:1:1: error[E307]: buffer t has 1 dimensions but is read with 2 indices", lower: func() (*dsl.Source, *dsl.Lowered) {
			src := dsl.NewSource("t.flex", []byte("t[q, kv]"))
			decl := &dsl.BufferDecl{Name: &dsl.Ident{Name: "t"}, DType: &dsl.Ident{Name: "bool"}, Dims: []dsl.Expr{&dsl.VarRef{Var: dsl.SizeKV}}}
			q, kv := &dsl.VarRef{Var: dsl.VarQ}, &dsl.VarRef{Var: dsl.VarKV}
			x := &dsl.IndexExpr{Sp: dsl.Span{Start: 0, End: 8}, X: &dsl.Ident{Name: "t"}, Indices: []dsl.Expr{q, kv}}
			return src, lowered(x, map[dsl.Expr]dsl.Type{x: dsl.TypeBool, q: dsl.TypeInt, kv: dsl.TypeInt}, decl)
		}},
		{code: CodeBufferDType, want: "t.flex:1:4: error[E308]: cannot read buffer t of element type \"u16\"", lower: func() (*dsl.Source, *dsl.Lowered) {
			src := dsl.NewSource("t.flex", []byte("t: u16[KV]"))
			decl := &dsl.BufferDecl{Sp: dsl.Span{Start: 0, End: 10}, Name: &dsl.Ident{Name: "t"}, DType: &dsl.Ident{Sp: dsl.Span{Start: 3, End: 6}, Name: "u16"}, Dims: []dsl.Expr{&dsl.VarRef{Var: dsl.SizeKV}}}
			q := &dsl.VarRef{Var: dsl.VarQ}
			x := &dsl.IndexExpr{X: &dsl.Ident{Name: "t"}, Indices: []dsl.Expr{q}}
			return src, lowered(x, map[dsl.Expr]dsl.Type{x: dsl.TypeBool, q: dsl.TypeInt}, decl)
		}},
	}
	covered := map[dsl.Code]bool{}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			covered[tt.code] = true
			var diags dsl.Diagnostics
			if tt.lower != nil {
				src, l := tt.lower()
				bufs, d := BufferTable(src, l)
				diags = append(diags, d...)
				if !d.HasErrors() {
					_, d = MaskFunc(src, l, bufs)
					diags = append(diags, d...)
				}
			} else {
				diags = generateDiags(t, tt.text)
			}
			var lines []string
			for _, d := range diags {
				lines = append(lines, d.Error())
				if d.Code == tt.code && d.Error() == tt.want {
					if d.Hint == "" && tt.lower == nil {
						t.Errorf("%s has no hint", d.Code)
					}
					return
				}
			}
			t.Errorf("want %q, got:\n%s", tt.want, strings.Join(lines, "\n"))
		})
	}
	for code := range Codes {
		if !covered[code] {
			t.Errorf("code %s has no test", code)
		}
		if (code < "E300" || code > "E399") && (code < "W300" || code > "W399") {
			t.Errorf("code %s is outside the code generator's ranges E300-E399, W300-W399", code)
		}
	}
}

// TestHeadDims: every head dim hipsrc supports generates a kernel whose
// launch, backward tiles and sources are that head dim's; the hint of the
// refusal names them.
func TestHeadDims(t *testing.T) {
	for _, d := range hipsrc.HeadDims {
		p := checkSource(t, "in.flex", fmt.Sprintf("attention a {\n    causal = true\n    head_dim = %d\n}\n", d))
		k, diags := Generate(p, p.Attentions[0], Options{})
		if diags.HasErrors() {
			t.Fatalf("head dim %d: %s", d, diags.Render())
		}
		want, _ := hipsrc.Launches(d, false)
		// causal: open columns and no score, the warp-specialized tile where
		// there is one, on two-tile steps where there are (pairSteps)
		tiles, _ := hipsrc.BwdTileDefines(d, hipsrc.BwdChoice{WarpSpecialized: true, PairQTiles: true})
		define := fmt.Sprintf("#define MASKC_HEAD_DIM %d\n", d)
		if k.HeadDim != d || k.Launch["amd"] != want["amd"] || k.Launch["nvidia"] != want["nvidia"] ||
			!strings.HasPrefix(k.Source, define) || !strings.HasPrefix(k.BwdSource, define) || !strings.Contains(k.BwdSource, tiles) {
			t.Errorf("head dim %d: kernel %d, launch %v, sources start %.40q", d, k.HeadDim, k.Launch, k.Source)
		}
		if n := k.Launch["amd"].SharedMemBytes; n > 64<<10 {
			t.Errorf("head dim %d: %d bytes of LDS", d, n)
		}
	}
	diags := generateDiags(t, "attention a {\n    causal = true\n    head_dim = 192\n}\n")
	if r := diags.Render(); !strings.Contains(r, "head_dim 192") || !strings.Contains(r, "use head_dim = 64, 128 or 256") {
		t.Errorf("head dim 192: %s", r)
	}
}
