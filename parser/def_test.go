package parser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

// TestDefForms pins how Python function declarations and the torch
// spellings of expressions parse.
func TestDefForms(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"mask", "def causal(b, h, q_idx, kv_idx):\n    return q_idx >= kv_idx\n",
			"def mask causal(b h q_idx kv_idx): return (cmp q_idx >= kv_idx)"},
		{"one line", "def causal(b, h, q, kv): return q >= kv\n",
			"def mask causal(b h q kv): return (cmp q >= kv)"},
		{"score with reassignment", "def cap(score, b, h, q, kv):\n    score = score / 30.0\n    score = torch.tanh(score)\n    return score * 30.0\n",
			"def score cap(score b h q kv): score = (/ score 30.0=30); score = (call torch.tanh score); return (* score 30.0=30)"},
		{"factory", "def window(W: int) -> Tensor:\n    \"\"\"doc\"\"\"\n    def inner(b, h, q, kv):\n        d = (q - kv).abs()\n        return d <= W\n    return inner\n",
			"def mask window(W)(b h q kv) inner inner: d = (call (. (paren (- q kv)) abs)); return (cmp d <= W)"},
		{"methods and keywords", "def s(score, b, h, q, kv):\n    return score + q.clamp(min=0).to(torch.int64) + torch.div(q, 2, rounding_mode='floor')\n",
			"def score s(score b h q kv): return (+ (+ score (call (. (call (. q clamp) (kw min 0=0)) to) torch.int64)) (call torch.div q 2=2 (kw rounding_mode 'floor'=\"floor\")))"},
		{"strings and module constants", "def s(score, b, h, q, kv):\n    return torch.where(q >= kv, score, float(\"-inf\")) + math.inf\n",
			"def score s(score b h q kv): return (+ (call torch.where (cmp q >= kv) score (call float \"-inf\"=\"-inf\")) math.inf)"},
		{"augmented assignment", "def s(score, b, h, q, kv):\n    d = q - kv\n    d //= 2\n    d += 1\n    return score + d\n",
			"def score s(score b h q kv): d = (- q kv); d = (// d 2=2); d = (+ d 1=1); return (+ score d)"},
		{"comments and blank lines in a body", "def m(b, h, q, kv):\n    # distance\n    d = q - kv\n\n    return d >= 0  # causal\n",
			"def mask m(b h q kv): d = (- q kv); return (cmp d >= 0=0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, diags := parser.ParseFile("t.flex", []byte(tt.src))
			if len(diags) > 0 {
				t.Fatal(diags.Render())
			}
			if len(f.Decls) != 1 {
				t.Fatalf("%d declarations", len(f.Decls))
			}
			if got := declDump(f.Decls[0]); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			m := f.Decls[0].(*dsl.ModDecl)
			if !m.Def || !m.Body.Def {
				t.Errorf("not marked as a def")
			}
			if m.Sp.End != len(tt.src)-1 && tt.name != "comments and blank lines in a body" {
				t.Errorf("span ends at %d, text at %d", m.Sp.End, len(tt.src)-1)
			}
		})
	}
}

// TestDefSplitsAtTopLevelOnly checks that a top-level def starts a new
// piece (so an error in one def leaves the next one parsed) while a
// factory's indented inner def does not.
func TestDefSplitsAtTopLevelOnly(t *testing.T) {
	src := "def f(W):\n    def g(b, h, q, kv):\n        return q - kv <= W\n    return g\ndef broken(b, h, q, kv):\n    return q >=\ndef ok(b, h, q, kv):\n    return q >= kv\n"
	if got := parser.DeclStarts([]byte(src)); len(got) != 3 {
		t.Errorf("DeclStarts = %v, want 3 pieces", got)
	}
	f, diags := parser.ParseFile("t.flex", []byte(src))
	if len(diags) != 1 || len(f.Decls) != 2 {
		t.Errorf("%d diagnostics, %d declarations; want 1 and 2:\n%s", len(diags), len(f.Decls), diags.Render())
	}
}

