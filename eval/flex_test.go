package eval

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/internal/golden"
	"github.com/maskc/maskc/parser"
)

// checkFlex parses and checks src, failing the test on any error.
func checkFlex(t testing.TB, src string, defines map[string]string) *check.Program {
	t.Helper()
	f, diags := parser.ParseFile("test.flex", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("parse:\n%s", diags.Render())
	}
	p, diags := check.Check(f, check.Options{Defines: defines})
	if diags.HasErrors() {
		t.Fatalf("check:\n%s", diags.Render())
	}
	return p
}

// TestFromFlex evaluates masks and scores written in .flex, through the
// parser and the checker, against the same function written in Go with
// Python's floor semantics spelled out, on every point of a small grid.
func TestFromFlex(t *testing.T) {
	floorMod := func(a, m int64) int64 { return ((a % m) + m) % m }
	floorDiv := func(a, m int64) int64 { return (a - floorMod(a, m)) / m }
	env := &Env{B: 2, H: 3, HKV: 3, Q: 6, KV: 9, Buffers: map[string]*Tensor{
		"doc":    FromInts(0, 0, 0, 1, 1, 2, 2, 2, 2),
		"prefix": FromInts(2, 4),
		"slopes": {Dims: []int{3}, Data: []float64{0.5, 0.25, 0.125}},
		// 0-d buffers (captured scalar tensors) and a per-block table of
		// (KV + 3) // 4 = 3 blocks per head
		"offset": {Dims: []int{}, Data: []float64{-2}},
		"temp":   {Dims: []int{}, Data: []float64{0.5}},
		"on":     {Dims: []int{}, Data: []float64{1}},
		"blocks": FromInts(1, 0, 1, 0, 1, 1, 1, 1, 0),
	}}
	env.Buffers["blocks"].Dims = []int{3, 3}
	blocks := func(h, j int64) bool { return env.Buffers["blocks"].Data[h*3+j] == 1 }
	doc := func(i int64) int64 { return int64(env.Buffers["doc"].Data[i]) }
	tests := []struct {
		name  string
		src   string
		mask  func(b, h, q, kv int64) bool
		score func(s float64, b, h, q, kv int64) float64
	}{
		{"bottom-right causal", "mask m(b, h, q, kv) = kv <= q + KV - Q",
			func(b, h, q, kv int64) bool { return kv <= q+3 }, nil},
		{"floor modulo of a negative difference", "mask m(b, h, q, kv) = (q - kv) % 4 == 3",
			func(b, h, q, kv int64) bool { return floorMod(q-kv, 4) == 3 }, nil},
		{"floor division of a negative difference", "mask m(b, h, q, kv) = (q - kv) // 3 == -2",
			func(b, h, q, kv int64) bool { return floorDiv(q-kv, 3) == -2 }, nil},
		{"float floor modulo", "mask m(b, h, q, kv) = (q - kv - 0.5) % 2 < 1",
			func(b, h, q, kv int64) bool {
				x := float64(q-kv) - 0.5
				return x-2*math.Floor(x/2) < 1
			}, nil},
		{"document causal", "buffer doc: i32[KV] segments\nmask m(b, h, q, kv) = doc[q] == doc[kv] and q >= kv",
			func(b, h, q, kv int64) bool { return doc(q) == doc(kv) && q >= kv }, nil},
		{"prefix per batch", "buffer prefix: i64[B]\nmask m(b, h, q, kv) = kv < prefix[b] or q >= kv",
			func(b, h, q, kv int64) bool { return kv < []int64{2, 4}[b] || q >= kv }, nil},
		{"dilated with let", "mask m(b, h, q, kv) {\n let d = abs(q - kv)\n d <= 4 and d % 2 == 0\n}",
			func(b, h, q, kv int64) bool { d := max(q-kv, kv-q); return d <= 4 && d%2 == 0 }, nil},
		{"factory and and_masks", "mask causal(b, h, q, kv) = q >= kv\nmask win(W)(b, h, q, kv) = q - kv <= W\nmask m(b, h, q, kv) = and_masks(causal, win(2))(b, h, q, kv)",
			func(b, h, q, kv int64) bool { return q >= kv && q-kv <= 2 }, nil},
		{"head dependent", "mask m(b, h, q, kv) = h == 1 or ~(kv > q)",
			func(b, h, q, kv int64) bool { return h == 1 || kv <= q }, nil},
		{"int true division and power", "mask m(b, h, q, kv) = (q + 1) / (kv + 1) > 2 ** -1",
			func(b, h, q, kv int64) bool { return float64(q+1)/float64(kv+1) > 0.5 }, nil},
		{"softcap", "param CAP = 2.5\nscore s(score, b, h, q, kv) = CAP * tanh(score / CAP)",
			nil, func(s float64, b, h, q, kv int64) float64 { return 2.5 * math.Tanh(s/2.5) }},
		{"alibi from slopes", "buffer slopes: f32[H]\nscore s(score, b, h, q, kv) = score + slopes[h] * (kv - q)",
			nil, func(s float64, b, h, q, kv int64) float64 { return s + []float64{0.5, 0.25, 0.125}[h]*float64(kv-q) }},
		{"alibi formula", "score s(score, b, h, q, kv) = score + (kv - q) * 2 ** (-8 * (h + 1) / H)",
			nil, func(s float64, b, h, q, kv int64) float64 { return s + float64(kv-q)*math.Pow(2, -8*float64(h+1)/3) }},
		{"causal as a score", "score s(score, b, h, q, kv) = where(q >= kv, score, -inf)",
			nil, func(s float64, b, h, q, kv int64) float64 {
				if q >= kv {
					return s
				}
				return math.Inf(-1)
			}},
		{"0-d buffer by its bare name", "buffer offset: i32[]\nbuffer on: bool[]\nmask m(b, h, q, kv) = (kv <= q + offset) & on",
			func(b, h, q, kv int64) bool { return kv <= q-2 }, nil},
		{"0-d buffer by item() and [()]", "buffer offset: i64[]\ndef m(b, h, q_idx, kv_idx):\n    return (kv_idx <= q_idx + offset.item()) | (kv_idx == offset[()].abs())",
			func(b, h, q, kv int64) bool { return kv <= q-2 || kv == 2 }, nil},
		{"0-d shape", "buffer offset: i32[]\nmask m(b, h, q, kv) = (offset.ndim == 0) & (offset.numel() == 1) & (offset.dim() == 0) & (q >= kv)",
			func(b, h, q, kv int64) bool { return q >= kv }, nil},
		{"0-d float buffer in a score", "buffer temp: f32[]\nscore s(score, b, h, q, kv) = score / temp",
			nil, func(s float64, b, h, q, kv int64) float64 { return s / 0.5 }},
		{"per-block table of a floor-divided extent", "buffer blocks: bool[H, (KV + 3) // 4]\nmask m(b, h, q, kv) = blocks[h, kv // 4] & (blocks.shape[1] == 3)",
			func(b, h, q, kv int64) bool { return blocks(h, kv/4) }, nil},
		{"int score", "score s(score, b, h, q, kv) = q - kv",
			nil, func(s float64, b, h, q, kv int64) float64 { return float64(q - kv) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, setting := "mask", "m"
			if tt.score != nil {
				kind, setting = "score", "s"
			}
			p := checkFlex(t, tt.src+fmt.Sprintf("\nattention a {\n    %s = %s\n}\n", kind, setting), nil)
			l := p.Attentions[0].Mask
			if tt.score != nil {
				l = p.Attentions[0].Score
			}
			fn, err := Compile(l)
			if err != nil {
				t.Fatal(err)
			}
			bd, err := fn.Bind(env)
			if err != nil {
				t.Fatal(err)
			}
			for b := int64(0); b < env.B; b++ {
				for h := int64(0); h < env.H; h++ {
					for i := int64(0); i < env.Q; i++ {
						for j := int64(0); j < env.KV; j++ {
							if tt.mask != nil {
								got, err := bd.Mask(b, h, i, j)
								if want := tt.mask(b, h, i, j); err != nil || got != want {
									t.Fatalf("at b=%d h=%d q=%d kv=%d: %v, %v; want %v", b, h, i, j, got, err, want)
								}
								continue
							}
							for _, s := range []float64{-7.5, 0, 1.25, 40} {
								got, err := bd.Score(s, b, h, i, j)
								want := tt.score(s, b, h, i, j)
								if err != nil || !near(got, want) {
									t.Fatalf("score %v at b=%d h=%d q=%d kv=%d: %v, %v; want %v", s, b, h, i, j, got, err, want)
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestFlexErrorsArePositioned checks that a run-time failure in a .flex mod
// points at the text responsible.
func TestFlexErrorsArePositioned(t *testing.T) {
	tests := []struct {
		name, src string
		cause     error
		at        string // the source text the error's span covers
		line      string // the Locate prefix
	}{
		{"read past the end", "buffer doc: i32[KV]\nmask m(b, h, q, kv) = doc[kv + 1] == 0",
			ErrIndexOutOfRange, "doc[kv + 1]", "test.flex:2:23: mask"},
		{"negative index", "buffer doc: i32[KV]\nmask m(b, h, q, kv) = q >= kv and doc[kv - 1] == 0",
			ErrIndexOutOfRange, "doc[kv - 1]", "test.flex:2:35: mask"},
		{"division by zero", "mask m(b, h, q, kv) = q // (kv - 2) == 0",
			dsl.ErrDivisionByZero, "q // (kv - 2)", "test.flex:1:23: mask"},
	}
	env := &Env{B: 1, H: 1, HKV: 1, Q: 4, KV: 4, Buffers: map[string]*Tensor{"doc": FromInts(0, 0, 1, 1)}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := checkFlex(t, tt.src+"\nattention a {\n    mask = m\n}\n", nil)
			fn, err := Compile(p.Attentions[0].Mask)
			if err != nil {
				t.Fatal(err)
			}
			var first error
			for i := int64(0); i < env.Q && first == nil; i++ {
				for j := int64(0); j < env.KV && first == nil; j++ {
					_, first = fn.Mask(env, 0, 0, i, j)
				}
			}
			var e *Error
			if !errors.As(first, &e) || !errors.Is(first, tt.cause) {
				t.Fatalf("err = %v, want %v", first, tt.cause)
			}
			src := p.File.Source
			if got := src.Slice(e.Span); got != tt.at {
				t.Errorf("span covers %q, want %q", got, tt.at)
			}
			if got := e.Locate(src); !strings.HasPrefix(got, tt.line) {
				t.Errorf("Locate = %q, want prefix %q", got, tt.line)
			}
		})
	}
}

// TestExamplesGolden evaluates every mask of examples/*.flex on an 8x8 grid
// at two (b, h) corners, with params made small by -D, and compares the
// pictures with testdata/examples.golden (run with -update to rewrite).
func TestExamplesGolden(t *testing.T) {
	files, err := filepath.Glob("../examples/*.flex")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples found: %v", err)
	}
	defines := map[string]string{"WINDOW": "3", "PREFIX": "3"}
	var out strings.Builder
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, diags := parser.ParseFile(path, src)
		if diags.HasErrors() {
			t.Fatalf("%s:\n%s", path, diags.Render())
		}
		used := map[string]string{}
		for _, d := range f.Decls {
			if pd, ok := d.(*dsl.ParamDecl); ok && defines[pd.Name.Name] != "" {
				used[pd.Name.Name] = defines[pd.Name.Name]
			}
		}
		p, diags := check.Check(f, check.Options{Defines: used})
		if diags.HasErrors() {
			t.Fatalf("%s:\n%s", path, diags.Render())
		}
		for _, a := range p.Attentions {
			fmt.Fprintf(&out, "== %s %s\n", filepath.Base(path), a.Name)
			if a.Mask == nil {
				out.WriteString("(no mask)\n")
				continue
			}
			fn, err := Compile(a.Mask)
			if err != nil {
				t.Fatalf("%s %s: %v", path, a.Name, err)
			}
			env := exampleEnv(fn)
			for _, bh := range [][2]int64{{0, 0}, {1, 1}} {
				fmt.Fprintf(&out, "b=%d h=%d\n%s\n", bh[0], bh[1], strings.ReplaceAll(naive(t, fn, env, bh[0], bh[1]), "/", "\n"))
			}
		}
	}
	golden.CheckString(t, filepath.Join("testdata", "examples.golden"), out.String())
}

// exampleEnv is B=2, H=2, Q=KV=8 with deterministic buffer contents: doc
// ids [0 0 0 1 1 2 2 2], prefix lengths [2 5], other buffers zero. A
// buffer whose extents are not known here, negative, or larger than 2**16
// elements in all is left out (binding then fails with ErrBadBuffer).
func exampleEnv(fn *Func) *Env {
	env := &Env{B: 2, H: 2, HKV: 2, Q: 8, KV: 8, Buffers: map[string]*Tensor{}}
	sizes := [5]int64{env.B, env.H, env.HKV, env.Q, env.KV}
	for _, s := range fn.buffers {
		dims := make([]int, len(s.decl.Dims))
		total := int64(1)
		for i := range s.decl.Dims {
			n, ok := dimValue(s.decl, i, sizes)
			if !ok || n < 0 || n > 1<<16 {
				total = -1
				break
			}
			dims[i], total = int(n), total*n
			if total > 1<<16 {
				break
			}
		}
		if total >= 0 && total <= 1<<16 {
			env.Buffers[s.decl.Name.Name] = NewTensor(dims...)
		}
	}
	if d := env.Buffers["doc"]; d != nil {
		copy(d.Data, []float64{0, 0, 0, 1, 1, 2, 2, 2})
	}
	for _, name := range []string{"prefix_len", "prefix"} {
		if d := env.Buffers[name]; d != nil {
			copy(d.Data, []float64{2, 5})
		}
	}
	return env
}

// FuzzFlex runs arbitrary .flex text through the parser and the checker
// and evaluates every mask and score that checks on a small grid: nothing
// may panic or hang, whatever checks must compile, and a failure must be
// an *Error.
func FuzzFlex(f *testing.F) {
	seeds, _ := filepath.Glob("../examples/*.flex")
	for _, path := range seeds {
		if src, err := os.ReadFile(path); err == nil {
			f.Add(string(src))
		}
	}
	f.Add("buffer doc: i32[KV]\nmask m(b, h, q, kv) = doc[q + 1] // (kv - 3) == 2 ** (q - 2)\nattention a {\n mask = m\n}\n")
	f.Add("score s(score, b, h, q, kv) = score % (q - 1) + exp(score) ** kv\nattention a {\n score = s\n}\n")
	f.Fuzz(func(t *testing.T, src string) {
		file, diags := parser.ParseFile("fuzz.flex", []byte(src))
		if diags.HasErrors() {
			return
		}
		p, diags := check.Check(file, check.Options{})
		if diags.HasErrors() {
			return
		}
		for _, a := range p.Attentions {
			for _, l := range []*dsl.Lowered{a.Mask, a.Score} {
				if l == nil {
					continue
				}
				fn, err := Compile(l)
				if err != nil {
					t.Fatalf("the checker accepts what the evaluator refuses: %v\n%s", err, src)
				}
				env := exampleEnv(fn)
				bd, err := fn.Bind(env)
				if err != nil {
					var e *Error
					if !errors.As(err, &e) {
						t.Fatalf("Bind: %v is not an *Error", err)
					}
					continue
				}
				for i := int64(0); i < env.Q; i++ {
					for j := int64(0); j < env.KV; j++ {
						if fn.Kind() == dsl.MaskMod {
							_, err = bd.Mask(1, 1, i, j)
						} else {
							_, err = bd.Score(0.5, 1, 1, i, j)
						}
						var e *Error
						if err != nil && !errors.As(err, &e) {
							t.Fatalf("%v is not an *Error", err)
						}
					}
				}
			}
		}
	})
}
