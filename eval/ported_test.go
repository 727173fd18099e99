package eval_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/parser"
)

// portedGolden is what gpu/ported_torch.py wrote for one file of
// testdata/ported: real torch running the file's defs as Python.
type portedGolden struct {
	File    string           `json:"file"`
	Torch   string           `json:"torch"`
	Sizes   map[string]int64 `json:"sizes"`
	Buffers map[string]struct {
		DType string    `json:"dtype"`
		Shape []int     `json:"shape"`
		Data  []jsonNum `json:"data"`
	} `json:"buffers"`
	Attentions []struct {
		Name     string     `json:"name"`
		Points   [][4]int64 `json:"points"`
		Mask     []bool     `json:"mask"`
		ScoreIn  []jsonNum  `json:"score_in"`
		ScoreOut []jsonNum  `json:"score_out"`
	} `json:"attentions"`
}

// jsonNum is a JSON number, or one of the strings "inf", "-inf", "nan".
type jsonNum float64

func (n *jsonNum) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "inf":
			*n = jsonNum(math.Inf(1))
		case "-inf":
			*n = jsonNum(math.Inf(-1))
		case "nan":
			*n = jsonNum(math.NaN())
		default:
			return fmt.Errorf("bad number %q", s)
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = jsonNum(f)
	return nil
}

// scoreTol is the tolerance of a score: torch computes the score_mod in
// float32, the evaluator in float64.
func scoreClose(got, want float64) bool {
	if math.IsNaN(want) || math.IsInf(want, 0) {
		return got == want || math.IsNaN(got) && math.IsNaN(want)
	}
	return math.Abs(got-want) <= 1e-5*(1+math.Abs(want))
}

// TestPortedAgainstTorch checks the evaluator against real torch: for every
// file of testdata/ported, gpu/ported_torch.py ran its defs as Python on
// random buffers and scores and pinned the results in
// testdata/ported/torch/NAME.json. The mask must agree exactly at every
// sampled point, the score to float32 precision. Every corpus file must
// have its golden file.
func TestPortedAgainstTorch(t *testing.T) {
	flexes, err := filepath.Glob("../testdata/ported/*.flex")
	if err != nil || len(flexes) == 0 {
		t.Fatalf("no ported corpus: %v", err)
	}
	for _, path := range flexes {
		base := strings.TrimSuffix(filepath.Base(path), ".flex")
		t.Run(base, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("../testdata/ported/torch", base+".json"))
			if err != nil {
				t.Fatalf("%v (run python3 gpu/ported_torch.py where torch is installed)", err)
			}
			var g portedGolden
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, diags := parser.ParseFile(path, text)
			if diags.HasErrors() {
				t.Fatal(diags.Render())
			}
			prog, diags := check.Check(f, check.Options{})
			if diags.HasErrors() {
				t.Fatal(diags.Render())
			}
			env := &eval.Env{B: g.Sizes["B"], H: g.Sizes["H"], HKV: g.Sizes["HKV"], Q: g.Sizes["Q"], KV: g.Sizes["KV"],
				Buffers: map[string]*eval.Tensor{}}
			for name, b := range g.Buffers {
				tn := eval.NewTensor(b.Shape...)
				for i, x := range b.Data {
					tn.Data[i] = float64(x)
				}
				env.Buffers[name] = tn
			}
			if len(g.Attentions) != len(prog.Attentions) {
				t.Fatalf("golden has %d attention blocks, the file %d", len(g.Attentions), len(prog.Attentions))
			}
			for _, ga := range g.Attentions {
				a := prog.Attention(ga.Name)
				if a == nil {
					t.Fatalf("no attention %s", ga.Name)
				}
				if (ga.Mask != nil) != (a.Mask != nil) || (ga.ScoreOut != nil) != (a.Score != nil) {
					t.Fatalf("%s: golden and file disagree on which mods the block has", ga.Name)
				}
				bad := 0
				if a.Mask != nil {
					fn, err := eval.Compile(a.Mask)
					if err != nil {
						t.Fatal(err)
					}
					for i, p := range ga.Points {
						got, err := fn.Mask(env, p[0], p[1], p[2], p[3])
						if err != nil || got != ga.Mask[i] {
							bad++
							if bad <= 5 {
								t.Errorf("%s mask at (b, h, q, kv) = %v: maskc %v (%v), torch %v", ga.Name, p, got, err, ga.Mask[i])
							}
						}
					}
				}
				if a.Score != nil {
					fn, err := eval.Compile(a.Score)
					if err != nil {
						t.Fatal(err)
					}
					for i, p := range ga.Points {
						in, want := float64(ga.ScoreIn[i]), float64(ga.ScoreOut[i])
						got, err := fn.Score(env, in, p[0], p[1], p[2], p[3])
						if err != nil || !scoreClose(got, want) {
							bad++
							if bad <= 5 {
								t.Errorf("%s score(%v) at (b, h, q, kv) = %v: maskc %v (%v), torch %v", ga.Name, in, p, got, err, want)
							}
						}
					}
				}
				if len(ga.Points) < 100 {
					t.Errorf("%s: only %d points", ga.Name, len(ga.Points))
				}
			}
		})
	}
}