// TestMethodLexing checks where a `.` selects a method and where it is part
// of a module name.
func TestMethodLexing(t *testing.T) {
	for src, want := range map[string]string{
		"d.abs()":           "(call (. d abs))",
		"(q - kv).abs()":    "(call (. (paren (- q kv)) abs))",
		"torch.abs(d)":      "(call torch.abs d)",
		"x.to(torch.int32)": "(call (. x to) torch.int32)",
		"a.b.c()":           "(call (. (. a b) c))",
		"math.inf":          "math.inf",
		"f(x).float()":      "(call (. (call f x) float))",
		"1.5":               "1.5=1.5",
	} {
		e, diags := parser.ParseExpr("e", src)
		if len(diags) > 0 {
			t.Errorf("%s: %s", src, diags.Render())
			continue
		}
		if got := sexpr(e); got != want {
			t.Errorf("%s: got %s, want %s", src, got, want)
		}
	}
}

// TestDeclStartsSkipDocstrings checks that a line inside a docstring never
// starts a piece, whatever it looks like, while quotes in comments and in
// one-line strings open no docstring.
func TestDeclStartsSkipDocstrings(t *testing.T) {
	src := "def f(b, h, q_idx, kv_idx):\n    \"\"\"Example:\ndef g(b, h, q_idx, kv_idx):\nmask m(b, h, q, kv) = q\n    \"\"\"\n    return q_idx >= kv_idx\n" +
		"def g(b, h, q_idx, kv_idx):\n    return q_idx <= kv_idx  # '''\n" +
		"def s(score, b, h, q_idx, kv_idx):\n    return score + float(\"'''\")\n" +
		"mask z(b, h, q, kv) = q >= kv\n"
	if got := parser.DeclStarts([]byte(src)); len(got) != 4 {
		t.Errorf("DeclStarts = %v, want 4 pieces", got)
	}
	f, diags := parser.ParseFile("t.flex", []byte(src))
	if len(diags) > 0 || len(f.Decls) != 4 {
		t.Errorf("%d declarations, diagnostics:\n%s", len(f.Decls), diags.Render())
	}
}

