package parser_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/parser"
)

func TestParseExprShapes(t *testing.T) {
	tests := []struct{ src, want string }{
		// Atoms.
		{"1024", "1024=1024"},
		{"1_000", "1_000=1000"},
		{"0x7f", "0x7f=127"},
		{"0o17", "0o17=15"},
		{"0b101", "0b101=5"},
		{"0", "0=0"},
		{"30.0", "30.0=30"},
		{"1e-4", "1e-4=0.0001"},
		{".5", ".5=0.5"},
		{"1.", "1.=1"},
		{"1_000.5", "1_000.5=1000.5"},
		{"True", "True=true"},
		{"false", "false=false"},
		{"inf", "inf"},
		{"torch.tanh(x)", "(call torch.tanh x)"},
		{"math.inf", "math.inf"},
		{"q_idx", "q_idx"},
		{"score", "score"},
		{"mask", "mask"},
		// Python precedence, lowest first.
		{"a if c else b", "(if c then a else b)"},
		{"a if c else b if d else e", "(if c then a else (if d then b else e))"},
		{"a or b and c", "(or a (and b c))"},
		{"a and b or c", "(or (and a b) c)"},
		{"not a and b", "(and (not a) b)"},
		{"not a == b", "(not (cmp a == b))"},
		{"not not a", "(not (not a))"},
		{"a == b | c", "(cmp a == (| b c))"},
		{"a | b & c", "(| a (& b c))"},
		{"a | b ^ c", "(| a (^ b c))"},
		{"a ^ b & c", "(^ a (& b c))"},
		{"a & b << c", "(& a (<< b c))"},
		{"a >> b + c", "(>> a (+ b c))"},
		{"a << b >> c", "(>> (<< a b) c)"},
		{"a == b ^ c", "(cmp a == (^ b c))"},
		{"a & b + c", "(& a (+ b c))"},
		{"a + b * c", "(+ a (* b c))"},
		{"a - b - c", "(- (- a b) c)"},
		{"a * b // c % d / e", "(/ (% (// (* a b) c) d) e)"},
		{"-a * b", "(* (- a) b)"},
		{"-2 ** 2", "(- (** 2=2 2=2))"},
		{"2 ** -1", "(** 2=2 (- 1=1))"},
		{"2 ** 3 ** 2", "(** 2=2 (** 3=3 2=2))"},
		{"2 ** -1 ** 2", "(** 2=2 (- (** 1=1 2=2)))"},
		{"-~+x", "(- (~ (+ x)))"},
		{"a ** b[i]", "(** a (index b i))"},
		{"q - kv <= W", "(cmp (- q kv) <= W)"},
		{"0 <= q - kv <= W", "(cmp 0=0 <= (- q kv) <= W)"},
		{"a < b == c != d > e >= f", "(cmp a < b == c != d > e >= f)"},
		{"x if a or b else y", "(if (or a b) then x else y)"},
		// Postfix.
		{"abs(q - kv)", "(call abs (- q kv))"},
		{"f()", "(call f)"},
		{"f(a, b,)", "(call f a b)"},
		{"sliding(1024)", "(call sliding 1024=1024)"},
		{"sliding(1024)(b, h, q, kv)", "(call (call sliding 1024=1024) b h q kv)"},
		{"doc[q]", "(index doc q)"},
		{"bias[h, q - kv + 4095]", "(index bias h (+ (- q kv) 4095=4095))"},
		{"where(q >= kv, score, -inf)", "(call where (cmp q >= kv) score (- inf))"},
		// Brackets.
		{"(a + b) * c", "(* (paren (+ a b)) c)"},
		{"((a))", "(paren (paren a))"},
		{"(1023, 0)", "(tuple 1023=1023 0=0)"},
		{"(x,)", "(tuple x)"},
		{"(a,\n b)", "(tuple a b)"},
		{"f(a,\n  # comment\n  b)", "(call f a b)"},
		{"\n\nq >= kv  # trailing\n", "(cmp q >= kv)"},
	}
	for _, tt := range tests {
		e, diags := parser.ParseExpr("e", tt.src)
		if len(diags) > 0 {
			t.Errorf("ParseExpr(%q): unexpected diagnostics:\n%s", tt.src, diags.Render())
			continue
		}
		if got := sexpr(e); got != tt.want {
			t.Errorf("ParseExpr(%q) = %s, want %s", tt.src, got, tt.want)
		}
	}
}