// TestPythonReadPast pins the Python that real FlexAttention code carries
// and the parser now takes as Python does (issue 28): trailing commas in a
// multi-line def, default values and any annotation, decorators that do not
// change the function (a note), `fn.__name__ = ...`, string statements and
// imports (a note for a module .flex does not mirror) (kept as comments for
// fmt, no meaning).
func TestPythonReadPast(t *testing.T) {
	tests := []struct {
		name, src, want string
		kept            []string // the lines read past, as comments
		notes           int
	}{
		{"trailing comma", "def causal(\n    b,\n    h,\n    q_idx,\n    kv_idx,\n):\n    return q_idx >= kv_idx\n",
			"def mask causal(b h q_idx kv_idx): return (cmp q_idx >= kv_idx)", nil, 0},
		{"defaults and annotations", "def gen(pair: tuple[int, int], w: int | None = 4, c=True,):\n    def m(b, h, q, kv):\n        return q - kv <= w\n    return m\n",
			"def mask gen(pair w c)(b h q kv) inner m: return (cmp (- q kv) <= w)", nil, 0},
		{"decorators", "@lru_cache\n@functools.lru_cache(maxsize=None)  # cached\n@torch.compile(fullgraph=True)\ndef causal(b, h, q, kv):\n    return q >= kv\n",
			"def mask causal(b h q kv): return (cmp q >= kv)", []string{"@lru_cache", "@functools.lru_cache(maxsize=None)  # cached", "@torch.compile(fullgraph=True)"}, 3},
		{"staticmethod", "@staticmethod\ndef causal(b, h, q, kv):\n    return q >= kv\n",
			"def mask causal(b h q kv): return (cmp q >= kv)", []string{"@staticmethod"}, 1},
		{"__name__", "def gen(w):\n    def m(b, h, q, kv):\n        return q - kv <= w\n    m.__name__ = f\"window_{w}\"\n    return m\n",
			"def mask gen(w)(b h q kv) inner m: return (cmp (- q kv) <= w)", []string{"m.__name__ = f\"window_{w}\""}, 0},
		{"imports", "import torch\nimport torch.nn.functional as F\nfrom functools import partial\nfrom torch.nn.attention.flex_attention import (\n    and_masks,\n    or_masks,\n)\nfrom typing import Optional\ndef causal(b, h, q, kv):\n    import math\n    return q >= kv\n",
			"def mask causal(b h q kv): return (cmp q >= kv)", []string{"import torch", "import torch.nn.functional as F", "from functools import partial",
				"from torch.nn.attention.flex_attention import (\n    and_masks,\n    or_masks,\n)", "from typing import Optional", "import math"}, 0},
		{"import of an unknown module", "from mymodels.attention import helpers  # ours\ndef causal(b, h, q, kv):\n    return q >= kv\n",
			"def mask causal(b h q kv): return (cmp q >= kv)", []string{"from mymodels.attention import helpers  # ours"}, 1},
		{"string statement", "def m(b, h, q, kv):\n    \"\"\"doc\"\"\"\n    d = q - kv\n    \"\"\"a note\n    over lines\"\"\"\n    'one more'\n    return d >= 0\n",
			"def mask m(b h q kv): d = (- q kv); return (cmp d >= 0=0)", []string{"\"\"\"a note\n    over lines\"\"\"", "'one more'"}, 0},
		{"module docstring", "\"\"\"Masks of our model.\"\"\"\nimport torch\n\"a string between defs\"\ndef m(b, h, q, kv):\n    \"\"\"doc\"\"\"\n    return q >= kv\n",
			"def mask m(b h q kv): return (cmp q >= kv)", []string{"\"\"\"Masks of our model.\"\"\"", "import torch", "\"a string between defs\""}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, diags := parser.ParseFile("t.flex", []byte(tt.src))
			if diags.HasErrors() {
				t.Fatal(diags.Render())
			}
			if len(diags) != tt.notes {
				t.Errorf("%d notes, want %d:\n%s", len(diags), tt.notes, diags.Render())
			}
			for _, d := range diags {
				if d.Severity != dsl.SeverityNote || d.Code != parser.CodeDecorator && d.Code != parser.CodeImport {
					t.Errorf("unexpected diagnostic %s", d.Message)
				}
			}
			var decls []dsl.Decl
			decls = append(decls, f.Decls...)
			if len(decls) != 1 {
				t.Fatalf("%d declarations", len(decls))
			}
			if got := declDump(decls[0]); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			var kept []string
			for _, c := range f.Comments {
				if c.Python {
					kept = append(kept, c.Text)
				}
			}
			if len(kept) != len(tt.kept) {
				t.Fatalf("kept %q, want %q", kept, tt.kept)
			}
			for i := range kept {
				if kept[i] != tt.kept[i] {
					t.Errorf("kept %q, want %q", kept[i], tt.kept[i])
				}
			}
		})
	}
}

// TestFlatDefErrors pins the errors of defs with if/elif/else, assert and
// pass, whose blocks the parser builds from the lines' columns.
func TestFlatDefErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"def m(b, h, q, kv):\n    if True:\n    return q >= kv\n",
			"t.flex:2:5: error[E071]: expected an indented block after `if`"},
		{"def m(b, h, q, kv):\n    pass\n        return q >= kv\n",
			"t.flex:3:9: error[E071]: unexpected indent in def m"},
		{"def m(b, h, q, kv):\n    if True:\n        pass\n      return q >= kv\n",
			"t.flex:4:7: error[E071]: unindent does not match the statements above in def m"},
		{"def m(b, h, q, kv):\n    pass\n    else:\n        return q >= kv\n",
			"t.flex:3:5: error[E011]: `else` without an `if` before it in def `m`"},
		{"def f(w):\n    def m(b, h, q, kv):\n        pass\n        return q >= kv\n    if w:\n        pass\n    return m\n",
			"t.flex:5:5: error[E072]: factory f may hold, after its inner def, only assignments of mods and `return`"},
		{"def f(w):\n    if w:\n        return 3\n    def m(b, h, q, kv):\n        pass\n        return q >= kv\n    return m\n",
			"t.flex:3:9: error[E072]: factory f returns before its inner def"},
	}
	for _, tt := range tests {
		_, diags := parser.ParseFile("t.flex", []byte(tt.src))
		if len(diags) != 1 {
			t.Errorf("%q: %d diagnostics:\n%s", tt.src, len(diags), diags.Render())
			continue
		}
		pos := diags[0].Position()
		if got := fmt.Sprintf("t.flex:%d:%d: error[%s]: %s", pos.Line, pos.Column, diags[0].Code, diags[0].Message); got != tt.want {
			t.Errorf("%q:\n got  %s\n want %s", tt.src, got, tt.want)
		}
	}
}

// TestPythonModuleConstant checks that `NAME = value` from the first column
// of a line, a Python module constant pasted with the def that reads it (the
// FlexAttention blog's `SLIDING_WINDOW = 1024`), starts a piece and is a
// param written the Python way, while a setting inside an attention
// block's braces (even one not indented), a continuation line inside
// brackets and an indented assignment do not start one.
func TestPythonModuleConstant(t *testing.T) {
	src := "SLIDING_WINDOW = 1024\n" +
		"def sliding_window_causal(b, h, q_idx, kv_idx):\n    window_mask = q_idx - kv_idx <= SLIDING_WINDOW\n    return window_mask\n" +
		"CAP = (\n30.0)  # a ( in a comment\n" +
		"ON = True\n" +
		"attention a {\nmask = sliding_window_causal\n}\n"
	starts := parser.DeclStarts([]byte(src))
	if len(starts) != 5 {
		t.Errorf("DeclStarts = %v, want 5 pieces", starts)
	}
	f, diags := parser.ParseFile("t.flex", []byte(src))
	if len(diags) > 0 || len(f.Decls) != 5 {
		t.Fatalf("%d declarations, diagnostics:\n%s", len(f.Decls), diags.Render())
	}
	for i, want := range map[int]string{0: "param SLIDING_WINDOW = 1024=1024", 2: "param CAP = (paren 30.0=30)", 3: "param ON = True=true"} {
		d, ok := f.Decls[i].(*dsl.ParamDecl)
		if !ok || !d.Python || declDump(d) != want {
			t.Errorf("decl %d = %s, want the Python constant %s", i, declDump(f.Decls[i]), want)
			continue
		}
		if got := string(src[d.Sp.Start:d.Sp.End]); !strings.HasPrefix(got, d.Name.Name+" = ") {
			t.Errorf("decl %d covers %q", i, got)
		}
	}
	if a, ok := f.Decls[4].(*dsl.AttentionDecl); !ok || len(a.Settings) != 1 {
		t.Errorf("decl 4 = %s, want the attention block with its setting", declDump(f.Decls[4]))
	}
	// `==` is no assignment; a keyword is no name.
	for _, src := range []string{"X == 1\n", "pass = 1\n"} {
		if _, diags := parser.ParseFile("t.flex", []byte(src)); len(diags) == 0 {
			t.Errorf("%q parsed without a diagnostic", src)
		}
	}
}