// sample holds every declaration form of the language.
const sample = `# comment to end of line
param WINDOW = 1024                 # compile-time constant: int, float or bool
param CAP = 30.0
param ON = True
buffer doc: i32[KV] segments        # captured tensor: dtype, dims, optional property
buffer slopes: f32[H]
buffer bias: f32[H, 8191]

mask causal(b, h, q_idx, kv_idx) = q_idx >= kv_idx
mask local(b, h, q, kv) = causal(b, h, q, kv) & (q - kv <= WINDOW)
mask same_doc(b, h, q, kv) = doc[q] == doc[kv]
mask dilated(b, h, q, kv) {
    let d = abs(q - kv)
    d <= 2048 and d % 2 == 0
}
mask semi(b, h, q, kv) { let d = q - kv; d >= 0 }
score softcap(score, b, h, q, kv) = CAP * tanh(score / CAP)
score alibi(s, b, h, q, kv) = s + slopes[h] * (kv - q)
mask sliding(W)(b, h, q, kv) = q >= kv and q - kv <= W

attention doc_layer {
    mask = and_masks(causal, same_doc)
    score = softcap
    layout = bshd
    head_dim = 128
}

attention swa_layer {          # trainer-style settings, no mask mod
    causal = true; window = (1023, 0)
    mask = sliding(1024)
}
`