// TestKeywordOnlyParams checks Python's bare `*`: the parameters after it
// are counted in KwOnly and make the def a helper (functools.partial binds
// them by name), may have defaults in any order, and a second star, a star
// that nothing follows, `*name` after it and a star in a factory's inner
// def are positioned errors; a factory's own star counts its keyword-only
// parameters in FactoryKwOnly.
func TestKeywordOnlyParams(t *testing.T) {
	f, diags := parser.ParseFile("t.flex", []byte("def m(b, h, q_idx, kv_idx, *, context_len, shift=1, w):\n    return q_idx + context_len >= kv_idx\n"))
	if len(diags) > 0 {
		t.Fatal(diags.Render())
	}
	d := f.Decls[0].(*dsl.ModDecl)
	if d.KwOnly != 3 || !d.Helper || len(d.Params) != 7 {
		t.Errorf("KwOnly %d, Helper %v, %d params; want 3, true, 7", d.KwOnly, d.Helper, len(d.Params))
	}
	f, diags = parser.ParseFile("t.flex", []byte("def make(n, *, w, v=2):\n    def m(b, h, q, kv):\n        return q - kv < w * n\n    return m\n"))
	if len(diags) > 0 {
		t.Fatal(diags.Render())
	}
	if d := f.Decls[0].(*dsl.ModDecl); d.FactoryKwOnly != 2 || d.KwOnly != 0 || d.Helper || len(d.FactoryParams) != 3 {
		t.Errorf("factory: FactoryKwOnly %d, KwOnly %d, Helper %v, %d factory params; want 2, 0, false, 3",
			d.FactoryKwOnly, d.KwOnly, d.Helper, len(d.FactoryParams))
	}
	// A bare `*` first: every parameter by name.
	f, diags = parser.ParseFile("t.flex", []byte("def sliding(*, window: int, left=0):\n    return lambda b, h, q, kv: q - kv < window + left\n"))
	if len(diags) > 0 {
		t.Fatal(diags.Render())
	}
	if d := f.Decls[0].(*dsl.ModDecl); d.FactoryKwOnly != 2 || len(d.FactoryParams) != 2 {
		t.Errorf("bare star first: FactoryKwOnly %d, %d factory params; want 2, 2", d.FactoryKwOnly, len(d.FactoryParams))
	}
	for src, want := range map[string]string{
		"def m(b, h, *, x, *, y):\n    return b\n":                                         "1:19: error[E072]: a second `*` in one parameter list",
		"def m(b, h, *):\n    return b\n":                                                  "1:13: error[E072]: a bare `*` must be followed by a parameter",
		"def m(b, h, *, *x):\n    return b\n":                                              "error[E072]: `*x` after a bare `*`",
		"def make(n):\n    def m(b, h, q, *, kv):\n        return q >= kv\n    return m\n": "2:20: error[E072]: parameters taken only by name (after a bare `*`) in the mod of factory make",
		"def make(n):\n    def m(*, b, h, q, kv):\n        return q >= kv\n    return m\n": "2:11: error[E072]: parameters taken only by name (after a bare `*`) in the mod of factory make",
		"def m(*, *x):\n    return x\n":                                                    "error[E072]: `*x` after a bare `*`",
		"def m(*,):\n    return 1\n":                                                       "error[E072]: a bare `*` must be followed by a parameter",
	} {
		_, diags := parser.ParseFile("t.flex", []byte(src))
		if got := diags.Render(); !strings.Contains(got, want) {
			t.Errorf("%q: got\n%s\nwant %s", src, got, want)
		}
	}
}

// TestLambdaDecl checks `NAME = lambda params: expr` at the top of a file,
// as notebooks and PyTorch's tests write mods: the def it is (a mask of
// four parameters, a score of five, else a helper, defaults kept), printed
// back as a lambda.
func TestLambdaDecl(t *testing.T) {
	src := "causal = lambda b, h, q_idx, kv_idx: q_idx >= kv_idx\n" +
		"soft = lambda score, b, h, q, kv: score * 2\n" +
		"near = lambda d, n=4: d < n\n"
	f, diags := parser.ParseFile("t.flex", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags.Render())
	}
	want := []struct {
		kind   dsl.ModKind
		helper bool
		params int
	}{{dsl.MaskMod, false, 4}, {dsl.ScoreMod, false, 5}, {dsl.MaskMod, true, 2}}
	for i, w := range want {
		d, ok := f.Decls[i].(*dsl.ModDecl)
		if !ok || !d.Lambda || !d.Def || d.Helper != w.helper || len(d.Params) != w.params || !w.helper && d.Kind != w.kind {
			t.Errorf("decl %d = %s, want a lambda of %d parameters (helper %v)", i, declDump(f.Decls[i]), w.params, w.helper)
		}
	}
	if d := f.Decls[2].(*dsl.ModDecl); len(d.Defaults) != 2 || d.Defaults[1] == nil {
		t.Errorf("near's defaults = %v", d.Defaults)
	}
	if _, diags := parser.ParseFile("t.flex", []byte("f = lambda a=1, b: a\n")); !strings.Contains(diags.Render(), "parameter b without a default follows a parameter with one") {
		t.Errorf("defaults out of order: %s", diags.Render())
	}
}

// TestLambdaInPlace: a lambda written in an attention setting (the mask
// itself, an argument of or_masks, the score) is a def of its own, named
// after the block and declared before it, that the setting's name stands
// for (Ident.Lambda); anywhere else it is E011.
func TestLambdaInPlace(t *testing.T) {
	src := "attention local {\n" +
		"    mask = or_masks(causal, lambda b, h, q_idx, kv_idx: kv_idx < 64)\n" +
		"    score = lambda score, b, h, q_idx, kv_idx: score * 2\n" +
		"}\n"
	f, diags := parser.ParseFile("t.flex", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags.Render())
	}
	if len(f.Decls) != 3 {
		t.Fatalf("%d declarations, want the two lambdas' and the block", len(f.Decls))
	}
	for i, w := range []struct {
		name   string
		kind   dsl.ModKind
		params int
	}{{"local_lambda1", dsl.MaskMod, 4}, {"local_lambda2", dsl.ScoreMod, 5}} {
		d, ok := f.Decls[i].(*dsl.ModDecl)
		if !ok || !d.InPlace || !d.Lambda || d.Name.Name != w.name || d.Kind != w.kind || len(d.Params) != w.params {
			t.Errorf("decl %d = %s, want the in-place lambda %s", i, declDump(f.Decls[i]), w.name)
			continue
		}
		if got := src[d.Sp.Start:d.Sp.End]; !strings.HasPrefix(got, "lambda ") {
			t.Errorf("%s spans %q, want the lambda", w.name, got)
		}
	}
	a := f.Decls[2].(*dsl.AttentionDecl)
	call, ok := a.Settings[0].Value.(*dsl.CallExpr)
	if !ok || len(call.Args) != 2 {
		t.Fatalf("mask = %T", a.Settings[0].Value)
	}
	if id, ok := call.Args[1].(*dsl.Ident); !ok || id.Lambda != f.Decls[0] || id.Name != "local_lambda1" {
		t.Errorf("or_masks' second argument = %#v, want the name of the first lambda", call.Args[1])
	}
	if id, ok := a.Settings[1].Value.(*dsl.Ident); !ok || id.Lambda != f.Decls[1] {
		t.Errorf("score = %#v, want the name of the second lambda", a.Settings[1].Value)
	}
	// A lambda inside a lambda: each its own name, the inner one first.
	f, diags = parser.ParseFile("t.flex", []byte("attention a {\n    mask = lambda b, h, q, kv: (lambda x: x)(q) >= kv\n}\n"))
	if len(diags) > 0 || len(f.Decls) != 3 {
		t.Fatalf("nested: %d declarations: %s", len(f.Decls), diags.Render())
	}
	inner, outer := f.Decls[0].(*dsl.ModDecl), f.Decls[1].(*dsl.ModDecl)
	if inner.Name.Name != "a_lambda2" || len(inner.Params) != 1 || outer.Name.Name != "a_lambda1" || len(outer.Params) != 4 {
		t.Errorf("nested: %s, %s", declDump(inner), declDump(outer))
	}
	if id, ok := f.Decls[2].(*dsl.AttentionDecl).Settings[0].Value.(*dsl.Ident); !ok || id.Lambda != outer {
		t.Errorf("nested: the setting names %#v, want the outer lambda", f.Decls[2].(*dsl.AttentionDecl).Settings[0].Value)
	}
	for _, bad := range []string{
		"def m(b, h, q, kv):\n    x = lambda b, h, q, kv: q >= kv\n    return x(b, h, q, kv)\n",
		"param P = lambda x: x\n",
		"mask m(b, h, q, kv) = (lambda x: x)(q) >= kv\n",
	} {
		_, diags := parser.ParseFile("t.flex", []byte(bad))
		if r := diags.Render(); !strings.Contains(r, "error[E011]: a lambda is a mod only as an attention setting") {
			t.Errorf("%q: %s", bad, r)
		}
	}
}