func TestParseFileForms(t *testing.T) {
	f, diags := parser.ParseFile("sample.flex", []byte(sample))
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:\n%s", diags.Render())
	}
	want := []string{
		"param WINDOW = 1024=1024",
		"param CAP = 30.0=30",
		"param ON = True=true",
		"buffer doc: i32[KV] segments",
		"buffer slopes: f32[H]",
		"buffer bias: f32[H 8191=8191]",
		"mask causal(b h q_idx kv_idx) = (cmp q_idx >= kv_idx)",
		"mask local(b h q kv) = (& (call causal b h q kv) (paren (cmp (- q kv) <= WINDOW)))",
		"mask same_doc(b h q kv) = (cmp (index doc q) == (index doc kv))",
		"mask dilated(b h q kv) { let d = (call abs (- q kv)); (and (cmp d <= 2048=2048) (cmp (% d 2=2) == 0=0)) }",
		"mask semi(b h q kv) { let d = (- q kv); (cmp d >= 0=0) }",
		"score softcap(score b h q kv) = (* CAP (call tanh (/ score CAP)))",
		"score alibi(s b h q kv) = (+ s (* (index slopes h) (paren (- kv q))))",
		"mask sliding(W)(b h q kv) = (and (cmp q >= kv) (cmp (- q kv) <= W))",
		"attention doc_layer { mask = (call and_masks causal same_doc); score = softcap; layout = bshd; head_dim = 128=128; }",
		"attention swa_layer { causal = true=true; window = (tuple 1023=1023 0=0); mask = (call sliding 1024=1024); }",
	}
	if len(f.Decls) != len(want) {
		t.Fatalf("got %d declarations, want %d", len(f.Decls), len(want))
	}
	for i, d := range f.Decls {
		if got := declDump(d); got != want[i] {
			t.Errorf("decl %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	if len(f.Comments) != 4 || f.Comments[1].Text != "# compile-time constant: int, float or bool" {
		t.Errorf("comments = %+v", f.Comments)
	}
	if plain := f.Decls[6].(*dsl.ModDecl); plain.FactoryParams != nil || plain.Kind != dsl.MaskMod {
		t.Errorf("causal: FactoryParams = %v, Kind = %v", plain.FactoryParams, plain.Kind)
	}
	if sc := f.Decls[11].(*dsl.ModDecl); sc.Kind != dsl.ScoreMod {
		t.Errorf("softcap: Kind = %v", sc.Kind)
	}
}

// TestSpansExact pins the text each kind of node covers.
func TestSpansExact(t *testing.T) {
	f, diags := parser.ParseFile("sample.flex", []byte(sample))
	if len(diags) > 0 {
		t.Fatal(diags.Render())
	}
	text := func(n dsl.Node) string { return f.Source.Slice(n.Span()) }
	param := f.Decls[0].(*dsl.ParamDecl)
	buf := f.Decls[3].(*dsl.BufferDecl)
	local := f.Decls[7].(*dsl.ModDecl)
	dilated := f.Decls[9].(*dsl.ModDecl)
	sliding := f.Decls[13].(*dsl.ModDecl)
	attn := f.Decls[14].(*dsl.AttentionDecl)
	swa := f.Decls[15].(*dsl.AttentionDecl)
	and := local.Body.Result.(*dsl.BinaryExpr)
	tests := []struct {
		name string
		node dsl.Node
		want string
	}{
		{"param", param, "param WINDOW = 1024"},
		{"param name", param.Name, "WINDOW"},
		{"param value", param.Value, "1024"},
		{"comment", f.Comments[1], "# compile-time constant: int, float or bool"},
		{"buffer", buf, "buffer doc: i32[KV] segments"},
		{"buffer dtype", buf.DType, "i32"},
		{"buffer dim", buf.Dims[0], "KV"},
		{"buffer property", buf.Property, "segments"},
		{"mod", local, "mask local(b, h, q, kv) = causal(b, h, q, kv) & (q - kv <= WINDOW)"},
		{"mod body", local.Body, "= causal(b, h, q, kv) & (q - kv <= WINDOW)"},
		{"binary", and, "causal(b, h, q, kv) & (q - kv <= WINDOW)"},
		{"operator", spanNode(and.OpSp), "&"},
		{"call", and.X, "causal(b, h, q, kv)"},
		{"paren", and.Y, "(q - kv <= WINDOW)"},
		{"compare", and.Y.(*dsl.ParenExpr).X, "q - kv <= WINDOW"},
		{"block mod", dilated, "mask dilated(b, h, q, kv) {\n    let d = abs(q - kv)\n    d <= 2048 and d % 2 == 0\n}"},
		{"let", dilated.Body.Lets[0], "let d = abs(q - kv)"},
		{"result", dilated.Body.Result, "d <= 2048 and d % 2 == 0"},
		{"factory param", sliding.FactoryParams[0], "W"},
		{"attention", attn, "attention doc_layer {\n    mask = and_masks(causal, same_doc)\n    score = softcap\n    layout = bshd\n    head_dim = 128\n}"},
		{"setting", attn.Settings[0], "mask = and_masks(causal, same_doc)"},
		{"setting key", attn.Settings[1].Key, "score"},
		{"tuple", swa.Settings[1].Value, "(1023, 0)"},
	}
	for _, tt := range tests {
		if got := text(tt.node); got != tt.want {
			t.Errorf("%s: span covers %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := (dsl.Span{Start: 25, End: 44}); param.Sp != got {
		t.Errorf("param span = %+v, want %+v", param.Sp, got)
	}
}

type spanNode dsl.Span

func (s spanNode) Span() dsl.Span { return dsl.Span(s) }

// TestSpansReparse checks every expression node of every example and of the
// sample: the text its span covers has no surrounding blanks and parses to
// the same tree.
func TestSpansReparse(t *testing.T) {
	inputs := map[string][]byte{"sample.flex": []byte(sample)}
	for _, path := range examplePaths(t) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		inputs[path] = src
	}
	for name, src := range inputs {
		f, diags := parser.ParseFile(name, src)
		if len(diags) > 0 {
			t.Fatalf("%s:\n%s", name, diags.Render())
		}
		forEachExpr(f, func(e dsl.Expr) {
			if _, ok := e.(*dsl.KeywordArg); ok {
				return // `min=0` is only an argument; its value is checked on its own
			}
			text := f.Source.Slice(e.Span())
			if text != strings.TrimSpace(text) || text == "" {
				t.Errorf("%s: span of %s covers %q", name, sexpr(e), text)
				return
			}
			back, diags := parser.ParseExpr("span", text)
			if len(diags) > 0 || sexpr(back) != sexpr(e) {
				t.Errorf("%s: span text %q reparses as %s, want %s %s", name, text, sexpr(back), sexpr(e), diags.Render())
			}
		})
	}
}

func examplePaths(t testing.TB) []string {
	paths, err := filepath.Glob(filepath.Join("..", "examples", "*.flex"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	return paths
}

func TestExamplesParseCleanly(t *testing.T) {
	for _, path := range examplePaths(t) {
		src, _ := os.ReadFile(path)
		f, diags := parser.ParseFile(path, src)
		if len(diags) > 0 {
			t.Errorf("%s:\n%s", path, diags.Render())
		}
		attention := 0
		for _, d := range f.Decls {
			if _, ok := d.(*dsl.AttentionDecl); ok {
				attention++
			}
		}
		if attention == 0 {
			t.Errorf("%s has no attention block", path)
		}
		if len(f.Comments) == 0 {
			t.Errorf("%s has no comments", path)
		}
	}
}

func TestEmptyAndBlankFiles(t *testing.T) {
	for _, src := range []string{"", "\n\n", "# only a comment\n", "  \t\n# a\n\n# b"} {
		f, diags := parser.ParseFile("e.flex", []byte(src))
		if f == nil || len(diags) > 0 || len(f.Decls) != 0 {
			t.Errorf("%q: file %v, diagnostics %v", src, f, diags)
		}
	}
}

// TestRecovery checks that each broken declaration is reported once and
// that the declarations around them still parse.
func TestRecovery(t *testing.T) {
	src := `param A = 1
param B 2
mask good(b, h, q, kv) = q >= kv
mask bad(b, h, q, kv) = q >=
buffer x: f32[H
score s(score, b, h, q, kv) = score
attention a {
    mask = good
`
	f, diags := parser.ParseFile("r.flex", []byte(src))
	var got []string
	for _, d := range diags {
		got = append(got, d.Error())
	}
	want := []string{
		"r.flex:2:9: error[E012]: expected `=` after `param B`, found `2`",
		"r.flex:4:29: error[E011]: expected an expression after `>=`, found end of line",
		"r.flex:5:14: error[E008]: unclosed `[`",
		"r.flex:7:13: error[E008]: unclosed `{`",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var declNames []string
	for _, d := range f.Decls {
		declNames = append(declNames, d.DeclName().Name)
	}
	if strings.Join(declNames, " ") != "A good s" {
		t.Errorf("declarations = %v, want A good s", declNames)
	}
}

func TestThreeIndependentErrors(t *testing.T) {
	src := "mask a(b, h, q, kv) = q >=\nmask c(b, h, q, kv) = q $ kv\nparam D = (1\n"
	_, diags := parser.ParseFile("three.flex", []byte(src))
	if len(diags) != 3 {
		t.Fatalf("got %d diagnostics, want 3:\n%s", len(diags), diags.Render())
	}
	for i, d := range diags {
		if line := d.Position().Line; line != i+1 {
			t.Errorf("diagnostic %d on line %d: %s", i, line, d.Error())
		}
	}
}

func TestWindowsLineEndingsAndTabs(t *testing.T) {
	src := "# c\r\nparam A = 1\t# tab\r\nmask m(b, h, q, kv) {\r\n\tlet d = q - kv\r\n\td >= A\r\n}\r\n"
	f, diags := parser.ParseFile("crlf.flex", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags.Render())
	}
	if len(f.Decls) != 2 || f.Comments[0].Text != "# c" || f.Comments[1].Text != "# tab" {
		t.Fatalf("decls %d, comments %+v", len(f.Decls), f.Comments)
	}
	m := f.Decls[1].(*dsl.ModDecl)
	if got := f.Source.Slice(m.Body.Lets[0].Span()); got != "let d = q - kv" {
		t.Errorf("let span covers %q", got)
	}
	_, diags = parser.ParseFile("crlf.flex", []byte("param A =\r\n"))
	if len(diags) != 1 || diags[0].Render() != "crlf.flex:1:10: error[E011]: expected an expression after `=`, found end of line\n"+
		" 1 | param A =\n"+
		"   |          ^\n"+
		"   = hint: complete the expression; to continue it on the next line, put it in parentheses\n" {
		t.Errorf("CRLF diagnostic:\n%s", diags.Render())
	}
}