// TestFactoryReturnsLambda: a def whose body returns a lambda (trainers'
// usual factory, `def sliding(w): return lambda b, h, q_idx, kv_idx: ...`)
// is the factory whose inner def is that lambda: its made-up name spans the
// keyword, statements before the return run at the factory's call, and the
// lambda's parameter count picks the kind. A list display is kept only
// inside a type annotation (`-> Callable[[int, int, Tensor, Tensor],
// Tensor]`).
func TestFactoryReturnsLambda(t *testing.T) {
	src := "def sliding(window: int) -> Callable[[int, int, Tensor, Tensor], Tensor]:\n" +
		"    half = window // 2\n" +
		"    return lambda b, h, q_idx, kv_idx: (q_idx - kv_idx).abs() <= half\n" +
		"def capped(cap):\n" +
		"    return lambda score, b, h, q_idx, kv_idx: cap * torch.tanh(\n" +
		"        score / cap\n" +
		"    )\n" +
		"def shifted(mod, offset):\n" +
		"    fn = lambda b, h, q_idx, kv_idx: mod(b, h, q_idx + offset, kv_idx)\n" +
		"    return fn\n" +
		"def prefix_lm(prefix):\n" +
		"    return or_masks(causal, lambda b, h, q_idx, kv_idx: kv_idx < prefix)\n" +
		"def banded(w):\n" +
		"    half = w // 2\n" +
		"    near = lambda b, h, q_idx, kv_idx: (q_idx - kv_idx).abs() <= half\n" +
		"    both = and_masks(near, causal)\n" +
		"    return both\n"
	f, diags := parser.ParseFile("t.flex", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags.Render())
	}
	for i, w := range []struct {
		name, inner, end string
		kind             dsl.ModKind
		params, pre      int
	}{{"sliding", "sliding_lambda", "<= half", dsl.MaskMod, 4, 1}, {"capped", "capped_lambda", "score / cap\n    )", dsl.ScoreMod, 5, 0},
		{"shifted", "fn", "return fn", dsl.MaskMod, 4, 0}, {"prefix_lm", "prefix_lm_lambda", "< prefix)", dsl.MaskMod, 4, 0},
		{"banded", "near", "return both", dsl.MaskMod, 4, 1}} {
		d := f.Decls[i].(*dsl.ModDecl)
		if !d.InnerLambda || d.Inner == nil || d.Inner.Name != w.inner || d.Kind != w.kind || len(d.Params) != w.params ||
			len(d.FactoryParams) < 1 || len(d.FactoryPre) != w.pre || (d.FactoryResult != nil) != (w.name == "prefix_lm" || w.name == "banded") {
			t.Errorf("%s = %s", w.name, declDump(d))
			continue
		}
		if got, want := src[d.Inner.Sp.Start:d.Inner.Sp.End], map[bool]string{true: w.inner, false: "lambda"}[w.name == "shifted" || w.name == "banded"]; got != want {
			t.Errorf("%s's inner name spans %q, want %q", w.name, got, want)
		}
		if got := src[d.Sp.Start:d.Sp.End]; !strings.HasPrefix(got, "def "+w.name) || !strings.HasSuffix(got, w.end) {
			t.Errorf("%s spans %q, want the def through its lambda's end", w.name, got)
		}
	}
	if call, ok := f.Decls[3].(*dsl.ModDecl).FactoryResult.(*dsl.CallExpr); !ok || len(call.Args) != 2 ||
		call.Args[1].(*dsl.Ident).Name != "prefix_lm_lambda" {
		t.Errorf("prefix_lm's result = %#v, want or_masks(causal, prefix_lm_lambda)", f.Decls[3].(*dsl.ModDecl).FactoryResult)
	}
	if an := f.Decls[0].(*dsl.ModDecl).Annotations; an == nil || an.Returns == nil || an.Returns.Name != "Callable[[int, int, Tensor, Tensor], Tensor]" {
		t.Errorf("sliding's return annotation = %#v", an)
	}
	for _, c := range []struct{ src, want string }{
		{"def f(w):\n    return lambda x: x + w\n", "error[E072]: the lambda that def f returns has 1 parameters"},
		{"def f(w):\n    return or_masks(lambda b, h, q, kv: q >= kv, lambda b, h, q, kv: kv < w)\n", "error[E011]: a lambda is a mod only"},
		{"def f(w):\n    return (lambda b, h, q, kv: q - kv < w)(0, 0, 1, 0)\n", "error[E011]: a lambda is a mod only"},
		{"def m(b, h, q, kv):\n    x = lambda b, h, q, kv: q >= kv\n    y = x(b, h, q, kv)\n    return y\n", "error[E011]: a lambda is a mod only"},
		{"mask m(b, h, q, kv) = f([1, 2])\n", "error[E011]: a list is not a value in maskc"},
		{"def f(b, h, q_idx, kv_idx) -> list[[int]]:\n    return q_idx >= kv_idx\n", ""},
	} {
		_, diags := parser.ParseFile("t.flex", []byte(c.src))
		r := diags.Render()
		if !rendersAs(r, c.want) {
			t.Errorf("%q: %s, want %q", c.src, r, c.want)
		}
	}
}

// rendersAs reports whether r, rendered diagnostics, is what a table row
// wants: nothing for want "", else a text holding want.
func rendersAs(r, want string) bool {
	if want == "" {
		return r == ""
	}
	return strings.Contains(r, want)
}

// TestDelReadPast: `del NAME, ...` (Python's way of marking unused
// parameters) is read past and kept for fmt; reading a name after it is
// E081 within the del's block, unless a statement at its indentation binds
// it again; an inner def's del ends with the inner def.
func TestDelReadPast(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"def m(b, h, q_idx, kv_idx):\n    del b, h,\n    return q_idx >= kv_idx\n", ""},
		{"def m(b, h, q_idx, kv_idx):\n    del b\n    b = 2\n    return q_idx >= kv_idx + b\n", ""},
		{"def m(b, h, q_idx, kv_idx):\n    del b  # unused\n    return q_idx.b >= kv_idx\n", ""},
		{"def f(w):\n    def inner(b, h, q_idx, kv_idx):\n        del b\n        return q_idx - kv_idx < w\n    b = w\n    return inner\n", ""},
		{"def m(b, h, q_idx, kv_idx):\n    del b\n    if q_idx > 0:\n        b = 1\n    return b\n", "error[E081]: b is read after `del b` on line 2"},
		{"def m(b, h, q_idx, kv_idx):\n    del q_idx\n    return torch.where(kv_idx > 0,\n  q_idx, 0)\n", "error[E081]: q_idx is read after"},
	} {
		f, diags := parser.ParseFile("t.flex", []byte(c.src))
		r := diags.Render()
		if !rendersAs(r, c.want) {
			t.Errorf("%q: %q, want %q", c.src, r, c.want)
		}
		if c.want == "" && (len(f.Comments) == 0 || !strings.HasPrefix(f.Comments[0].Text, "del ") && !strings.Contains(c.src, "inner")) {
			t.Errorf("%q: the del is not kept as a comment: %v", c.src, f.Comments)
		}
	}
}
